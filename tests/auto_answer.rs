//! Scenarios: auto_answer.
