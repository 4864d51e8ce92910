//! `preload audit`: the receipt a user can read. What the model received on a conversation's
//! active branch, read back from the client's own transcript (`mechanisms::receipt`), beside
//! what the session's record says is in that context window: how many times each file
//! arrived, the duplicates, and the files the record claims that never arrived.
//!
//! Exit 0 when nothing is duplicated or missing, 1 when something is, 2 with one line on stderr
//! when the file cannot be read or is no transcript.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Value, json};

use crate::exit::{self, Exit};
use crate::words::plural;
use preload_core::mechanisms::context::Context;
use preload_core::mechanisms::receipt::{Receipt, ReceiptError};
use preload_core::mechanisms::session;
use preload_core::pipeline::runner;
use preload_core::primitives::env::{self, Env};
use preload_core::primitives::input::HookInput;
use preload_core::primitives::paths;
use preload_core::state::{self, IN_CONTEXT};

/// `preload audit`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AuditArgs {
    /// The transcript: a Claude Code conversation (`~/.claude/projects/<project>/<id>.jsonl`)
    /// or a Codex rollout. Default: the latest conversation of the current project.
    #[arg(long, value_name = "PATH", value_parser = crate::path_arg)]
    pub transcript: Option<PathBuf>,
    /// The state whose record the transcript is held against (a `.state.json`, a seed or an
    /// ended record). Default: the one that holds the transcript's conversation.
    #[arg(long, value_name = "PATH", value_parser = crate::path_arg)]
    pub state: Option<PathBuf>,
    /// Print one JSON object, for scripts.
    #[arg(long)]
    pub json: bool,
}

/// Why an audit could not be made.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The transcript is unreadable or no transcript.
    #[error(transparent)]
    Receipt(#[from] ReceiptError),
    /// No transcript was named and the project has none.
    #[error("no conversation of this project in {0} (name one with --transcript)")]
    NoConversation(String),
    /// The state named with `--state` is unreadable.
    #[error("cannot read the state {path}: {reason}")]
    State {
        /// The state file.
        path: String,
        /// Why.
        reason: String,
    },
}

/// A receipt and the record it was held against.
#[derive(Debug, Clone)]
pub struct Audit {
    /// The transcript read.
    pub transcript: PathBuf,
    /// What it shows.
    pub receipt: Receipt,
    /// The state whose record it was held against, when one was found.
    pub record: Option<PathBuf>,
    /// The files that arrived more than once.
    pub duplicates: Vec<String>,
    /// The files the record lists in the window that the transcript never shows.
    pub missing: Vec<String>,
}

impl Audit {
    /// Whether the transcript and the record agree: nothing twice, nothing missing.
    pub fn is_clean(&self) -> bool {
        self.duplicates.is_empty() && self.missing.is_empty()
    }

    /// The audit as one JSON object: `files` (`path`, `count`, and `parts`, `renewed`,
    /// `expanded` where they say something), `duplicates`, `missing`, and what was read.
    pub fn to_json(&self) -> Value {
        let files: Vec<Value> = self
            .receipt
            .files
            .iter()
            .map(|f| {
                let mut file = json!({"path": f.path, "count": f.count});
                if f.parts > 1 {
                    file["parts"] = json!(f.parts);
                }
                if f.renewed > 0 {
                    file["renewed"] = json!(f.renewed);
                }
                if f.expanded > 0 {
                    file["expanded"] = json!(f.expanded);
                }
                file
            })
            .collect();
        json!({
            "transcript": self.transcript,
            "client": self.receipt.client.as_str(),
            "conversation": self.receipt.conversation,
            "forkedFrom": self.receipt.forked_from,
            "state": self.record,
            "contexts": self.receipt.contexts,
            "files": files,
            "duplicates": self.duplicates,
            "missing": self.missing,
        })
    }

