//! Scenarios: `pipeline`.
