//! Scenarios: `auto_answer`.
