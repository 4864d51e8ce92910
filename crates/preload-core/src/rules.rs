//! The rule engine of `guards.json`: parsing, the six trigger types, `$field` payload
//! references, tool whitelists, and how matched rules compose into one decision.
//!
//! Everything here is pure: it reads a [`State`] and a tool call and returns data. Delivering
//! (stashing, claiming, tmux) is the caller's business.

use std::cmp::Ordering;

use serde_json::{Map, Value};

use crate::fields;
use crate::state::{self, State, strings_of};

/// Default `OVERFLOW_THRESHOLD` of the engine's `config.sh`.
pub const DEFAULT_OVERFLOW_THRESHOLD: f64 = 0.76;
/// `OVERFLOW_THRESHOLD` when `DISABLE_AUTO_COMPACT=1`.
pub const NO_AUTO_COMPACT_THRESHOLD: f64 = 0.95;
/// The overflow rule; when it blocks, it suppresses every other blocking rule.
pub const OVERFLOW_RULE: &str = "overflow-dehydration";
/// The Read throttle rule.
pub const READ_THROTTLE_RULE: &str = "read-throttle";
/// Lifecycles that count as an active session for `noActiveSession`.
pub const ACTIVE_LIFECYCLES: [&str; 4] = ["active", "idle", "resuming", "restarting"];

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
        /// Match when the lifecycle is not one of [`ACTIVE_LIFECYCLES`].
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
    pub payload: Map<String, Value>,
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

