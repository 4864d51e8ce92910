//! The harness can fail: stand-in hooks that deliver a file twice, drop a file, or write a
//! literal backslash-n, run through the real client, and the checks must say so. A clean
//! stand-in must pass the same checks.

use serde_json::{Value, json};

use crate::client;
use crate::model::{Kind, ModelServer, Script, tool};
use crate::received::Received;
use crate::support::{client_or_skip, dump};
use crate::world::{Hook, SESSION_START_CHUNKS, World};

/// A hook answer carrying `context` for `event`. The client replaces an output over 10,000
/// characters with a file path and a preview, so the stand-ins' answers must stay under it.
fn context(event: &str, text: &str) -> Value {
    assert!(
        text.chars().count() < 9_500,
        "a stand-in's context fits the client's output cap: {} characters",
        text.chars().count()
    );
    json!({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}})
}

/// `[Preloaded: path]` + content blocks, as the contract lays them out.
fn blocks(paths: &[&str]) -> String {
    paths
        .iter()
        .map(|p| {
            format!(
                "[Preloaded: {p}]\n{}\n",
                std::fs::read_to_string(p).unwrap().trim_end_matches('\n')
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Part `i` of `n` of the file at `path`, as the contract labels it (the text is the harness's
/// own; only the labels matter to the checks).
fn part(path: &str, i: usize, n: usize) -> String {
    format!("[Preloaded: {path} (part {i}/{n})]\nText of part {i} of {n}.\n")
}

/// Small files of the harness's own (a few hundred characters each, so any stand-in output
/// stays far under the client's cap), as absolute paths.
fn fixtures(world: &World, names: &[&str]) -> Vec<String> {
    names
        .iter()
        .map(|name| {
            let body = format!(
                "# {name}\n\nA fixture of the e2e harness's own tests.\n\n{}\n",
                "A line of text that stands for a standard's content.\n".repeat(4)
            );
            world
                .sandbox
                .project_file(&format!("docs/harness/{name}.md"), &body)
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

/// Runs the client once with `hooks` wired and a script that reads one file; returns what the
/// model received at the end of the main conversation.
fn run_with(scenario: &str, world: &mut World, hooks: &[Hook]) -> Option<Received> {
    run_with_prompt(scenario, world, hooks, "Read the parser.")
}

/// [`run_with`] with `prompt`.
fn run_with_prompt(
    scenario: &str,
    world: &mut World,
    hooks: &[Hook],
    prompt: &str,
) -> Option<Received> {
    let claude = client_or_skip(scenario)?;
    world.wire(hooks);
    let parser = world
        .sandbox
        .project
        .join("packages/estimate/src/parser.ts");
    let server = ModelServer::start(Script::main(vec![tool(
        "Read",
        json!({"file_path": parser}),
    )]));
    let run = client::run(&claude, world, &server, prompt, &client::Options::default());
    run.assert_ok();
    let requests = server.requests();
    dump(scenario, &requests, world);
    Some(Received::last_of(&requests, "main").expect("the main conversation reached the model"))
}

#[test]
fn harness_catches_a_file_delivered_twice_and_a_literal_backslash_n() {
    let mut world = World::new();
    let files = fixtures(&world, &["A", "B"]);
    let (a, b) = (files[0].clone(), files[1].clone());
    let start = world.stand_in_hook("start-hook", &context("SessionStart", &blocks(&[&a, &b])));
    let again = world.stand_in_hook(
        "again-hook",
        &context("PostToolUse", &format!("{}\\nliteral", blocks(&[&a]))),
    );
    let hooks = [
        Hook::new("SessionStart", None, &start, &[]),
        Hook::new("PostToolUse", Some("*"), &again, &[]),
    ];
    let Some(received) = run_with("harness_catches_a_file_delivered_twice", &mut world, &hooks)
    else {
        return;
    };
    let problems = received.check_each_once(&[a.clone(), b.clone()]);
    assert_eq!(
        problems.len(),
        1,
        "exactly the double delivery: {problems:?}"
    );
    assert!(
        problems[0].contains("delivered 2 times") && problems[0].ends_with(&a),
        "{problems:?}"
    );
    let literal = received.check_no_literal_newlines();
    assert_eq!(
        literal.len(),
        1,
        "the literal backslash-n is caught: {literal:?}"
    );
    assert!(literal[0].contains("PostToolUse"), "{literal:?}");
}

#[test]
fn harness_catches_a_dropped_file_and_passes_a_clean_delivery() {
    let mut world = World::new();
    let files = fixtures(&world, &["A", "B"]);
    let (a, b) = (files[0].clone(), files[1].clone());
    let start = world.stand_in_hook("start-hook", &context("SessionStart", &blocks(&[&a])));
    let hooks = [Hook::new("SessionStart", None, &start, &[])];
    let Some(received) = run_with("harness_catches_a_dropped_file", &mut world, &hooks) else {
        return;
    };
    assert_eq!(
        received.check_each_once(&[a.clone(), b.clone()]),
        vec![format!("never delivered: {b}")]
    );
    assert!(
        received
            .check_each_once(std::slice::from_ref(&a))
            .is_empty(),
        "a clean delivery passes"
    );
    assert!(received.check_no_literal_newlines().is_empty());
    assert_eq!(received.count(&a), 1);
    let contexts = received.hook_contexts();
    assert_eq!(contexts.len(), 1, "{contexts:?}");
    assert_eq!(contexts[0].label, "SessionStart");
    assert_eq!(
        contexts[0].text,
        blocks(&[&a]).trim_end_matches('\n'),
        "the context arrives verbatim"
    );
}

/// A split file counts once all its parts arrived, each exactly once, over several outputs;
/// a part sent twice, a part never sent, a file sent whole and in parts, and a skill expanded
/// by the client and also sent as a block are each caught.
#[test]
fn harness_counts_parts_and_the_clients_own_skill_expansion() {
    let mut world = World::new();
    let files = fixtures(&world, &["SPLIT", "BEGUN", "BOTH", "DONE"]);
    let (split, begun, both, done) = (&files[0], &files[1], &files[2], &files[3]);
    let skill_md = world
        .sandbox
        .home
        .join(".claude/skills/implement/SKILL.md")
        .to_string_lossy()
        .into_owned();
    let at_start = [
        part(split, 1, 3),
        part(split, 2, 3),
        part(done, 1, 2),
        part(begun, 1, 2),
        blocks(&[both]),
    ]
    .join("\n");
    let on_call = [
        part(split, 2, 3),
        part(done, 2, 2),
        part(both, 1, 2),
        part(both, 2, 2),
        format!("[Preloaded: {skill_md}]\nThe skill, sent again.\n"),
    ]
    .join("\n");
    let start = world.stand_in_hook("start-hook", &context("SessionStart", &at_start));
    let post = world.stand_in_hook("post-hook", &context("PostToolUse", &on_call));
    let hooks = [
        Hook::new("SessionStart", None, &start, &[]),
        Hook::new("PostToolUse", Some("*"), &post, &[]),
    ];
    let Some(received) = run_with_prompt(
        "harness_counts_parts",
        &mut world,
        &hooks,
        "/implement add a total to the estimate",
    ) else {
        return;
    };
    let mut problems = received.check_each_once(std::slice::from_ref(done));
    problems.sort();
    let mut expected = vec![
        format!("delivered 2 times (messages [1, 4]): {split} (part 2/3)"),
        format!("incomplete: parts [3] of 3 never arrived: {split}"),
        format!("incomplete: parts [2] of 2 never arrived: {begun}"),
        format!("delivered whole (messages [1]) and in parts as well: {both}"),
    ];
    expected.sort();
    assert_eq!(problems, expected);
    assert_eq!(
        received.complete_at(done),
        Some(4),
        "complete with its last part"
    );
    assert_eq!(received.complete_at(split), None);
    let skill_dir = skill_md.trim_end_matches("/SKILL.md");
    let twice = received.check_skill_at_most_once(skill_dir);
    assert_eq!(
        twice.len(),
        1,
        "the client's expansion and a block: {twice:?}"
    );
    assert!(
        twice[0].contains("expansion at message 0") && twice[0].contains("block at message 4"),
        "{twice:?}"
    );
}

/// What the client keeps of SessionStart on `--resume`. Each of [`SESSION_START_CHUNKS`]
/// stand-ins answers with its own marker and a few KB of text: the odd ones name the source the
/// client gave them (so their text differs between the start-up and the resume), the even ones
/// answer the same text both times. The resumed conversation replays the first run's contexts
/// and holds every registration's context of the resume whose text is new, each once; a context
/// whose text is already in the conversation the client drops. So a hook that sends a file
/// again on resume with the same slice text is not seen twice by the model, but the hook's own
/// log counts it as delivered.
#[test]
fn the_client_keeps_every_session_start_context_of_a_resume_but_drops_repeated_texts() {
    let scenario = "harness_resume_keeps_session_start";
    let Some(claude) = client_or_skip(scenario) else {
        return;
    };
    let mut world = World::new();
    // About 2,400 characters each: 32 of them twice stay under the client's auto-compaction
    // (`--autocompact 100000`), which a resume of a larger conversation triggers at once.
    let padding = "Text that stands for a slice of the standards.\n".repeat(50);
    let tail = format!(
        "{}}}}}",
        serde_json::to_string(&padding)
            .unwrap()
            .trim_start_matches('"')
    );
    let hooks: Vec<Hook> = (0..SESSION_START_CHUNKS)
        .map(|i| {
            let script = world.bin_dir.join(format!("start-{i}"));
            let rest = world.bin_dir.join(format!("start-{i}.json"));
            std::fs::write(&rest, &tail).unwrap();
            let tag = if i % 2 == 1 { "source=$src" } else { "same" };
            let body = format!(
                "#!/bin/sh\nsrc=$(grep -o '\"source\": *\"[a-z]*\"' | sed 's/.*\"\\([a-z]*\\)\"$/\\1/')\n\
                 printf '{{\"hookSpecificOutput\":{{\"hookEventName\":\"SessionStart\",\
                 \"additionalContext\":\"[chunk {i}/{SESSION_START_CHUNKS} %s]\\\\n' \"{tag}\"\n\
                 cat '{}'\n",
                rest.display()
            );
            std::fs::write(&script, body).unwrap();
            std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
            Hook::new("SessionStart", None, &script, &[])
        })
        .collect();
    world.wire(&hooks);
    let server = ModelServer::start(Script::main(vec![crate::model::bash("echo one")]));
    let first = client::run(
        &claude,
        &world,
        &server,
        "Say hello.",
        &client::Options::default(),
    );
    first.assert_ok();
    server.set_script(Script::main(vec![crate::model::bash("echo two")]));
    let options = client::Options::resuming(
        first
            .session_id()
            .expect("the client reports its session id"),
    );
    let second = client::run(&claude, &world, &server, "Carry on.", &options);
    second.assert_ok();
    let requests = server.requests();
    let saved = dump(scenario, &requests, &world);
    assert!(
        !requests.iter().any(|r| r.kind == Kind::Compaction),
        "the resume did not compact"
    );
    let got = Received::last_of(&requests, "main").expect("the resumed conversation");
    let resumed_at = got.text_position("Carry on.").expect("the resumed one");
    let mut problems = Vec::new();
    for i in 0..SESSION_START_CHUNKS {
        let markers: Vec<(String, usize)> = if i % 2 == 1 {
            ["startup", "resume"]
                .iter()
                .map(|source| {
                    (
                        format!("[chunk {i}/{SESSION_START_CHUNKS} source={source}]"),
                        1,
                    )
                })
                .collect()
        } else {
            vec![(format!("[chunk {i}/{SESSION_START_CHUNKS} same]"), 1)]
        };
        for (marker, want) in markers {
            let n = got.count_text(&marker);
            if n != want {
                problems.push(format!("{marker} arrived {n} times, not {want}"));
            }
        }
        let resumed = format!("[chunk {i}/{SESSION_START_CHUNKS} source=resume]");
        if i % 2 == 1
            && got
                .text_position(&resumed)
                .is_some_and(|at| at < resumed_at)
        {
            problems.push(format!("{resumed} before the resume's prompt"));
        }
    }
    crate::support::assert_clean(
        scenario,
        "the resume's new SessionStart contexts kept, its repeated ones dropped",
        &problems,
        &got,
        &saved,
    );
}

/// How run 1 of [`skill_reloads`] brings the skill into the conversation.
#[derive(Debug, Clone, Copy)]
enum Invoked {
    /// The user's `/implement …` prompt, which the client expands itself.
    ByPrompt,
    /// The model's `Skill` tool call.
    ByTool,
}

/// Run 1 invokes `/implement` (`how`), with or without a compaction of its own, then
/// `/compact --resume`, then `continue --resume`: how often the skill's expansion is in run 1's
/// last context and in the final one (after the resumed compaction), and where the requests
/// were saved.
fn skill_reloads(
    claude: &std::path::Path,
    scenario: &str,
    how: Invoked,
    compact_first: bool,
) -> (usize, usize, std::path::PathBuf) {
    let mut world = World::new();
    world.wire(&[]);
    let (prompt, mut steps) = match how {
        Invoked::ByPrompt => (
            "/implement add a total to the estimate",
            vec![crate::model::bash("echo zero")],
        ),
        Invoked::ByTool => (
            "Add a total to the estimate.",
            vec![tool("Skill", json!({"skill": "implement"}))],
        ),
    };
    if compact_first {
        steps.push(crate::model::heavy(crate::model::bash("echo one")));
    }
    steps.push(crate::model::bash("echo two"));
    let server = ModelServer::start(Script::main(steps));
    let first = client::run(claude, &world, &server, prompt, &client::Options::default());
    first.assert_ok();
    let after_first = server.requests().len();
    let resume = client::Options::resuming(
        first
            .session_id()
            .expect("the client reports its session id"),
    );
    server.set_script(Script::main(Vec::new()));
    client::run(claude, &world, &server, "/compact", &resume).assert_ok();
    server.set_script(Script::main(vec![crate::model::bash("echo three")]));
    client::run(claude, &world, &server, "continue", &resume).assert_ok();
    let requests = server.requests();
    let name = format!(
        "{scenario}_{how:?}_{}",
        if compact_first { "twice" } else { "once" }
    );
    let saved = dump(&name, &requests, &world);
    let count = |r: &Received| r.count_text(crate::received::EXPANSION);
    let run1 = Received::last_of(&requests[..after_first], "main").expect("run 1");
    let last = Received::last_of(&requests[after_first..], "main").expect("run 3");
    assert!(
        last.text_position("continued from a previous conversation")
            .is_some(),
        "run 3 holds the conversation /compact left ({})",
        saved.display()
    );
    assert_eq!(
        run1.text_position("continued from a previous conversation")
            .is_some(),
        compact_first,
        "run 1 compacted only when asked ({})",
        saved.display()
    );
    (count(&run1), count(&last), saved)
}

/// What the client (2.1.330 and 2.1.332) does with a skill when the conversation is compacted:
/// the process that loaded it puts it back after the summary. A process that resumed the
/// conversation puts back only the skills an earlier compaction put back (the transcript
/// records that re-injection), not one the first process merely loaded, whether from the
/// user's `/skill` prompt or from the model's `Skill` tool call. The product
/// relies on this (`ledger::skills_held_at_start`: SessionStart `compact` counts the client's
/// reload only for the skills the compacting process holds).
#[test]
fn the_client_puts_a_skill_back_after_a_compaction_as_the_conversation_invoked_it() {
    let scenario = "harness_skill_reload_after_compaction";
    let Some(claude) = client_or_skip(scenario) else {
        return;
    };
    // (how the skill was loaded, whether the first process compacted; the skill's expansions
    // in run 1, and after the resumed process's compaction, each with what it shows)
    let cases = [
        (
            (Invoked::ByPrompt, false),
            (1, "the prompt's expansion"),
            (
                0,
                "a resumed process does not put back a skill the first one only expanded",
            ),
        ),
        (
            (Invoked::ByPrompt, true),
            (
                1,
                "the loading process puts the skill back after its compaction",
            ),
            (
                1,
                "a resumed process recalls a skill an earlier compaction put back",
            ),
        ),
        (
            (Invoked::ByTool, false),
            (1, "the Skill call's expansion"),
            (
                0,
                "a resumed process does not put back a skill the model loaded with the Skill tool",
            ),
        ),
    ];
    for ((invoked, compact_first), (in_run1, run1_shows), (in_last, last_shows)) in cases {
        let (run1, last, saved) = skill_reloads(&claude, scenario, invoked, compact_first);
        assert_eq!(run1, in_run1, "{run1_shows} ({})", saved.display());
        assert_eq!(last, in_last, "{last_shows} ({})", saved.display());
    }
}
