//! The integration test harness.
