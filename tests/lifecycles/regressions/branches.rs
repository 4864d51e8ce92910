//! Regressions of conversations that branch: forks, rewinds and edited prompts, with or without
//! a supervisor, in both clients.

use super::*;

/// Finding: a fork of a conversation whose process had ended rewrote that conversation's ended
/// record from its window fields, and the record lost what else it held (a foreign field). A
/// fork leaves its parent's record as it was; it writes the parent's window as an ended record
/// only when its own seed replaces the parent's (one owner PID). Found by the generated cases
/// once they played forks.
#[test]
fn a_fork_leaves_its_parents_record_as_it_was() {
    let ops = vec![Startup(0), Startup(0), Fork(0, 0)];
    crate::run::play_through(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// A fork of an activated conversation in the middle of `/implement`: the fork holds its
/// parent's window (standards, the skill, phase 1's commands), gets nothing twice, and what
/// becomes due in it (a new directory's directives, the next phase's commands) arrives there;
/// then the parent is resumed and gets nothing twice either (`e2e::branches`, in the real
/// client).
#[test]
fn a_fork_goes_on_from_its_parents_window_and_the_parent_after_it() {
    crate::run::play_through(&fork_then_parent()).unwrap_or_else(|r| panic!("{r}"));
}

/// [`a_fork_goes_on_from_its_parents_window_and_the_parent_after_it`] under one supervisor PID
/// (the engine's `run.sh`): the fork goes on from the owner's session, which served its parent,
/// and the parent's resume finds its own window again.
#[test]
fn a_fork_under_one_supervisor_goes_on_from_its_parents_window_and_the_parent_after_it() {
    crate::run::play_supervised(&fork_then_parent()).unwrap_or_else(|r| panic!("{r}"));
}

/// [`a_fork_goes_on_from_its_parents_window_and_the_parent_after_it`] as the Codex CLI forks
/// (`codex exec fork <id>`): the hooks find the parent in the fork's rollout, not in the
/// client's command line.
#[test]
fn a_codex_fork_goes_on_from_its_parents_window_and_the_parent_after_it() {
    crate::run::play_through_as(
        crate::world::Client::Codex,
        preload_test_support::sandbox::Wiring::of_run(),
        &fork_then_parent(),
    )
    .unwrap_or_else(|r| panic!("{r}"));
}

/// A fork in the middle of `/implement`, work in it, then the parent resumed.
fn fork_then_parent() -> Vec<Op> {
    vec![
        Activate(0, Implement),
        Phase(0, 0),
        Call(0, Ls, 0),
        Exit(0),
        Fork(0, 0),
        Call(0, Read, 3),
        Phase(0, 0),
        Call(0, Ls, 1),
        Exit(0),
        Resume(0, 0),
        Call(0, Read, 4),
    ]
}

/// A rewind (an edited message) to before a prompt whose turn read into a package and moved to
/// the next phase: the client drops those turns, and the next tool call gets back what they
/// carried (the package's directives, the phase's commands), once (`e2e::branches`, in the
/// real client).
#[test]
fn a_rewind_gets_back_what_the_dropped_turns_carried() {
    crate::run::play_through(&rewound_turns()).unwrap_or_else(|r| panic!("{r}"));
}

/// [`a_rewind_gets_back_what_the_dropped_turns_carried`] under one supervisor PID.
#[test]
fn a_rewind_under_one_supervisor_gets_back_what_the_dropped_turns_carried() {
    crate::run::play_supervised(&rewound_turns()).unwrap_or_else(|r| panic!("{r}"));
}

/// Turns that read into a package and move to the next phase, then a rewind to before them.
fn rewound_turns() -> Vec<Op> {
    vec![
        Activate(0, Implement),
        Phase(0, 0),
        Prompt(0),
        Call(0, Read, 0),
        Phase(0, 0),
        Call(0, Ls, 1),
        Rewind(0, 0),
        Call(0, Ls, 2),
    ]
}

/// Finding: a rewind to before a `/skill` prompt dropped the SKILL.md the client had expanded
/// with it, but the record kept it (UserPromptSubmit records the expansion): the skill's
/// protocol was missing on the new branch. What a prompt carries is recorded with the prompt
/// (its `promptId`), and a rewind that drops the prompt takes it back. Found by the generated
/// cases once they played rewinds.
#[test]
fn a_rewind_to_before_a_skill_prompt_takes_back_its_skill() {
    let ops = vec![SlashSkill(0, Implement), Rewind(0, 0), SkillCall(0, Do)];
    crate::run::play_through(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: a fork of a conversation whose session was being restarted when its process ended
/// rewrote the ended record the restart had kept (`keep_restarting_window`), which lost what
/// else it held. Found by `make soak` once the generated cases played forks.
#[test]
fn a_fork_of_a_restarted_conversation_leaves_its_record_as_it_was() {
    let ops = vec![Activate(0, Implement), Restart(0), Startup(0), Fork(0, 2)];
    crate::run::play_through(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: a rewind to before a `/skill` prompt, then the process ended with no tool call in
/// between: the resume's SessionStart counted the expanded skill as in the window, which the
/// branch no longer held. A resume (a window that goes on) takes back what a rewind took out,
/// as a tool call does. Found by `make soak`.
#[test]
fn a_resume_after_a_rewind_takes_back_what_it_dropped() {
    let ops = vec![SlashSkill(0, Implement), Rewind(0, 0), Resume(0, 0)];
    crate::run::play_through(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: a rewind to before the prompt whose turn activated a skill, then a compaction with
/// no tool call in between: the compaction counted the abandoned activation call as the one the
/// client keeps. A response a rewind abandoned is not kept. Found by `make soak` (under
/// `--dispatch`).
#[test]
fn a_compaction_after_a_rewind_keeps_no_abandoned_call() {
    let ops = vec![
        Prompt(0),
        Activate(0, Implement),
        Call(0, Read, 0),
        Rewind(0, 0),
        Compact(0),
    ];
    crate::run::play_through(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// The model's supervisor mode is what it says: every client's hooks take the one supervisor PID
/// for their owner (the owner's seed is named by it), and an op on the second slot acts on the
/// one client there is.
#[test]
fn the_model_plays_one_supervisor_across_clients() {
    let mut world = World::owned(
        crate::world::Client::of_run(),
        crate::world::Ownership::Supervisor,
    );
    world.apply(&Op::Startup(0));
    world.apply(&Op::Startup(1));
    assert!(world.procs[1].is_none(), "one client at a time");
    let client = world.procs[0].as_ref().unwrap().pid;
    let owner = world.owner(0);
    assert_ne!(owner, client, "the owner is the supervisor, not the client");
    let seed = world
        .sb
        .sessions
        .join(".seeds")
        .join(format!("{owner}.json"));
    assert!(seed.is_file(), "no seed named by the supervisor: {seed:?}");
    assert_eq!(world.check(), Vec::<String>::new());
}

/// Finding: under one supervisor PID, a conversation whose client ended with no SessionEnd (a
/// crash) left its window in the owner's seed; resuming an earlier conversation wrote that seed
/// from the earlier one's record and the crashed conversation's window was gone, so its own
/// resume sent everything again. A seed a resume replaces is kept as its conversation's ended
/// record first. Found by the generated cases once they played one supervisor.
#[test]
fn under_one_supervisor_a_resume_keeps_the_window_a_crashed_client_left() {
    let ops = vec![Startup(0), Crash(0), Resume(0, 0), Resume(0, 2)];
    crate::run::play_supervised(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: a file changed on disk went out again marked updated, then a rewind dropped that
/// turn: the file went out a third time with no mark, as if the branch held none of it, when it
/// held the first text. A rewound delivery of a new text leaves the file due as changed, marked
/// updated. Found by `make soak`.
#[test]
fn a_rewound_update_goes_out_again_marked_updated() {
    let ops = vec![
        Prompt(0),
        Touch(2),
        SkillCall(0, Implement),
        Rewind(0, 0),
        SkillCall(0, Implement),
    ];
    crate::run::play_through(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: a rewind to before the prompt whose turn activated a skill, then two prompts before
/// the next tool call: that call looked at the newest prompt only, which follows on from the one
/// before it, and the activation's files stayed recorded though the branch had lost them. Every
/// prompt since is looked at. Found by `make soak` (one supervisor PID; client-owned too).
#[test]
fn a_rewind_then_a_second_prompt_takes_back_at_the_next_call() {
    let ops = vec![
        Touch(2),
        Prompt(0),
        Activate(0, Implement),
        Rewind(0, 0),
        Prompt(0),
        Failed(0, Read, 0),
    ];
    crate::run::play_through(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: a rewind to before the prompt whose turn activated a skill, while a restart of the
/// session was requested: the next call was let through untouched (as the engine's guard does
/// while a session restarts) and the activation's files stayed recorded though the branch had
/// lost them. A call let through still takes back what a rewind dropped. Found by `make soak`
/// (one supervisor PID).
#[test]
fn a_call_let_through_while_restarting_takes_back_what_a_rewind_dropped() {
    let ops = vec![
        Prompt(0),
        Activate(0, Implement),
        Restart(0),
        Rewind(0, 0),
        SkillCall(0, Implement),
    ];
    crate::run::play_supervised(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: a resume's SessionStart text carried the files queued at an activation; a rewind to
/// before the activation's prompt dropped that text too (it hangs off the entry after the
/// activation), but nothing took back what it carried. What a resume's text carries is recorded
/// with the entry it hangs off, and a rewind past that entry takes it back. Found by `make soak`
/// (under `--dispatch`).
#[test]
fn a_rewind_past_a_resume_takes_back_what_its_start_carried() {
    let ops = vec![
        Startup(0),
        Prompt(0),
        Activate(0, Implement),
        Resume(0, 1),
        Rewind(0, 0),
        SkillCall(0, Implement),
    ];
    crate::run::play_through_on(preload_test_support::sandbox::Wiring::Dispatch, &ops)
        .unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: under one supervisor PID, a conversation's record written as its client ended with a
/// restart under way was written again when a start-up replaced the session's window, and lost
/// what else it held (a foreign field). A record written again keeps its other fields. Found by
/// `make soak` (as the Codex CLI runs the hooks).
#[test]
fn a_window_record_written_again_keeps_its_other_fields() {
    let ops = vec![
        Activate(0, Implement),
        Restart(0),
        Fork(0, 0),
        Exit(0),
        Startup(0),
    ];
    crate::run::play_through_owned(
        crate::world::Client::Codex,
        preload_test_support::sandbox::Wiring::Binaries,
        crate::world::Ownership::Supervisor,
        &ops,
    )
    .unwrap_or_else(|r| panic!("{r}"));
}

/// A fork of a conversation whose client still runs, with an active session (client-owned): the
/// fork starts as that window, in a seed of its own, and gets nothing twice; the session gate
/// does not block it; the parent goes on untouched.
#[test]
fn a_fork_of_a_running_conversation_starts_as_its_window_and_is_not_locked_out() {
    let ops = vec![
        Activate(0, Implement),
        Phase(0, 0),
        Call(0, Read, 0),
        Fork(1, 0),
        Call(1, Read, 3),
        Call(1, Ls, 1),
        Call(0, Read, 4),
    ];
    crate::run::play_through_owned(
        crate::world::Client::of_run(),
        preload_test_support::sandbox::Wiring::of_run(),
        crate::world::Ownership::Client,
        &ops,
    )
    .unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: a long file's later parts went out with a resume's SessionStart text (its first
/// parts before it), and a rewind to before that resume dropped them: the file stayed recorded
/// whole. A rewind of parts takes the file back to the first part it dropped, and the file goes
/// on from there. Found by `make soak` (one supervisor PID).
#[test]
fn a_rewind_of_a_files_later_parts_goes_on_from_the_first_it_dropped() {
    let ops = vec![
        Grow(crate::ops::Big::Toc, 9),
        Call(0, Read, 0),
        Clear(0),
        Prompt(0),
        Resume(0, 1),
        Rewind(0, 0),
        Call(0, Read, 0),
    ];
    crate::run::play_supervised(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: a rewind to before a `/skill` prompt, then the same `/skill` again: the second
/// prompt's expansion was not recorded with it (the window's record still held the skill from
/// the first), so the next call took the skill back with the first prompt and sent it again
/// beside the client's own copy. A prompt that expands a skill carries it, held or not. Found by
/// the generated cases once a rewind of parts was taken back.
#[test]
fn a_skill_expanded_again_after_a_rewind_is_carried_by_the_new_prompt() {
    let mut ops = rewound_to_before_a_skill_prompt();
    ops.extend([SlashSkill(0, Implement), SkillCall(0, Implement)]);
    crate::run::play(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: a rewind to before a `/skill` prompt, then a `Skill` call of the same skill: the
/// call's PreToolUse took the skill back with the prompt, and a PostToolUse hook sent it beside
/// the client's own expansion. A `Skill` call's own SKILL.md, queued, is recorded with the call.
/// Then, a changed file whose new text went out in parts over one call's hooks, rewound, went
/// out again unmarked beside its first text: the parts a call carried of a new text are noted
/// `updated`, and go out again marked. Found by the generated cases.
#[test]
fn a_skill_call_after_a_rewind_expands_its_skill_once() {
    let mut ops = rewound_to_before_a_skill_prompt();
    ops.extend([SkillCall(0, Implement), SkillCall(0, Implement)]);
    crate::run::play(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// A `/implement` prompt, `/test` activated, `docs/TOC.md` rewritten, a phase, then the
/// conversation rewound to before its first prompt (an edited message in its place).
fn rewound_to_before_a_skill_prompt() -> Vec<Op> {
    vec![
        SlashSkill(0, Implement),
        Activate(0, Test),
        Grow(crate::ops::Big::Toc, 1),
        Phase(0, 0),
        Rewind(0, 0),
    ]
}
