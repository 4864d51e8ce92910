//! One change of the counters as the journal carries it: a count or a reset, with its id.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::Counters;

/// One change of the counters, as a journal record carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delta {
    /// One call of `tool` by the agent of `key` (`main`: the main agent), which edited `edited`.
    Count {
        /// The agent's key.
        key: String,
        /// The main agent.
        main: bool,
        /// The tool.
        tool: String,
        /// The file an Edit touched.
        edited: Option<String>,
    },
    /// `engine log`: the agent of `key` starts over.
    Reset {
        /// The agent's key.
        key: String,
        /// The main agent.
        main: bool,
    },
}

impl Delta {
    /// Apply the change.
    pub fn apply(&self, counters: &mut Counters) {
        match self {
            Self::Count {
                key,
                main,
                tool,
                edited,
            } => {
                counters.count(key, *main, tool, edited.as_deref());
            }
            Self::Reset { key, main } => counters.reset(key, *main),
        }
    }

    pub(super) fn to_record(&self, id: &str) -> Value {
        match self {
            Self::Count {
                key,
                main,
                tool,
                edited,
            } => json!({"id": id, "op": "count", "key": key, "main": main, "tool": tool,
                "edited": edited}),
            Self::Reset { key, main } => json!({"id": id, "op": "reset", "key": key, "main": main}),
        }
    }

    /// The change and its id in a journal record; `None` for a record that is not one.
    pub(super) fn from_record(record: &Value) -> Option<(String, Self)> {
        let id = record.get("id")?.as_str()?.to_owned();
        let key = record.get("key")?.as_str()?.to_owned();
        let main = record.get("main")?.as_bool()?;
        let delta = match record.get("op")?.as_str()? {
            "count" => Self::Count {
                key,
                main,
                tool: record.get("tool")?.as_str()?.to_owned(),
                edited: record
                    .get("edited")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            },
            "reset" => Self::Reset { key, main },
            _ => return None,
        };
        Some((id, delta))
    }
}

/// A fresh record id: this process, the time, and a count within the process.
pub(super) fn record_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}-{nanos}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}
