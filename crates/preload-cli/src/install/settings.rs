//! The settings file: read, rewritten in its own layout, backed up and restored.
//!
//! A file that is not valid JSON, or not a JSON object, is refused and left as it is. A second
//! install writes nothing. The first install keeps the file as it was in
//! `<settings>.preload-backup` (no backup: there was no file); uninstall restores that backup byte for byte when nothing else
//! changed since, and otherwise removes exactly our handlers and puts the replaced bash
//! handlers back. Every write (or removal) of the file first keeps it as it was in
//! `<settings>.preload-previous`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value, json};

use preload_core::primitives::file;
use preload_core::primitives::file::OpError;

use super::merge::{has_our_handlers, unwire, wire_in};
use super::wiring::all_handlers;
use super::wiring::{
    Agent, TEMPLATE_PREFIX, WiringMode, agent_of, hooks_value, our_binary, program_of,
};
use super::{backup_of, previous_of};

/// Why a settings file was not read or written.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// A file operation failed.
    #[error(transparent)]
    Io(#[from] OpError),
    /// The settings file is not valid JSON; it is left as it is.
    #[error(
        "{path} is not valid JSON ({why}); nothing was changed: fix it first (comments and trailing commas are not JSON)"
    )]
    NotJson {
        /// The settings file.
        path: PathBuf,
        /// The parse error.
        why: String,
    },
    /// The settings file is JSON but not an object; it is left as it is.
    #[error(
        "{path} is JSON but not an object (it holds {found}); nothing was changed: a settings file is one JSON object"
    )]
    NotAnObject {
        /// The settings file.
        path: PathBuf,
        /// What it holds instead.
        found: &'static str,
    },
}

/// `hooks/settings.json`: the wiring with [`TEMPLATE_PREFIX`].
pub fn settings_template() -> String {
    let mut text = to_pretty(&json!({ "hooks": hooks_value(TEMPLATE_PREFIX) }), b"  ");
    text.push('\n');
    text
}

/// How a settings file is laid out, so a rewrite changes only what it must.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Layout {
    indent: Vec<u8>,
    final_newline: bool,
}

impl Layout {
    fn of(text: &str) -> Self {
        let indent = text
            .lines()
            .skip(1)
            .find(|l| !l.trim().is_empty())
            .map(|l| {
                l.bytes()
                    .take_while(|b| *b == b' ' || *b == b'\t')
                    .collect::<Vec<u8>>()
            })
            .filter(|i| !i.is_empty())
            .unwrap_or_else(|| b"  ".to_vec());
        Self {
            indent,
            final_newline: text.is_empty() || text.ends_with('\n'),
        }
    }

    fn render(&self, value: &Value) -> String {
        let mut text = to_pretty(value, &self.indent);
        if self.final_newline {
            text.push('\n');
        }
        text
    }
}

/// `value` as pretty JSON indented by `indent`.
pub(crate) fn to_pretty(value: &Value, indent: &[u8]) -> String {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(indent);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    if value.serialize(&mut ser).is_err() {
        return value.to_string();
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A settings file read: its text (`None` when absent) and its parsed document.
struct SettingsFile {
    text: Option<String>,
    doc: Value,
}

/// Read the settings file: absent and empty (or blank) count as `{}`; anything else must be
/// one JSON object, or it is refused and left as it is.
fn read_settings(path: &Path) -> Result<SettingsFile, SettingsError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(SettingsFile {
                text: None,
                doc: Value::Object(Map::new()),
            });
        }
        Err(e) => return Err(OpError::at("read", path)(e).into()),
    };
    let text = String::from_utf8(bytes).map_err(|_| SettingsError::NotJson {
        path: path.into(),
        why: "not UTF-8".into(),
    })?;
    if text.trim().is_empty() {
        return Ok(SettingsFile {
            text: Some(text),
            doc: Value::Object(Map::new()),
        });
    }
    let doc = match serde_json::from_str::<Value>(&text) {
        Ok(doc @ Value::Object(_)) => doc,
        Ok(other) => {
            return Err(SettingsError::NotAnObject {
                path: path.into(),
                found: preload_core::state::kind_of(&other),
            });
        }
        Err(e) => {
            return Err(SettingsError::NotJson {
                path: path.into(),
                why: e.to_string(),
            });
        }
    };
    Ok(SettingsFile {
        text: Some(text),
        doc,
    })
}

/// The settings file's document as install reads it (absent: `None`; empty: `{}`), or why it
/// is refused.
pub fn read_document(path: &Path) -> Result<Option<Value>, SettingsError> {
    read_settings(path).map(|f| f.text.map(|_| f.doc))
}

/// Refuse a settings file that could not be wired (not valid JSON, not an object, unreadable)
/// before anything else is done; nothing is written.
pub fn check(path: &Path) -> Result<(), SettingsError> {
    read_settings(path).map(|_| ())
}

/// Keep the file as it is now in `<settings>.preload-previous` (empty: there was no file),
/// before a write or removal of it; when this fails, the settings file is not touched.
fn keep_previous(path: &Path, current: Option<&str>) -> Result<(), SettingsError> {
    write_file(&previous_of(path), current.unwrap_or_default())
}

