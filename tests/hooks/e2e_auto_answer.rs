//! Scenarios: `preload-e2e-auto-answer` answers `AskUserQuestion` by strategy while
//! `E2E_AUTO_ANSWER` is set, and costs nothing (no stdin read, no output) while it is not.

use std::collections::BTreeSet;
use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use preload_core::primitives::env;
use serde_json::{Value, json};

use preload_test_support::sandbox::{Answer, Sandbox, bin};

const BIN: &str = "preload-e2e-auto-answer";
const TAG: &str = "[E2E Auto-Answer]";

fn ask(sb: &Sandbox, vars: &[(&str, &str)], input: &Value) -> Answer {
    let mut cmd = sb.command(BIN);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.write_stdin(input.to_string()).output().unwrap();
    let answer = Answer::from_output(&out);
    answer.assert_contract();
    answer
}

fn question(text: &str, labels: &[&str], multi: bool) -> Value {
    let options: Vec<Value> = labels
        .iter()
        .map(|l| json!({"label": l, "description": format!("about {l}")}))
        .collect();
    json!({"question": text, "header": "Choice", "options": options, "multiSelect": multi})
}

fn ask_user(questions: &[Value]) -> Value {
    json!({"tool_name": "AskUserQuestion", "tool_input": {"questions": questions}})
}

/// The selected labels of each question, read back from the reason.
fn selections(answer: &Answer) -> Vec<Vec<String>> {
    answer
        .reason()
        .lines()
        .filter_map(|l| l.strip_prefix("   -> "))
        .map(|a| a.split("; ").map(str::to_owned).collect())
        .collect()
}

fn assert_allow(answer: &Answer) {
    assert_eq!(answer.decision(), "allow", "stdout: {}", answer.stdout);
    assert_eq!(answer.reason(), "");
}

fn two_questions() -> Value {
    ask_user(&[
        question(
            "Which database?",
            &["Postgres", "SQLite (Recommended)", "MySQL"],
            false,
        ),
        question("Add tests now?", &["Yes", "No"], false),
    ])
}

#[test]
fn first_strategy_denies_with_the_first_options() {
    let sb = Sandbox::bare();
    for value in ["first", "1", "some-unknown-value"] {
        let answer = ask(&sb, &[(env::E2E_AUTO_ANSWER, value)], &two_questions());
        assert_eq!(answer.decision(), "deny", "{value}");
        let reason = answer.reason();
        assert!(reason.starts_with(TAG), "{reason}");
        assert!(reason.contains("Which database?") && reason.contains("Add tests now?"));
        assert!(reason.contains("Treat these as the user's choices"));
        assert_eq!(
            selections(&answer),
            vec![vec!["Postgres"], vec!["Yes"]],
            "{value}"
        );
    }
}

#[test]
fn recommended_strategy_prefers_the_recommended_label() {
    let sb = Sandbox::bare();
    let answer = ask(
        &sb,
        &[(env::E2E_AUTO_ANSWER, "recommended")],
        &two_questions(),
    );
    assert_eq!(answer.decision(), "deny");
    assert_eq!(
        selections(&answer),
        vec![vec!["SQLite (Recommended)"], vec!["Yes"]],
        "no recommended option: the first"
    );
}

fn random_input() -> Value {
    ask_user(&[
        question("One?", &["a1", "a2", "a3", "a4"], false),
        question("Two?", &["b1", "b2", "b3", "b4"], false),
        question("Three?", &["c1", "c2", "c3", "c4"], false),
    ])
}

#[test]
fn random_strategy_is_reproducible_with_a_seed() {
    let sb = Sandbox::bare();
    let input = random_input();
    let run = |seed: &str| {
        ask(
            &sb,
            &[
                (env::E2E_AUTO_ANSWER, "random"),
                (env::E2E_AUTO_ANSWER_SEED, seed),
            ],
            &input,
        )
    };
    let first = run("42");
    assert_eq!(first.decision(), "deny");
    assert_eq!(
        selections(&first),
        selections(&run("42")),
        "same seed, same answers"
    );
    assert_eq!(
        selections(&run("some text seed")),
        selections(&run("some text seed"))
    );

    let mut distinct = BTreeSet::new();
    for seed in 0..12 {
        let picks = selections(&run(&seed.to_string()));
        assert_eq!(picks.len(), 3);
        for (i, pick) in picks.iter().enumerate() {
            let prefix = ["a", "b", "c"][i];
            assert_eq!(pick.len(), 1);
            assert!(
                pick[0].starts_with(prefix) && pick[0].len() == 2,
                "{pick:?} is an option"
            );
        }
        distinct.insert(picks);
    }
    assert!(
        distinct.len() > 1,
        "different seeds can differ: {distinct:?}"
    );
}

#[test]
fn multi_select_gets_one_or_a_non_empty_subset() {
    let sb = Sandbox::bare();
    let input = ask_user(&[question(
        "Which features?",
        &["Auth", "Search", "Export"],
        true,
    )]);
    for strategy in ["first", "recommended"] {
        let answer = ask(&sb, &[(env::E2E_AUTO_ANSWER, strategy)], &input);
        assert_eq!(selections(&answer), vec![vec!["Auth"]], "{strategy}");
    }
    let mut sizes = BTreeSet::new();
    for seed in 0..16 {
        let answer = ask(
            &sb,
            &[
                (env::E2E_AUTO_ANSWER, "random"),
                (env::E2E_AUTO_ANSWER_SEED, &seed.to_string()),
            ],
            &input,
        );
        let picks = selections(&answer);
        assert_eq!(picks.len(), 1);
        let picked = &picks[0];
        assert!(!picked.is_empty());
        assert!(
            picked
                .iter()
                .all(|l| ["Auth", "Search", "Export"].contains(&l.as_str())),
            "{picked:?}"
        );
        let unique: BTreeSet<_> = picked.iter().collect();
        assert_eq!(unique.len(), picked.len(), "no option twice");
        sizes.insert(picked.len());
    }
    assert!(
        sizes.iter().any(|&n| n > 1),
        "random subsets are not always single: {sizes:?}"
    );
}

