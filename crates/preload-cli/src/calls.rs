//! Hook calls as the client makes them: the registrations the wiring gives an input, each one
//! run as a process with the input on stdin, bounded in time, its answer read back.
//!
//! `preload timings`, `preload explain` and `preload doctor --canary` run the installed
//! binaries this way, always in a sandbox ([`crate::sandbox`]) whose environment they pass in.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::install::wiring::{WIRING, Wiring};
use preload_core::primitives::hook::HookEvent;

/// How long one call may take before it is killed (the hooks keep to far smaller budgets).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// One registration: a binary of the wiring with its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    /// The wiring row it comes from.
    pub row: Wiring,
    /// Its arguments (with `--chunk I/N` for a chunked row).
    pub args: Vec<String>,
}

impl Registration {
    /// `preload-overflow`, `preload-session-start --chunk 3/32`.
    pub fn label(&self) -> String {
        if self.args.is_empty() {
            self.row.binary.to_owned()
        } else {
            format!("{} {}", self.row.binary, self.args.join(" "))
        }
    }
}

/// Whether the client runs `row` for `input`: the row's event, and its matcher against the
/// input's `source` (SessionStart), `tool_name` (tool events), `trigger` (PreCompact), `reason`
/// (SessionEnd) or `agent_type` (SubagentStart). `*`, an empty matcher or none match
/// everything; the table's matchers are exact names, several joined by `|`.
pub fn matches(row: &Wiring, input: &Value) -> bool {
    if input.get("hook_event_name").and_then(Value::as_str) != Some(row.event.name()) {
        return false;
    }
    let Some(matcher) = row.matcher.filter(|m| !m.is_empty() && *m != "*") else {
        return true;
    };
    let field = match row.event {
        HookEvent::SessionStart => "source",
        HookEvent::PreCompact => "trigger",
        HookEvent::SessionEnd => "reason",
        HookEvent::SubagentStart => "agent_type",
        _ => "tool_name",
    };
    let value = input.get(field).and_then(Value::as_str).unwrap_or("");
    matcher.split(['|', ',']).any(|name| name.trim() == value)
        && row.filter.is_none_or(|rule| passes_filter(rule, input))
}

/// The tool and the command prefix of an `if` filter `Tool(prefix *)`.
pub fn filter_parts(rule: &str) -> Option<(&str, &str)> {
    let (tool, pattern) = rule.strip_suffix(')')?.split_once('(')?;
    Some((tool, pattern.trim_end_matches('*').trim_end()))
}

/// Whether the client runs a row whose `if` filter is `rule` (permission-rule syntax,
/// `Bash(engine session phase *)`) for `input`: the tool is the rule's and one of the command's
/// simple commands (split at `&&`, `||`, `;`, `|` and newlines) starts with the rule's prefix.
/// A command with a heredoc, which the client does not take apart, runs every filtered row.
fn passes_filter(rule: &str, input: &Value) -> bool {
    let Some((tool, prefix)) = filter_parts(rule) else {
        return true;
    };
    if input.get("tool_name").and_then(Value::as_str) != Some(tool) {
        return false;
    }
    let command = input
        .pointer("/tool_input/command")
        .and_then(Value::as_str)
        .unwrap_or("");
    if command.contains("<<") {
        return true;
    }
    command
        .split(['&', '|', ';', '\n'])
        .map(str::trim)
        .any(|part| {
            part == prefix
                || part
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with(' '))
        })
}

/// Every registration the client runs for `input`, in wiring order.
pub fn registrations_for(input: &Value) -> Vec<Registration> {
    WIRING
        .iter()
        .filter(|row| matches(row, input))
        .flat_map(|row| {
            row.registrations()
                .into_iter()
                .map(|args| Registration { row: *row, args })
        })
        .collect()
}

