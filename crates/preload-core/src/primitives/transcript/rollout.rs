//! A Codex CLI rollout (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`): one record a line,
//! `{timestamp, type, payload}`. Each hook's `additionalContext` is a `developer` message of its
//! own (`response_item`); a compaction (`compacted`) starts a new context window.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// What a rollout says of its conversation's current context window.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rollout {
    /// The conversation (`session_meta.payload.id`).
    pub session_id: Option<String>,
    /// The working directory (`session_meta.payload.cwd`).
    pub cwd: Option<String>,
    /// The conversation it was forked from, and the first of that one's records it does not
    /// hold (`forked_from_id`, `forked_from_ordinal_exclusive`): a fork's rollout holds its own
    /// records only, and the parent's before that point are its history too.
    pub forked_from: Option<(String, Option<u64>)>,
    /// The texts of the developer messages since the last compaction, in order.
    pub developer_texts: Vec<String>,
    /// Whether its records hold a compaction (`compacted`).
    pub compacted: bool,
    /// How many records were read.
    pub records: usize,
}

/// How many forks back [`Rollout::read`] follows a rollout's history.
const FORK_DEPTH: usize = 8;

impl Rollout {
    /// The rollout of a file's text; `None` when its first record is not a rollout's
    /// `session_meta`.
    pub fn parse(text: &str) -> Option<Self> {
        Self::parse_until(text, None)
    }

    /// [`Rollout::parse`] of the records before ordinal `until` (all when `None`, or when the
    /// records carry none).
    fn parse_until(text: &str, until: Option<u64>) -> Option<Self> {
        let mut out = Self::default();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let Ok(record) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if let (Some(until), Some(at)) = (until, record["ordinal"].as_u64()) {
                if at >= until {
                    break;
                }
            }
            let payload = &record["payload"];
            match record["type"].as_str() {
                Some("session_meta") if out.session_id.is_none() => {
                    out.session_id = payload["id"].as_str().map(str::to_owned);
                    out.cwd = payload["cwd"].as_str().map(str::to_owned);
                    out.forked_from = payload["forked_from_id"].as_str().map(|id| {
                        (
                            id.to_owned(),
                            payload["forked_from_ordinal_exclusive"].as_u64(),
                        )
                    });
                }
                Some("compacted") => {
                    out.developer_texts.clear();
                    out.compacted = true;
                }
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

    /// The rollout at `path` with the history a fork holds by reference: the records of the
    /// conversation it was forked from, up to the fork point, read first (from the rollout of
    /// that id under the same `sessions` directory). `text` is the file's text.
    pub fn read(path: &Path, text: &str) -> Option<Self> {
        let mut own = Self::parse(text)?;
        let mut history: Vec<Self> = Vec::new();
        let mut next = own.forked_from.clone();
        let root = path
            .ancestors()
            .find(|a| a.file_name().is_some_and(|n| n == "sessions"));
        while let (Some((id, until)), Some(root)) = (next.take(), root) {
            if history.len() >= FORK_DEPTH {
                break;
            }
            let Some(parent) = rollout_named(root, &id) else {
                break;
            };
            let Some(parsed) = std::fs::read(&parent)
                .ok()
                .and_then(|b| Self::parse_until(&String::from_utf8_lossy(&b), until))
            else {
                break;
            };
            next.clone_from(&parsed.forked_from);
            history.push(parsed);
        }
        // The nearest compaction, in the fork's own records or its history's, cleared what came
        // before it.
        if !own.compacted {
            for part in &history {
                let mut texts = part.developer_texts.clone();
                texts.append(&mut own.developer_texts);
                own.developer_texts = texts;
                if part.compacted {
                    break;
                }
            }
        }
        Some(own)
    }
}

/// The rollout of conversation `id` under `root` (`rollout-<time>-<id>.jsonl`, at any depth).
fn rollout_named(root: &Path, id: &str) -> Option<PathBuf> {
    let suffix = format!("-{id}.jsonl");
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
        {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.to_string_lossy().ends_with(&suffix) {
                return Some(path);
            }
        }
    }
    None
}

/// How much of a rollout's start [`forked_from`] reads: its `session_meta` names the parent
/// before the long instructions it carries.
const META_HEAD: u64 = 64 << 10;

/// The conversation the rollout at `path` was forked from (`codex exec fork <id>`): its
/// `session_meta`'s `forked_from_id`, which the client writes before it runs a hook. `None` for
/// a rollout of a conversation of its own, or a file that cannot be read.
pub fn forked_from(path: &Path) -> Option<String> {
    use std::io::Read as _;
    const KEY: &[u8] = b"\"forked_from_id\":\"";
    let mut head = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(META_HEAD)
        .read_to_end(&mut head)
        .ok()?;
    let first = head.split(|b| *b == b'\n').next()?;
    // The first record, and a rollout's.
    memchr::memmem::find(first, b"\"session_meta\"")?;
    let at = memchr::memmem::find(first, KEY)? + KEY.len();
    let end = memchr::memchr(b'"', &first[at..])? + at;
    let id = std::str::from_utf8(&first[at..end]).ok()?;
    (!id.is_empty()).then(|| id.to_owned())
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
    fn a_forked_rollout_names_its_parent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rollout.jsonl");
        let meta = line(
            "session_meta",
            &json!({"id": "c-2", "forked_from_id": "c-1", "cwd": "/p",
                "base_instructions": {"text": "x".repeat(100_000)}}),
        );
        std::fs::write(&path, meta + "\n").unwrap();
        assert_eq!(forked_from(&path).as_deref(), Some("c-1"));
        std::fs::write(&path, line("session_meta", &json!({"id": "c-3"})) + "\n").unwrap();
        assert_eq!(forked_from(&path), None);
        std::fs::write(&path, developer("\"forked_from_id\":\"c-1\"")).unwrap();
        assert_eq!(forked_from(&path), None);
        assert_eq!(forked_from(&dir.path().join("none.jsonl")), None);
    }

