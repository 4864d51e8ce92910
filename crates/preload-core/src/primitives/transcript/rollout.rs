//! A Codex CLI rollout (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`): one record a line,
//! `{timestamp, type, payload}`. Each hook's `additionalContext` is a `developer` message of its
//! own (`response_item`); a compaction (`compacted`) starts a new context window.

use serde_json::Value;

/// What a rollout says of its conversation's current context window.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rollout {
    /// The conversation (`session_meta.payload.id`).
    pub session_id: Option<String>,
    /// The working directory (`session_meta.payload.cwd`).
    pub cwd: Option<String>,
    /// The texts of the developer messages since the last compaction, in order.
    pub developer_texts: Vec<String>,
    /// How many records were read.
    pub records: usize,
}

impl Rollout {
    /// The rollout of a file's text; `None` when its first record is not a rollout's
    /// `session_meta`.
    pub fn parse(text: &str) -> Option<Self> {
        let mut out = Self::default();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let Ok(record) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let payload = &record["payload"];
            match record["type"].as_str() {
                Some("session_meta") if out.session_id.is_none() => {
                    out.session_id = payload["id"].as_str().map(str::to_owned);
                    out.cwd = payload["cwd"].as_str().map(str::to_owned);
                }
                Some("compacted") => out.developer_texts.clear(),
                Some("response_item")
                    if payload["type"] == "message" && payload["role"] == "developer" =>
                {
                    let texts = payload["content"].as_array().into_iter().flatten();
                    out.developer_texts
                        .extend(texts.filter_map(|c| c["text"].as_str()).map(str::to_owned));
                }
                _ => {}
            }
            // A rollout opens with its `session_meta`.
            out.session_id.as_ref()?;
            out.records += 1;
        }
        out.session_id.is_some().then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(kind: &str, payload: &Value) -> String {
        json!({"timestamp": "2026-12-02T00:00:00Z", "type": kind, "payload": payload}).to_string()
    }

    fn developer(text: &str) -> String {
        line(
            "response_item",
            &json!({"type": "message", "role": "developer",
                "content": [{"type": "input_text", "text": text}]}),
        )
    }

    #[test]
    fn the_developer_messages_since_the_last_compaction() {
        let text = [
            line("session_meta", &json!({"id": "c-1", "cwd": "/p"})),
            developer("[Preloaded: /a]\nA\n"),
            line("compacted", &json!({"message": "summary"})),
            developer("[Preloaded: /b]\nB\n"),
            line(
                "response_item",
                &json!({"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "[Preloaded: /c]"}]}),
            ),
        ]
        .join("\n");
        let rollout = Rollout::parse(&text).unwrap();
        assert_eq!(rollout.session_id.as_deref(), Some("c-1"));
        assert_eq!(rollout.cwd.as_deref(), Some("/p"));
        assert_eq!(rollout.developer_texts, vec!["[Preloaded: /b]\nB\n"]);
    }

    #[test]
    fn a_file_that_does_not_open_with_session_meta_is_no_rollout() {
        assert_eq!(Rollout::parse(&developer("[Preloaded: /a]\n")), None);
        assert_eq!(Rollout::parse("not json\n"), None);
        assert_eq!(Rollout::parse(""), None);
    }
}
