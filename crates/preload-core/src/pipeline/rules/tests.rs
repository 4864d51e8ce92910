//! Unit tests of `rules`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::state::State;
use crate::state::testing::state;
use serde_json::{Value, json};

fn rule(v: &Value) -> Rule {
    parse(&json!([v]).to_string()).unwrap().pop().unwrap()
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
        "command": "$nothingHere",
        "text": "gate (lifecycle: $lifecycle) $lifecycleNote n=$n f=$flag o=$obj u=$unknown $5",
        "files": ["$lifecycle"],
        "num": 4
    });
    let whole = rule(
        &json!({"trigger": {"type": "phase", "condition": {"matches": "X"}},
        "payload": payload}),
    );
    let out = Resolution::of(&whole.payload, &s);
    assert_eq!(
        out,
        Resolution {
            preload: Some(Resolved::List(vec!["/a.md".into(), "/b.md".into()])),
            command: Some(Resolved::Text("$nothingHere".into())),
            text: Some(Resolved::Text(
                "gate (lifecycle: completed) LONG n=3 f=true o=$obj u=$unknown $5".into()
            )),
            // Only strings are resolved; members no mode delivers (`num`) are not read.
            files: Some(Resolved::List(vec!["$lifecycle".into()])),
        }
    );
    let odd = rule(
        &json!({"trigger": {"type": "phase", "condition": {"matches": "X"}},
        "payload": {"text": "$n", "files": "$obj", "command": "$flag", "preload": 5}}),
    );
    assert_eq!(
        Resolution::of(&odd.payload, &s),
        Resolution::default(),
        "a reference to a number, an object or a boolean delivers nothing"
    );
}

#[test]
fn primary_fields() {
    for (tool, field) in [
        ("Bash", Some("command")),
        ("apply_patch", Some("command")),
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
        payload: Resolution::default(),
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
    m.payload.files = Some(Resolved::List(vec!["a.md".into(), "b.md".into()]));
    assert_eq!(
        rule_text(&m, true).unwrap(),
        "[block: r] REQUIRED: Read these files: a.md, b.md"
    );
    assert!(rule_text(&m, false).unwrap().starts_with("[warn: r]"));
    m.mode = Mode::Inline;
    assert_eq!(rule_text(&m, true).unwrap(), "[a.md]\n[b.md]");
    m.payload.text = Some(Resolved::Text("T".into()));
    assert_eq!(rule_text(&m, true).unwrap(), "T");
    m.mode = Mode::Paste;
    m.payload.command = Some(Resolved::Text("/session dehydrate".into()));
    assert_eq!(rule_text(&m, true).unwrap(), "/session dehydrate");
    m.mode = Mode::Preload;
    assert_eq!(rule_text(&m, true), None);
}

#[test]
fn globs_keep_bash_edge_cases() {
    // `**` is two stars, as in bash: it needs no directory around it.
    assert!(glob_match("**/x", "a/b/x") && !glob_match("**/x", "x"));
    assert!(glob_match("[]]", "]") && glob_match("[!]]", "a") && !glob_match("[!]]", "]"));
    assert!(glob_match("[a-]", "-") && glob_match("[\\]]", "]"));
    assert!(
        glob_match("x[a", "x[a") && !glob_match("x[a", "xa"),
        "unclosed: a literal ["
    );
    assert!(
        !glob_match("[z-a]", "b") && !glob_match("[a-", "[a-"),
        "reversed or cut-off range"
    );
    assert!(glob_match("*.md", "/p/README.md") && !glob_match("*.md", "/p/README.mdx"));
    assert!(
        glob_match("a\\", "a\\") && glob_match("*\\", "a\\"),
        "a trailing \\ is itself"
    );
    assert!(
        glob_match("é?", "éü") && !glob_match("?", "éü"),
        "characters, not bytes"
    );
}

/// Runs every `(pattern, text)` through bash's `[[ text == pattern ]]` (byte collation).
fn bash_matches(cases: &[(String, String)]) -> Vec<bool> {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let mut bash = Command::new("bash")
        .args([
            "-c",
            "while IFS= read -r p && IFS= read -r t; do [[ $t == $p ]] && echo 1 || echo 0; done",
        ])
        .env("LC_ALL", "C")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("bash must be installed: the whitelist glob is tested against bash itself");
    let input: Vec<&str> = cases
        .iter()
        .flat_map(|(p, t)| [p.as_str(), t.as_str()])
        .collect();
    let input = input.join("\n") + "\n";
    bash.stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = bash.wait_with_output().unwrap();
    let answers: Vec<bool> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l == "1")
        .collect();
    assert_eq!(answers.len(), cases.len(), "bash answered every case");
    answers
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// The whitelist glob is bash's `[[ == ]]`, on patterns made of its special characters.
    #[test]
    fn globs_match_as_bash_does(
        pairs in proptest::collection::vec(
            ("[ab/*?\\[\\]!^\\\\{-]{0,8}", "[ab/\\[\\]!^\\\\{*?-]{0,6}"), 1..80),
    ) {
        let mut cases = Vec::new();
        // A pattern ending in a lone `\\` is left out: bash matches it against a literal
        // backslash, except after a `*`, where it matches nothing (`globs_keep_bash_edge_cases`).
        let lone_backslash = |p: &str| p.chars().rev().take_while(|&c| c == '\\').count() % 2 == 1;
        for (pattern, text) in pairs.into_iter().filter(|(p, _)| !lone_backslash(p)) {
            // The pattern itself and a filled-in copy match far more often than a random text.
            let filled = pattern.replace('*', "ab").replace('?', "/").replace('\\', "");
            cases.push((pattern.clone(), pattern.clone()));
            cases.push((pattern.clone(), filled));
            cases.push((pattern, text));
        }
        let bash = bash_matches(&cases);
        for ((pattern, text), expected) in cases.iter().zip(bash) {
            proptest::prop_assert_eq!(glob_match(pattern, text), expected, "[[ {:?} == {:?} ]]", text, pattern);
        }
    }
}

mod reading;