    #[test]
    fn a_fork_holds_its_parents_records_before_the_fork_point() {
        let dir = tempfile::tempdir().unwrap();
        let day = dir.path().join("sessions/2026/12/02");
        std::fs::create_dir_all(&day).unwrap();
        let ordinal = |n: u64, l: String| {
            let mut v: Value = serde_json::from_str(&l).unwrap();
            v["ordinal"] = json!(n);
            v.to_string()
        };
        let parent = [
            ordinal(0, line("session_meta", &json!({"id": "p-1", "cwd": "/p"}))),
            ordinal(1, developer("[Preloaded: /a]\nA\n")),
            ordinal(2, developer("[Preloaded: /b]\nB\n")),
            ordinal(3, developer("[Preloaded: /after-the-fork]\n")),
        ]
        .join("\n");
        std::fs::write(day.join("rollout-2026-12-02T00-00-00-p-1.jsonl"), parent).unwrap();
        let fork = [
            ordinal(
                3,
                line(
                    "session_meta",
                    &json!({"id": "f-1", "cwd": "/p",
                "forked_from_id": "p-1", "forked_from_ordinal_exclusive": 3}),
                ),
            ),
            ordinal(4, developer("[Preloaded: /c]\nC\n")),
        ]
        .join("\n");
        let path = day.join("rollout-2026-12-02T00-01-00-f-1.jsonl");
        std::fs::write(&path, &fork).unwrap();
        let read = Rollout::read(&path, &fork).unwrap();
        assert_eq!(read.forked_from, Some(("p-1".to_owned(), Some(3))));
        assert_eq!(
            read.developer_texts,
            vec![
                "[Preloaded: /a]\nA\n",
                "[Preloaded: /b]\nB\n",
                "[Preloaded: /c]\nC\n"
            ]
        );
        // Read alone, the fork holds its own records only.
        assert_eq!(Rollout::parse(&fork).unwrap().developer_texts.len(), 1);
    }

    #[test]
    fn a_file_that_does_not_open_with_session_meta_is_no_rollout() {
        assert_eq!(Rollout::parse(&developer("[Preloaded: /a]\n")), None);
        assert_eq!(Rollout::parse("not json\n"), None);
        assert_eq!(Rollout::parse(""), None);
    }
}
