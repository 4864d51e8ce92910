//! Codex's hook trust: the entries of `$CODEX_HOME/config.toml` that let Codex run a hook
//! (`[hooks.state."<key>"] trusted_hash = "sha256:<hex>"`) and load a project's `.codex/`
//! (`[projects."<path>"] trust_level = "trusted"`).
//!
//! Codex 0.171.0 keys a hook by `<hooks.json path>:<event_snake>:<group>:<handler>` (its
//! position) and hashes its definition: SHA-256 over the compact JSON, keys sorted, of
//! `{"event_name", "hooks": [{"async", "command", "timeout", "type"}], "matcher"}` (a handler's
//! `statusMessage` when it has one; no `matcher` when the group has none; the timeout 600 when
//! unset). A hook whose entry is missing or names another hash is skipped without a word. The
//! file is edited with `toml_edit`, so everything else in it (comments, order, other tables)
//! stays as it was.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use toml_edit::{DocumentMut, Item, Table};

use preload_core::primitives::file;

use super::previous_of;
use super::wiring::our_binary;

/// The comment install puts above a project's trust table it added, so uninstall takes out
/// only a table it wrote.
pub const PROJECT_MARK: &str = "# trusted by preload install --trust-project";

/// Why Codex's `config.toml` was not read or written; it is as it was.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// Reading or writing the file failed.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The file is not TOML Codex could read; nothing was written.
    #[error("{path} is not valid TOML ({why}); nothing was changed: fix it first")]
    NotToml {
        /// The file.
        path: PathBuf,
        /// The parse error.
        why: String,
    },
    /// A table the entries go into is something else in the file.
    #[error("{path}: `{key}` is not a table; nothing was changed")]
    NotATable {
        /// The file.
        path: PathBuf,
        /// The key.
        key: &'static str,
    },
}

/// One hook registration of ours as Codex identifies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    /// The `[hooks.state]` key: source, event, group and handler index.
    pub key: String,
    /// The hash of its definition, `sha256:<hex>`.
    pub hash: String,
    /// The event, as `hooks.json` spells it.
    pub event: String,
    /// The group's matcher, `""` when none.
    pub matcher: String,
    /// The command line.
    pub command: String,
}

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

/// The path Codex names `path` by: its real path when it exists (Codex starts from its
/// working directory, which the kernel gives without symbolic links), else `path`.
pub fn real_path(path: &Path) -> PathBuf {
    fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Our registrations in `doc`, the `hooks.json` at `source`, with Codex's keys and hashes.
pub fn registrations(source: &Path, doc: &Value) -> Vec<Registration> {
    let source = real_path(source);
    let mut out = Vec::new();
    let Some(hooks) = doc.get("hooks").and_then(Value::as_object) else {
        return out;
    };
    for (event, groups) in hooks {
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            let matcher = group.get("matcher").and_then(Value::as_str);
            let handlers = group.get("hooks").and_then(Value::as_array);
            for (h, handler) in handlers.into_iter().flatten().enumerate() {
                if our_binary(handler).is_none() {
                    continue;
                }
                out.push(Registration {
                    key: format!("{}:{}:{g}:{h}", source.display(), event_label(event)),
                    hash: hook_hash(event, matcher, handler),
                    event: event.clone(),
                    matcher: matcher.unwrap_or("").to_owned(),
                    command: handler
                        .get("command")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                });
            }
        }
    }
    out
}

/// How Codex sees one registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustStatus {
    /// Trusted with its current definition: Codex runs it.
    Trusted,
    /// Trusted with another definition: Codex skips it.
    Stale,
    /// Never trusted: Codex skips it.
    Missing,
}

/// Where Codex decides whether a project is trusted: the root of its git repository (the
/// nearest ancestor with a `.git`), else the project itself, by its real path.
pub fn project_key(project: &Path) -> PathBuf {
    let project = real_path(project);
    project
        .ancestors()
        .find(|d| d.join(".git").exists())
        .map_or_else(|| project.clone(), Path::to_path_buf)
}

/// Codex's `config.toml`, read for an edit that keeps everything else in it.
#[derive(Debug)]
pub struct CodexConfig {
    /// The file.
    pub path: PathBuf,
    text: Option<String>,
    doc: DocumentMut,
}

