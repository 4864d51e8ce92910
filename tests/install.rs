//! Scenarios: install.
