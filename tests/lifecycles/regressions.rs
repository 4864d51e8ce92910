//! Sequences the generator found, replayed through the same driver and invariants, and the
//! model's own self-tests (it must be able to fail).

use serde_json::json;

use crate::client::Kind;
use crate::ops::Op::{self, *};
use crate::ops::Sk::*;
use crate::ops::Tool::*;
use crate::world::World;

#[test]
fn the_model_catches_a_file_recorded_but_never_received() {
    let mut world = World::new();
    world.apply(&Op::Startup(0));
    assert_eq!(world.check(), Vec::<String>::new(), "a clean start-up");
    let pid = world.procs[0].as_ref().unwrap().pid;
    let seed = world.sb.sessions.join(".seeds").join(format!("{pid}.json"));
    let mut state = crate::world::parse_state(&seed).unwrap();
    let never = world.sb.project.join("docs/GLOSSARY.md");
    state["preloadedFiles"]
        .as_array_mut()
        .unwrap()
        .push(json!(never));
    std::fs::write(&seed, serde_json::to_string_pretty(&state).unwrap()).unwrap();
    let problems = world.check();
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("(1)") && p.contains("GLOSSARY.md")),
        "{problems:?}"
    );
}

#[test]
fn the_model_catches_a_doubled_block() {
    let mut world = World::new();
    world.apply(&Op::Startup(0));
    assert_eq!(world.check(), Vec::<String>::new(), "a clean start-up");
    let window = &mut world.procs[0].as_mut().unwrap().window;
    let first = window
        .entries
        .iter()
        .find(|e| e.text.contains("[Preloaded: "))
        .unwrap()
        .clone();
    window.receive(99, Kind::Call, "a doubled block", &first.text);
    let problems = world.check();
    assert!(
        problems.iter().any(|p| p.starts_with("(2)")),
        "{problems:?}"
    );
}

/// Finding: the seed loses a field the product does not know (CONTRACT section 5: "Reading and
/// rewriting keeps every field we do not know") when `preload-overflow` queues the directives
/// a Read discovered. Found by seed 20240601 (both wirings).
#[test]
fn a_read_that_discovers_directives_keeps_the_seeds_foreign_field() {
    let ops = vec![Call(0, Read, 0)];
    crate::run::play(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// Finding (timing-dependent, so ignored by default): `preload-injections` killed a few
/// milliseconds into the PostToolUse that hands out the stash: the files `preload-overflow`
/// claimed for the call are recorded in `preloadedFiles` (logged `claim-deliver`) but the model
/// never receives them, and they are not sent again. Found by seed 20240601 with
/// `PRELOAD_LIFECYCLE_IGNORE=4-foreign,2`. Run with `--ignored` (it may pass when the kill lands
/// before the hook takes the stash).
#[test]
#[ignore = "timing-dependent: the kill must land between the stash write and stdout"]
fn a_killed_injections_hook_loses_the_files_claimed_for_its_call() {
    for ms in 0..8 {
        let ops = vec![Activate(0, Implement), Killed(0, Read, 0, 0, ms)];
        crate::run::play_ignoring(&ops, &[]).unwrap_or_else(|r| panic!("{r}"));
    }
}

/// Finding (or a slack to discuss): after a compaction and an activation, a reference queued
/// in `pendingPreloads` (`formats/FMT_SESSION_PARAMETERS.md`) is still not out after two
/// ordinary calls that each discovered directives. Found by seed 20240601 with
/// `PRELOAD_LIFECYCLE_IGNORE=4-foreign,2,1`.
#[test]
fn a_queued_reference_is_out_within_two_calls_after_compaction_and_activation() {
    let ops = vec![
        SkillCall(0, Test),
        Compact(0),
        Activate(0, Implement),
        Call(0, Read, 0),
        Call(0, Read, 0),
    ];
    crate::run::play_ignoring(&ops, &[]).unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: a compaction right after a `Skill` call: the client keeps that call with the
/// references the hooks added to it (`CMD_DECISION_TREE.md`, `INV_READ_BEFORE_WRITE.md`), and
/// the hooks send them again in the new window. Found by seed 20240601 with
/// `PRELOAD_LIFECYCLE_IGNORE=4-foreign,2,1` while shrinking the case above.
#[test]
fn compaction_after_a_skill_call_does_not_send_its_references_again() {
    let ops = vec![
        SkillCall(0, Test),
        Compact(0),
        Activate(0, Implement),
        Call(0, Read, 0),
        Call(0, Read, 0),
    ];
    crate::run::play_ignoring(&ops, &[]).unwrap_or_else(|r| panic!("{r}"));
}
