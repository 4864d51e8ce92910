//! `preload report`: the summary of a delivery event log (CONTRACT section 5): totals, unique
//! files, duplicate deliveries with the hooks that made them, dedup skips, per-hook counts and
//! the context packs delivered.
//!
//! A delivery is an event `direct-deliver` or `claim-deliver`; a skip is any event whose name
//! contains `skip`; `over-budget` events (a file sent in parts, a file carried over to the next
//! call, an output over its budget) are listed per file. Lines that are not JSON objects are
//! counted and otherwise ignored, so a log cut short by a crash still reads.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::Value;

use crate::exit::{self, CommandError, Exit};
use preload_core::mechanisms::packs;
use preload_core::policies::guards;
use preload_core::primitives::delivery;
use preload_core::primitives::env::{self, Env};

/// `preload report`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ReportArgs {
    /// The delivery event log (default: `$PRELOAD_TEST_LOG`).
    #[arg(value_parser = crate::path_arg)]
    pub log: Option<PathBuf>,
}

/// Why no report was made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// No log given and `PRELOAD_TEST_LOG` not set.
    #[error("usage: preload report [LOG] (default $PRELOAD_TEST_LOG)")]
    NoLog,
    /// The log could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The log.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

impl CommandError for ReportError {
    fn exit(&self) -> Exit {
        match self {
            Self::NoLog => Exit::Usage,
            Self::Read { .. } => Exit::Failure,
        }
    }
}

/// Run `preload report`.
pub fn run(args: &ReportArgs) -> ExitCode {
    exit::finish("report", report(args))
}

/// The report of the log `args` names (or `$PRELOAD_TEST_LOG`), rendered.
fn report(args: &ReportArgs) -> Result<String, ReportError> {
    let path = args
        .log
        .clone()
        .or_else(|| {
            Env::from_process()
                .get(env::PRELOAD_TEST_LOG)
                .map(PathBuf::from)
        })
        .ok_or(ReportError::NoLog)?;
    let text = fs::read_to_string(&path).map_err(|source| ReportError::Read { path, source })?;
    Ok(Report::from_log(&text).render())
}

/// One file delivered more than once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    /// The file.
    pub file: String,
    /// How many deliveries.
    pub count: usize,
    /// The hook of each delivery, in log order.
    pub hooks: Vec<String>,
}

/// One delivery of a context pack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackDelivery {
    /// Its key (`<configuration file>#<name>`).
    pub key: String,
    /// The hook that delivered it.
    pub hook: String,
    /// Why (`session-start(startup)`, `skill-expansion(implement)`, ...).
    pub source: String,
}

/// What the log says of one file (or, under the empty name, of whole outputs) that did not fit
/// an output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OverBudget {
    /// The parts sent of a file that went out in parts, in log order: `split 1-3/7 (overflow)`;
    /// for whole outputs, `output 12000/9500 (templates)`.
    pub splits: Vec<String>,
    /// How many times none of it fit an output, so it waited for the next call.
    pub carried_over: usize,
}

/// What a delivery log says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Every event.
    pub total_events: usize,
    /// Delivery events.
    pub deliveries: usize,
    /// Distinct files delivered.
    pub unique_files: usize,
    /// Files delivered more than once.
    pub duplicates: Vec<Duplicate>,
    /// Events that skipped a file already in context.
    pub dedup_skips: usize,
    /// Deliveries per hook.
    pub per_hook: BTreeMap<String, usize>,
    /// Events per kind.
    pub per_event: BTreeMap<String, usize>,
    /// `over-budget` events by file (whole outputs under the empty name).
    pub over_budget: BTreeMap<String, OverBudget>,
    /// Lines that were not JSON objects.
    pub unreadable_lines: usize,
    /// Context packs delivered, in log order (sub-agents' copies included).
    pub packs: Vec<PackDelivery>,
}

/// The name the guard engine logged before it was `guards`.
const OLD_GUARDS_NAME: &str = "overflow";

/// True for the two delivery events.
fn is_delivery(event: &str) -> bool {
    matches!(event, "direct-deliver" | "claim-deliver")
}