/// Why a call could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The binary could not be started.
    #[error("cannot run {path}: {source}")]
    Spawn {
        /// The binary.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

/// What one call did.
#[derive(Debug, Clone)]
pub struct Call {
    /// Its exit code (`None`: killed after [`CALL_TIMEOUT`]).
    pub code: Option<i32>,
    /// Its stdout.
    pub stdout: String,
    /// Wall time from spawn to exit.
    pub elapsed: Duration,
}

impl Call {
    /// The printed JSON answer, when there is one.
    pub fn answer(&self) -> Option<Value> {
        let line = self.stdout.trim();
        (!line.is_empty())
            .then(|| serde_json::from_str(line).ok())
            .flatten()
    }

    /// The text that counts against the output cap: `additionalContext`, else the reason.
    pub fn text(&self) -> String {
        let Some(answer) = self.answer() else {
            return String::new();
        };
        let specific = &answer["hookSpecificOutput"];
        [
            &specific["additionalContext"],
            &specific["permissionDecisionReason"],
            &answer["reason"],
        ]
        .iter()
        .filter_map(|v| v.as_str())
        .collect::<Vec<_>>()
        .join("\n")
    }

    /// `allow`/`deny` of a PreToolUse answer, `block` of a top-level decision.
    pub fn decision(&self) -> Option<String> {
        let answer = self.answer()?;
        answer["hookSpecificOutput"]["permissionDecision"]
            .as_str()
            .or_else(|| answer["decision"].as_str())
            .map(str::to_owned)
    }
}

/// Run `bin_dir/<binary> args` in `cwd` with exactly `env`, `stdin` written to it.
pub fn call(
    bin_dir: &Path,
    binary: &str,
    args: &[String],
    env: &[(String, String)],
    cwd: &Path,
    stdin: &str,
) -> Result<Call, CallError> {
    let path = bin_dir.join(binary);
    let started = Instant::now();
    let mut child = Command::new(&path)
        .args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| CallError::Spawn {
            path: path.clone(),
            source,
        })?;
    if let Some(mut input) = child.stdin.take() {
        // A hook that exits without reading closes the pipe: not an error of the call.
        let _ = input.write_all(stdin.as_bytes());
    }
    let reader = child.stdout.take().map(|mut out| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = out.read_to_string(&mut text);
            text
        })
    });
    let code = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status.code(),
            Ok(None) if started.elapsed() < CALL_TIMEOUT => {
                std::thread::sleep(Duration::from_micros(200));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let elapsed = started.elapsed();
    let stdout = reader.and_then(|r| r.join().ok()).unwrap_or_default();
    Ok(Call {
        code,
        stdout,
        elapsed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::install::wiring::SESSION_START_CHUNKS;
    use serde_json::json;

    #[test]
    fn an_input_gets_the_registrations_of_its_event_and_matcher() {
        let labels = |input: Value| -> Vec<String> {
            registrations_for(&input)
                .iter()
                .map(Registration::label)
                .collect()
        };
        let pre = labels(json!({"hook_event_name": "PreToolUse", "tool_name": "Read"}));
        assert_eq!(
            pre,
            ["preload-overflow", "preload-compaction-reread pretooluse"]
        );
        let start = labels(json!({"hook_event_name": "SessionStart", "source": "compact"}));
        assert_eq!(start.len(), SESSION_START_CHUNKS + 1);
        assert_eq!(
            start[3],
            format!("preload-session-start --chunk 3/{SESSION_START_CHUNKS}")
        );
        assert!(labels(json!({"hook_event_name": "Notification"})).is_empty());
    }

    #[test]
    fn an_answer_gives_its_text_and_decision() {
        let call = Call {
            code: Some(0),
            stdout: json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                "permissionDecision": "deny", "permissionDecisionReason": "no"}})
            .to_string(),
            elapsed: Duration::ZERO,
        };
        assert_eq!(call.text(), "no");
        assert_eq!(call.decision().as_deref(), Some("deny"));
        let silent = Call {
            stdout: String::new(),
            ..call
        };
        assert_eq!(silent.text(), "");
        assert_eq!(silent.decision(), None);
    }

    #[test]
    fn rows_match_their_event_and_matcher() {
        let row = |binary: &str, args: &[&str]| {
            WIRING
                .iter()
                .find(|w| w.binary == binary && w.args == args)
                .unwrap()
        };
        let bash = |command: &str| {
            json!({"hook_event_name": "PostToolUse", "tool_name": "Bash",
                "tool_input": {"command": command}})
        };
        let runs = |binary: &str, input: &Value| {
            WIRING
                .iter()
                .filter(|w| w.binary == binary && matches(w, input))
                .count()
        };
        assert_eq!(
            runs(
                "preload-templates",
                &bash("cd x && engine session activate s implement")
            ),
            1
        );
        assert_eq!(runs("preload-templates", &bash("ls")), 0);
        assert_eq!(
            runs(
                "preload-phase-commands",
                &bash("engine session phase s '1: A'")
            ),
            1
        );
        assert_eq!(
            runs("preload-phase-commands", &bash("echo engine session phase")),
            0
        );
        // A heredoc: the client runs every filtered registration of the tool.
        let heredoc = bash("engine log f <<'EOF'\nx\nEOF");
        assert_eq!(runs("preload-templates", &heredoc), 3);
        let bash = bash("ls");
        assert!(matches(row("preload-injections", &[]), &bash));
        assert!(!matches(
            row("preload-compaction-reread", &["register"]),
            &bash
        ));
        let compact = json!({"hook_event_name": "SessionStart", "source": "compact"});
        let startup = json!({"hook_event_name": "SessionStart", "source": "startup"});
        let reread = row("preload-compaction-reread", &["sessionstart"]);
        assert!(matches(reread, &compact) && !matches(reread, &startup));
        assert!(matches(row("preload-session-start", &[]), &startup));
        assert!(!matches(row("preload-overflow", &[]), &bash));
        assert_eq!(
            row("preload-session-start", &[]).registrations().len(),
            SESSION_START_CHUNKS
        );
    }
}
