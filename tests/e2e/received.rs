//! What the model received: the messages of one recorded request, the `[Preloaded: …]` blocks
//! in them, the hook contexts the client wrapped around them, and the checks the scenarios make.
//!
//! Every check returns the problems it found (empty = pass), so the harness's own tests can show
//! that a double delivery or a dropped file is caught.

use serde_json::Value;

use crate::model::{Kind, Request, message_texts};

/// Header of a delivered block.
pub const HEADER: &str = "[Preloaded: ";
/// What the client puts between a hook's label and its `additionalContext`.
const HOOK_CONTEXT: &str = " hook additional context: ";
/// What the client writes before a skill's text when it expands the skill itself.
pub const EXPANSION: &str = "Base directory for this skill: ";
/// What the client puts between a hook's label and the reason of a PreToolUse deny.
pub const HOOK_REASON: &str = " hook error: ";
/// Texts the client appends after a hook context inside the same system text.
const CLIENT_SECTIONS: &[&str] = &[
    "\n\n# Environment\n",
    "\n\nToday's date is ",
    "\n\n<system-reminder>",
    "\n\nThe user hasn't heard from you",
];

/// One message as the model sees it.
#[derive(Debug, Clone)]
pub struct Message {
    /// `user`, `assistant` or `system`.
    pub role: String,
    /// Its texts: text blocks, tool results, string content.
    pub texts: Vec<String>,
    /// Its tool calls (`name`, `input`).
    pub tool_uses: Vec<(String, Value)>,
    /// Its tool results marked as errors: denied calls carry the hook's reason here.
    pub errors: Vec<String>,
}

/// A `[Preloaded: …]` header the model received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The whole header text between the brackets, after `Preloaded: ` (path and part label).
    pub label: String,
    /// The file path.
    pub path: String,
    /// `(i, n)` of a labelled part `(part i/n)`; `None` for a whole file.
    pub part: Option<(usize, usize)>,
    /// Index of the message holding it.
    pub message: usize,
}

/// `(i, n)` of a part label's tail (` (part i/n)`).
fn part_of(label: &str) -> Option<(usize, usize)> {
    let tail = label.split_once(" (part ")?.1.strip_suffix(')')?;
    let (i, n) = tail.split_once('/')?;
    Some((i.parse().ok()?, n.parse().ok()?))
}

/// One hook's `additionalContext` as the client passed it on.
#[derive(Debug, Clone)]
pub struct HookContext {
    /// The client's label (`SessionStart`, `PostToolUse:Bash`, …).
    pub label: String,
    /// The text the hook returned.
    pub text: String,
}

/// The conversation carried by one request.
#[derive(Debug, Clone)]
pub struct Received {
    /// Its messages, in order.
    pub messages: Vec<Message>,
}

impl Received {
    /// The conversation in a request body.
    pub fn from_body(body: &Value) -> Self {
        let messages = body["messages"]
            .as_array()
            .map(|ms| ms.iter().map(message).collect())
            .unwrap_or_default();
        Self { messages }
    }

    /// The last request of conversation `name` (it carries the whole conversation).
    pub fn last_of(requests: &[Request], name: &str) -> Option<Self> {
        requests
            .iter()
            .rev()
            .find(|r| r.kind == Kind::Turn(name.into()))
            .and_then(|r| r.body.as_ref())
            .map(Self::from_body)
    }

    /// The conversation the client asked the model to summarise (the last compaction request).
    pub fn compacted(requests: &[Request]) -> Option<Self> {
        compaction_body(requests).map(Self::from_body)
    }

    /// Every `[Preloaded: …]` header, in order.
    pub fn headers(&self) -> Vec<Header> {
        let mut headers = Vec::new();
        for (index, message) in self.messages.iter().enumerate() {
            for text in &message.texts {
                let mut rest = text.as_str();
                while let Some(at) = rest.find(HEADER) {
                    let after = &rest[at + HEADER.len()..];
                    let end = after.find(['\n', ']']).unwrap_or(after.len());
                    let label = after[..end].to_owned();
                    let path = preload_core::primitives::delivery::header_path(&label).to_owned();
                    // Only an absolute path names a delivered file; prose that shows the
                    // header's form (`[Preloaded: …]`) is no block.
                    if path.starts_with('/') {
                        headers.push(Header {
                            part: part_of(&label),
                            label,
                            path,
                            message: index,
                        });
                    }
                    rest = &after[end..];
                }
            }
        }
        headers
    }

