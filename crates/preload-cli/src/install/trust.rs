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

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;
use toml_edit::{DocumentMut, Item, Table};

use preload_core::primitives::file;

use super::previous_of;
use super::wiring::our_binary;

mod hash;
pub use hash::{event_label, hook_hash};

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
mod tests;
