//! Where the hook and delivery scenarios start from: the example's `/implement` as session
//! `work`, activated or in its phase 1, and a sandbox whose legacy compaction markers stay
//! inside it; and what they read back most: whether a record's list names a file, and what was
//! delivered since a point of the delivery log.

use std::fs;
use std::path::PathBuf;

use preload_core::primitives::env;
use serde_json::Value;

use crate::pipeline_steps::{activate, drain, phase, prompt, session_start, skill_call};
use crate::sandbox::{Sandbox, strings};

/// A new client (`SessionStart` with `startup`), `/implement add a total` submitted, its
/// `Skill` call made and session `work` activated for it.
pub fn implement_activated(sb: &Sandbox) {
    session_start(sb, "startup");
    prompt(sb, "/implement add a total");
    skill_call(sb, "implement");
    activate(sb, "work", "implement");
}

/// [`implement_activated`], then session `work` moved to `1: Interrogation`.
pub fn implement_in_phase_one(sb: &Sandbox) {
    implement_activated(sb);
    phase(sb, "work", "1: Interrogation");
}

/// [`implement_in_phase_one`] with everything queued delivered.
pub fn implement_in_phase_one_drained(sb: &Sandbox) {
    implement_in_phase_one(sb);
    drain(sb, "work", 30);
}

/// Points the hooks' legacy marker directory (`PRELOAD_LEGACY_MARKER_DIR`) at a directory
/// inside the sandbox, never the real `/tmp`; that directory.
pub fn keep_legacy_markers(sb: &mut Sandbox) -> PathBuf {
    let legacy = sb.root().join("legacy");
    fs::create_dir_all(&legacy).unwrap();
    sb.extra_env.push((
        env::PRELOAD_LEGACY_MARKER_DIR.into(),
        legacy.to_string_lossy().into(),
    ));
    legacy
}

/// Whether the list `key` of a record (a session's state or the seed) holds a path ending
/// with `suffix`.
pub fn lists(record: &Value, key: &str, suffix: &str) -> bool {
    strings(record, key).iter().any(|f| f.ends_with(suffix))
}

/// The files delivered since the delivery log held `from` deliveries, in their order.
pub fn delivered_since(sb: &Sandbox, from: usize) -> Vec<String> {
    sb.deliveries()[from..]
        .iter()
        .map(|(_, f)| f.clone())
        .collect()
}