    /// How many headers name `path` (whole files and parts alike).
    pub fn count(&self, path: &str) -> usize {
        self.headers().iter().filter(|h| h.path == path).count()
    }

    /// Index of the first message holding a header for `path`.
    pub fn first(&self, path: &str) -> Option<usize> {
        self.headers()
            .iter()
            .find(|h| h.path == path)
            .map(|h| h.message)
    }

    /// Index of the message with which `path` was complete in this conversation: its whole
    /// block, or the last of its parts `1..=n` to arrive (a split file's parts may come over
    /// several tool calls). `None` when it never arrived whole.
    pub fn complete_at(&self, path: &str) -> Option<usize> {
        let headers: Vec<Header> = self
            .headers()
            .into_iter()
            .filter(|h| h.path == path)
            .collect();
        if let Some(whole) = headers.iter().find(|h| h.part.is_none()) {
            return Some(whole.message);
        }
        let n = headers.iter().find_map(|h| h.part).map(|(_, n)| n)?;
        (1..=n)
            .map(|i| {
                headers
                    .iter()
                    .find(|h| h.part == Some((i, n)))
                    .map(|h| h.message)
            })
            .collect::<Option<Vec<usize>>>()
            .and_then(|at| at.into_iter().max())
    }

    /// Every hook context, in order.
    pub fn hook_contexts(&self) -> Vec<HookContext> {
        let mut found = Vec::new();
        for message in &self.messages {
            for text in &message.texts {
                found.extend(
                    hook_contexts_in(text)
                        .into_iter()
                        .map(|(label, text)| HookContext { label, text }),
                );
            }
        }
        found
    }

    /// The files whose blocks the client carried into a compacted conversation from before the
    /// compaction: those in hook contexts that come before the first `SessionStart` context
    /// (the exchange in flight when the client compacted, which it keeps after the summary).
    pub fn kept_across_compaction(&self) -> Vec<String> {
        let mut kept: Vec<String> = Vec::new();
        for context in self.hook_contexts() {
            if context.label == "SessionStart" {
                break;
            }
            for path in header_paths(&context.text) {
                if !kept.contains(&path) {
                    kept.push(path);
                }
            }
        }
        kept
    }

    /// Characters the hooks added to this conversation.
    pub fn hook_chars(&self) -> usize {
        self.hook_contexts()
            .iter()
            .map(|c| c.text.chars().count())
            .sum()
    }

    /// Index of the assistant message whose Bash call ran a command containing `needle`.
    pub fn bash_call(&self, needle: &str) -> Option<usize> {
        self.messages.iter().position(|m| {
            m.tool_uses.iter().any(|(name, input)| {
                name == "Bash"
                    && input["command"]
                        .as_str()
                        .is_some_and(|c| c.contains(needle))
            })
        })
    }

    /// Index of the assistant message that calls the `Skill` tool for `skill`.
    pub fn skill_call(&self, skill: &str) -> Option<usize> {
        self.messages.iter().position(|m| {
            m.tool_uses
                .iter()
                .any(|(name, input)| name == "Skill" && input["skill"] == skill)
        })
    }

    /// Index of the first message with a text containing `needle`.
    pub fn text_position(&self, needle: &str) -> Option<usize> {
        self.messages
            .iter()
            .position(|m| m.texts.iter().any(|t| t.contains(needle)))
    }

    /// How many times `needle` occurs in all texts of the conversation.
    pub fn count_text(&self, needle: &str) -> usize {
        self.messages
            .iter()
            .flat_map(|m| &m.texts)
            .map(|t| t.matches(needle).count())
            .sum()
    }

    /// Every tool result marked as an error, with its message index (denied calls carry the
    /// hook's reason).
    pub fn errors(&self) -> Vec<(usize, &str)> {
        self.messages
            .iter()
            .enumerate()
            .flat_map(|(i, m)| m.errors.iter().map(move |e| (i, e.as_str())))
            .collect()
    }

    /// Problems: a `[Preloaded: …]` block that came with a denied tool call (its result is an
    /// error, and everything up to the next assistant turn came with it). A denied call claims
    /// nothing: what is queued waits for a call that runs.
    pub fn check_nothing_with_denied_calls(&self) -> Vec<String> {
        let headers = self.headers();
        let mut problems = Vec::new();
        for (result, _) in self.errors() {
            let end = (result + 1..self.messages.len())
                .find(|&i| self.messages[i].role == "assistant")
                .unwrap_or(self.messages.len());
            problems.extend(
                headers
                    .iter()
                    .filter(|h| (result..end).contains(&h.message))
                    .map(|h| {
                        format!(
                            "{} came with the denied call whose result is message {result}",
                            h.label
                        )
                    }),
            );
        }
        problems
    }

