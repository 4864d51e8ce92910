//! A rule's payload: `$field` references resolved against the state, and the text a rule speaks.

use serde::de::MapAccess;
use serde_json::Value;

use super::read::{Lenient, Loose, next, skip};
use super::{Matched, Mode};
use crate::state::{Field, State};

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

    /// The member resolved against `state`; `None` for a reference to a field that holds
    /// neither text nor an array (a number, a boolean, an object), which delivers nothing.
    fn resolve(&self, state: &State) -> Option<Resolved> {
        match self {
            Self::Reference(field) => match state.field(field) {
                Some(Field::Json(Value::Null)) | None => Some(Resolved::Text(format!("${field}"))),
                Some(value) => match (value.as_str(), value.as_array()) {
                    (Some(text), _) => Some(Resolved::Text(text.to_owned())),
                    (_, Some(items)) => Some(Resolved::List(
                        items
                            .iter()
                            .filter_map(|item| item.as_str().map(str::to_owned))
                            .collect(),
                    )),
                    _ => None,
                },
            },
            Self::Text(text) => Some(Resolved::Text(substitute(text, state))),
            Self::List(texts) => Some(Resolved::List(texts.clone())),
        }
    }
}

/// A member of a matched rule's payload, resolved against the state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// Text: a text with its `$field`s replaced, or the text a referenced field holds (the
    /// reference as written when the state has none).
    Text(String),
    /// Files: a list's strings, or the strings of the array a referenced field holds.
    List(Vec<String>),
}

/// `_resolve_payload_refs`: the payload as a matched rule holds it, each member resolved
/// against the state ([`Member`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolution {
    /// `text`.
    pub text: Option<Resolved>,
    /// `files`.
    pub files: Option<Resolved>,
    /// `command`.
    pub command: Option<Resolved>,
    /// `preload`.
    pub preload: Option<Resolved>,
}

impl Resolution {
    /// `payload` resolved against `state`.
    pub fn of(payload: &Payload, state: &State) -> Self {
        let resolve = |member: &Option<Member>| member.as_ref()?.resolve(state);
        Self {
            text: resolve(&payload.text),
            files: resolve(&payload.files),
            command: resolve(&payload.command),
            preload: resolve(&payload.preload),
        }
    }

    /// `text` when it is text ("" otherwise).
    pub fn text(&self) -> &str {
        text_of(self.text.as_ref())
    }

    /// `command` when it is text ("" otherwise).
    pub fn command(&self) -> &str {
        text_of(self.command.as_ref())
    }

    /// `files` when it is a list (none otherwise).
    pub fn files(&self) -> &[String] {
        match &self.files {
            Some(Resolved::List(files)) => files,
            _ => &[],
        }
    }

    /// The files of `preload`: a list's, or one text that does not start with `$` (a
    /// reference the state could not resolve).
    pub fn preload_files(&self) -> Vec<String> {
        match &self.preload {
            Some(Resolved::Text(file)) if !file.starts_with('$') => vec![file.clone()],
            Some(Resolved::List(files)) => files.clone(),
            _ => Vec::new(),
        }
    }
}

fn text_of(member: Option<&Resolved>) -> &str {
    match member {
        Some(Resolved::Text(text)) => text,
        _ => "",
    }
}

/// The text of an inline, read or paste rule (`None` for preload rules, which deliver files).
pub fn rule_text(rule: &Matched, blocking: bool) -> Option<String> {
    let files = || rule.payload.files();
    match rule.mode {
        Mode::Inline => {
            let text = rule.payload.text();
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
        Mode::Paste => Some(rule.payload.command().to_owned()),
        Mode::Preload => None,
    }
}
