//! A scripted model for the Codex CLI on loopback ([`crate::loopback`]) speaking the Responses
//! API's streaming format (`POST /v1/responses`, server-sent `data:` lines) well enough for
//! `codex exec`, answering from a script of steps (the server records every request; it stops
//! by itself after [`LIFETIME`]); and the conversation one request carries, read into the
//! [`Received`] the checks of the Claude Code scenarios take.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{Value, json};

use crate::loopback::{Answer, Handler, Loopback, Scripted};

use crate::model::{self, Kind, Request};
use crate::received::{Message, Received, compaction_body};

/// How long a server lives at most, whatever the test does.
pub const LIFETIME: Duration = Duration::from_secs(150);
/// What the client's compaction request asks for (its last user message).
pub const COMPACTION_MARKER: &str = "CONTEXT CHECKPOINT COMPACTION";
/// The summary the scripted model gives when the client compacts.
pub const SUMMARY: &str = "Scripted summary of the work so far.";
/// What the scripted model says when the script has no steps left.
pub const FINAL_TEXT: &str = "Done.";
/// What the client says first in a tool's output when a PreToolUse hook denied the call.
pub const BLOCKED: &str = "Command blocked by PreToolUse hook";
/// Input tokens an ordinary answer reports.
const LIGHT_INPUT_TOKENS: u64 = 1_000;
/// Input tokens a [`Step::Heavy`] answer reports: past the compaction limit the scenarios give
/// the client (`model_auto_compact_token_limit`), within the model's window.
pub const HEAVY_INPUT_TOKENS: u64 = 250_000;
/// How long the client waits for a shell command's output before it hands the model a
/// session to poll instead (the scripted model never polls).
const YIELD_MS: u64 = 20_000;

/// One scripted model turn.
#[derive(Debug, Clone)]
pub enum Step {
    /// An `exec_command` call with this command line.
    Shell(String),
    /// An `apply_patch` call with this patch.
    Patch(String),
    /// A final text answer (ends the turn).
    Text(String),
    /// A step whose answer reports [`HEAVY_INPUT_TOKENS`], so the client compacts before its
    /// next request.
    Heavy(Box<Step>),
}

/// A shell call. It runs in a shell that is not a login shell: a login shell's profile may set
/// `PATH` anew, and the world's `engine` stand-in is first on the client's `PATH`.
pub fn shell(command: &str) -> Step {
    Step::Shell(command.to_owned())
}

/// An `apply_patch` call.
pub fn patch(text: &str) -> Step {
    Step::Patch(text.to_owned())
}

/// Marks `step` as filling the context window.
pub fn heavy(step: Step) -> Step {
    Step::Heavy(Box::new(step))
}

/// The shell call of a Claude Code scenario's Bash step (the engine's protocol steps of
/// `crate::scenario`: `activate()`, `phase(…)`, `log(…)`).
pub fn shell_of(step: &model::Step) -> Step {
    match step {
        model::Step::Tools(calls) => match calls.as_slice() {
            [(name, input)] if name == "Bash" => shell(
                input["command"]
                    .as_str()
                    .expect("a Bash step has a command"),
            ),
            _ => panic!("not one Bash call: {step:?}"),
        },
        model::Step::Text(text) => Step::Text(text.clone()),
        model::Step::Heavy(inner) => heavy(shell_of(inner)),
    }
}

/// What the model will say, step by step, then [`FINAL_TEXT`].
#[derive(Debug, Clone, Default)]
pub struct Script {
    steps: VecDeque<Step>,
}

impl Script {
    /// A script of `steps`.
    pub fn new(steps: Vec<Step>) -> Self {
        Self {
            steps: steps.into(),
        }
    }
}

/// The Responses API model the server answers with: its script and the ids it hands out.
type Responses = Scripted<Script>;

impl Handler for Responses {
    const HEADERS: &'static str = "cache-control: no-cache\r\n";

