use super::*;
use serde_json::json;
use std::path::Path;

/// Lines in the shape Claude Code 2.1.332 writes them.
struct Lines {
    session: &'static str,
    lines: Vec<String>,
}

impl Lines {
    fn new(session: &'static str) -> Self {
        Self {
            session,
            lines: vec![json!({"type": "queue-operation", "sessionId": session}).to_string()],
        }
    }

    fn push(&mut self, mut line: Value) -> &mut Self {
        line["sessionId"] = json!(self.session);
        line["cwd"] = json!("/p");
        line["isSidechain"] = json!(false);
        self.lines.push(line.to_string());
        self
    }

    fn user(&mut self, uuid: &str, parent: Option<&str>, text: &str) -> &mut Self {
        self.push(json!({"type": "user", "uuid": uuid, "parentUuid": parent,
            "message": {"role": "user", "content": text}}))
    }

    fn call(&mut self, uuid: &str, parent: &str, tool: &str) -> &mut Self {
        self.push(
            json!({"type": "assistant", "uuid": uuid, "parentUuid": parent,
            "requestSessionId": self.session,
            "message": {"role": "assistant", "content": [{"type": "tool_use", "id": tool,
                "name": "Bash", "input": {}}]}}),
        )
    }

    fn result(&mut self, uuid: &str, parent: &str, tool: &str) -> &mut Self {
        self.push(json!({"type": "user", "uuid": uuid, "parentUuid": parent,
            "message": {"role": "user", "content": [{"type": "tool_result",
                "tool_use_id": tool, "content": "ok"}]}}))
    }

    fn context(
        &mut self,
        uuid: &str,
        parent: &str,
        event: &str,
        tool: &str,
        text: &str,
    ) -> &mut Self {
        let parent = Some(parent).filter(|p| !p.is_empty());
        let success = format!("{uuid}-s");
        self.push(
            json!({"type": "attachment", "uuid": success, "parentUuid": parent,
            "attachment": {"type": "hook_success", "hookEvent": event, "toolUseID": tool,
                "stdout": json!({"hookSpecificOutput": {"additionalContext": text}}).to_string()}}),
        );
        self.push(
            json!({"type": "attachment", "uuid": uuid, "parentUuid": success,
            "attachment": {"type": "hook_additional_context", "hookEvent": event,
                "toolUseID": tool, "content": [text]}}),
        )
    }

    fn text(&self) -> String {
        self.lines.join("\n") + "\n"
    }
}

fn uuids(tree: &Tree) -> Vec<&str> {
    tree.active().iter().map(|e| e.uuid.as_str()).collect()
}

fn contexts(tree: &Tree) -> Vec<String> {
    tree.active()
        .iter()
        .filter_map(|e| match &e.kind {
            Kind::HookContext(c) => Some(c.texts.join("")),
            _ => None,
        })
        .collect()
}

/// A start, a prompt and one tool call with context before and after it.
fn one_call(lines: &mut Lines) {
    lines
        .context("s1", "", "SessionStart", "start", "[Preloaded: /std]\n")
        .user("u1", Some("s1"), "go")
        .call("a1", "u1", "toolu_1")
        .context("pre1", "a1", "PreToolUse", "toolu_1", "[Preloaded: /pre]\n")
        .result("r1", "a1", "toolu_1")
        .context(
            "post1",
            "r1",
            "PostToolUse",
            "toolu_1",
            "[Preloaded: /post]\n",
        );
}

/// Conversation `c1` after [`one_call`].
fn one_call_in_c1() -> Lines {
    let mut lines = Lines::new("c1");
    one_call(&mut lines);
    lines
}

#[test]
fn the_pretooluse_context_beside_a_result_is_on_the_branch_and_hook_success_is_no_context() {
    let mut lines = one_call_in_c1();
    lines
        .call("a2", "post1", "toolu_2")
        .result("r2", "a2", "toolu_2");
    let tree = Tree::parse(&lines.text());
    assert!(tree.is_transcript());
    assert_eq!(tree.session_id.as_deref(), Some("c1"));
    assert_eq!(tree.forked_from, None);
    assert_eq!(
        contexts(&tree),
        vec![
            "[Preloaded: /std]\n",
            "[Preloaded: /pre]\n",
            "[Preloaded: /post]\n"
        ]
    );
    let active = tree.active_tool_uses();
    assert!(active.contains("toolu_1") && active.contains("toolu_2"));
}

#[test]
fn a_rewind_leaves_the_abandoned_turns_off_the_branch() {
    let mut lines = one_call_in_c1();
    // The resumed run: a prompt, a call with context.
    lines
        .user("u2", Some("post1"), "carry on")
        .call("a2", "u2", "toolu_2")
        .context(
            "pre2",
            "a2",
            "PreToolUse",
            "toolu_2",
            "[Preloaded: /late]\n",
        )
        .result("r2", "a2", "toolu_2");
    // Rewound to the first call's result: the new prompt hangs off it.
    lines
        .user("u3", Some("post1"), "again")
        .call("a3", "u3", "toolu_3")
        .result("r3", "a3", "toolu_3");
    let tree = Tree::parse(&lines.text());
    let active = uuids(&tree);
    for gone in ["u2", "a2", "pre2", "r2"] {
        assert!(
            !active.contains(&gone),
            "{gone} is off the branch: {active:?}"
        );
    }
    for kept in ["s1", "u1", "a1", "pre1", "r1", "post1", "u3", "a3", "r3"] {
        assert!(
            active.contains(&kept),
            "{kept} is on the branch: {active:?}"
        );
    }
    let tools = tree.active_tool_uses();
    assert!(!tools.contains("toolu_2") && tools.contains("toolu_3"));
}

