//! Which rules a call triggers, and how the matched rules compose into one verdict.

use std::cmp::Ordering;

use serde_json::{Map, Value};

use super::{
    DEFAULT_OVERFLOW_THRESHOLD, Mode, NO_AUTO_COMPACT_THRESHOLD, OVERFLOW_RULE, Resolution, Rule,
    Threshold, Trigger, Urgency, matches_whitelist,
};
use crate::state::fields;
use crate::state::{Lifecycle, State};

/// What a rule is evaluated against.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// The state (session, seed, or the `lifecycle: "none"` stand-in).
    pub state: &'a State,
    /// The counter key (`<transcript>` or `sub:<agent>`); without it, per-transcript rules never
    /// match.
    pub counter_key: Option<&'a str>,
    /// The tool being called; without it, `toolFilter` is ignored.
    pub tool: Option<&'a str>,
    /// `OVERFLOW_THRESHOLD`.
    pub overflow_threshold: f64,
}

/// `OVERFLOW_THRESHOLD`: 0.95 when `DISABLE_AUTO_COMPACT=1`, else the `config.sh` value, else
/// 0.76.
pub fn overflow_threshold(disable_auto_compact: bool, configured: Option<&str>) -> f64 {
    if disable_auto_compact {
        return NO_AUTO_COMPACT_THRESHOLD;
    }
    configured
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite())
        .unwrap_or(DEFAULT_OVERFLOW_THRESHOLD)
}

/// A rule that matched, with its payload resolved against the state.
#[derive(Debug, Clone, PartialEq)]
pub struct Matched {
    /// The rule id.
    pub id: String,
    /// Its mode.
    pub mode: Mode,
    /// Its urgency.
    pub urgency: Urgency,
    /// Its priority.
    pub priority: f64,
    /// The resolved payload.
    pub payload: Resolution,
    /// Its whitelist.
    pub whitelist: Vec<String>,
}

fn triggered(rule: &Rule, facts: &Facts) -> bool {
    let state = facts.state;
    match &rule.trigger {
        Trigger::ContextThreshold(threshold) => {
            let usage = state.number(fields::CONTEXT_USAGE).unwrap_or(0.0);
            let gte = match threshold {
                Threshold::Value(v) => *v,
                Threshold::Overflow => facts.overflow_threshold,
            };
            usage >= gte
        }
        Trigger::Lifecycle {
            no_active_session,
            eq,
        } => {
            let lifecycle = state.lifecycle();
            // A fork of a conversation another client holds goes on from that one's session.
            let holds = lifecycle.as_ref().is_some_and(Lifecycle::holds_session)
                || state.str(fields::FORK_OF).is_some();
            (*no_active_session && !holds)
                || eq.as_deref() == Some(lifecycle.as_ref().map_or("", Lifecycle::name))
        }
        Trigger::Phase(needle) => state
            .current_phase()
            .is_some_and(|p| p.as_str().contains(needle)),
        Trigger::ToolCount { field, gte_field } => {
            let value = state.number(field).unwrap_or(0.0);
            let threshold = state.number(gte_field).unwrap_or(999.0);
            value >= threshold
        }
        Trigger::Discovery(field) => state.field(field).is_some_and(|f| f.entries() > 0),
        Trigger::PerTranscriptToolCount { gte, eq } => {
            let Some(key) = facts.counter_key else {
                return false;
            };
            #[allow(clippy::cast_precision_loss)]
            let count = state.calls_of(key) as f64;
            if let Some(gte) = gte {
                count >= *gte
            } else if let Some(eq) = eq {
                (count - eq).abs() < f64::EPSILON
            } else {
                false
            }
        }
    }
}

/// Evaluate every rule; the matches come sorted by priority (stable for equal priorities).
/// `inject: once` rules already in `injectedRules` are skipped.
pub fn evaluate(rules: &[Rule], facts: &Facts) -> Vec<Matched> {
    let mut out: Vec<Matched> = rules
        .iter()
        .filter(|rule| !(rule.once && facts.state.is_injected(&rule.id)))
        .filter(|rule| rule.applies_to(facts.tool))
        .filter(|rule| triggered(rule, facts))
        .map(|rule| Matched {
            id: rule.id.clone(),
            mode: rule.mode,
            urgency: rule.urgency,
            priority: rule.priority,
            payload: Resolution::of(&rule.payload, facts.state),
            whitelist: rule.whitelist.clone(),
        })
        .collect();
    out.sort_by(|a, b| {
        a.priority
            .partial_cmp(&b.priority)
            .unwrap_or(Ordering::Equal)
    });
    out
}

/// How the matched rules of one call compose.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    /// Blocking rules that deny the call (empty when it runs).
    pub deny: Vec<Matched>,
    /// Allow rules, delivered whether or not the call runs.
    pub allow: Vec<Matched>,
}

/// Split matched rules into a verdict: blocking rules deny unless the call matches the union
/// of their whitelists; when the overflow rule blocks, it alone blocks (and only its whitelist
/// counts).
pub fn compose(matched: Vec<Matched>, tool: &str, input: Option<&Map<String, Value>>) -> Verdict {
    let (mut blocking, allow): (Vec<_>, Vec<_>) =
        matched.into_iter().partition(|m| m.urgency.is_blocking());
    if blocking.iter().any(|m| m.id == OVERFLOW_RULE) {
        blocking.retain(|m| m.id == OVERFLOW_RULE);
    }
    let mut union: Vec<&str> = Vec::new();
    for entry in blocking.iter().flat_map(|m| m.whitelist.iter()) {
        if !union.contains(&entry.as_str()) {
            union.push(entry);
        }
    }
    if !blocking.is_empty() && matches_whitelist(&union, tool, input) {
        blocking.clear();
    }
    Verdict {
        deny: blocking,
        allow,
    }
}
