//! A rule's payload: `$field` references resolved against the state, and the text a rule speaks.

use serde::de::MapAccess;
use serde_json::{Map, Value};

use super::read::{Lenient, Loose, next, skip};
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

/// A rule's payload as `guards.json` writes it: the members its modes deliver (others are not
/// read). A member that is neither text nor an array is as absent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Payload {
    /// `text`: what an inline rule says.
    pub text: Option<Member>,
    /// `files`: the files a read rule names (an inline rule without text lists them).
    pub files: Option<Member>,
    /// `command`: what a paste rule types.
    pub command: Option<Member>,
    /// `preload`: the files a preload rule delivers.
    pub preload: Option<Member>,
}

/// One member of a payload.
#[derive(Debug, Clone, PartialEq)]
pub enum Member {
    /// `"$field"`: the state's value of the field, whatever its type; as written when the state
    /// has none (or `null`).
    Reference(String),
    /// Other text: `$field`s in it replaced by the field's value when that is a string, number
    /// or boolean ([`substitute`]).
    Text(String),
    /// An array: its strings.
    List(Vec<String>),
}

impl Lenient for Payload {
    fn member<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        let slot = match key {
            "text" => &mut self.text,
            "files" => &mut self.files,
            "command" => &mut self.command,
            "preload" => &mut self.preload,
            _ => return skip(map),
        };
        *slot = Member::of(next(map)?);
        Ok(())
    }
}

impl Member {
    /// The member a value of the payload is; `None` for one that is neither text nor an array.
    fn of(value: Loose) -> Option<Self> {
        match value {
            Loose::Text(text) => Some(match text.strip_prefix('$') {
                Some(field) if is_identifier(field) => Self::Reference(field.to_owned()),
                _ => Self::Text(text),
            }),
            Loose::List(texts) => Some(Self::List(texts)),
            _ => None,
        }
    }

    /// The member resolved against `state`.
    fn resolve(&self, state: &State) -> Value {
        match self {
            Self::Reference(field) => match state.field(field) {
                Some(Field::Json(Value::Null)) | None => Value::String(format!("${field}")),
                Some(value) => value.to_value(),
            },
            Self::Text(text) => Value::String(substitute(text, state)),
            Self::List(texts) => Value::from(texts.clone()),
        }
    }
}

/// `_resolve_payload_refs`: the payload as a matched rule holds it, each member resolved
/// against `state` ([`Member`]).
pub fn resolve_payload(payload: &Payload, state: &State) -> Map<String, Value> {
    [
        ("text", &payload.text),
        ("files", &payload.files),
        ("command", &payload.command),
        ("preload", &payload.preload),
    ]
    .into_iter()
    .filter_map(|(key, member)| Some((key.to_owned(), member.as_ref()?.resolve(state))))
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