#[test]
fn hook_context_that_leads_to_an_abandoned_turn_is_not_beside_the_branch() {
    let mut lines = one_call_in_c1();
    // A resume's start context, then its prompt; then a rewind to the first result.
    lines
        .context(
            "s2",
            "post1",
            "SessionStart",
            "start2",
            "[Preloaded: /resume]\n",
        )
        .user("u2", Some("s2"), "carry on")
        .user("u3", Some("post1"), "again");
    let tree = Tree::parse(&lines.text());
    assert!(!contexts(&tree).contains(&"[Preloaded: /resume]\n".to_owned()));
    assert!(uuids(&tree).contains(&"u3"));
}

#[test]
fn the_branch_starts_at_the_newest_compaction_boundary() {
    let mut lines = one_call_in_c1();
    lines
        .push(
            json!({"type": "system", "subtype": "compact_boundary", "uuid": "b1",
            "parentUuid": null, "logicalParentUuid": "post1"}),
        )
        .user("u2", Some("b1"), "summary")
        .context("s2", "u2", "SessionStart", "start", "[Preloaded: /again]\n")
        .user("u3", Some("s2"), "go on");
    let tree = Tree::parse(&lines.text());
    assert_eq!(contexts(&tree), vec!["[Preloaded: /again]\n"]);
    assert_eq!(uuids(&tree)[0], "b1");
}

#[test]
fn a_fork_names_the_conversation_its_rows_were_copied_from() {
    let mut parent = Lines::new("parent");
    one_call(&mut parent);
    let copied = parent
        .text()
        .replace("\"sessionId\":\"parent\"", "\"sessionId\":\"fork\"");
    let tree = Tree::parse(&copied);
    assert_eq!(tree.session_id.as_deref(), Some("fork"));
    assert_eq!(tree.forked_from.as_deref(), Some("parent"));
}

#[test]
fn sub_agents_lines_and_cut_lines_are_not_the_conversation() {
    let mut lines = one_call_in_c1();
    lines.lines.push(
        json!({"type": "attachment", "uuid": "side", "parentUuid": "r1", "isSidechain": true,
        "attachment": {"type": "hook_additional_context", "content": ["[Preloaded: /sub]"]}})
        .to_string(),
    );
    lines
        .lines
        .push("{\"type\": \"user\", \"uuid\": cut".to_owned());
    let tree = Tree::parse(&lines.text());
    assert_eq!(tree.unreadable, 1);
    assert!(!uuids(&tree).contains(&"side"));
}

#[test]
fn text_that_is_no_transcript_has_no_branch() {
    for text in ["", "hello\n", "{\"a\": 1}\n", "[1, 2]\n"] {
        let tree = Tree::parse(text);
        assert!(!tree.is_transcript(), "{text:?}");
        assert!(tree.active().is_empty());
    }
}

/// The turn of prompt `prompt`, the calls and prompts it abandons, and no start.
fn turn(prompt: &str, abandoned: &[&str], abandoned_prompts: &[&str]) -> Turn {
    let owned = |ids: &[&str]| -> Vec<String> { ids.iter().map(|&id| id.to_owned()).collect() };
    Turn {
        prompt: prompt.into(),
        abandoned: owned(abandoned),
        abandoned_prompts: owned(abandoned_prompts),
        abandoned_starts: Vec::new(),
    }
}

fn turn_of(lines: &Lines) -> Option<Turn> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    std::fs::write(&path, lines.text()).unwrap();
    latest_turn(&path)
}

#[test]
fn a_prompt_that_follows_on_abandons_nothing() {
    let mut lines = one_call_in_c1();
    lines
        .context("s2", "post1", "SessionStart", "start2", "[Preloaded: /r]\n")
        .user("u2", Some("s2"), "carry on")
        .call("a2", "u2", "toolu_2");
    assert_eq!(turn_of(&lines), Some(turn("u2", &[], &[])));
}

#[test]
fn a_prompt_hung_off_an_earlier_entry_abandons_the_calls_written_since() {
    let mut lines = one_call_in_c1();
    lines.user("u2", Some("post1"), "carry on");
    let last = lines.lines.len() - 1;
    lines.lines[last] =
        lines.lines[last].replace("\"uuid\":\"u2\"", "\"uuid\":\"u2\",\"promptId\":\"p-2\"");
    lines
        .call("a2", "u2", "toolu_2")
        .result("r2", "a2", "toolu_2")
        .call("a3", "r2", "toolu_3")
        .result("r3", "a3", "toolu_3")
        // Rewound to the first call's result.
        .user("u4", Some("post1"), "again")
        .call("a4", "u4", "toolu_4");
    assert_eq!(
        turn_of(&lines),
        Some(turn("u4", &["toolu_2", "toolu_3"], &["p-2"]))
    );
}

#[test]
fn no_turn_without_a_prompt_in_the_tail_or_a_file() {
    let mut lines = Lines::new("c1");
    lines.call("a1", "x", "toolu_1");
    assert_eq!(turn_of(&lines), None);
    assert_eq!(latest_turn(Path::new("/nonexistent/t.jsonl")), None);
}

#[test]
fn a_rewind_before_a_prompt_that_follows_on_is_still_seen() {
    let mut lines = one_call_in_c1();
    lines
        .call("a2", "post1", "toolu_2")
        .result("r2", "a2", "toolu_2")
        // Rewound to the first call's result, then a second prompt before any call.
        .user("u3", Some("post1"), "another way")
        .user("u4", Some("u3"), "carry on")
        .call("a4", "u4", "toolu_4");
    assert_eq!(turn_of(&lines), Some(turn("u4", &["toolu_2"], &[])));
}