impl CodexConfig {
    /// Read `path`; a missing file is an empty one. A file that is not TOML is refused.
    pub fn read(path: &Path) -> Result<Self, TrustError> {
        let text = match fs::read_to_string(path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(source) => {
                return Err(TrustError::Io {
                    action: "read",
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let doc = text
            .as_deref()
            .unwrap_or("")
            .parse::<DocumentMut>()
            .map_err(|e| TrustError::NotToml {
                path: path.to_path_buf(),
                why: e.message().to_owned(),
            })?;
        Ok(Self {
            path: path.to_path_buf(),
            text,
            doc,
        })
    }

    /// Rewrite the document's text with `edit` (the file as it was is still what
    /// [`Self::save`] keeps as the previous version).
    pub fn edit_text(&mut self, edit: impl FnOnce(&str) -> String) -> Result<(), TrustError> {
        let text = edit(&self.doc.to_string());
        self.doc = text
            .parse()
            .map_err(|e: toml_edit::TomlError| TrustError::NotToml {
                path: self.path.clone(),
                why: e.message().to_owned(),
            })?;
        Ok(())
    }

    /// The text of the file as it was read (`None`: there was none).
    pub fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }

    /// The hash `key` is trusted with, if any.
    pub fn trusted_hash(&self, key: &str) -> Option<&str> {
        self.doc
            .get("hooks")?
            .get("state")?
            .get(key)?
            .get("trusted_hash")?
            .as_str()
    }

    /// How Codex sees `registration`.
    pub fn status(&self, registration: &Registration) -> TrustStatus {
        match self.trusted_hash(&registration.key) {
            Some(hash) if hash == registration.hash => TrustStatus::Trusted,
            Some(_) => TrustStatus::Stale,
            None => TrustStatus::Missing,
        }
    }

    /// Trust `registration` (its entry written anew). True when that changed the document.
    pub fn trust(&mut self, registration: &Registration) -> Result<bool, TrustError> {
        if self.status(registration) == TrustStatus::Trusted {
            return Ok(false);
        }
        let path = self.path.clone();
        let state = implicit_table(self.doc.as_table_mut(), "hooks", &path)?;
        let state = implicit_table(state, "state", &path)?;
        match state.get_mut(&registration.key) {
            Some(Item::Table(entry)) => {
                entry["trusted_hash"] = toml_edit::value(registration.hash.as_str());
            }
            Some(item) if item.is_inline_table() => {
                item["trusted_hash"] = toml_edit::value(registration.hash.as_str());
            }
            _ => {
                let mut entry = Table::new();
                entry["trusted_hash"] = toml_edit::value(registration.hash.as_str());
                state.insert(&registration.key, Item::Table(entry));
            }
        }
        Ok(true)
    }

    /// Take out the entry of `registration` when it trusts exactly its definition (what
    /// install wrote), and the entry's table when nothing else is left in it. True when
    /// removed.
    pub fn untrust(&mut self, registration: &Registration) -> bool {
        if self.status(registration) != TrustStatus::Trusted {
            return false;
        }
        let Some(state) = self
            .doc
            .get_mut("hooks")
            .and_then(|h| h.get_mut("state"))
            .and_then(Item::as_table_like_mut)
        else {
            return false;
        };
        let only_hash = state
            .get(&registration.key)
            .and_then(Item::as_table_like)
            .is_some_and(|t| t.len() == 1);
        if only_hash {
            state.remove(&registration.key);
        } else if let Some(entry) = state
            .get_mut(&registration.key)
            .and_then(Item::as_table_like_mut)
        {
            entry.remove("trusted_hash");
        }
        true
    }

    /// Whether Codex trusts the project keyed `key` ([`project_key`]).
    pub fn project_trusted(&self, key: &Path) -> bool {
        self.doc
            .get("projects")
            .and_then(|p| p.get(key.to_string_lossy().as_ref()))
            .and_then(|p| p.get("trust_level"))
            .and_then(Item::as_str)
            == Some("trusted")
    }

    /// Trust the project keyed `key`; a table install adds carries [`PROJECT_MARK`]. True when
    /// that changed the document.
    pub fn trust_project(&mut self, key: &Path) -> Result<bool, TrustError> {
        if self.project_trusted(key) {
            return Ok(false);
        }
        let path = self.path.clone();
        let projects = implicit_table(self.doc.as_table_mut(), "projects", &path)?;
        let name = key.to_string_lossy();
        if let Some(entry) = projects.get_mut(&name).and_then(Item::as_table_like_mut) {
            // The user's own entry (untrusted): set, not replaced.
            entry.insert("trust_level", toml_edit::value("trusted"));
            return Ok(true);
        }
        let mut entry = Table::new();
        entry["trust_level"] = toml_edit::value("trusted");
        entry.decor_mut().set_prefix(format!("\n{PROJECT_MARK}\n"));
        projects.insert(&name, Item::Table(entry));
        Ok(true)
    }

    /// Take out the project's trust table when install added it ([`PROJECT_MARK`]). True when
    /// removed.
    pub fn untrust_project(&mut self, key: &Path) -> bool {
        let name = key.to_string_lossy();
        let Some(projects) = self.doc.get_mut("projects").and_then(Item::as_table_mut) else {
            return false;
        };
        let ours = projects
            .get(&name)
            .and_then(Item::as_table)
            .is_some_and(|t| {
                t.len() == 1
                    && t.decor()
                        .prefix()
                        .and_then(|p| p.as_str())
                        .is_some_and(|p| p.contains(PROJECT_MARK))
            });
        if ours {
            projects.remove(&name);
        }
        ours
    }

    /// The text the document now renders to.
    pub fn render(&self) -> String {
        let mut text = self.doc.to_string();
        // A table install added at the end of an empty file starts with its blank line.
        if self.text.as_deref().is_none_or(str::is_empty) {
            text = text.trim_start_matches('\n').to_owned();
        }
        text
    }

    /// Whether the document differs from the file.
    pub fn changed(&self) -> bool {
        self.render() != self.text.as_deref().unwrap_or("")
    }

    /// Write the document when it changed, the file as it was kept in
    /// `config.toml.preload-previous` first (empty: there was none); a symbolic link is
    /// written through. True when written.
    pub fn save(&self) -> Result<bool, TrustError> {
        if !self.changed() {
            return Ok(false);
        }
        let target = real_path(&self.path);
        for dir in [self.path.parent(), target.parent()].into_iter().flatten() {
            fs::create_dir_all(dir).map_err(|source| TrustError::Io {
                action: "create",
                path: dir.to_path_buf(),
                source,
            })?;
        }
        write(&previous_of(&self.path), self.text.as_deref().unwrap_or(""))?;
        write(&target, &self.render())?;
        Ok(true)
    }
}

/// The table `key` of `parent`, made (implicit: no header of its own) when absent.
fn implicit_table<'a>(
    parent: &'a mut Table,
    key: &'static str,
    path: &Path,
) -> Result<&'a mut Table, TrustError> {
    let item = parent.entry(key).or_insert_with(|| {
        let mut table = Table::new();
        table.set_implicit(true);
        Item::Table(table)
    });
    item.as_table_mut().ok_or_else(|| TrustError::NotATable {
        path: path.to_path_buf(),
        key,
    })
}

fn write(path: &Path, text: &str) -> Result<(), TrustError> {
    file::write_atomic(path, text.as_bytes()).map_err(|err| TrustError::Io {
        action: "write",
        path: path.to_path_buf(),
        source: err.source,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Hashes and keys the pinned Codex CLI (0.171.0) reported for a `preload install --agent
    /// codex` wiring (its app server's `hooks/list`, `currentHash`).
    #[test]
    fn hashes_are_the_ones_codex_computes() {
        let handler = |command: &str, timeout: u64| json!({"type": "command", "command": command, "timeout": timeout});
        assert_eq!(
            hook_hash(
                "PreToolUse",
                Some("*"),
                &handler("PRELOAD_AGENT=codex /tmp/tx/bin/preload-overflow", 5)
            ),
            "sha256:6f3c351f67f02477b00e51e41f2753e919075cbed44687e869338c645a1776c2"
        );
        assert_eq!(
            hook_hash(
                "SessionStart",
                Some("compact"),
                &handler(
                    "PRELOAD_AGENT=codex /tmp/tx/bin/preload-compaction-reread sessionstart",
                    10
                )
            ),
            "sha256:98701199db4c3dd9b4f5e6d5fab34134368f1798ac7f3b4a963316ec4ef5fa14"
        );
        assert_eq!(
            hook_hash(
                "UserPromptSubmit",
                None,
                &handler("PRELOAD_AGENT=codex /tmp/tx/bin/preload-prompt-submit", 10)
            ),
            "sha256:af57fb1046fe403c267458e900d8dd8a0191f1b533edf7fe9edc2e1013178d47"
        );
        assert_eq!(event_label("SubagentStart"), "subagent_start");
    }

    #[test]
    fn trust_and_untrust_keep_the_rest_of_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("config.toml");
        let before = "# my settings\nmodel = \"x\" # the model\n\n[profiles.a]\nmodel = \"y\"\n";
        fs::write(&path, before).unwrap();
        let reg = Registration {
            key: "/p/.codex/hooks.json:pre_tool_use:0:0".into(),
            hash: "sha256:ab".into(),
            event: "PreToolUse".into(),
            matcher: "*".into(),
            command: "c".into(),
        };
        let mut config = CodexConfig::read(&path).unwrap();
        assert!(config.trust(&reg).unwrap());
        assert!(config.trust_project(Path::new("/p")).unwrap());
        assert!(config.save().unwrap());
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.starts_with(before), "{text}");
        assert!(
            text.contains(
                "[hooks.state.\"/p/.codex/hooks.json:pre_tool_use:0:0\"]\ntrusted_hash = \"sha256:ab\""
            ),
            "{text}"
        );
        assert!(
            text.contains("[projects.\"/p\"]\ntrust_level = \"trusted\""),
            "{text}"
        );
        let mut config = CodexConfig::read(&path).unwrap();
        assert_eq!(config.status(&reg), TrustStatus::Trusted);
        assert!(config.project_trusted(Path::new("/p")));
        assert!(!config.trust(&reg).unwrap());
        assert!(config.untrust(&reg));
        assert!(config.untrust_project(Path::new("/p")));
        assert!(config.save().unwrap());
        assert_eq!(fs::read_to_string(&path).unwrap(), before);
    }

    #[test]
    fn a_project_the_user_trusted_stays_and_a_broken_file_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("config.toml");
        fs::write(&path, "[projects.\"/p\"]\ntrust_level = \"trusted\"\n").unwrap();
        let mut config = CodexConfig::read(&path).unwrap();
        assert!(!config.trust_project(Path::new("/p")).unwrap());
        assert!(!config.untrust_project(Path::new("/p")));
        fs::write(&path, "model = \n").unwrap();
        assert!(matches!(
            CodexConfig::read(&path),
            Err(TrustError::NotToml { .. })
        ));
    }
}
