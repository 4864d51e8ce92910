//! Per-hook tests of the pipeline hooks.
