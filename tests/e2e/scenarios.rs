//! The scenarios: the product's hooks in the real client, judged by what the model received.
