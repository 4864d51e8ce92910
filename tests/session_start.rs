//! SessionStart chunks.