    /// The message holding the result of the tool call at message `call` (the one after it).
    pub fn result_of(&self, call: usize) -> Option<&Message> {
        self.messages.get(call + 1)
    }

    /// Problems: a block (a whole file, or one part of a split file) received more than once, a
    /// file received both whole and in parts or in parts of two different cuts, a file whose
    /// parts did not all arrive (a file counts as delivered when its last part `(part n/n)` is
    /// in, and every part `1..=n` must be there exactly once), or an `expected` file never
    /// received.
    pub fn check_each_once(&self, expected: &[String]) -> Vec<String> {
        let mut problems = Vec::new();
        let headers = self.headers();
        let mut seen: Vec<&str> = Vec::new();
        for header in &headers {
            if seen.contains(&header.label.as_str()) {
                continue;
            }
            seen.push(&header.label);
            let messages: Vec<usize> = headers
                .iter()
                .filter(|h| h.label == header.label)
                .map(|h| h.message)
                .collect();
            if messages.len() > 1 {
                problems.push(format!(
                    "delivered {} times (messages {messages:?}): {}",
                    messages.len(),
                    header.label
                ));
            }
        }
        let mut paths: Vec<&str> = Vec::new();
        for header in &headers {
            if !paths.contains(&header.path.as_str()) {
                paths.push(&header.path);
            }
        }
        for path in paths {
            let of: Vec<&Header> = headers.iter().filter(|h| h.path == path).collect();
            let whole: Vec<usize> = of
                .iter()
                .filter(|h| h.part.is_none())
                .map(|h| h.message)
                .collect();
            let mut cuts: Vec<usize> = of.iter().filter_map(|h| h.part).map(|(_, n)| n).collect();
            cuts.dedup();
            if !whole.is_empty() && !cuts.is_empty() {
                problems.push(format!(
                    "delivered whole (messages {whole:?}) and in parts as well: {path}"
                ));
            }
            if cuts.len() > 1 {
                problems.push(format!("delivered in parts of {cuts:?} parts: {path}"));
            }
            if let Some(&n) = cuts.first() {
                let missing: Vec<usize> = (1..=n)
                    .filter(|i| !of.iter().any(|h| h.part == Some((*i, n))))
                    .collect();
                if !missing.is_empty() {
                    problems.push(format!(
                        "incomplete: parts {missing:?} of {n} never arrived: {path}"
                    ));
                }
            }
        }
        for path in expected {
            if !headers.iter().any(|h| &h.path == path) {
                problems.push(format!("never delivered: {path}"));
            }
        }
        problems
    }

    /// Problems: the skill in `skill_dir` reached the model more than once, counting the
    /// client's own expansions (`Base directory for this skill: <dir>`, at the prompt and again
    /// after a compaction) and the hooks' `[Preloaded: <dir>/SKILL.md]` blocks alike.
    pub fn check_skill_at_most_once(&self, skill_dir: &str) -> Vec<String> {
        let arrivals = self.skill_arrivals(skill_dir);
        if arrivals.len() <= 1 {
            return Vec::new();
        }
        vec![format!(
            "{skill_dir}/SKILL.md reached the model {} times: {}",
            arrivals.len(),
            arrivals.join(", ")
        )]
    }

    /// Every arrival of the skill in `skill_dir`: the client's own expansions and the hooks'
    /// `[Preloaded: <dir>/SKILL.md]` blocks, each as `<how> at message <i>`.
    pub fn skill_arrivals(&self, skill_dir: &str) -> Vec<String> {
        let expansions: Vec<usize> = self
            .messages
            .iter()
            .enumerate()
            .flat_map(|(i, m)| {
                let needle = format!("{EXPANSION}{skill_dir}\n");
                m.texts
                    .iter()
                    .map(move |t| t.matches(needle.as_str()).count())
                    .flat_map(move |n| std::iter::repeat_n(i, n))
            })
            .collect();
        let skill_md = format!("{skill_dir}/SKILL.md");
        let blocks: Vec<usize> = self
            .headers()
            .iter()
            .filter(|h| h.path == skill_md)
            .map(|h| h.message)
            .collect();
        expansions
            .iter()
            .map(|i| format!("the client's expansion at message {i}"))
            .chain(
                blocks
                    .iter()
                    .map(|i| format!("a [Preloaded] block at message {i}")),
            )
            .collect()
    }

