//! What `preload install --agent codex` says and does beyond the hooks file: whether Codex's
//! `config.toml` turns its hooks off (`[features] hooks = false`, or the older `codex_hooks`),
//! turning them on with `--enable`, and how Codex comes to trust the hooks.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use preload_core::primitives::file;

use super::previous_of;
use super::targets::Targets;

/// Why Codex's `config.toml` was not read or changed.
#[derive(Debug, thiserror::Error)]
pub enum CodexError {
    /// Reading or writing the file failed; it is as it was.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

/// The feature keys that turn Codex's hooks on or off (`codex_hooks`: the older name).
const FEATURE_KEYS: [&str; 2] = ["hooks", "codex_hooks"];

/// The lines of `text` (a `config.toml`) that turn hooks off: `hooks = false` or
/// `codex_hooks = false` in the `[features]` table, or `features.hooks = false` at the top.
pub fn hooks_off(text: &str) -> Vec<usize> {
    let mut table = String::new();
    let mut off = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split('#').next().unwrap_or("").trim();
        if code.starts_with('[') {
            code.trim_matches(|c| c == '[' || c == ']')
                .trim()
                .clone_into(&mut table);
            continue;
        }
        let Some((key, value)) = code.split_once('=') else {
            continue;
        };
        let key = key.trim().trim_matches('"');
        let feature = match table.as_str() {
            "features" => FEATURE_KEYS.contains(&key),
            "" => key
                .strip_prefix("features.")
                .is_some_and(|k| FEATURE_KEYS.contains(&k)),
            _ => false,
        };
        if feature && value.trim() == "false" {
            off.push(i);
        }
    }
    off
}

/// `text` with the lines `off` says turn hooks off set to `true`, the rest as it was.
fn turned_on(text: &str, off: &[usize]) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if off.contains(&i) {
            out.push_str(&line.replacen("false", "true", 1));
        } else {
            out.push_str(line);
        }
    }
    out
}

/// After the hooks file was wired: the lines install reports about Codex, and with `enable`
/// its hooks turned on where `config.toml` turns them off (the file as it was kept in
/// `config.toml.preload-previous`).
pub fn after_install(targets: &Targets, enable: bool) -> Result<Vec<String>, CodexError> {
    let config = targets.codex_home.join("config.toml");
    let mut lines = Vec::new();
    let text = match fs::read_to_string(&config) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(CodexError::Io {
                action: "read",
                path: config,
                source,
            });
        }
    };
    let off = text.as_deref().map(hooks_off).unwrap_or_default();
    match (text, off.is_empty(), enable) {
        (Some(text), false, true) => {
            write(&previous_of(&config), &text)?;
            write(&config, &turned_on(&text, &off))?;
            lines.push(format!(
                "codex: hooks turned on in {} ([features]; the file as it was kept in {})",
                config.display(),
                previous_of(&config).display()
            ));
        }
        (Some(_), false, false) => lines.push(format!(
            "codex: {} turns hooks off ([features] hooks = false): none of them runs; `preload install --agent codex --enable` turns them on",
            config.display()
        )),
        _ => {}
    }
    lines.push(
        "codex: Codex runs a hook only once you have trusted it (until then it skips it without \
         a word): review and trust them in codex, or run `codex exec \
         --dangerously-bypass-hook-trust` for one run; a project's .codex/hooks.json also needs \
         the project trusted (`codex exec --trust`)"
            .into(),
    );
    Ok(lines)
}

fn write(path: &Path, text: &str) -> Result<(), CodexError> {
    file::write_atomic(path, text.as_bytes()).map_err(|err| CodexError::Io {
        action: "write",
        path: path.to_path_buf(),
        source: err.source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_are_off_only_where_the_features_table_says_so() {
        let text = "model = \"x\"\nfeatures.hooks = false\n[features]\nhooks = false # off\n\
                    other = false\n[profiles.a]\nhooks = false\n[features]\ncodex_hooks=true\n";
        assert_eq!(hooks_off(text), [1, 3]);
        let on = turned_on(text, &hooks_off(text));
        assert_eq!(
            on,
            "model = \"x\"\nfeatures.hooks = true\n[features]\nhooks = true # off\n\
             other = false\n[profiles.a]\nhooks = false\n[features]\ncodex_hooks=true\n"
        );
        assert!(hooks_off(&on).is_empty());
        assert!(hooks_off("[features]\nhooks = true\n").is_empty());
    }
}
