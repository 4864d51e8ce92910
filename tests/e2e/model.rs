//! A scripted model on loopback ([`crate::loopback`]) speaking the Messages API's streaming
//! format well enough for the Claude Code client, answering each conversation from a script of
//! steps; the server records every request it receives. It stops by itself after [`LIFETIME`].

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{Value, json};

use crate::loopback::{Answer, Handler, Loopback, Scripted};

/// How long a server lives at most, whatever the test does.
pub const LIFETIME: Duration = Duration::from_secs(150);
/// Marker of the client's compaction request (its last user message).
const COMPACTION_MARKER: &str = "CRITICAL: Respond with TEXT ONLY";
/// What the scripted model says when a conversation has no steps left.
pub const FINAL_TEXT: &str = "Done.";

/// One scripted model turn.
#[derive(Debug, Clone)]
pub enum Step {
    /// Tool calls, made together in one assistant message (`name`, `input`).
    Tools(Vec<(String, Value)>),
    /// A final text answer (ends the turn).
    Text(String),
    /// A step whose answer reports a nearly full context window ([`HEAVY_INPUT_TOKENS`] input
    /// tokens), so the client compacts before its next request.
    Heavy(Box<Step>),
}

/// Input tokens a [`Step::Heavy`] answer reports.
pub const HEAVY_INPUT_TOKENS: u64 = 960_000;

/// Marks `step` as filling the context window.
pub fn heavy(step: Step) -> Step {
    Step::Heavy(Box::new(step))
}

/// One tool call.
pub fn tool(name: &str, input: Value) -> Step {
    Step::Tools(vec![(name.to_owned(), input)])
}

/// A Bash tool call.
pub fn bash(command: &str) -> Step {
    tool(
        "Bash",
        json!({"command": command, "description": "scripted step"}),
    )
}

/// A conversation the model takes part in: the main one, or a sub-agent's, recognised by a
/// marker in its first user message.
#[derive(Debug, Clone)]
struct Conversation {
    name: String,
    marker: Option<String>,
    steps: VecDeque<Step>,
}

/// What the model will say, per conversation.
#[derive(Debug, Clone, Default)]
pub struct Script {
    conversations: Vec<Conversation>,
}

impl Script {
    /// A script whose main conversation takes `steps`, then ends with [`FINAL_TEXT`].
    pub fn main(steps: Vec<Step>) -> Self {
        Self {
            conversations: vec![Conversation {
                name: "main".into(),
                marker: None,
                steps: steps.into(),
            }],
        }
    }

    /// Adds a sub-agent conversation named `name`, recognised by `marker` in its first user
    /// message (put the marker in the Agent tool's `prompt`).
    pub fn agent(mut self, name: &str, marker: &str, steps: Vec<Step>) -> Self {
        self.conversations.push(Conversation {
            name: name.into(),
            marker: Some(marker.into()),
            steps: steps.into(),
        });
        self
    }

    fn next(&mut self, first_user_text: &str) -> (String, Step) {
        let index = self
            .conversations
            .iter()
            .position(|c| {
                c.marker
                    .as_deref()
                    .is_some_and(|m| first_user_text.contains(m))
            })
            .unwrap_or(0);
        match self.conversations.get_mut(index) {
            Some(c) => (
                c.name.clone(),
                c.steps.pop_front().unwrap_or(Step::Text(FINAL_TEXT.into())),
            ),
            None => ("main".into(), Step::Text(FINAL_TEXT.into())),
        }
    }
}

/// What kind of request the client sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A model turn of a scripted conversation (by name).
    Turn(String),
    /// The client's compaction request.
    Compaction,
    /// A side request: title generation, token counting, a probe without tools.
    Side,
    /// Anything that is not `POST /v1/messages` (HEAD or GET probes).
    Other,
}

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Request {
    /// HTTP method.
    pub method: String,
    /// Request target.
    pub path: String,
    /// How the server classified it.
    pub kind: Kind,
    /// The parsed JSON body, when there was one.
    pub body: Option<Value>,
}

/// The Messages API model the server answers with: its script and the ids it hands out.
type Messages = Scripted<Script>;

impl Handler for Messages {
    const HEADERS: &'static str = "request-id: req_e2e\r\n";

