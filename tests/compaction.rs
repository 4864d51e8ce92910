//! Scenarios: `compaction`.
