//! Scenarios: overflow.
