//! Phase transitions as `session.sh phase` enforces them.
//!
//! Here: the label checks and the sequence rules over the session's `phases`. The proof needed
//! to leave a phase is [`proof`] (checked with [`crate::schema`]); the one locked write that
//! records the new phase, its proof and the new phase's command files is [`change_phase`].
//!
//! A refused transition changes nothing, and its message ([`TransitionError`]) and exit code
//! are the engine's, since the agent reads them.

mod change;
pub mod proof;

pub use change::{PhaseRequest, change_phase, describe};

use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value, json};

use preload_core::state::StateError;
use preload_core::state::phases::label_sort_key;
use preload_core::state::{PhaseDef, Phases};
use proof::ProofError;

/// Why a phase transition was refused. Each message is the engine's, word for word (so not in
/// the style of this crate's own messages): the agent reads it.
#[derive(Debug, thiserror::Error)]
pub enum TransitionError {
    /// The phase is empty (lib.sh's `validate_phase`).
    #[error("ERROR: validate_phase: empty phase label")]
    EmptyLabel,
    /// The phase holds `/`, `&`, `\` or a newline (lib.sh's `validate_phase`).
    #[error(
        "ERROR: validate_phase: invalid characters in phase label '{phase}' (no /, &, \\, or newlines)"
    )]
    InvalidCharacters {
        /// The requested phase.
        phase: String,
    },
    /// The label is none of `N`, `N.M`, `N.A`, `N.MA`.
    #[error(
        "§CMD_UPDATE_PHASE: Invalid phase label format: '{label}'. Valid formats: N, N.M, N.A, N.MA (single uppercase). Got: '{requested}'"
    )]
    LabelFormat {
        /// The label of the requested phase.
        label: String,
        /// The requested phase.
        requested: String,
    },
    /// The session directory has no state file.
    #[error("§CMD_REQUIRE_ACTIVE_SESSION: No .state.json in {dir} — is the session active?")]
    NoSession {
        /// The session directory.
        dir: PathBuf,
    },
    /// Out of sequence, or a switch between branches, without the user's approval.
    #[error("{0}")]
    Unapproved(Box<Rejection>),
    /// The proof for leaving the current phase is missing or does not hold.
    #[error(transparent)]
    Proof(#[from] ProofError),
    /// The state file could not be read or written.
    #[error("preload: {0}")]
    State(#[from] StateError),
}

/// What a command printed, and whether it was refused (exit 1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// True when the command was refused.
    pub refused: bool,
}

impl Outcome {
    /// Add a line to standard output.
    pub fn say(&mut self, line: &str) {
        self.stdout.push_str(line);
        self.stdout.push('\n');
    }

    /// Add a line to standard error.
    pub fn warn(&mut self, line: &str) {
        self.stderr.push_str(line);
        self.stderr.push('\n');
    }

    /// Refuse with `message` on standard error.
    pub fn refuse(&mut self, message: &str) {
        self.warn(message);
        self.refused = true;
    }
}

/// lib.sh's `validate_phase`: not empty, and none of `/`, `&`, `\` or a newline.
pub fn validate_phase(phase: &str) -> Result<(), TransitionError> {
    if phase.is_empty() {
        return Err(TransitionError::EmptyLabel);
    }
    if phase.contains(['/', '&', '\\', '\n']) {
        return Err(TransitionError::InvalidCharacters {
            phase: phase.to_owned(),
        });
    }
    Ok(())
}

/// The label of a phase string as the engine cuts it: everything before the first `": "`.
pub fn label_of(phase: &str) -> &str {
    phase.split_once(": ").map_or(phase, |(label, _)| label)
}

/// The name of a phase string: after the label's `": "`, else the whole string.
fn name_of(phase: &str) -> &str {
    match phase.split_once(':') {
        Some((label, rest)) if !label.is_empty() => rest.strip_prefix(' ').unwrap_or(phase),
        _ => phase,
    }
}

/// The major number of a label: its leading digits, `"0"` when it has none.
fn major_of(label: &str) -> &str {
    let end = label.bytes().take_while(u8::is_ascii_digit).count();
    if end == 0 { "0" } else { &label[..end] }
}

/// The major after `major`, as text.
fn next_major(major: &str) -> String {
    major
        .parse::<u128>()
        .map_or_else(|_| String::new(), |n| (n + 1).to_string())
}

/// A label's description of the step from `current` to `requested` crosses between lettered
/// branches at the same depth (`3.A` → `3.B`, `3.A.1` → `3.B`).
pub fn is_branch_switch(current: &str, requested: &str) -> bool {
    let letters = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_uppercase());
    for (c, r) in current.split('.').zip(requested.split('.')) {
        if letters(c) && letters(r) && c != r {
            return true;
        }
        if c != r {
            return false;
        }
    }
    false
}

/// The first declared phase whose label (or legacy `major`/`minor` form) is `label`, as
/// `session.sh` finds it.
pub fn find<'a>(phases: Phases<'a>, label: &str) -> Option<&'a Map<String, Value>> {
    phases
        .iter()
        .find(|p| p.label().as_deref() == Some(label))
        .map(PhaseDef::fields)
}

