//! A rule's payload: `$field` references resolved against the state, and the text a rule speaks.

use serde_json::{Map, Value};

use super::{Matched, Mode};
use crate::state::{Field, State, strings_of};

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn scalar_text(field: Field<'_>) -> Option<String> {
    match field {
        Field::Text(s) => Some(s.to_owned()),
        Field::Json(Value::String(s)) => Some(s.clone()),
        Field::Json(Value::Number(n)) => Some(n.to_string()),
        Field::Json(Value::Bool(b)) => Some(b.to_string()),
        _ => None,
    }
}

/// Substitute `$identifier` references inside `text` with scalar state values, longest names
/// first; unknown names and non-scalar values stay as written.
pub fn substitute(text: &str, state: &State) -> String {
    let mut names: Vec<&str> = Vec::new();
    for (at, _) in text.match_indices('$') {
        let tail = &text[at + 1..];
        let len = tail
            .char_indices()
            .find(|(i, c)| {
                !(c.is_ascii_alphanumeric() || *c == '_') || (*i == 0 && c.is_ascii_digit())
            })
            .map_or(tail.len(), |(i, _)| i);
        if len > 0 && !names.contains(&&tail[..len]) {
            names.push(&tail[..len]);
        }
    }
    names.sort_by_key(|n| std::cmp::Reverse(n.len()));
    let mut out = text.to_owned();
    for name in names {
        if let Some(value) = state.field(name).and_then(scalar_text) {
            out = out.replace(&format!("${name}"), &value);
        }
    }
    out
}

/// `_resolve_payload_refs`: a top-level string that is `$field` becomes the state value of that
/// field (any type; unchanged when missing or null); `$field` inside other strings is replaced
/// by scalar values, longest names first.
pub fn resolve_payload(payload: &Map<String, Value>, state: &State) -> Map<String, Value> {
    payload
        .iter()
        .map(|(key, value)| {
            let resolved = match value {
                Value::String(s) => match s.strip_prefix('$') {
                    Some(field) if is_identifier(field) => match state.field(field) {
                        Some(Field::Json(Value::Null)) | None => value.clone(),
                        Some(v) => v.to_value(),
                    },
                    _ => Value::String(substitute(s, state)),
                },
                other => other.clone(),
            };
            (key.clone(), resolved)
        })
        .collect()
}

/// The text of an inline, read or paste rule (`None` for preload rules, which deliver files).
pub fn rule_text(rule: &Matched, blocking: bool) -> Option<String> {
    let files = || strings_of(rule.payload.get("files"));
    match rule.mode {
        Mode::Inline => {
            let text = rule.payload_str("text");
            if text.is_empty() {
                Some(
                    files()
                        .iter()
                        .map(|f| format!("[{f}]"))
                        .collect::<Vec<_>>()
                        .join("\n"),
                )
            } else {
                Some(text.to_owned())
            }
        }
        Mode::Read => {
            let tag = if blocking { "block" } else { "warn" };
            Some(format!(
                "[{tag}: {}] REQUIRED: Read these files: {}",
                rule.id,
                files().join(", ")
            ))
        }
        Mode::Paste => Some(rule.payload_str("command").to_owned()),
        Mode::Preload => None,
    }
}
