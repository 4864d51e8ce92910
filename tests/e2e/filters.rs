//! The wiring's `if` filters in the real client: a filtered hook is started for the Bash calls
//! its rule matches (an engine command, also after `cd … &&` or behind a pipe) and for no other
//! call, and it still does its work on the calls it gets.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::Value;

use crate::model::{Script, bash};
use crate::scenario::{Scenario, activate, proof_to_enter};
use crate::world::{SESSION, World};
use preload_test_support::sandbox::Wiring;

/// The hooks whose Bash registrations the wiring filters.
const FILTERED: [&str; 2] = ["preload-templates", "preload-phase-commands"];

/// Puts a recorder in front of the installed `binary`: each start appends its stdin (one JSON
/// line) to `<binary>.calls`, then the real binary answers. The real one keeps its name (in
/// `recorded/`): the program is the hook its name says.
fn record_starts(prefix: &Path, binary: &str) {
    let wrapper = prefix.join(binary);
    let real = prefix.join("recorded").join(binary);
    fs::create_dir_all(prefix.join("recorded")).expect("the recorded binaries' directory");
    fs::rename(&wrapper, &real).expect("move the installed binary");
    let calls = prefix.join(format!("{binary}.calls"));
    let body = format!(
        "#!/bin/sh\ninput=$(cat)\nprintf '%s\\n' \"$input\" >> '{calls}'\nprintf '%s' \"$input\" | exec '{real}' \"$@\"\n",
        calls = calls.display(),
        real = real.display()
    );
    fs::write(&wrapper, body).expect("write the recorder");
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).expect("chmod recorder");
}

/// The Bash commands `binary` was started for.
fn started_for(prefix: &Path, binary: &str) -> Vec<String> {
    let text = fs::read_to_string(prefix.join(format!("{binary}.calls"))).unwrap_or_default();
    text.lines()
        .map(|line| {
            let call: Value = serde_json::from_str(line).expect("a hook input");
            call["tool_input"]["command"]
                .as_str()
                .unwrap_or("(not Bash)")
                .to_owned()
        })
        .collect()
}

#[test]
fn filtered_hooks_start_only_for_the_engine_commands_they_act_on() {
    // The filters belong to the per-binary wiring (`--dispatch` runs one process per event).
    let mut world = World::new();
    world.sandbox.wiring = Wiring::Binaries;
    let Some(s) = Scenario::new("if_filters", world) else {
        return;
    };
    let prefix = s.world.prefix();
    for binary in FILTERED {
        record_starts(&prefix, binary);
    }
    // The proofs go in through a pipe: a command the client cannot take apart (a heredoc)
    // starts every filtered handler, whatever its rule.
    let piped = |label: &str| {
        let proof = proof_to_enter(label).expect("the proof to enter the phase");
        bash(&format!(
            "cd . && echo '{proof}' | engine session phase sessions/{SESSION} \"{label}\""
        ))
    };
    let steps = vec![
        bash("ls packages/estimate"),
        activate(),
        bash("echo 'engine session' && git --version || true"),
        piped("1: Interrogation"),
        bash("cat packages/estimate/src/total.ts"),
        piped("2: Planning"),
        bash("ls"),
    ];
    s.run(Script::main(steps), "Add a total to the estimate.");

    let templates = started_for(&prefix, "preload-templates");
    assert_eq!(
        templates.len(),
        1,
        "preload-templates started once, for the activation: {templates:?}"
    );
    assert!(
        templates[0].contains("engine session activate"),
        "{templates:?}"
    );
    let phases = started_for(&prefix, "preload-phase-commands");
    assert_eq!(
        phases.len(),
        2,
        "preload-phase-commands started for the two transitions only: {phases:?}"
    );
    assert!(
        phases.iter().all(|c| c.contains("session phase")),
        "{phases:?}"
    );
    // And they did their work on those calls: the skill's files at activation, each phase's
    // commands at its transition.
    let log = fs::read_to_string(s.log()).unwrap_or_default();
    for source in [
        "templates(implement)",
        "phase-cmds(1: Interrogation)",
        "phase-cmds(2: Planning)",
    ] {
        assert!(
            log.contains(&format!("\"source\":\"{source}\"")),
            "no delivery from {source} in the log"
        );
    }
}