impl Report {
    /// Summarise the text of a log (JSON lines).
    pub fn from_log(text: &str) -> Self {
        let mut report = Self::default();
        let mut by_file: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let Ok(Value::Object(event)) = serde_json::from_str::<Value>(line) else {
                report.unreadable_lines += 1;
                continue;
            };
            let field = |k: &str| {
                event
                    .get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned()
            };
            let (kind, mut hook, mut file) = (field("event"), field("hook"), field("file"));
            // The guard engine logged itself as `overflow`, after its binary, before it was
            // named `guards`: an older log counts with the new one.
            if hook == OLD_GUARDS_NAME {
                hook = guards::SPEC.name.into();
            }
            // A sub-agent's context window is its own: its copy is not a duplicate.
            if let Some(agent) = delivery::sub_agent_of_source(&field("source")) {
                file = format!("{file} (sub-agent {agent})");
            }
            report.total_events += 1;
            *report.per_event.entry(kind.clone()).or_default() += 1;
            if kind.contains("skip") {
                report.dedup_skips += 1;
            }
            if kind == delivery::Event::OverBudget.as_str() {
                let note = field("dedupResult");
                let entry = report.over_budget.entry(file.clone()).or_default();
                if note == delivery::CARRIED_OVER {
                    entry.carried_over += 1;
                } else {
                    entry.splits.push(format!("{note} ({hook})"));
                }
            }
            if is_delivery(&kind) {
                if packs::is_key(&field("file")) {
                    report.packs.push(PackDelivery {
                        key: field("file"),
                        hook: hook.clone(),
                        source: field("source"),
                    });
                }
                report.deliveries += 1;
                *report.per_hook.entry(hook.clone()).or_default() += 1;
                by_file.entry(file).or_default().push(hook);
            }
        }
        report.unique_files = by_file.len();
        report.duplicates = by_file
            .into_iter()
            .filter(|(_, hooks)| hooks.len() > 1)
            .map(|(file, hooks)| Duplicate {
                file,
                count: hooks.len(),
                hooks,
            })
            .collect();
        report
    }

    /// The summary as text, in the layout of the design's "Summary Report".
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "=== Preload Summary ===");
        let _ = writeln!(out, "Total delivery events: {}", self.total_events);
        let _ = writeln!(out, "Deliveries: {}", self.deliveries);
        let _ = writeln!(out, "Unique files delivered: {}", self.unique_files);
        let _ = writeln!(out, "Duplicate deliveries: {}", self.duplicates.len());
        let _ = writeln!(out, "Dedup skips: {}", self.dedup_skips);
        if self.unreadable_lines > 0 {
            let _ = writeln!(out, "Unreadable lines: {}", self.unreadable_lines);
        }
        let _ = writeln!(out, "\n--- Per-Hook Delivery Counts ---");
        for (hook, count) in &self.per_hook {
            let _ = writeln!(out, "  {hook}: {count}");
        }
        let _ = writeln!(out, "\n--- Events ---");
        for (event, count) in &self.per_event {
            let _ = writeln!(out, "  {event}: {count}");
        }
        let _ = writeln!(out, "\n--- Output budget ---");
        if self.over_budget.is_empty() {
            let _ = writeln!(out, "  (every output within its budget, no file in parts)");
        }
        for (file, o) in &self.over_budget {
            let name = if file.is_empty() {
                "(whole output)"
            } else {
                file
            };
            let mut what = o.splits.clone();
            if o.carried_over > 0 {
                what.push(format!("carried over {}x", o.carried_over));
            }
            let _ = writeln!(out, "  {name}: {}", what.join(", "));
        }
        let _ = writeln!(out, "\n--- Duplicates ---");
        if self.duplicates.is_empty() {
            let _ = writeln!(out, "  (none)");
        }
        for d in &self.duplicates {
            let _ = writeln!(out, "  {}: {}x via {}", d.file, d.count, d.hooks.join(", "));
        }
        out
    }
}

#[cfg(test)]
mod tests;