fn write_file(path: &Path, text: &str) -> Result<(), SettingsError> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(OpError::at("create", dir))?;
    }
    file::write_atomic(path, text.as_bytes())
        .map_err(|err| OpError::at("write", path)(err.source).into())
}

/// What a settings change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The file already said exactly this.
    Unchanged,
    /// The file was written.
    Written,
    /// The backup was put back byte for byte.
    Restored,
    /// The file was removed: there was none before install.
    Removed,
}

/// Wire the settings file; keeps the backup. `native` false only removes our handlers.
pub fn install_settings(path: &Path, prefix: &Path, native: bool) -> Result<Change, SettingsError> {
    install_settings_in(
        path,
        prefix,
        native,
        WiringMode::Binaries,
        Agent::ClaudeCode,
    )
}

/// [`install_settings`] with the handlers of `mode`, as `agent` runs them (a Claude Code
/// settings file, or a Codex `hooks.json`: the same `hooks` object).
pub fn install_settings_in(
    path: &Path,
    prefix: &Path,
    native: bool,
    mode: WiringMode,
    agent: Agent,
) -> Result<Change, SettingsError> {
    let file = read_settings(path)?;
    let old = file.text.clone().unwrap_or_default();
    let layout = Layout::of(&old);
    let new_doc = wire_in(&file.doc, &prefix.to_string_lossy(), native, mode, agent);
    let new = layout.render(&new_doc);
    if file.text.as_deref() == Some(new.as_str()) || (file.text.is_none() && !native) {
        return Ok(Change::Unchanged);
    }
    let backup = backup_of(path);
    if !has_our_handlers(&file.doc) {
        // The state before preload was wired: the file byte for byte (an empty file too), or
        // no backup at all when there was no file.
        match &file.text {
            Some(text) => write_file(&backup, text)?,
            None => match fs::remove_file(&backup) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    return Err(OpError::at("remove", &backup)(e).into());
                }
                _ => {}
            },
        }
    }
    keep_previous(path, file.text.as_deref())?;
    write_file(path, &new)?;
    Ok(Change::Written)
}

/// Take our wiring out of the settings file (see the module docs for restore vs. merge).
pub fn uninstall_settings(path: &Path) -> Result<Change, SettingsError> {
    let file = read_settings(path)?;
    let backup_path = backup_of(path);
    let backup = match fs::read_to_string(&backup_path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(OpError::at("read", &backup_path)(e).into()),
    };
    let Some(current) = file.text else {
        return Ok(Change::Unchanged);
    };
    let backup_doc = backup.as_deref().and_then(|t| {
        if t.trim().is_empty() {
            Some(Value::Object(Map::new()))
        } else {
            serde_json::from_str::<Value>(t)
                .ok()
                .filter(Value::is_object)
        }
    });
    // No backup beside wiring of ours: there was no file before install.
    let before = match (&backup, &backup_doc) {
        (Some(text), Some(doc)) => Some((Some(text.as_str()), doc.clone())),
        (None, _) => Some((None, Value::Object(Map::new()))),
        (Some(_), None) => None,
    };
    if let (Some((text, doc)), Some(prefix)) = (before, installed_prefix(&file.doc)) {
        // Nothing changed since install: what install would write from the backup is exactly
        // what is there. Then the backup is the previous wiring, byte for byte.
        let mode = WiringMode::of(&file.doc);
        let agent = agent_of(&file.doc);
        let layout = Layout::of(text.unwrap_or(""));
        let expected = layout.render(&wire_in(&doc, &prefix, true, mode, agent));
        if expected == current {
            keep_previous(path, Some(&current))?;
            let Some(text) = text else {
                fs::remove_file(path).map_err(OpError::at("remove", path))?;
                return Ok(Change::Removed);
            };
            write_file(path, text)?;
            fs::remove_file(&backup_path).map_err(OpError::at("remove", &backup_path))?;
            return Ok(Change::Restored);
        }
    }
    let new = Layout::of(&current).render(&unwire(&file.doc, backup_doc.as_ref()));
    if new == current {
        return Ok(Change::Unchanged);
    }
    keep_previous(path, Some(&current))?;
    write_file(path, &new)?;
    Ok(Change::Written)
}

/// The directory our handlers' commands live in, when they all agree.
pub fn installed_prefix(settings: &Value) -> Option<String> {
    let mut dirs = all_handlers(settings)
        .filter(|(_, _, h)| our_binary(h).is_some())
        .filter_map(|(_, _, h)| {
            let program = program_of(h)?;
            Path::new(&program)
                .parent()
                .map(|p| p.to_string_lossy().into_owned())
        });
    let first = dirs.next()?;
    dirs.all(|d| d == first).then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_keeps_indent_and_final_newline() {
        let layout = Layout::of("{\n    \"a\": 1\n}");
        assert_eq!(layout.render(&json!({"a": 1})), "{\n    \"a\": 1\n}");
        assert_eq!(
            Layout::of("").render(&json!({"a": 1})),
            "{\n  \"a\": 1\n}\n"
        );
    }
}
