//! Scenarios: compaction.
