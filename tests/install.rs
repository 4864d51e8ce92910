//! Scenarios: `install`.
