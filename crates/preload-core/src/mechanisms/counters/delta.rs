//! One change of the counters as the journal carries it: a count or a reset, with its id.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize};

use super::Counters;
use crate::state::lenient;

/// One change of the counters, as a journal record carries it (its `op`: `count` or `reset`,
/// and its members).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Delta {
    /// One call of `tool` by the agent of `key` (`main`: the main agent), which edited `edited`.
    Count {
        /// The agent's key.
        key: String,
        /// The main agent.
        main: bool,
        /// The tool.
        tool: String,
        /// The file an Edit touched (none when a record's is not a string).
        #[serde(default, deserialize_with = "lenient")]
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
}

/// A journal record: `id`, then the change's members.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Record {
    /// The record's id ([`record_id`]).
    pub(super) id: String,
    /// The change.
    #[serde(flatten)]
    pub(super) delta: Delta,
}

/// The records among a journal's (`raw`): one that is not a change with its id is skipped.
pub(super) fn records<'r, R: Deserializer<'r>>(raw: impl IntoIterator<Item = R>) -> Vec<Record> {
    raw.into_iter()
        .filter_map(|record| Record::deserialize(record).ok())
        .collect()
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
