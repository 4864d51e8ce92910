//! The rule engine of `guards.json`: parsing, the six trigger types, `$field` payload
//! references, tool whitelists, and how matched rules compose into one decision.
//!
//! Everything here is pure: it reads a [`State`](crate::state::State) and a tool call and returns data. Delivering
//! (stashing, claiming, tmux) is the caller's business.

/// Default `OVERFLOW_THRESHOLD` of the engine's `config.sh`.
pub const DEFAULT_OVERFLOW_THRESHOLD: f64 = 0.76;
/// `OVERFLOW_THRESHOLD` when `DISABLE_AUTO_COMPACT=1`.
pub const NO_AUTO_COMPACT_THRESHOLD: f64 = 0.95;
/// The overflow rule; when it blocks, it suppresses every other blocking rule.
pub const OVERFLOW_RULE: &str = "overflow-dehydration";
/// The Read throttle rule.
pub const READ_THROTTLE_RULE: &str = "read-throttle";

/// Why `guards.json` could not be used (the caller allows).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RulesError {
    /// Not JSON.
    #[error("guards.json is not JSON: {0}")]
    NotJson(String),
    /// JSON, but neither an array of rules nor `{"rules": [...]}`.
    #[error("guards.json is not an array of rules")]
    NotRules,
}

/// How a matched rule delivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `payload.text` (or `payload.files` as `[file]` lines).
    Inline,
    /// "REQUIRED: Read these files: …".
    Read,
    /// `payload.command` typed into the `tmux` pane (the text itself without `tmux`).
    Paste,
    /// The files of `payload.preload` delivered as `[Preloaded: …]` blocks.
    Preload,
}

impl Mode {
    fn parse(text: Option<&str>) -> Self {
        match text {
            Some("read") => Self::Read,
            Some("paste") => Self::Paste,
            Some("preload") => Self::Preload,
            _ => Self::Inline,
        }
    }
}

/// Whether a matched rule lets the tool run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Urgency {
    /// The tool runs; the content is stashed for `PostToolUse`.
    Allow,
    /// The tool is denied with the content as the reason.
    Block,
    /// Like block, and a paste interrupts the agent first.
    Interrupt,
}

impl Urgency {
    fn parse(text: Option<&str>) -> Self {
        match text {
            Some("block") => Self::Block,
            Some("interrupt") => Self::Interrupt,
            _ => Self::Allow,
        }
    }

    /// True for `block` and `interrupt`.
    pub fn is_blocking(self) -> bool {
        self != Self::Allow
    }
}

/// What a rule's trigger tests.
#[derive(Debug, Clone, PartialEq)]
pub enum Trigger {
    /// `contextUsage >= gte` (`gte` a number or `"OVERFLOW_THRESHOLD"`).
    ContextThreshold(Threshold),
    /// `{noActiveSession: true}` or `{eq: "<lifecycle>"}`.
    Lifecycle {
        /// Match when the lifecycle does not hold a session
        /// ([`crate::state::Lifecycle::holds_session`]).
        no_active_session: bool,
        /// Match on equality.
        eq: Option<String>,
    },
    /// `matches` is a substring of `currentPhase`.
    Phase(String),
    /// `state[field] >= state[gte]` (the latter default 999).
    ToolCount {
        /// The counted field.
        field: String,
        /// The field holding the threshold.
        gte_field: String,
    },
    /// The array field is non-empty.
    Discovery(String),
    /// `toolCallsByTranscript[<counter key>]` `>= gte`, else `== eq`.
    PerTranscriptToolCount {
        /// Greater-or-equal threshold.
        gte: Option<f64>,
        /// Exact count.
        eq: Option<f64>,
    },
}

/// A context threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    /// A fixed value.
    Value(f64),
    /// The configured `OVERFLOW_THRESHOLD`.
    Overflow,
}

/// One rule of `guards.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// `id`.
    pub id: String,
    /// The trigger.
    pub trigger: Trigger,
    /// `payload` (unresolved).
    pub payload: Payload,
    /// `mode`.
    pub mode: Mode,
    /// `urgency`.
    pub urgency: Urgency,
    /// `priority`; lower goes first.
    pub priority: f64,
    /// `inject: "once"`.
    pub once: bool,
    /// `whitelist` patterns.
    pub whitelist: Vec<String>,
    /// `toolFilter.include`.
    pub include: Option<Vec<String>>,
    /// `toolFilter.exclude`.
    pub exclude: Vec<String>,
}

/// The number a string writes, spaces around it allowed.
fn number_in(text: &str) -> Option<f64> {
    text.trim().parse().ok()
}

impl Rule {
    /// Whether `toolFilter` lets this rule apply to `tool` (always, without a tool name).
    pub fn applies_to(&self, tool: Option<&str>) -> bool {
        let Some(tool) = tool else { return true };
        if let Some(include) = &self.include {
            if !include.iter().any(|t| t == tool) {
                return false;
            }
        }
        !self.exclude.iter().any(|t| t == tool)
    }
}

mod evaluate;
mod payload;
mod read;
mod whitelist;

pub use evaluate::{Facts, Matched, Verdict, compose, evaluate, overflow_threshold};
pub use payload::{Member, Payload, Resolution, Resolved, rule_text, substitute};
pub use read::parse;
pub use whitelist::{glob_match, is_engine_cmd, matches_entry, matches_whitelist, primary_field};

#[cfg(test)]
mod tests;
