//! How `guards.json` reads: files, triggers, members and payloads in every shape, read as
//! they always were.

use super::*;

/// The one rule `text` holds (an array of it), if it reads as one.
fn only(text: &str) -> Option<Rule> {
    let mut rules = parse(&format!("[{text}]")).unwrap();
    assert!(rules.len() <= 1);
    rules.pop()
}

fn phase_rule(extra: &str) -> Option<Rule> {
    only(&format!(
        r#"{{"trigger": {{"type": "phase", "condition": {{"matches": "X"}}}}{extra}}}"#
    ))
}

fn trigger_of(kind: &str, condition: &str) -> Option<Trigger> {
    only(&format!(
        r#"{{"trigger": {{"type": "{kind}", "condition": {condition}}}}}"#
    ))
    .map(|r| r.trigger)
}

#[test]
fn a_file_that_is_not_rules_reads_as_before() {
    // A file that is not JSON says why as the JSON reader does.
    for text in [
        "{nope",
        "[1,]",
        "[] x",
        r#"[{"description": "\ud800"}]"#,
        "[{\"description\": \"a\u{1}\"}]",
        &"[".repeat(200),
        "[1e400]",
    ] {
        let expected = match serde_json::from_str::<Value>(text) {
            Err(e) => e.to_string(),
            Ok(v) => panic!("{text} read as {v}"),
        };
        assert_eq!(parse(text), Err(RulesError::NotJson(expected)), "{text}");
    }
    for text in [
        "42",
        "\"rules\"",
        "null",
        "true",
        "{}",
        r#"{"rules": 5}"#,
        r#"{"rules": {"a": []}}"#,
        r#"{"rules": [], "rules": 5}"#,
    ] {
        assert_eq!(parse(text), Err(RulesError::NotRules), "{text}");
    }
    let rule = r#"{"trigger": {"type": "phase", "condition": {"matches": "X"}}}"#;
    let rules = parse(&format!(
        r#"{{"rules": 5, "other": [1], "rules": [7, {rule}]}}"#
    ))
    .unwrap();
    assert_eq!(rules.len(), 1, "the last `rules` counts");
    assert_eq!(
        rules[0].id, "rule-1",
        "entries that are not rules count in the index"
    );
    assert_eq!(
        parse(&format!(r#"[[{rule}], "x", null, {rule}]"#)).unwrap()[0].id,
        "rule-3"
    );
}

#[test]
fn triggers_read_as_before() {
    use Trigger::{
        ContextThreshold, Discovery, Lifecycle, PerTranscriptToolCount, Phase, ToolCount,
    };
    let ctx = |gte: &str| trigger_of("contextThreshold", &format!(r#"{{"gte": {gte}}}"#));
    assert_eq!(ctx("0.5"), Some(ContextThreshold(Threshold::Value(0.5))));
    assert_eq!(ctx("3"), Some(ContextThreshold(Threshold::Value(3.0))));
    assert_eq!(
        ctx(r#"" 0.25 ""#),
        Some(ContextThreshold(Threshold::Value(0.25)))
    );
    assert_eq!(
        ctx(r#""OVERFLOW_THRESHOLD""#),
        Some(ContextThreshold(Threshold::Overflow))
    );
    for odd in [r#""overflow""#, "true", "null", "[0.5]", r#"{"gte": 1}"#] {
        assert_eq!(ctx(odd), None, "{odd}");
    }
    assert_eq!(trigger_of("contextThreshold", "{}"), None);
    assert_eq!(trigger_of("contextThreshold", "0.5"), None);
    let lifecycle = |no_active_session, eq: Option<&str>| {
        Some(Lifecycle {
            no_active_session,
            eq: eq.map(str::to_owned),
        })
    };
    assert_eq!(
        trigger_of("lifecycle", r#"{"noActiveSession": true}"#),
        lifecycle(true, None)
    );
    assert_eq!(
        trigger_of("lifecycle", r#"{"noActiveSession": "true", "eq": 5}"#),
        lifecycle(false, None)
    );
    assert_eq!(
        trigger_of("lifecycle", r#"{"eq": "idle"}"#),
        lifecycle(false, Some("idle"))
    );
    assert_eq!(
        trigger_of("lifecycle", "[1]"),
        lifecycle(false, None),
        "a condition not an object is empty"
    );
    assert_eq!(
        only(r#"{"trigger": {"type": "lifecycle"}}"#).map(|r| r.trigger),
        lifecycle(false, None)
    );
    assert_eq!(
        trigger_of("phase", r#"{"matches": "S"}"#),
        Some(Phase("S".into()))
    );
    assert_eq!(trigger_of("phase", r#"{"matches": 5}"#), None);
    assert_eq!(
        trigger_of("toolCount", r#"{"field": "a", "gte": 3}"#),
        Some(ToolCount {
            field: "a".into(),
            gte_field: String::new()
        })
    );
    assert_eq!(trigger_of("toolCount", r#"{"gte": "b"}"#), None);
    assert_eq!(
        trigger_of("discovery", r#"{"field": "f", "nonEmpty": true}"#),
        Some(Discovery("f".into()))
    );
    assert_eq!(
        trigger_of("discovery", r#"{"field": "f", "nonEmpty": "true"}"#),
        None
    );
    assert_eq!(trigger_of("discovery", r#"{"field": "f"}"#), None);
    assert_eq!(trigger_of("discovery", r#"{"nonEmpty": true}"#), None);
    assert_eq!(
        trigger_of("perTranscriptToolCount", r#"{"gte": "10", "eq": [3]}"#),
        Some(PerTranscriptToolCount {
            gte: Some(10.0),
            eq: None
        })
    );
    assert_eq!(
        trigger_of("perTranscriptToolCount", "null"),
        Some(PerTranscriptToolCount {
            gte: None,
            eq: None
        })
    );
    for odd in [
        r#"{"trigger": {"type": "Phase", "condition": {"matches": "X"}}}"#,
        r#"{"trigger": {"type": 5, "condition": {"matches": "X"}}}"#,
        r#"{"trigger": {"condition": {"matches": "X"}}}"#,
        r#"{"trigger": "phase"}"#,
        r#"{"trigger": ["phase"]}"#,
        r#"{"type": "phase", "condition": {"matches": "X"}}"#,
        r#"["trigger", {"type": "phase", "condition": {"matches": "X"}}]"#,
    ] {
        assert_eq!(only(odd), None, "{odd}");
    }
}

#[test]
fn rule_members_read_as_before() {
    let r = phase_rule(
        r#", "id": 5, "mode": "READ", "urgency": ["block"], "priority": true, "inject": "ONCE",
            "whitelist": "Bash", "toolFilter": {"exclude": "Bash"}, "description": {"x": [1]}"#,
    )
    .unwrap();
    assert_eq!(
        (r.id.as_str(), r.mode, r.urgency, r.once),
        ("rule-0", Mode::Inline, Urgency::Allow, false)
    );
    assert!((r.priority - 999.0).abs() < f64::EPSILON);
    assert!(r.whitelist.is_empty() && r.include.is_none() && r.exclude.is_empty());
    let r = phase_rule(
        r#", "id": "a", "mode": "paste", "urgency": "interrupt", "priority": " 5 ", "inject": "once",
            "whitelist": ["Read", 1, null, "Bash(ls *)", ["x"]],
            "toolFilter": {"include": ["Read", 2], "exclude": ["Bash", {}]}"#,
    )
    .unwrap();
    assert_eq!(
        (r.id.as_str(), r.mode, r.urgency, r.once),
        ("a", Mode::Paste, Urgency::Interrupt, true)
    );
    assert!((r.priority - 5.0).abs() < f64::EPSILON);
    assert_eq!(r.whitelist, ["Read", "Bash(ls *)"]);
    assert_eq!(r.include, Some(vec!["Read".to_owned()]));
    assert_eq!(r.exclude, ["Bash"]);
    for (filter, include) in [
        (r#"{"include": null}"#, Some(vec![])),
        (r#"{"include": "Read"}"#, Some(vec![])),
        (r#"{"include": []}"#, Some(vec![])),
        ("{}", None),
        (r#"["Read"]"#, None),
        (r#""Read""#, None),
    ] {
        let r = phase_rule(&format!(r#", "toolFilter": {filter}"#)).unwrap();
        assert_eq!(r.include, include, "{filter}");
    }
    let r = phase_rule(r#", "mode": "preload", "urgency": "block", "priority": -2.5"#).unwrap();
    assert_eq!((r.mode, r.urgency), (Mode::Preload, Urgency::Block));
    assert!((r.priority + 2.5).abs() < f64::EPSILON);
    // A member written twice reads as its last.
    let r = phase_rule(r#", "id": "first", "mode": "read", "id": "second", "mode": 1"#).unwrap();
    assert_eq!((r.id.as_str(), r.mode), ("second", Mode::Inline));
    let r = only(
        r#"{"trigger": {"type": "phase"}, "trigger": {"type": "phase", "condition": {"matches": "Y"}}}"#,
    )
    .unwrap();
    assert_eq!(r.trigger, Trigger::Phase("Y".into()));
}

/// The texts and files a rule's payload delivers, resolved against `s`: inline, read, paste,
/// and the preload files.
fn delivered(payload: &str, s: &State) -> (String, String, String, Vec<String>) {
    let r = phase_rule(&format!(r#", "payload": {payload}"#)).unwrap();
    let mut m = evaluate(std::slice::from_ref(&r), &facts(s, None, None))
        .pop()
        .unwrap();
    let mut text = |mode| {
        m.mode = mode;
        rule_text(&m, true).unwrap()
    };
    let (inline, read, paste) = (text(Mode::Inline), text(Mode::Read), text(Mode::Paste));
    (inline, read, paste, m.payload.preload_files())
}

#[test]
fn payloads_deliver_as_before() {
    let s = state(
        json!({"currentPhase": "X", "pendingPreloads": ["/a.md", 3, "/b.md"],
        "lifecycle": "completed", "n": 3, "flag": true, "obj": {"k": 1}, "dollar": "$x",
        "cmd": "/session dehydrate", "none": null}),
    );
    let read = |files: &str| format!("[block: rule-0] REQUIRED: Read these files: {files}");
    assert_eq!(
        delivered(
            r#"{"text": "at $lifecycle: n=$n f=$flag o=$obj $5 $nothing", "files": ["a", 1, "b"],
                "command": "$cmd", "preload": "$pendingPreloads", "other": "$lifecycle"}"#,
            &s
        ),
        (
            // `$n` is replaced inside `$nothing` too, as the engine's hooks do.
            "at completed: n=3 f=true o=$obj $5 3othing".into(),
            read("a, b"),
            "/session dehydrate".into(),
            vec!["/a.md".into(), "/b.md".into()]
        )
    );
    assert_eq!(
        delivered(
            r#"{"text": "$lifecycle", "files": "$pendingPreloads", "preload": "/p/$lifecycle.md"}"#,
            &s
        ),
        (
            "completed".into(),
            read("/a.md, /b.md"),
            String::new(),
            vec!["/p/completed.md".into()]
        )
    );
    assert_eq!(
        delivered(
            r#"{"text": "$n", "files": "a.md", "command": 5, "preload": "$nothing"}"#,
            &s
        ),
        (String::new(), read(""), String::new(), vec![])
    );
    assert_eq!(
        delivered(
            r#"{"text": "$nothing", "files": ["$lifecycle"], "preload": "$none"}"#,
            &s
        ),
        ("$nothing".into(), read("$lifecycle"), String::new(), vec![])
    );
    assert_eq!(
        delivered(
            r#"{"text": ["t"], "files": "$lifecycle", "preload": "$dollar", "command": "$nothing"}"#,
            &s
        ),
        (String::new(), read(""), "$nothing".into(), vec![])
    );
    assert_eq!(
        delivered(
            r#"{"files": ["/f.md"], "preload": ["/a", 2, "$lifecycle"], "text": ""}"#,
            &s
        ),
        (
            "[/f.md]".into(),
            read("/f.md"),
            String::new(),
            vec!["/a".into(), "$lifecycle".into()]
        )
    );
    assert_eq!(
        delivered(
            r#"{"preload": "$1x", "text": "$obj", "command": "$lifecycle"}"#,
            &s
        ),
        (String::new(), read(""), "completed".into(), vec![])
    );
    assert_eq!(
        delivered(r#"{"preload": "$lifecycle", "text": "a", "text": 5}"#, &s),
        (
            String::new(),
            read(""),
            String::new(),
            vec!["completed".into()]
        )
    );
    for odd in ["5", "null", r#"["text"]"#, r#""$lifecycle""#] {
        assert_eq!(
            delivered(odd, &s),
            (String::new(), read(""), String::new(), vec![]),
            "{odd}"
        );
    }
}

#[test]
fn payload_references_deliver_by_what_they_resolve_to() {
    let s = state(
        json!({"currentPhase": "X", "lifecycle": "completed", "flag": true, "obj": {"k": 1},
        "list": ["/l.md", {"x": 1}, "$y"], "empty": "", "none": null}),
    );
    let read = |files: &str| format!("[block: rule-0] REQUIRED: Read these files: {files}");
    // Text that starts with `$` but is no reference is substituted, then delivered as one
    // file unless it still starts with `$`.
    assert_eq!(
        delivered(
            r#"{"preload": "$lifecycle/x.md", "text": "$flag", "command": "$obj", "files": "$list"}"#,
            &s
        ),
        (
            "[/l.md]\n[$y]".into(),
            read("/l.md, $y"),
            String::new(),
            vec!["completed/x.md".into()]
        )
    );
    assert_eq!(
        delivered(
            r#"{"preload": "$nothing/x.md", "text": "$list", "command": "$none", "files": "$obj"}"#,
            &s
        ),
        (String::new(), read(""), "$none".into(), vec![])
    );
    assert_eq!(
        delivered(
            r#"{"preload": "$list", "text": "$empty", "files": [], "command": ""}"#,
            &s
        ),
        (
            String::new(),
            read(""),
            String::new(),
            vec!["/l.md".into(), "$y".into()]
        )
    );
    assert_eq!(
        delivered(
            r#"{"preload": "", "text": "", "files": ["x"], "command": ["c"]}"#,
            &s
        ),
        ("[x]".into(), read("x"), String::new(), vec![String::new()])
    );
    assert_eq!(
        delivered(
            r#"{"preload": "$currentPhase", "text": "$currentPhase!"}"#,
            &s
        ),
        ("X!".into(), read(""), String::new(), vec!["X".into()])
    );
}
