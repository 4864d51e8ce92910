//! What the client's transcript (`transcript_path`: one JSON object per line, appended as the
//! conversation goes) says: the tool calls a compaction keeps (here), the tree of a Claude Code
//! transcript and its active branch ([`branch`]), a Codex rollout's context window
//! ([`rollout`]).

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::Value;

pub mod branch;
pub mod rollout;

/// How much of a transcript's end is read: the latest response with tool calls lies within it
/// unless its results alone are larger.
const TAIL: u64 = 32 << 20;

/// The most calls one response is taken to hold.
const MAX_CALLS: usize = 256;

/// The tool calls a transcript holds: those of its latest response that made any, and every
/// call it names (what the client has written so far).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Calls {
    /// The `tool_use` ids of the latest response with tool calls.
    pub latest: Vec<String>,
    /// Every `tool_use` id in the part read.
    pub seen: BTreeSet<String>,
}

/// The tool calls of the transcript at `path`. The client writes one line per content block of
/// an assistant message, each with the message's id, so the calls of one response are the lines
/// that share it. A sub-agent's lines (`isSidechain`) are not the main conversation's. `None`
/// when the file cannot be read or its last 32 MiB hold no tool call.
pub fn calls(path: &Path) -> Option<Calls> {
    let mut file = File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(TAIL))).ok()?;
    let mut bytes = Vec::new();
    file.take(TAIL).read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let mut message: Option<String> = None;
    let mut latest_done = false;
    let mut out = Calls::default();
    // A first line cut by the tail does not parse and is passed over.
    for line in text.rsplit('\n') {
        if !line.contains("\"assistant\"") || !line.contains("\"tool_use\"") {
            continue;
        }
        let Ok(entry) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if entry["type"] != "assistant" || entry["isSidechain"] == true {
            continue;
        }
        let id = entry["message"]["id"].as_str().unwrap_or_default();
        let calls: Vec<&str> = entry["message"]["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|block| block["type"] == "tool_use")
            .filter_map(|block| block["id"].as_str())
            .collect();
        if calls.is_empty() {
            continue;
        }
        match &message {
            None => message = Some(id.to_owned()),
            Some(latest) if latest == id => {}
            Some(_) => latest_done = true,
        }
        for call in calls {
            if !latest_done && out.latest.len() < MAX_CALLS && !out.latest.iter().any(|c| c == call)
            {
                out.latest.push(call.to_owned());
            }
            out.seen.insert(call.to_owned());
        }
    }
    (!out.latest.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn assistant(message: &str, blocks: &[Value]) -> String {
        json!({"type": "assistant", "message": {"id": message, "role": "assistant",
            "content": blocks}})
        .to_string()
    }

    fn tool_use(id: &str) -> Value {
        json!({"type": "tool_use", "id": id, "name": "Read", "input": {}})
    }

    fn calls_of(lines: &[String]) -> Option<Calls> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        calls(&path)
    }

    #[test]
    fn the_calls_of_the_latest_response_with_calls_whatever_lies_between_its_lines() {
        let lines = vec![
            assistant("msg_1", &[tool_use("toolu_1")]),
            json!({"type": "user", "message": {"content": [{"type": "tool_result",
                "tool_use_id": "toolu_1"}]}})
            .to_string(),
            assistant("msg_2", &[tool_use("toolu_2")]),
            json!({"type": "user", "message": {"content": [{"type": "tool_result",
                "tool_use_id": "toolu_2"}]}})
            .to_string(),
            assistant("msg_2", &[tool_use("toolu_3")]),
            json!({"type": "assistant", "isSidechain": true, "message": {"id": "msg_9",
                "content": [{"type": "tool_use", "id": "toolu_sub"}]}})
            .to_string(),
            assistant("msg_4", &[json!({"type": "text", "text": "done"})]),
            json!({"type": "system", "subtype": "compact_boundary"}).to_string(),
            "{\"type\": \"assistant\", cut".to_owned(),
        ];
        let found = calls_of(&lines).unwrap();
        assert_eq!(
            found.latest,
            vec!["toolu_3".to_owned(), "toolu_2".to_owned()]
        );
        let seen: Vec<&str> = found.seen.iter().map(String::as_str).collect();
        assert_eq!(seen, vec!["toolu_1", "toolu_2", "toolu_3"]);
    }

    #[test]
    fn nothing_without_a_call_or_a_file() {
        assert_eq!(
            calls_of(&[assistant("msg_1", &[json!({"type": "text", "text": "hi"})])]),
            None
        );
        assert_eq!(calls(Path::new("/nonexistent/t.jsonl")), None);
    }
}
