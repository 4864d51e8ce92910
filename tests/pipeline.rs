//! Scenarios: pipeline.