    /// The audit for people.
    pub fn render(&self) -> String {
        let r = &self.receipt;
        let mut out = String::new();
        let _ = writeln!(out, "transcript: {}", self.transcript.display());
        let _ = writeln!(
            out,
            "conversation: {} ({}){}",
            r.conversation.as_deref().unwrap_or("(unknown)"),
            r.client.as_str(),
            r.forked_from
                .as_ref()
                .map(|p| format!(", forked from {p}"))
                .unwrap_or_default()
        );
        let _ = writeln!(
            out,
            "record: {}",
            self.record.as_ref().map_or_else(
                || "none found (nothing to hold the transcript against)".to_owned(),
                |p| p.display().to_string()
            )
        );
        let _ = writeln!(
            out,
            "active branch: {} in {}",
            plural(r.files.len(), "file", "files"),
            plural(r.contexts, "hook context", "hook contexts")
        );
        for f in &r.files {
            let mut notes = Vec::new();
            if f.parts > 1 {
                notes.push(format!("{} parts", f.parts));
            }
            if f.renewed > 0 {
                notes.push(plural(f.renewed, "new text", "new texts"));
            }
            if f.expanded > 0 {
                notes.push("expanded by the client".to_owned());
            }
            let notes = if notes.is_empty() {
                String::new()
            } else {
                format!(" ({})", notes.join(", "))
            };
            let _ = writeln!(out, "  {}x {}{notes}", f.count, f.path);
        }
        let list = |name: &str, paths: &[String], out: &mut String| {
            if paths.is_empty() {
                let _ = writeln!(out, "{name}: none");
            } else {
                let _ = writeln!(out, "{name}: {}", paths.len());
                for p in paths {
                    let _ = writeln!(out, "  {p}");
                }
            }
        };
        list("duplicates", &self.duplicates, &mut out);
        list("missing", &self.missing, &mut out);
        out.truncate(out.trim_end().len());
        out
    }
}

/// Run `preload audit`.
pub fn run(args: &AuditArgs) -> ExitCode {
    let vars = Env::from_process();
    match audit(args, &vars, &crate::process_cwd()) {
        Ok(found) => {
            if args.json {
                runner::print_text(&found.to_json().to_string());
            } else {
                runner::print_text(&found.render());
            }
            if found.is_clean() {
                Exit::Success.into()
            } else {
                Exit::Failure.into()
            }
        }
        Err(err) => {
            exit::complain(&format!("preload audit: {err}"));
            Exit::Usage.into()
        }
    }
}

/// The audit `args` ask for, run from `cwd`.
pub fn audit(args: &AuditArgs, vars: &Env, cwd: &Path) -> Result<Audit, AuditError> {
    let home = vars
        .get(env::HOME)
        .map_or_else(|| PathBuf::from("/"), PathBuf::from);
    let transcript = match &args.transcript {
        Some(path) => cwd.join(path),
        None => latest_conversation(&home, cwd)?,
    };
    let receipt = Receipt::of_file(&transcript, &home)?;
    let record = match &args.state {
        Some(path) => Some(cwd.join(path)),
        None => find_record(vars, cwd, &receipt),
    };
    let listed = match &record {
        Some(path) => {
            let state = state::load(path).map_err(|e| AuditError::State {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
            state.path_list(IN_CONTEXT)
        }
        None => Vec::new(),
    };
    let duplicates = receipt
        .duplicates()
        .into_iter()
        .map(|f| f.path.clone())
        .collect();
    let missing = receipt.missing(listed.iter().map(String::as_str), &home);
    Ok(Audit {
        transcript,
        receipt,
        record,
        duplicates,
        missing,
    })
}

/// The state that holds the receipt's conversation, looked for in the project the transcript
/// names (its `cwd`), else in `cwd`'s.
fn find_record(vars: &Env, cwd: &Path, receipt: &Receipt) -> Option<PathBuf> {
    let conversation = receipt.conversation.as_deref()?;
    let dir = receipt
        .cwd
        .as_deref()
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
        .unwrap_or_else(|| cwd.to_path_buf());
    let input = HookInput::from_value(json!({ "cwd": dir }));
    let ctx = Context::new(vars.clone(), "preload", &input, Duration::from_secs(1));
    session::conversation_record(&ctx, conversation).map(|found| found.path)
}

/// Claude Code's directory of a project's conversations: the project's path with every
/// character that is not a letter or digit as `-`.
pub fn conversations_dir(home: &Path, project: &Path) -> PathBuf {
    let name: String = project
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    home.join(".claude/projects").join(name)
}

/// The newest conversation of the project `cwd` is in (its root, else `cwd` itself).
pub fn latest_conversation(home: &Path, cwd: &Path) -> Result<PathBuf, AuditError> {
    let project = paths::find_project_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    let dir = conversations_dir(home, &project);
    fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl") && p.is_file())
        .max_by_key(|p| fs::metadata(p).and_then(|m| m.modified()).ok())
        .ok_or_else(|| AuditError::NoConversation(dir.display().to_string()))
}