    /// Classifies a request and builds the answer.
    fn answer(&self, method: &str, path: &str, body: Option<&Value>) -> Answer {
        const JSON: &str = "application/json";
        if method != "POST" || !path.trim_end_matches('/').ends_with("/responses") {
            return (
                Kind::Other,
                "404 Not Found",
                JSON,
                br#"{"error":{"message":"not scripted"}}"#.to_vec(),
            );
        }
        let Some(body) = body else {
            return (
                Kind::Side,
                "400 Bad Request",
                JSON,
                br#"{"error":{"message":"body is not JSON"}}"#.to_vec(),
            );
        };
        let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
        let (kind, step) = if is_compaction(body) {
            (Kind::Compaction, Step::Text(SUMMARY.into()))
        } else if has_tools {
            let step = self
                .script
                .lock()
                .expect("script lock")
                .steps
                .pop_front()
                .unwrap_or_else(|| Step::Text(FINAL_TEXT.into()));
            (Kind::Turn("main".into()), step)
        } else {
            (Kind::Side, Step::Text("Scripted side answer".into()))
        };
        let (step, input_tokens) = match step {
            Step::Heavy(inner) => (*inner, HEAVY_INPUT_TOKENS),
            other => (other, LIGHT_INPUT_TOKENS),
        };
        let n = self.ids.fetch_add(1, Ordering::SeqCst);
        let item = output_item(&step, n);
        let mut out = String::new();
        let mut event = |data: &Value| {
            let _ = write!(
                out,
                "event: {}\ndata: {data}\n\n",
                data["type"].as_str().unwrap_or("")
            );
        };
        let id = format!("resp_e2e_{n:04}");
        event(&json!({"type": "response.created", "response": {"id": id}}));
        event(&json!({"type": "response.output_item.done", "output_index": 0, "item": item}));
        event(
            &json!({"type": "response.completed", "response": {"id": id, "usage": {
            "input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + 10}}}),
        );
        (kind, "200 OK", "text/event-stream", out.into_bytes())
    }
}

/// The running server; stops when dropped.
pub type CodexModel = Loopback<Responses>;

impl CodexModel {
    /// Starts a server on `127.0.0.1:0` with an empty script, for [`LIFETIME`] at most.
    pub fn start() -> Self {
        Self::listen(Scripted::new(Script::default()), LIFETIME)
    }

    /// The provider's `base_url` for the client's `config.toml`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr())
    }
}

/// Whether a request is the client's compaction request: no tools, and its last user message
/// asks for the checkpoint summary.
fn is_compaction(body: &Value) -> bool {
    let no_tools = body["tools"].as_array().is_none_or(Vec::is_empty);
    let last_user = body["input"]
        .as_array()
        .and_then(|items| items.iter().rev().find(|i| i["role"] == "user"))
        .map(item_texts)
        .unwrap_or_default();
    no_tools && last_user.iter().any(|t| t.contains(COMPACTION_MARKER))
}

/// The output item of one step.
fn output_item(step: &Step, n: usize) -> Value {
    match step {
        Step::Shell(command) => {
            let arguments = json!({"cmd": command, "login": false, "yield_time_ms": YIELD_MS});
            json!({"type": "function_call", "id": format!("fc_e2e_{n:04}"),
                "status": "completed", "name": "exec_command",
                "arguments": arguments.to_string(), "call_id": format!("call_e2e_{n:04}")})
        }
        Step::Patch(text) => json!({"type": "custom_tool_call",
            "id": format!("ctc_e2e_{n:04}"), "status": "completed", "name": "apply_patch",
            "input": text, "call_id": format!("call_e2e_{n:04}")}),
        Step::Text(text) => json!({"type": "message", "role": "assistant",
            "id": format!("msg_e2e_{n:04}"), "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}),
        Step::Heavy(inner) => output_item(inner, n),
    }
}

/// The texts of one input item (a message's parts, a tool's output).
fn item_texts(item: &Value) -> Vec<String> {
    match &item["content"] {
        Value::String(_) | Value::Array(_) => model::message_texts(item),
        _ => item["output"]
            .as_str()
            .map(str::to_owned)
            .into_iter()
            .collect(),
    }
}

/// The label a hook's developer message gets in the [`Received`] conversation: the client
/// passes each `additionalContext` on as a developer message of its own, without naming the
/// hook, so the conversation says where it stands instead.
pub const HOOK_LABEL: &str = "Codex";

/// The conversation one request body carries, as the checks read a Claude Code conversation:
///
/// - a message keeps its role and texts; a developer message after the first user message
///   that is not one of the client's own tagged sections (`<permissions instructions>`, …) is
///   a hook's `additionalContext`, and reads `Codex hook additional context: <text>`;
/// - an `exec_command` call is a `Bash` call with `command` = its `cmd`, an `apply_patch` call
///   an `apply_patch` call with `command` = the patch (what the hooks see);
/// - a tool's output is a `user` message right after its call (the client puts the hooks'
///   developer messages between the two; here they follow the output, as in a Claude Code
///   conversation), an error when a PreToolUse hook denied the call.
pub fn received(body: &Value) -> Received {
    let items = body["input"].as_array().cloned().unwrap_or_default();
    let output_of = |call_id: &Value| {
        items.iter().find(|i| {
            matches!(
                i["type"].as_str(),
                Some("function_call_output" | "custom_tool_call_output")
            ) && &i["call_id"] == call_id
        })
    };
    let mut messages = Vec::new();
    let mut seen_user = false;
    for item in &items {
        match item["type"].as_str() {
            Some("message") => {
                let role = item["role"].as_str().unwrap_or_default().to_owned();
                let mut texts = item_texts(item);
                if role == "developer"
                    && seen_user
                    && !texts.first().is_some_and(|t| t.starts_with('<'))
                {
                    texts = texts
                        .into_iter()
                        .map(|t| format!("{HOOK_LABEL} hook additional context: {t}"))
                        .collect();
                }
                seen_user |= role == "user";
                messages.push(Message {
                    role,
                    texts,
                    tool_uses: Vec::new(),
                    errors: Vec::new(),
                });
            }
            Some(kind @ ("function_call" | "custom_tool_call")) => {
                let name = item["name"].as_str().unwrap_or_default();
                let call = if kind == "custom_tool_call" {
                    (name.to_owned(), json!({"command": item["input"]}))
                } else {
                    let arguments: Value =
                        serde_json::from_str(item["arguments"].as_str().unwrap_or("{}"))
                            .unwrap_or(Value::Null);
                    if name == "exec_command" {
                        ("Bash".to_owned(), json!({"command": arguments["cmd"]}))
                    } else {
                        (name.to_owned(), arguments)
                    }
                };
                messages.push(Message {
                    role: "assistant".into(),
                    texts: Vec::new(),
                    tool_uses: vec![call],
                    errors: Vec::new(),
                });
                if let Some(output) = output_of(&item["call_id"]) {
                    let texts = item_texts(output);
                    let errors = texts
                        .iter()
                        .filter(|t| t.starts_with(BLOCKED))
                        .cloned()
                        .collect();
                    messages.push(Message {
                        role: "user".into(),
                        texts,
                        tool_uses: Vec::new(),
                        errors,
                    });
                }
            }
            _ => {}
        }
    }
    Received { messages }
}

/// The last request of the main conversation (it carries the whole context window).
pub fn last_turn(requests: &[Request]) -> Option<Received> {
    requests
        .iter()
        .rev()
        .find(|r| r.kind == Kind::Turn("main".into()))
        .and_then(|r| r.body.as_ref())
        .map(received)
}

/// The conversation the client asked the model to summarise (the last compaction request).
pub fn compacted(requests: &[Request]) -> Option<Received> {
    compaction_body(requests).map(received)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_codex_request_reads_as_the_conversation_the_checks_take() {
        let text = |role: &str, t: &str| json!({"type": "message", "role": role, "content": [{"type": "input_text", "text": t}]});
        let body = json!({"input": [
            text("developer", "You are Codex"),
            text("developer", "<permissions instructions>"),
            text("user", "<environment_context>\n  <cwd>/p</cwd>\n</environment_context>"),
            text("developer", "[Preloaded: /a]\nA\n"),
            text("user", "go"),
            {"type": "function_call", "name": "exec_command", "call_id": "c1",
                "arguments": "{\"cmd\": \"cat x\", \"login\": false}"},
            text("developer", "[Preloaded: /b]\nB\n"),
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            {"type": "custom_tool_call", "name": "apply_patch", "call_id": "c2",
                "input": "*** Begin Patch\n*** End Patch\n"},
            {"type": "custom_tool_call_output", "call_id": "c2",
                "output": format!("{BLOCKED}: no. Command: patch")},
        ]});
        assert!(!is_compaction(&body));
        let got = received(&body);
        let roles: Vec<&str> = got.messages.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(
            roles,
            [
                "developer",
                "developer",
                "user",
                "developer",
                "user",
                "assistant",
                "user",
                "developer",
                "assistant",
                "user"
            ]
        );
        assert_eq!(got.bash_call("cat x"), Some(5));
        assert_eq!(got.hook_contexts().len(), 2, "{:?}", got.hook_contexts());
        assert_eq!(got.first("/b"), Some(7));
        assert!(got.is_ordinary_call(5));
        assert!(!got.is_ordinary_call(8), "a denied patch");
        assert_eq!(
            got.check_each_once(&["/a".into(), "/b".into()]),
            Vec::<String>::new()
        );
        // The same block in a second developer message is caught, and so is one that never came.
        let mut twice = body.clone();
        twice["input"]
            .as_array_mut()
            .unwrap()
            .push(text("developer", "[Preloaded: /b]\nB\n"));
        assert_eq!(
            received(&twice).check_each_once(&["/c".into()]),
            [
                "delivered 2 times (messages [7, 10]): /b",
                "never delivered: /c"
            ]
        );
        let compaction = json!({"tools": [], "input": [
            text("user", "go"),
            text("user", &format!("You are performing a {COMPACTION_MARKER}."))]});
        assert!(is_compaction(&compaction));
    }
}
