//! The hash Codex gives a hook's definition, and how it spells an event in a key and a hash.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// `PreToolUse` as Codex spells it in a key and a hash: `pre_tool_use`.
pub fn event_label(event: &str) -> String {
    let mut out = String::with_capacity(event.len() + 4);
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The matcher Codex takes a group's matcher for: none for the events it ignores it on.
fn effective_matcher<'a>(event: &str, matcher: Option<&'a str>) -> Option<&'a str> {
    match event {
        "UserPromptSubmit" | "Stop" => None,
        _ => matcher,
    }
}

/// The hash Codex gives a command `handler` of `event` in a group with `matcher`.
pub fn hook_hash(event: &str, matcher: Option<&str>, handler: &Value) -> String {
    let command = handler.get("command").and_then(Value::as_str).unwrap_or("");
    let timeout = handler
        .get("timeout")
        .or_else(|| handler.get("timeoutSec"))
        .and_then(Value::as_u64)
        .unwrap_or(600)
        .max(1);
    let asynchronous = handler
        .get("async")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut hook = json!({
        "async": asynchronous, "command": command, "timeout": timeout, "type": "command",
    });
    if let Some(message) = handler.get("statusMessage").and_then(Value::as_str) {
        hook["statusMessage"] = json!(message);
    }
    let mut identity = json!({"event_name": event_label(event), "hooks": [hook]});
    if let Some(m) = effective_matcher(event, matcher) {
        identity["matcher"] = json!(m);
    }
    let canonical = sorted(&identity).to_string();
    let digest = Sha256::digest(canonical.as_bytes());
    let mut hex = String::with_capacity(71);
    hex.push_str("sha256:");
    for byte in digest {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// `value` with every object's keys in order (the workspace's JSON keeps insertion order).
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for key in keys {
                out.insert(key.clone(), sorted(&map[key]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}