/// How a requested transition stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// In sequence.
    Sequential,
    /// In sequence: an undeclared sub-phase of the current major, added to `phases`.
    Append,
    /// Out of sequence: needs the user's approval.
    OutOfSequence,
    /// A switch between lettered branches: needs the user's approval.
    BranchSwitch,
}

/// The judgement of one transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    /// The verdict.
    pub verdict: Verdict,
    /// The current label.
    pub current: String,
    /// The requested label.
    pub requested: String,
    /// The next declared phase after the current one, `(label, name)`.
    pub next: Option<(String, String)>,
}

static LABEL_FORMAT: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^[0-9]+(\.(([0-9]+[A-Z]?)|[A-Z]+))*$").ok());

/// Judge the move from phase `current` to phase `requested` over the declared `phases`; `Err`
/// for a malformed label.
pub fn judge(
    phases: Phases<'_>,
    current: &str,
    requested: &str,
) -> Result<Judgement, TransitionError> {
    let req = label_of(requested);
    if !LABEL_FORMAT.as_ref().is_some_and(|re| re.is_match(req)) {
        return Err(TransitionError::LabelFormat {
            label: req.to_owned(),
            requested: requested.to_owned(),
        });
    }
    let cur = label_of(current);
    let (req_major, cur_major) = (major_of(req), major_of(cur));
    let after_current = next_major(cur_major);
    let cur_key = label_sort_key(cur);
    let labelled = || phases.iter().filter_map(|p| Some((p.label()?, p.fields())));
    let next = labelled()
        .map(|(label, p)| (label_sort_key(&label), label, p))
        .filter(|(key, _, _)| *key > cur_key)
        .min_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, label, p)| {
            let name = p.get("name").map_or_else(
                || "null".to_owned(),
                |n| n.as_str().map_or_else(|| n.to_string(), str::to_owned),
            );
            (label, name)
        });
    let next_label = next.as_ref().map(|(l, _)| l.as_str());
    let declared = labelled().any(|(label, _)| label == req);
    let forward = label_sort_key(req) > cur_key;

    let into_next_major = req_major == after_current;
    // In sequence: the same phase again; the next declared phase (not across branches); the
    // next major, from a phase whose next declared one is a sub-phase, from a sub-phase, or
    // into any of its declared phases.
    let in_sequence = req == cur
        || (next_label == Some(req) && !is_branch_switch(cur, req))
        || (into_next_major
            && (next_label.is_some_and(|l| major_of(l) == cur_major)
                || cur.contains('.')
                || declared));
    let verdict = if in_sequence {
        Verdict::Sequential
    } else if declared && req_major == cur_major && forward {
        // Forward within the major, unless it crosses to another lettered branch.
        if is_branch_switch(cur, req) {
            Verdict::BranchSwitch
        } else {
            Verdict::Sequential
        }
    } else if !declared && req_major == cur_major {
        Verdict::Append
    } else {
        Verdict::OutOfSequence
    };
    Ok(Judgement {
        verdict,
        current: cur.to_owned(),
        requested: req.to_owned(),
        next,
    })
}

/// An unapproved transition: what the engine's refusal ([`rejection`]) tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// How the transition stands.
    pub judgement: Judgement,
    /// `currentPhase`.
    pub current: String,
    /// The requested phase.
    pub requested: String,
    /// The session directory.
    pub dir: PathBuf,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&rejection(
            &self.judgement,
            &self.current,
            &self.requested,
            &self.dir,
        ))
    }
}

/// The engine's refusal of an unapproved transition, its hints naming `preload phase` (the
/// command that refused).
pub fn rejection(judgement: &Judgement, current: &str, requested: &str, dir: &Path) -> String {
    let (cur, req) = (&judgement.current, &judgement.requested);
    let dir = dir.display();
    let mut text = String::new();
    if judgement.verdict == Verdict::BranchSwitch {
        let _ = write!(
            text,
            "§CMD_UPDATE_PHASE: Branch switch rejected ({cur} → {req}).\n  \
             Letter-labeled phases (N.A, N.B, N.C) are alternative branches, not sequential \
             steps.\n  \
             You are in branch {cur} — switching to {req} requires explicit approval.\n  \
             To exit this branch: preload phase {dir} \"{}: [NextPhase]\"\n",
            next_major(major_of(cur))
        );
    } else {
        let _ = write!(
            text,
            "§CMD_UPDATE_PHASE: Non-sequential phase transition rejected.\n  \
             Current phase: {current} (label: {cur})\n  \
             Requested phase: {requested} (label: {req})\n"
        );
        if let Some((label, name)) = &judgement.next {
            let _ = writeln!(text, "  Expected next: {label}: {name}");
        }
    }
    let _ = write!(
        text,
        "\n  To proceed: preload phase {dir} \"{requested}\" --user-approved \"Reason: ...\""
    );
    text
}

/// `phases` with an undeclared phase added, sorted by label.
fn appended(phases: Phases<'_>, label: &str, name: &str) -> Vec<Value> {
    let mut out = phases.items().to_vec();
    out.push(json!({"label": label, "name": name}));
    out.sort_by_cached_key(|p| {
        PhaseDef::of(p)
            .and_then(PhaseDef::label)
            .map(|l| label_sort_key(&l))
            .unwrap_or_default()
    });
    out
}

#[cfg(test)]
mod tests;