    /// Problems: a file of `paths` not complete ([`Self::complete_at`]) within messages
    /// `from..=to`, or begun before `from`.
    pub fn check_arrives_within(
        &self,
        paths: &[String],
        from: usize,
        to: usize,
        when: &str,
    ) -> Vec<String> {
        paths
            .iter()
            .filter_map(|path| match (self.first(path), self.complete_at(path)) {
                (Some(begun), Some(done)) if begun >= from && done <= to => None,
                (Some(begun), Some(done)) => Some(format!(
                    "{path} arrived at messages {begun}..={done}, not {when} ({from}..={to})"
                )),
                (Some(begun), None) => Some(format!(
                    "{path} began at message {begun} but never arrived whole ({when})"
                )),
                (None, _) => Some(format!("{path} never arrived ({when})")),
            })
            .collect()
    }

    /// Whether the message at `index` is an ordinary tool call: one that ran (its result is
    /// no deny) and is no `engine …` command of the session protocol.
    pub fn is_ordinary_call(&self, index: usize) -> bool {
        let Some(message) = self.messages.get(index) else {
            return false;
        };
        let engine = |(name, input): &(String, Value)| {
            name == "Bash"
                && input["command"]
                    .as_str()
                    .is_some_and(|c| c.trim_start().starts_with("engine "))
        };
        !message.tool_uses.is_empty()
            && !message.tool_uses.iter().any(engine)
            && self
                .result_of(index)
                .is_some_and(|result| result.errors.is_empty())
    }

    /// The last message that belongs to the `n`th ordinary tool call after message `from` (its
    /// result and the hook contexts that came with it: everything before the next assistant
    /// turn); the end of the conversation when there are fewer calls.
    pub fn after_ordinary_calls(&self, from: usize, n: usize) -> usize {
        let last = self.messages.len().saturating_sub(1);
        let Some(call) = (from + 1..self.messages.len())
            .filter(|&i| self.is_ordinary_call(i))
            .nth(n.saturating_sub(1))
        else {
            return last;
        };
        (call + 1..self.messages.len())
            .find(|&i| self.messages[i].role == "assistant")
            .map_or(last, |next| next - 1)
    }

    /// Problems: a header for a file ending with `suffix` at or after message `from`.
    pub fn check_absent_after(&self, suffix: &str, from: usize) -> Vec<String> {
        self.headers()
            .iter()
            .filter(|h| h.path.ends_with(suffix) && h.message >= from)
            .map(|h| {
                format!(
                    "{} re-sent at message {} (after message {from})",
                    h.label, h.message
                )
            })
            .collect()
    }

    /// Problems: a hook context or a hook's deny reason holding the two characters backslash-n.
    pub fn check_no_literal_newlines(&self) -> Vec<String> {
        let reasons = self
            .errors()
            .into_iter()
            .filter(|(_, e)| e.contains(HOOK_REASON))
            .map(|(_, e)| HookContext {
                label: "deny reason".into(),
                text: e.to_owned(),
            });
        self.hook_contexts()
            .into_iter()
            .chain(reasons)
            .filter(|c| c.text.contains("\\n"))
            .map(|c| {
                let at = c.text.find("\\n").unwrap_or(0);
                let from = c.text[..at]
                    .char_indices()
                    .rev()
                    .nth(40)
                    .map_or(0, |(i, _)| i);
                format!(
                    "literal backslash-n in {} context: …{}…",
                    c.label,
                    &c.text[from..at + 2]
                )
            })
            .collect()
    }
}

/// The body of the last compaction request: the conversation the client asked the model to
/// summarise.
pub fn compaction_body(requests: &[Request]) -> Option<&Value> {
    requests
        .iter()
        .rev()
        .find(|r| r.kind == Kind::Compaction)
        .and_then(|r| r.body.as_ref())
}

fn message(value: &Value) -> Message {
    let mut texts = Vec::new();
    let mut tool_uses = Vec::new();
    let mut errors = Vec::new();
    match &value["content"] {
        Value::String(s) => texts.push(s.clone()),
        Value::Array(blocks) => {
            for block in blocks {
                match block["type"].as_str() {
                    Some("tool_use") => tool_uses.push((
                        block["name"].as_str().unwrap_or_default().to_owned(),
                        block["input"].clone(),
                    )),
                    Some("tool_result") => {
                        let result = message_texts(block);
                        if block["is_error"] == Value::Bool(true) {
                            errors.extend(result.iter().cloned());
                        }
                        texts.extend(result);
                    }
                    _ => texts.extend(block["text"].as_str().map(str::to_owned)),
                }
            }
        }
        _ => {}
    }
    Message {
        role: value["role"].as_str().unwrap_or_default().to_owned(),
        texts,
        tool_uses,
        errors,
    }
}