fn number_of(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

impl Rule {
    /// Read one rule; `None` for an unknown trigger type or a rule that is not an object.
    /// Missing fields take defaults: mode `inline`, urgency `allow`, priority 999.
    pub fn from_value(value: &Value, index: usize) -> Option<Self> {
        let obj = value.as_object()?;
        let trigger = obj.get("trigger")?;
        let condition = trigger.get("condition").cloned().unwrap_or(Value::Null);
        let cond = |key: &str| condition.get(key);
        let trigger = match trigger.get("type")?.as_str()? {
            "contextThreshold" => {
                let gte = cond("gte")?;
                if gte.as_str() == Some("OVERFLOW_THRESHOLD") {
                    Trigger::ContextThreshold(Threshold::Overflow)
                } else {
                    Trigger::ContextThreshold(Threshold::Value(number_of(gte)?))
                }
            }
            "lifecycle" => Trigger::Lifecycle {
                no_active_session: cond("noActiveSession").and_then(Value::as_bool) == Some(true),
                eq: cond("eq").and_then(Value::as_str).map(str::to_owned),
            },
            "phase" => Trigger::Phase(cond("matches")?.as_str()?.to_owned()),
            "toolCount" => Trigger::ToolCount {
                field: cond("field")?.as_str()?.to_owned(),
                gte_field: cond("gte").and_then(Value::as_str).unwrap_or("").to_owned(),
            },
            "discovery" => {
                if cond("nonEmpty").and_then(Value::as_bool) != Some(true) {
                    return None;
                }
                Trigger::Discovery(cond("field")?.as_str()?.to_owned())
            }
            "perTranscriptToolCount" => Trigger::PerTranscriptToolCount {
                gte: cond("gte").and_then(number_of),
                eq: cond("eq").and_then(number_of),
            },
            _ => return None,
        };
        let filter = obj.get("toolFilter");
        Some(Self {
            id: obj
                .get("id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("rule-{index}"), str::to_owned),
            trigger,
            payload: obj
                .get("payload")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            mode: Mode::parse(obj.get("mode").and_then(Value::as_str)),
            urgency: Urgency::parse(obj.get("urgency").and_then(Value::as_str)),
            priority: obj.get("priority").and_then(number_of).unwrap_or(999.0),
            once: obj.get("inject").and_then(Value::as_str) == Some("once"),
            whitelist: strings_of(obj.get("whitelist")),
            include: filter
                .and_then(|f| f.get("include"))
                .map(|v| strings_of(Some(v))),
            exclude: strings_of(filter.and_then(|f| f.get("exclude"))),
        })
    }

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

/// Parse `guards.json`: an array of rules (or the older `{"rules": [...]}`). Rules with an
/// unknown trigger type are skipped; an empty file has no rules.
pub fn parse(text: &str) -> Result<Vec<Rule>, RulesError> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let value: Value =
        serde_json::from_str(text).map_err(|e| RulesError::NotJson(e.to_string()))?;
    let items = match &value {
        Value::Array(items) => items,
        Value::Object(obj) => obj
            .get("rules")
            .and_then(Value::as_array)
            .ok_or(RulesError::NotRules)?,
        _ => return Err(RulesError::NotRules),
    };
    Ok(items
        .iter()
        .enumerate()
        .filter_map(|(i, v)| Rule::from_value(v, i))
        .collect())
}

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

/// The per-agent tool-call counter `toolCallsByTranscript[key]` (0 when absent).
pub fn counter(state: &State, key: &str) -> u64 {
    state
        .get(fields::TOOL_CALLS_BY_TRANSCRIPT)
        .and_then(|m| m.get(key))
        .and_then(number_of)
        .map_or(0, state::whole)
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
    pub payload: Map<String, Value>,
    /// Its whitelist.
    pub whitelist: Vec<String>,
}

impl Matched {
    /// A string field of the payload ("" when absent).
    pub fn payload_str(&self, key: &str) -> &str {
        self.payload.get(key).and_then(Value::as_str).unwrap_or("")
    }

    /// The files of `payload.preload` (an array after resolution; a single string counts).
    pub fn preload_files(&self) -> Vec<String> {
        match self.payload.get("preload") {
            Some(Value::String(s)) if !s.starts_with('$') => vec![s.clone()],
            other => strings_of(other),
        }
    }
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
            let lifecycle = state.str(fields::LIFECYCLE).unwrap_or("");
            (*no_active_session && !ACTIVE_LIFECYCLES.contains(&lifecycle))
                || eq.as_deref() == Some(lifecycle)
        }
        Trigger::Phase(needle) => state
            .str(fields::CURRENT_PHASE)
            .unwrap_or("")
            .contains(needle),
        Trigger::ToolCount { field, gte_field } => {
            let value = state.number(field).unwrap_or(0.0);
            let threshold = state.number(gte_field).unwrap_or(999.0);
            value >= threshold
        }
        Trigger::Discovery(field) => match state.get(field) {
            Some(Value::Array(items)) => !items.is_empty(),
            Some(Value::Object(map)) => !map.is_empty(),
            Some(Value::String(s)) => !s.is_empty(),
            _ => false,
        },
        Trigger::PerTranscriptToolCount { gte, eq } => {
            let Some(key) = facts.counter_key else {
                return false;
            };
            #[allow(clippy::cast_precision_loss)]
            let count = counter(state, key) as f64;
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
    let injected = facts.state.get(fields::INJECTED_RULES);
    let mut out: Vec<Matched> = rules
        .iter()
        .filter(|rule| {
            !(rule.once
                && injected
                    .and_then(|m| m.get(&rule.id))
                    .and_then(Value::as_bool)
                    == Some(true))
        })
        .filter(|rule| rule.applies_to(facts.tool))
        .filter(|rule| triggered(rule, facts))
        .map(|rule| Matched {
            id: rule.id.clone(),
            mode: rule.mode,
            urgency: rule.urgency,
            priority: rule.priority,
            payload: resolve_payload(&rule.payload, facts.state),
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

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Substitute `$identifier` references inside `text` with scalar state values, longest names
/// first; unknown names and non-scalar values stay as written.
pub fn substitute(text: &str, state: &State) -> String {
    let mut names: Vec<&str> = Vec::new();
    for (at, _) in text.match_indices('$') {
        let tail = &text[at + 1..];
        let len = tail
            .char_indices()
            .find(|(i, c)| {
                !(c.is_ascii_alphanumeric() || *c == '_') || (*i == 0 && c.is_ascii_digit())
            })
            .map_or(tail.len(), |(i, _)| i);
        if len > 0 && !names.contains(&&tail[..len]) {
            names.push(&tail[..len]);
        }
    }
    names.sort_by_key(|n| std::cmp::Reverse(n.len()));
    let mut out = text.to_owned();
    for name in names {
        if let Some(value) = state.get(name).and_then(scalar_text) {
            out = out.replace(&format!("${name}"), &value);
        }
    }
    out
}

/// `_resolve_payload_refs`: a top-level string that is `$field` becomes the state value of that
/// field (any type; unchanged when missing or null); `$field` inside other strings is replaced
/// by scalar values, longest names first.
pub fn resolve_payload(payload: &Map<String, Value>, state: &State) -> Map<String, Value> {
    payload
        .iter()
        .map(|(key, value)| {
            let resolved = match value {
                Value::String(s) => match s.strip_prefix('$') {
                    Some(field) if is_identifier(field) => match state.get(field) {
                        Some(v) if !v.is_null() => v.clone(),
                        _ => value.clone(),
                    },
                    _ => Value::String(substitute(s, state)),
                },
                other => other.clone(),
            };
            (key.clone(), resolved)
        })
        .collect()
}

/// The `tool_input` field a `Tool(glob)` whitelist entry is matched against.
pub fn primary_field(tool: &str) -> Option<&'static str> {
    match tool {
        "Bash" => Some("command"),
        "Read" | "Edit" | "Write" => Some("file_path"),
        "Skill" => Some("skill"),
        "Glob" | "Grep" => Some("pattern"),
        _ => None,
    }
}

/// Shell-style glob match where `*` also matches `/` (`[[ value == glob ]]` in the engine):
/// `*`, `?`, `[...]` classes (with `!` or `^` negation and ranges) and `\` escapes, matched
/// with `globset`. A pattern `globset` cannot read (an unclosed `[`) matches itself only.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    // Braces are literal in the engine's `[[ == ]]`; `globset` would read them as alternatives.
    let mut literal_braces = String::with_capacity(pattern.len());
    let mut escaped = false;
    for c in pattern.chars() {
        if matches!(c, '{' | '}') && !escaped {
            literal_braces.push('\\');
        }
        escaped = c == '\\' && !escaped;
        literal_braces.push(c);
    }
    let glob = globset::GlobBuilder::new(&literal_braces)
        .literal_separator(false)
        .backslash_escape(true)
        .empty_alternates(true)
        .build();
    match glob {
        Ok(glob) => glob.compile_matcher().is_match(text),
        Err(_) => pattern == text,
    }
}

/// One whitelist entry against a call: `Tool` matches any call of that tool; `Tool(glob)`
/// matches when the tool's primary input field matches the glob.
pub fn matches_entry(entry: &str, tool: &str, value: &str) -> bool {
    match entry.split_once('(') {
        Some((name, rest)) if rest.contains(')') => {
            let glob = rest.strip_suffix(')').unwrap_or(rest);
            name == tool && glob_match(glob, value)
        }
        _ => entry == tool,
    }
}

/// Whether a call passes a whitelist; an empty whitelist never matches.
pub fn matches_whitelist<S: AsRef<str>>(
    whitelist: &[S],
    tool: &str,
    input: Option<&Map<String, Value>>,
) -> bool {
    let value = primary_field(tool)
        .and_then(|f| input?.get(f))
        .and_then(Value::as_str)
        .unwrap_or("");
    whitelist
        .iter()
        .any(|entry| matches_entry(entry.as_ref(), tool, value))
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

/// `is_engine_cmd`: `engine <sub>` at the start of the command or right after `&&`, `;`, `|` or
/// a newline.
pub fn is_engine_cmd(command: &str, sub: &str) -> bool {
    let mut starts = vec![0];
    for (i, c) in command.char_indices() {
        if matches!(c, ';' | '|' | '\n') {
            starts.push(i + 1);
        } else if c == '&' && command[i + 1..].starts_with('&') {
            starts.push(i + 2);
        }
    }
    starts.into_iter().any(|at| {
        let seg = command[at..].trim_start();
        seg.strip_prefix("engine")
            .filter(|r| r.starts_with(char::is_whitespace))
            .map(str::trim_start)
            .and_then(|r| r.strip_prefix(sub))
            .is_some_and(|r| r.is_empty() || r.starts_with(char::is_whitespace))
    })
}

/// The text of an inline, read or paste rule (`None` for preload rules, which deliver files).
pub fn rule_text(rule: &Matched, blocking: bool) -> Option<String> {
    let files = || strings_of(rule.payload.get("files"));
    match rule.mode {
        Mode::Inline => {
            let text = rule.payload_str("text");
            if text.is_empty() {
                Some(
                    files()
                        .iter()
                        .map(|f| format!("[{f}]"))
                        .collect::<Vec<_>>()
                        .join("\n"),
                )
            } else {
                Some(text.to_owned())
            }
        }
        Mode::Read => {
            let tag = if blocking { "block" } else { "warn" };
            Some(format!(
                "[{tag}: {}] REQUIRED: Read these files: {}",
                rule.id,
                files().join(", ")
            ))
        }
        Mode::Paste => Some(rule.payload_str("command").to_owned()),
        Mode::Preload => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state(v: Value) -> State {
        match v {
            Value::Object(map) => State(map),
            other => panic!("not an object: {other}"),
        }
    }

    fn rule(v: &Value) -> Rule {
        Rule::from_value(v, 0).unwrap()
    }

    fn facts<'a>(s: &'a State, key: Option<&'a str>, tool: Option<&'a str>) -> Facts<'a> {
        Facts {
            state: s,
            counter_key: key,
            tool,
            overflow_threshold: 0.76,
        }
    }

    fn ids(m: &[Matched]) -> Vec<&str> {
        m.iter().map(|m| m.id.as_str()).collect()
    }

    #[test]
    fn each_trigger_type_matches() {
        let rules = parse(
            &json!([
                {"id": "ctx", "trigger": {"type": "contextThreshold", "condition": {"gte": "OVERFLOW_THRESHOLD"}}},
                {"id": "ctx-fixed", "trigger": {"type": "contextThreshold", "condition": {"gte": 0.9}}},
                {"id": "gate", "trigger": {"type": "lifecycle", "condition": {"noActiveSession": true}}},
                {"id": "idle", "trigger": {"type": "lifecycle", "condition": {"eq": "idle"}}},
                {"id": "phase", "trigger": {"type": "phase", "condition": {"matches": "Synthesis"}}},
                {"id": "count", "trigger": {"type": "toolCount", "condition": {"field": "a", "gte": "b"}}},
                {"id": "disc", "trigger": {"type": "discovery", "condition": {"field": "pendingPreloads", "nonEmpty": true}}},
                {"id": "eq3", "trigger": {"type": "perTranscriptToolCount", "condition": {"eq": 3}}},
                {"id": "gte10", "trigger": {"type": "perTranscriptToolCount", "condition": {"gte": 10}}},
                {"id": "weird", "trigger": {"type": "sunspots", "condition": {}}}
            ])
            .to_string(),
        )
        .unwrap();
        assert_eq!(rules.len(), 9, "unknown trigger type skipped");
        let s = state(json!({"lifecycle": "completed", "contextUsage": 0.8,
            "currentPhase": "4: Synthesis", "a": 5, "b": 5, "pendingPreloads": ["/x"],
            "toolCallsByTranscript": {"t": 3}}));
        let m = evaluate(&rules, &facts(&s, Some("t"), None));
        assert_eq!(
            ids(&m),
            vec!["ctx", "gate", "phase", "count", "disc", "eq3"]
        );
        let s = state(json!({"lifecycle": "idle", "contextUsage": 0.95,
            "toolCallsByTranscript": {"t": 12}, "a": 1, "b": 2, "pendingPreloads": []}));
        let m = evaluate(&rules, &facts(&s, Some("t"), None));
        assert_eq!(ids(&m), vec!["ctx", "ctx-fixed", "idle", "gte10"]);
        // No counter key: per-transcript rules never match.
        let m = evaluate(&rules, &facts(&s, None, None));
        assert!(!ids(&m).contains(&"gte10"));
    }

    #[test]
    fn seeding_none_and_missing_lifecycles_are_not_active_sessions() {
        let gate = rule(
            &json!({"id": "g", "trigger": {"type": "lifecycle", "condition": {"noActiveSession": true}}}),
        );
        for (lc, hit) in [
            (json!("seeding"), true),
            (json!("none"), true),
            (json!("completed"), true),
            (Value::Null, true),
            (json!("active"), false),
            (json!("idle"), false),
            (json!("resuming"), false),
            (json!("restarting"), false),
        ] {
            let s = state(json!({ "lifecycle": lc }));
            let m = evaluate(std::slice::from_ref(&gate), &facts(&s, None, None));
            assert_eq!(m.len() == 1, hit, "{lc}");
        }
    }

    #[test]
    fn overflow_threshold_follows_config_and_auto_compact() {
        assert!((overflow_threshold(false, None) - 0.76).abs() < 1e-9);
        assert!((overflow_threshold(false, Some("0.5")) - 0.5).abs() < 1e-9);
        assert!((overflow_threshold(true, Some("0.5")) - 0.95).abs() < 1e-9);
        assert!((overflow_threshold(false, Some("junk")) - 0.76).abs() < 1e-9);
        let r = rule(
            &json!({"id": "o", "trigger": {"type": "contextThreshold", "condition": {"gte": "OVERFLOW_THRESHOLD"}}}),
        );
        let s = state(json!({"contextUsage": 0.8}));
        let mut f = facts(&s, None, None);
        assert_eq!(evaluate(std::slice::from_ref(&r), &f).len(), 1);
        f.overflow_threshold = 0.95;
        assert!(evaluate(std::slice::from_ref(&r), &f).is_empty());
    }

    #[test]
    fn inject_once_priority_order_and_tool_filter() {
        let rules = parse(&json!([
            {"id": "late", "priority": 30, "inject": "once", "trigger": {"type": "phase", "condition": {"matches": "X"}}},
            {"id": "early", "priority": 1, "trigger": {"type": "phase", "condition": {"matches": "X"}}},
            {"id": "reads", "priority": 5, "toolFilter": {"include": ["Read"]}, "trigger": {"type": "phase", "condition": {"matches": "X"}}},
            {"id": "not-bash", "priority": 6, "toolFilter": {"exclude": ["Bash"]}, "trigger": {"type": "phase", "condition": {"matches": "X"}}}
        ]).to_string()).unwrap();
        let s = state(json!({"currentPhase": "X"}));
        assert_eq!(
            ids(&evaluate(&rules, &facts(&s, None, Some("Read")))),
            vec!["early", "reads", "not-bash", "late"]
        );
        assert_eq!(
            ids(&evaluate(&rules, &facts(&s, None, Some("Bash")))),
            vec!["early", "late"]
        );
        assert_eq!(
            ids(&evaluate(&rules, &facts(&s, None, None))),
            vec!["early", "reads", "not-bash", "late"],
            "no tool name: filters ignored"
        );
        let s = state(json!({"currentPhase": "X", "injectedRules": {"late": true}}));
        assert!(!ids(&evaluate(&rules, &facts(&s, None, Some("Read")))).contains(&"late"));
    }

    #[test]
    fn malformed_and_partial_rules() {
        assert!(parse("").unwrap().is_empty());
        assert!(parse("  \n").unwrap().is_empty());
        assert!(matches!(parse("{nope"), Err(RulesError::NotJson(_))));
        assert_eq!(parse("42"), Err(RulesError::NotRules));
        assert!(parse("{\"rules\": []}").unwrap().is_empty());
        let rules = parse(
            &json!([{"trigger": {"type": "phase", "condition": {"matches": ""}}}, 7, {"id": "x"}])
                .to_string(),
        )
        .unwrap();
        assert_eq!(rules.len(), 1);
        let r = &rules[0];
        assert_eq!(
            (r.id.as_str(), r.mode, r.urgency, r.once),
            ("rule-0", Mode::Inline, Urgency::Allow, false)
        );
        assert!((r.priority - 999.0).abs() < f64::EPSILON && r.whitelist.is_empty());
    }

    #[test]
    fn payload_references_resolve_whole_and_inline() {
        let s = state(
            json!({"pendingPreloads": ["/a.md", "/b.md"], "lifecycle": "completed",
            "lifecycleNote": "LONG", "n": 3, "flag": true, "obj": {"k": 1}}),
        );
        let payload = json!({
            "preload": "$pendingPreloads",
            "missing": "$nothingHere",
            "text": "gate (lifecycle: $lifecycle) $lifecycleNote n=$n f=$flag o=$obj u=$unknown $5",
            "files": ["$lifecycle"],
            "num": 4
        });
        let out = resolve_payload(payload.as_object().unwrap(), &s);
        assert_eq!(out["preload"], json!(["/a.md", "/b.md"]));
        assert_eq!(out["missing"], json!("$nothingHere"));
        assert_eq!(
            out["text"],
            json!("gate (lifecycle: completed) LONG n=3 f=true o=$obj u=$unknown $5")
        );
        assert_eq!(
            out["files"],
            json!(["$lifecycle"]),
            "only strings are resolved"
        );
        assert_eq!(out["num"], json!(4));
    }

    #[test]
    fn primary_fields() {
        for (tool, field) in [
            ("Bash", Some("command")),
            ("Read", Some("file_path")),
            ("Edit", Some("file_path")),
            ("Write", Some("file_path")),
            ("Skill", Some("skill")),
            ("Glob", Some("pattern")),
            ("Grep", Some("pattern")),
            ("Task", None),
            ("AskUserQuestion", None),
        ] {
            assert_eq!(primary_field(tool), field, "{tool}");
        }
    }

    #[test]
    fn globs_cross_slashes_and_support_classes() {
        assert!(glob_match(
            "*/.claude/*",
            "/home/u/.claude/skills/x/SKILL.md"
        ));
        assert!(glob_match("engine session *", "engine session activate x"));
        assert!(!glob_match("engine session *", "engine sessions"));
        assert!(glob_match(
            "*/TEMPLATE_*_LOG.md",
            "/a/b/TEMPLATE_IMPL_LOG.md"
        ));
        assert!(glob_match("a?c", "abc") && !glob_match("a?c", "ac"));
        assert!(glob_match("[ab]x", "bx") && !glob_match("[!ab]x", "bx"));
        assert!(glob_match("[a-c]", "b") && glob_match("\\*", "*") && !glob_match("\\*", "x"));
        assert!(glob_match("[", "["));
        assert!(glob_match("", "") && !glob_match("", "x") && glob_match("*", ""));
        assert!(glob_match("x{a,b}", "x{a,b}") && !glob_match("x{a,b}", "xa"));
    }

    #[test]
    fn whitelist_entries() {
        let input = json!({"command": "engine session activate s", "file_path": "/p/CLAUDE.md"});
        let input = input.as_object();
        assert!(matches_whitelist(
            &["Bash(engine session *)"],
            "Bash",
            input
        ));
        assert!(!matches_whitelist(&["Bash(engine log *)"], "Bash", input));
        assert!(matches_whitelist(
            &["AskUserQuestion"],
            "AskUserQuestion",
            None
        ));
        assert!(!matches_whitelist(&["Read(*/CLAUDE.md)"], "Edit", input));
        assert!(matches_whitelist(&["Read(*/CLAUDE.md)"], "Read", input));
        let empty: [&str; 0] = [];
        assert!(
            !matches_whitelist(&empty, "Read", input),
            "empty never matches"
        );
        assert!(
            matches_whitelist(&["Task(*)"], "Task", None),
            "no field: the glob sees \"\""
        );
    }

    fn matched(id: &str, urgency: Urgency, wl: &[&str]) -> Matched {
        Matched {
            id: id.into(),
            mode: Mode::Inline,
            urgency,
            priority: 1.0,
            payload: Map::new(),
            whitelist: wl.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn union_whitelist_and_overflow_suppression() {
        let ask = json!({});
        let grep = json!({"pattern": "x"});
        let rules = vec![
            matched(
                "session-gate",
                Urgency::Block,
                &["AskUserQuestion", "Skill"],
            ),
            matched("heartbeat-block", Urgency::Block, &["Task"]),
            matched("warn", Urgency::Allow, &["Grep"]),
        ];
        let v = compose(rules.clone(), "AskUserQuestion", ask.as_object());
        assert!(v.deny.is_empty(), "union lets AskUserQuestion through");
        assert_eq!(ids(&v.allow), vec!["warn"]);
        let v = compose(rules.clone(), "Task", None);
        assert!(
            v.deny.is_empty(),
            "one rule's whitelist passes all blocking rules"
        );
        let v = compose(rules, "Grep", grep.as_object());
        assert_eq!(
            ids(&v.deny),
            vec!["session-gate", "heartbeat-block"],
            "allow rules' whitelists do not count"
        );
        let rules = vec![
            matched(OVERFLOW_RULE, Urgency::Block, &["Bash(ls *)"]),
            matched("session-gate", Urgency::Block, &["AskUserQuestion"]),
        ];
        let v = compose(rules.clone(), "AskUserQuestion", None);
        assert_eq!(
            ids(&v.deny),
            vec![OVERFLOW_RULE],
            "only the overflow whitelist counts"
        );
        let ls = json!({"command": "ls -la"});
        assert!(compose(rules, "Bash", ls.as_object()).deny.is_empty());
        let v = compose(vec![matched("b", Urgency::Interrupt, &[])], "Read", None);
        assert_eq!(ids(&v.deny), vec!["b"], "an empty union never passes");
    }

    #[test]
    fn engine_commands_are_segment_anchored() {
        assert!(is_engine_cmd("engine log sessions/x <<'EOF'", "log"));
        assert!(is_engine_cmd("cd /p && engine log x", "log"));
        assert!(is_engine_cmd("true; engine log x", "log"));
        assert!(is_engine_cmd("echo hi | engine log x", "log"));
        assert!(is_engine_cmd("echo\n  engine session phase x", "session"));
        assert!(is_engine_cmd("engine log", "log"));
        assert!(!is_engine_cmd("engineering-tool log x", "log"));
        assert!(!is_engine_cmd("echo engine log", "log"));
        assert!(!is_engine_cmd("engine logs", "log"));
        assert!(!is_engine_cmd("engine session-search x", "session"));
        assert!(!is_engine_cmd("FOO=1 engine session dehydrate", "session"));
    }

    #[test]
    fn texts_per_mode() {
        let mut m = matched("r", Urgency::Block, &[]);
        m.mode = Mode::Read;
        m.payload = json!({"files": ["a.md", "b.md"]})
            .as_object()
            .unwrap()
            .clone();
        assert_eq!(
            rule_text(&m, true).unwrap(),
            "[block: r] REQUIRED: Read these files: a.md, b.md"
        );
        assert!(rule_text(&m, false).unwrap().starts_with("[warn: r]"));
        m.mode = Mode::Inline;
        assert_eq!(rule_text(&m, true).unwrap(), "[a.md]\n[b.md]");
        m.payload.insert("text".into(), json!("T"));
        assert_eq!(rule_text(&m, true).unwrap(), "T");
        m.mode = Mode::Paste;
        m.payload
            .insert("command".into(), json!("/session dehydrate"));
        assert_eq!(rule_text(&m, true).unwrap(), "/session dehydrate");
        m.mode = Mode::Preload;
        assert_eq!(rule_text(&m, true), None);
    }
}