    /// Classifies a request and builds the answer.
    fn answer(&self, method: &str, path: &str, body: Option<&Value>) -> Answer {
        const JSON: &str = "application/json";
        if method != "POST" || !path.starts_with("/v1/messages") {
            return (Kind::Other, "200 OK", JSON, b"{}".to_vec());
        }
        let Some(body) = body else {
            let error = json!({"type": "error",
                "error": {"type": "invalid_request_error", "message": "body is not JSON"}});
            return (
                Kind::Side,
                "400 Bad Request",
                JSON,
                error.to_string().into_bytes(),
            );
        };
        if path.contains("count_tokens") {
            let tokens = body.to_string().len() / 4;
            return (
                Kind::Side,
                "200 OK",
                JSON,
                json!({"input_tokens": tokens}).to_string().into_bytes(),
            );
        }
        let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
        let (kind, step) = if last_user_text(body).contains(COMPACTION_MARKER) {
            (
                Kind::Compaction,
                Step::Text("<summary>Scripted summary of the work so far.</summary>".into()),
            )
        } else if has_tools {
            let (name, step) = self
                .script
                .lock()
                .expect("script lock")
                .next(&first_user_text(body));
            (Kind::Turn(name), step)
        } else {
            (Kind::Side, Step::Text("Scripted side answer".into()))
        };
        let (step, input_tokens) = match step {
            Step::Heavy(inner) => (*inner, HEAVY_INPUT_TOKENS),
            other => (other, 10),
        };
        let content = content_blocks(&step, self);
        let model = body["model"]
            .as_str()
            .unwrap_or("claude-scripted")
            .to_owned();
        // Every message needs its own id: the client merges the blocks of messages sharing one.
        let id = format!("msg_e2e_{:04}", self.ids.fetch_add(1, Ordering::SeqCst));
        if body["stream"].as_bool() == Some(true) {
            let events = stream_events(&id, &model, &content, input_tokens);
            return (kind, "200 OK", "text/event-stream", events);
        }
        let message = json!({"id": id, "type": "message", "role": "assistant",
            "model": model, "content": content, "stop_reason": stop_reason(&content),
            "stop_sequence": null, "usage": {"input_tokens": input_tokens, "output_tokens": 5}});
        (kind, "200 OK", JSON, message.to_string().into_bytes())
    }
}

/// The running server; stops when dropped.
pub type ModelServer = Loopback<Messages>;

impl ModelServer {
    /// Starts a server on `127.0.0.1:0` answering from `script`, for [`LIFETIME`] at most.
    pub fn start(script: Script) -> Self {
        Self::start_for(script, LIFETIME)
    }

    /// [`ModelServer::start`], living `lifetime` at most.
    pub fn start_for(script: Script, lifetime: Duration) -> Self {
        Self::listen(Scripted::new(script), lifetime)
    }

    /// The base URL for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr())
    }
}

fn content_blocks(step: &Step, shared: &Messages) -> Vec<Value> {
    match step {
        Step::Text(text) => vec![json!({"type": "text", "text": text})],
        Step::Heavy(inner) => content_blocks(inner, shared),
        Step::Tools(calls) => calls
            .iter()
            .map(|(name, input)| {
                let n = shared.ids.fetch_add(1, Ordering::SeqCst);
                json!({"type": "tool_use", "id": format!("toolu_e2e_{n:04}"), "name": name,
                    "input": input})
            })
            .collect(),
    }
}

fn stop_reason(content: &[Value]) -> &'static str {
    if content.iter().any(|c| c["type"] == "tool_use") {
        "tool_use"
    } else {
        "end_turn"
    }
}

/// The server-sent events of one streamed message holding `content`.
fn stream_events(id: &str, model: &str, content: &[Value], input_tokens: u64) -> Vec<u8> {
    let mut out = String::new();
    let mut event = |name: &str, data: Value| {
        let _ = write!(out, "event: {name}\ndata: {data}\n\n");
    };
    event(
        "message_start",
        json!({"type": "message_start", "message": {"id": id,
        "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1}}}),
    );
    for (index, block) in content.iter().enumerate() {
        if block["type"] == "tool_use" {
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"],
                "input": {}}}),
            );
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": block["input"].to_string()}}),
            );
        } else {
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "text", "text": ""}}),
            );
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": block["text"]}}),
            );
        }
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    event(
        "message_delta",
        json!({"type": "message_delta",
        "delta": {"stop_reason": stop_reason(content), "stop_sequence": null},
        "usage": {"input_tokens": input_tokens, "output_tokens": 5}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    out.into_bytes()
}

/// Every text of a message's content (a string, or text blocks).
pub fn message_texts(message: &Value) -> Vec<String> {
    match &message["content"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

fn first_user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .map(|m| message_texts(m).join("\n"))
        .unwrap_or_default()
}

fn last_user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .map(|m| message_texts(m).join("\n"))
        .unwrap_or_default()
}
