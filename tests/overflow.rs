//! Scenarios: `overflow`.