/// The absolute paths of the `[Preloaded: …]` headers in `text`, in order.
fn header_paths(text: &str) -> Vec<String> {
    Received {
        messages: vec![Message {
            role: String::new(),
            texts: vec![text.to_owned()],
            tool_uses: Vec::new(),
            errors: Vec::new(),
        }],
    }
    .headers()
    .into_iter()
    .map(|h| h.path)
    .collect()
}

/// The (label, text) of every hook context in one text.
fn hook_contexts_in(text: &str) -> Vec<(String, String)> {
    let mut starts = Vec::new();
    let mut search = 0;
    while let Some(found) = text[search..].find(HOOK_CONTEXT) {
        let at = search + found;
        let label_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        starts.push((
            label_start,
            at + HOOK_CONTEXT.len(),
            text[label_start..at].to_owned(),
        ));
        search = at + HOOK_CONTEXT.len();
    }
    let mut contexts = Vec::new();
    for (i, (_, body_start, label)) in starts.iter().enumerate() {
        let mut end = starts
            .get(i + 1)
            .map_or(text.len(), |(label_start, _, _)| *label_start);
        for section in CLIENT_SECTIONS {
            if let Some(at) = text[*body_start..end].find(section) {
                end = end.min(body_start + at);
            }
        }
        let body = text[*body_start..end].trim_end_matches('\n').to_owned();
        contexts.push((label.clone(), body));
    }
    contexts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A conversation: `engine` call, an ordinary call, a denied call with a block after its
    /// result (which the check must catch), two more ordinary calls, each with a block after it.
    fn conversation() -> Received {
        let call = |id: &str, command: &str| {
            serde_json::json!({"role": "assistant", "content": [{"type": "tool_use", "id": id,
                "name": "Bash", "input": {"command": command}}]})
        };
        let result = |id: &str, error: bool| {
            serde_json::json!({"role": "user", "content": [{"type": "tool_result",
                "tool_use_id": id, "content": "ok", "is_error": error}]})
        };
        let block = |path: &str| {
            serde_json::json!({"role": "system", "content":
                format!("PostToolUse:Bash hook additional context: [Preloaded: {path}]\nx\n")})
        };
        Received::from_body(&serde_json::json!({"messages": [
            {"role": "user", "content": "go"},
            call("a", "engine session phase sessions/e2e \"1: Interrogation\""), result("a", false),
            call("b", "ls"), result("b", false), block("/b"),
            call("c", "ls denied"), result("c", true), block("/c"),
            call("d", "ls"), result("d", false), block("/d"),
            call("e", "ls"), result("e", false), block("/e"),
            {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
        ]}))
    }

    #[test]
    fn ordinary_calls_are_counted_past_engine_commands_and_denied_calls() {
        let got = conversation();
        assert!(!got.is_ordinary_call(1), "an engine command");
        assert!(got.is_ordinary_call(3));
        assert!(!got.is_ordinary_call(6), "a denied call");
        // The second ordinary call after the phase is `d`: its result and block end at 11.
        assert_eq!(got.after_ordinary_calls(1, 2), 11);
        assert_eq!(got.after_ordinary_calls(1, 1), 5);
        assert_eq!(got.after_ordinary_calls(1, 9), got.messages.len() - 1);
        assert_eq!(
            got.check_arrives_within(&["/d".into()], 1, got.after_ordinary_calls(1, 2), "x"),
            Vec::<String>::new()
        );
        assert_eq!(
            got.check_arrives_within(&["/e".into()], 1, got.after_ordinary_calls(1, 2), "x")
                .len(),
            1
        );
        assert_eq!(
            got.check_nothing_with_denied_calls(),
            vec!["/c came with the denied call whose result is message 7".to_owned()]
        );
    }

    #[test]
    fn hook_contexts_are_cut_at_the_next_label_and_client_sections() {
        let text = "SessionStart hook additional context: [Preloaded: /a]\nA\n\n[Preloaded: /b]\nB\n\n\
                    SessionStart hook additional context: C\n\n# Environment\nYou have been";
        let found = hook_contexts_in(text);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].1, "[Preloaded: /a]\nA\n\n[Preloaded: /b]\nB");
        assert_eq!(found[1].1, "C");
    }
}
