//! The harness can fail: stand-in hooks that deliver a file twice, drop a file, or write a
//! literal backslash-n, run through the real client, and the checks must say so. A clean
//! stand-in must pass the same checks.

use serde_json::{Value, json};

use crate::client;
use crate::model::{ModelServer, Script, tool};
use crate::received::Received;
use crate::support::{Paths, client_or_skip, dump};
use crate::world::{Hook, World};

/// A hook answer carrying `context` for `event`.
fn context(event: &str, text: &str) -> Value {
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

/// Runs the client once with `hooks` wired and a script that reads one file; returns what the
/// model received at the end of the main conversation.
fn run_with(scenario: &str, world: &mut World, hooks: &[Hook]) -> Option<Received> {
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
    let run = client::run(
        &claude,
        world,
        &server,
        "Read the parser.",
        &client::Options::default(),
    );
    run.assert_ok();
    let requests = server.requests();
    dump(scenario, &requests, world);
    Some(Received::last_of(&requests, "main").expect("the main conversation reached the model"))
}

#[test]
fn harness_catches_a_file_delivered_twice_and_a_literal_backslash_n() {
    let mut world = World::new();
    let paths = Paths::new(&world);
    let (a, b) = (paths.engine("COMMANDS.md"), paths.engine("SIGILS.md"));
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
    let paths = Paths::new(&world);
    let (a, b) = (paths.engine("COMMANDS.md"), paths.engine("SIGILS.md"));
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