#[test]
fn gate_off_prints_nothing_and_never_waits_for_stdin() {
    let sb = Sandbox::bare();
    // stdin stays open and empty: a hook that read it would wait for the runner's time limit
    // and then print the allow decision.
    let mut child = std::process::Command::new(bin(BIN))
        .env_clear()
        .env(env::HOME, &sb.home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _open_stdin = child.stdin.take();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the hook waited for stdin"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    assert!(status.success());
    assert_eq!(stdout, "", "off: nothing printed");

    let answer = ask(&sb, &[(env::E2E_AUTO_ANSWER, "")], &two_questions());
    assert_eq!(answer.stdout, "", "an empty value is off");
}

#[test]
fn other_tools_are_allowed() {
    let sb = Sandbox::bare();
    let on = [(env::E2E_AUTO_ANSWER, "first")];
    assert_allow(&ask(
        &sb,
        &on,
        &json!({"tool_name": "Read", "tool_input": {"file_path": "/x"}}),
    ));
    let mut bash = two_questions();
    bash["tool_name"] = json!("Bash");
    assert_allow(&ask(&sb, &on, &bash));
}

#[test]
fn malformed_input_is_allowed() {
    let sb = Sandbox::bare();
    let on = [(env::E2E_AUTO_ANSWER, "random")];
    for input in [
        json!({"tool_name": "AskUserQuestion"}),
        json!({"tool_name": "AskUserQuestion", "tool_input": {}}),
        json!({"tool_name": "AskUserQuestion", "tool_input": {"questions": []}}),
        json!({"tool_name": "AskUserQuestion", "tool_input": {"questions": "pick one"}}),
        json!({"tool_name": "AskUserQuestion", "tool_input": {"questions": [{"question": "No options?"}]}}),
        json!({"tool_name": "AskUserQuestion", "tool_input": {"questions": [{"question": "Empty?", "options": []}]}}),
        json!({"tool_name": "AskUserQuestion", "tool_input": {"questions": [question("Ok?", &["Yes"], false), {"question": "Bad", "options": [5, null]}]}}),
        json!({"tool_name": "AskUserQuestion", "tool_input": {"questions": [42]}}),
    ] {
        assert_allow(&ask(&sb, &on, &input));
    }
    for raw in ["not json", "", "[1]"] {
        let out = sb
            .command(BIN)
            .env(env::E2E_AUTO_ANSWER, "first")
            .write_stdin(raw)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success());
        assert!(
            stdout.contains("\"permissionDecision\":\"allow\""),
            "{raw:?}: {stdout}"
        );
    }
}

#[test]
fn many_long_questions_stay_within_the_budget() {
    let sb = Sandbox::bare();
    let long = "Please consider every trade-off of this decision carefully. ".repeat(40);
    let questions: Vec<Value> = (0..40)
        .map(|i| {
            let a = format!("choice-{i}-a");
            let b = format!("choice-{i}-b");
            question(&format!("Q{i}: {long}"), &[&a, &b], false)
        })
        .collect();
    let input = ask_user(&questions);
    for (budget, limit) in [(None, 9_500), (Some("1500"), 1_500)] {
        let mut vars = vec![(env::E2E_AUTO_ANSWER, "first")];
        if let Some(b) = budget {
            vars.push((env::PRELOAD_OUTPUT_BUDGET, b));
        }
        let answer = ask(&sb, &vars, &input);
        assert_eq!(answer.decision(), "deny");
        let reason = answer.reason();
        assert!(
            reason.chars().count() <= limit,
            "{} > {limit}",
            reason.chars().count()
        );
        assert!(reason.starts_with(TAG));
        if budget.is_none() {
            let picks = selections(&answer);
            assert_eq!(picks.len(), 40);
            for (i, pick) in picks.iter().enumerate() {
                assert_eq!(
                    pick,
                    &vec![format!("choice-{i}-a")],
                    "every answer kept whole"
                );
            }
            // Each question keeps a fair share of its text.
            for i in 0..40 {
                assert!(
                    reason.contains(&format!("{}. Q{i}: Please consider", i + 1)),
                    "question {i}"
                );
            }
        }
    }
}

#[test]
fn help_names_the_gate() {
    let sb = Sandbox::bare();
    let out = sb.command(BIN).arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(text.contains("E2E_AUTO_ANSWER") && text.contains("AskUserQuestion"));
}

#[test]
fn e2e_settings_wire_the_hook_in_exec_form() {
    let text = std::fs::read_to_string(
        preload_test_support::sandbox::repo().join("hooks/settings.e2e.json"),
    )
    .unwrap();
    let settings: Value = serde_json::from_str(&text).unwrap();
    assert!(
        settings["env"][env::E2E_AUTO_ANSWER].is_string(),
        "the test session switches it on"
    );
    let groups = settings["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0]["matcher"], "AskUserQuestion");
    let hook = &groups[0]["hooks"][0];
    assert_eq!(hook["type"], "command");
    assert!(
        hook["command"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/{BIN}"))
    );
    assert!(hook["args"].is_array(), "exec form");
    let timeout = hook["timeout"].as_u64().unwrap();
    assert!(
        (1..=60).contains(&timeout),
        "timeout in seconds, not milliseconds"
    );
}
