//! The hook's stdin: one JSON object as Claude Code sends it, read with bounds and taken
//! leniently (every field optional, wrong types read as absent, unknown fields ignored).

use std::io::Read;

use serde_json::{Map, Value};

/// Most bytes read from stdin; more is treated as bad input.
pub const MAX_STDIN_BYTES: u64 = 8 * 1024 * 1024;

/// Why stdin could not be taken as hook input.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InputError {
    /// Nothing arrived.
    #[error("stdin is empty")]
    Empty,
    /// More than [`MAX_STDIN_BYTES`].
    #[error("stdin is larger than {MAX_STDIN_BYTES} bytes")]
    TooLarge,
    /// Not a JSON object.
    #[error("stdin is not a JSON object: {0}")]
    NotJson(String),
    /// Reading failed.
    #[error("cannot read stdin: {0}")]
    Read(String),
    /// Nothing complete arrived within the read time limit.
    #[error("stdin did not close within the time limit")]
    TimedOut,
}

/// The parsed stdin object with typed, lenient accessors.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookInput {
    raw: Map<String, Value>,
}

impl HookInput {
    /// Parse stdin bytes.
    pub fn parse(bytes: &[u8]) -> Result<Self, InputError> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(InputError::Empty);
        }
        match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(raw)) => Ok(Self { raw }),
            Ok(_) => Err(InputError::NotJson("top level is not an object".into())),
            Err(err) => Err(InputError::NotJson(err.to_string())),
        }
    }

    /// Build from a JSON value (tests); anything but an object gives an empty input.
    pub fn from_value(value: Value) -> Self {
        match value {
            Value::Object(raw) => Self { raw },
            _ => Self::default(),
        }
    }

    /// Read stdin, at most [`MAX_STDIN_BYTES`]; the time limit is the runner's.
    pub fn read_from(mut reader: impl Read) -> Result<Self, InputError> {
        let mut bytes = Vec::new();
        reader
            .by_ref()
            .take(MAX_STDIN_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| InputError::Read(e.to_string()))?;
        if bytes.len() as u64 > MAX_STDIN_BYTES {
            return Err(InputError::TooLarge);
        }
        Self::parse(&bytes)
    }

    /// The whole object.
    pub fn raw(&self) -> &Map<String, Value> {
        &self.raw
    }

    /// A top-level string field, when it is a non-empty string.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.raw
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    }

    /// `session_id`.
    pub fn session_id(&self) -> Option<&str> {
        self.str("session_id")
    }
    /// `prompt_id`: the user prompt a call belongs to (the transcript's `promptId`).
    pub fn prompt_id(&self) -> Option<&str> {
        self.str("prompt_id")
    }
    /// `transcript_path`.
    pub fn transcript_path(&self) -> Option<&str> {
        self.str("transcript_path")
    }
    /// `cwd`.
    pub fn cwd(&self) -> Option<&str> {
        self.str("cwd")
    }
    /// `hook_event_name`.
    pub fn event_name(&self) -> Option<&str> {
        self.str("hook_event_name")
    }
    /// `tool_name`.
    pub fn tool_name(&self) -> Option<&str> {
        self.str("tool_name")
    }
    /// `prompt` (UserPromptSubmit).
    pub fn prompt(&self) -> Option<&str> {
        self.str("prompt")
    }
    /// `source` (SessionStart).
    pub fn source(&self) -> Option<&str> {
        self.str("source")
    }
    /// `reason` (SessionEnd): `clear`, `resume`, `logout`, `prompt_input_exit`, `other`.
    pub fn reason(&self) -> Option<&str> {
        self.str("reason")
    }
    /// `trigger` (PreCompact).
    pub fn trigger(&self) -> Option<&str> {
        self.str("trigger")
    }
    /// `tool_use_id`: the tool call a `PreToolUse` / `PostToolUse` event belongs to.
    pub fn tool_use_id(&self) -> Option<&str> {
        self.str("tool_use_id")
    }
    /// `agent_id`: set only inside a sub-agent.
    pub fn agent_id(&self) -> Option<&str> {
        self.str("agent_id")
    }
    /// `agent_type`: the kind of sub-agent (`general-purpose`, `Explore`, a custom name).
    pub fn agent_type(&self) -> Option<&str> {
        self.str("agent_type")
    }
    /// `stop_hook_active` (Stop): true only when it is the boolean `true`.
    pub fn stop_hook_active(&self) -> bool {
        self.raw
            .get("stop_hook_active")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// `tool_input`, when it is an object.
    pub fn tool_input(&self) -> Option<&Map<String, Value>> {
        self.raw.get("tool_input").and_then(Value::as_object)
    }

    /// A string field of `tool_input`.
    pub fn tool_input_str(&self, key: &str) -> Option<&str> {
        self.tool_input()?
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    }

    /// The transcript key: the basename of `transcript_path`.
    pub fn transcript_key(&self) -> Option<&str> {
        let path = self.transcript_path()?;
        path.rsplit('/').next().filter(|s| !s.is_empty())
    }

    /// The tool's standard output: `tool_response.stdout` when it is an object, the string
    /// itself when it is a string.
    pub fn tool_stdout(&self) -> Option<&str> {
        match self.raw.get("tool_response")? {
            Value::String(s) => Some(s),
            Value::Object(map) => map.get("stdout").and_then(Value::as_str),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_types_read_as_absent() {
        let input =
            HookInput::parse(br#"{"tool_name":5,"tool_input":"x","agent_id":"","cwd":"/p"}"#)
                .unwrap();
        assert_eq!(input.tool_name(), None);
        assert!(input.tool_input().is_none());
        assert_eq!(input.agent_id(), None);
        assert_eq!(input.cwd(), Some("/p"));
    }

    #[test]
    fn bad_stdin_is_rejected() {
        assert_eq!(HookInput::parse(b"  \n"), Err(InputError::Empty));
        assert!(matches!(
            HookInput::parse(b"[1]"),
            Err(InputError::NotJson(_))
        ));
        assert!(matches!(
            HookInput::parse(b"{\"a\":"),
            Err(InputError::NotJson(_))
        ));
        assert!(matches!(
            HookInput::parse(&[0xff, 0xfe]),
            Err(InputError::NotJson(_))
        ));
    }

    #[test]
    fn oversized_stdin_is_rejected_without_reading_it_all() {
        let huge = std::io::repeat(b' ').take(MAX_STDIN_BYTES + 10);
        assert_eq!(HookInput::read_from(huge), Err(InputError::TooLarge));
    }

    #[test]
    fn tool_stdout_accepts_object_or_string() {
        let a = HookInput::parse(br#"{"tool_response":{"stdout":"Phase: 1: X"}}"#).unwrap();
        let b = HookInput::parse(br#"{"tool_response":"Phase: 2: Y"}"#).unwrap();
        assert_eq!(a.tool_stdout(), Some("Phase: 1: X"));
        assert_eq!(b.tool_stdout(), Some("Phase: 2: Y"));
    }

    #[test]
    fn transcript_key_is_the_basename() {
        let input = HookInput::parse(br#"{"transcript_path":"/tmp/a/test.jsonl"}"#).unwrap();
        assert_eq!(input.transcript_key(), Some("test.jsonl"));
    }
}
