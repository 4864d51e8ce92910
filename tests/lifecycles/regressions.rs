//! Sequences the generator found, replayed through the same driver and invariants, and the
//! model's own self-tests (it must be able to fail).

use serde_json::json;

use crate::client::Kind;
use crate::ops::Op::{self, *};
use crate::ops::Sk::*;
use crate::ops::Tool::*;
use crate::world::World;

mod branches;

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

/// `preload-injections` killed at each of the first milliseconds of the PostToolUse that hands
/// out the stash: killed before its commit, the stash stays and the next call delivers it;
/// killed after it (docs/reliability.md, "The one window"), the client discards the answer and
/// the files `preload-overflow` claimed for the call are lost to this window, which the model
/// reports as such and nothing else: no duplicate, no other loss, no lock left for good.
#[test]
fn a_killed_injections_hook_loses_nothing_beyond_the_one_window() {
    for ms in 0..8 {
        let ops = vec![
            Activate(0, Implement),
            Killed(0, Read, 0, 0, ms),
            Call(0, Read, 0),
            Call(0, Read, 0),
        ];
        crate::run::play(&ops).unwrap_or_else(|r| panic!("{r}"));
    }
}

/// Two findings of seed 20240601 with `PRELOAD_LIFECYCLE_IGNORE=4-foreign,2,1`, one case:
/// after a compaction and an activation, a reference queued in `pendingPreloads`
/// (`formats/FMT_SESSION_PARAMETERS.md`) was still not out after two ordinary calls that each
/// discovered directives; and a compaction right after a `Skill` call, which the client keeps
/// with the references the hooks added to it (`CMD_DECISION_TREE.md`,
/// `INV_READ_BEFORE_WRITE.md`), had the hooks send those again in the new window.
#[test]
fn a_compaction_after_a_skill_call_neither_resends_its_references_nor_holds_back_the_queue() {
    let ops = vec![
        SkillCall(0, Test),
        Compact(0),
        Activate(0, Implement),
        Call(0, Read, 0),
        Call(0, Read, 0),
    ];
    crate::run::play_ignoring(&ops, &[]).unwrap_or_else(|r| panic!("{r}"));
}

/// A call that carries only the last part of a file (its first part came with an earlier call)
/// and is the one a compaction keeps: the new window holds that part alone, so the file is not
/// recorded as in it (`ledger::note_call_deliveries` notes only files the call carried whole).
#[test]
fn a_compaction_keeps_no_file_the_last_call_only_finished() {
    let ops = vec![
        Startup(0),
        Activate(0, Implement),
        Phase(0, 0),
        Grow(crate::ops::Big::Interrogate, 1),
        Activate(0, Implement),
        SkillCall(0, Implement),
        Compact(0),
    ];
    crate::run::play_through(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// A compaction right after another keeps the same last call: the first compaction does not
/// use up the record of what that call carried.
#[test]
fn two_compactions_in_a_row_keep_the_same_last_call() {
    let ops = vec![Startup(0), Activate(0, Implement), Compact(0), Compact(0)];
    crate::run::play_through(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// A resumed conversation that activates a new session: the window the resume went on with
/// (recorded in the old session) moves with the owner, and what it holds is not sent again.
#[test]
fn a_new_session_activated_after_a_resume_sends_nothing_the_window_holds() {
    let ops = vec![
        Startup(0),
        Activate(0, Implement),
        Exit(0),
        Resume(1, 0),
        Activate(1, Implement),
    ];
    crate::run::play_through(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// Two client processes start and end before any activation, then the first conversation is
/// resumed: its ended record outlives the next process's start (it waits for a resume as long
/// as the client keeps the transcript), so the standards are not sent again.
#[test]
fn an_earlier_conversation_resumed_after_another_start_sends_nothing_again() {
    let ops = vec![
        Startup(0),
        Startup(0),
        Grow(crate::ops::Big::AskRound, 7),
        Resume(0, 1),
    ];
    crate::run::play_through(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// A call the guard denies (no PostToolUse hook runs for it) is still the conversation's
/// latest: a compaction after it keeps it, not the call before, whose files are not in the new
/// window (`preload-overflow` starts the new call's record).
#[test]
fn a_compaction_after_a_denied_call_keeps_nothing_of_the_call_before() {
    let ops = vec![
        Startup(0),
        SkillCall(0, Implement),
        Call(0, Read, 0),
        Compact(0),
        SkillCall(0, Implement),
    ];
    crate::run::play_through(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// A `/skill` prompt before any activation, then a compaction: the client puts the skill's
/// SKILL.md back itself, and the owner's seed records it (and keeps the skills its process
/// holds), so the activation that follows does not send it again.
#[test]
fn a_skill_loaded_before_activation_is_not_sent_again_after_a_compaction() {
    let ops = vec![
        Call(0, Read, 0),
        SlashSkill(0, Implement),
        Compact(0),
        Activate(0, Implement),
    ];
    crate::run::play_through(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// A phase's long command goes out in parts, the first with the transition; a compaction
/// keeps that call: the new window goes on with the next part instead of sending the first
/// one again (the record notes how many first parts the call carried).
#[test]
fn a_compaction_after_a_first_part_goes_on_with_the_next() {
    let ops = vec![
        Activate(0, Implement),
        Grow(crate::ops::Big::Interrogate, 1),
        Phase(0, 0),
        Compact(0),
        Call(0, Ls, 0),
        Call(0, Ls, 0),
    ];
    crate::run::play_through(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// One process per event (`--dispatch`): the PostToolUse answer's shared budget cuts a claimed
/// file to fit and stashes its other parts; a compaction keeps that call: the file stays in the
/// new window and its other parts are still handed out, instead of the file sent whole again
/// beside the part the window holds.
#[test]
fn under_dispatch_a_compaction_after_a_cut_stash_goes_on_with_its_parts() {
    let ops = vec![
        Grow(crate::ops::Big::ParseParameters, 1),
        Activate(0, Implement),
        Call(0, Read, 0),
        SkillCall(0, Implement),
        Compact(0),
        Call(0, Ls, 0),
        Call(0, Ls, 0),
        Call(0, Ls, 0),
    ];
    crate::run::play_through_on(preload_test_support::sandbox::Wiring::Dispatch, &ops)
        .unwrap_or_else(|r| panic!("{r}"));
}

/// A conversation whose session a later conversation takes over (a new process activating it)
/// is resumed: the window it held was kept when it was replaced, so the resume goes on from it
/// and nothing it holds is sent again (a standard changed meanwhile goes out once, marked
/// `(updated)`, instead of whole beside the old copy the transcript holds).
#[test]
fn a_conversation_whose_session_was_taken_over_is_resumed_without_resending() {
    let ops = vec![
        Activate(0, Do),
        Startup(0),
        Activate(0, Implement),
        Exit(0),
        Touch(5),
        Resume(0, 0),
    ];
    crate::run::play_through(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// `/clear`, then `/resume` of the conversation before it: the window its seed held was kept
/// when the clear replaced it.
#[test]
fn a_conversation_cleared_away_is_resumed_without_resending() {
    let ops = vec![Call(0, Read, 0), Clear(0), Exit(0), Touch(5), Resume(0, 0)];
    crate::run::play_through(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// A new process takes over a session whose old process had loaded its skill: the skills (and
/// the latest call) of the old process's client are not the new one's, so after a compaction
/// the new window is not counted as holding SKILL.md the new client never put back.
#[test]
fn a_session_taken_over_does_not_count_the_old_clients_skills() {
    let ops = vec![
        Activate(0, Implement),
        SlashSkill(0, Implement),
        Startup(0),
        Activate(0, Implement),
        SkillCall(0, Do),
        Compact(0),
    ];
    crate::run::play_through(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// A conversation resumed once, then cleared away in that process, then resumed again by a new
/// one: the session it worked in now serves another conversation (its counters' transcript
/// still names the first), so the resume goes on from the window kept at the clear, not from
/// that session.
#[test]
fn a_conversation_resumed_after_its_session_moved_on_finds_its_own_window() {
    let ops = vec![
        Activate(0, Test),
        Phase(0, 0),
        Startup(0),
        Resume(0, 2),
        Call(0, Read, 0),
        Clear(0),
        Startup(0),
        Resume(0, 1),
    ];
    crate::run::play_through(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// A sub-agent loads a skill before the main agent activates a session: the activation takes
/// the sub-agent's own record in with the seed, so the sub-agent's next call does not get the
/// skill's phase 0 commands again.
#[test]
fn a_sub_agents_record_moves_into_the_session_at_activation() {
    let ops = vec![
        Subagent(0, 0),
        SubSkill(0, 0, Implement),
        Activate(0, Implement),
        SubCall(0, 0, Read, 0),
    ];
    crate::run::play_through(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: after parallel calls a compaction keeps every call of that response (confirmed by
/// `e2e::scenarios::a_compaction_after_parallel_calls_keeps_what_every_call_carried`), but the
/// record held the latest call alone: what the other calls carried (the phase's commands, the
/// skill's templates) came again in the new window. Found by seeds 1795838169007 and
/// 1795838169057 (per binary).
#[test]
fn a_compaction_after_parallel_calls_keeps_what_each_of_them_carried() {
    for skill in [Test, Implement] {
        let ops = vec![
            Activate(0, skill),
            Parallel(0, vec![(Read, 0), (Read, 0)]),
            Compact(0),
        ];
        crate::run::play(&ops).unwrap_or_else(|r| panic!("{r}"));
    }
}

/// Finding: a resume's SessionStart carried only the later parts of a changed standard (its
/// first part went out with the call before), and its record counted the file as whole: a
/// compaction right after the resume kept those parts and the record said the file was in the
/// new window. Now the record holds which parts the window keeps, and the file goes on with the
/// others. Found by seed 1795838169060 (per binary).
#[test]
fn a_compaction_right_after_a_resume_that_finished_a_file_sends_its_first_parts() {
    let ops = vec![Touch(5), SkillCall(0, Implement), Resume(0, 0), Compact(0)];
    crate::run::play(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// The model's own limit, fixed: files lost in the one window (a hook killed after its commit)
/// stay recorded in that window; the model forgot the loss when the conversation was cleared
/// and reported them again when it was resumed. Found by seed 1795838169062 (per binary).
#[test]
fn a_loss_in_the_one_window_is_remembered_across_a_clear_and_a_resume() {
    let ops = vec![
        Startup(0),
        Startup(1),
        Activate(0, Test),
        Killed(0, Read, 0, 0, 2),
        Clear(0),
        Resume(0, 1),
    ];
    crate::run::play(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: a `Skill` call before activation, a compaction (the client puts the skill back),
/// activation, then a resume and a compaction: the resumed client puts the skill back again (the
/// transcript records the first re-injection), but the activation had dropped the record of
/// that re-injection (`reloadedSkills`), so switching to that skill sent its SKILL.md a second
/// time. Found by seed 1795840402131 (per binary).
#[test]
fn a_skill_put_back_before_activation_is_known_to_the_session_after_a_resume() {
    let ops = vec![
        SkillCall(0, Test),
        Compact(0),
        Activate(0, Implement),
        Resume(0, 0),
        Compact(0),
        Activate(0, Test),
    ];
    crate::run::play(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// The model was wrong: activating a session again after `/clear` goes on in the phase the
/// session is in, so that phase's commands are due, not phase 0's. Found by seeds
/// 1795841315001 and 1795841315118 (both wirings).
#[test]
fn an_activation_after_a_clear_brings_the_current_phases_commands() {
    let ops = vec![
        Activate(0, Implement),
        Phase(0, 0),
        Clear(0),
        Activate(0, Implement),
        Call(0, Read, 0),
        Call(0, Read, 0),
    ];
    crate::run::play(&ops).unwrap_or_else(|r| panic!("{r}"));
}
/// Finding: one call carried two later parts of a long file through two hooks (one from the
/// stash, one from the queue), and its record held only one of them: the new window after a
/// compaction got the other again. Found by seed 1795843879021 (per binary).
#[test]
fn a_compaction_keeps_every_later_part_the_hooks_of_one_call_carried() {
    let ops = vec![
        Grow(crate::ops::Big::Interrogate, 2),
        Activate(0, Implement),
        Phase(0, 0),
        SkillCall(0, Implement),
        Compact(0),
    ];
    crate::run::play(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: a file a sub-agent was getting in parts changed in between, and the sub-agent's
/// next part was of the new cut: it never held the file whole. A sub-agent's parts start again,
/// marked `(updated)`, as the main agent's do. Found by seed 1795844799085 (`--dispatch`).
#[test]
fn a_file_that_changes_while_a_sub_agent_gets_its_parts_starts_again() {
    let ops = vec![
        Subagent(0, 1),
        Grow(crate::ops::Big::ParseParameters, 4),
        Activate(0, Implement),
        SubCall(0, 1, Read, 0),
        Grow(crate::ops::Big::ParseParameters, 1),
        SubCall(0, 1, Read, 0),
    ];
    crate::run::play_through_on(preload_test_support::sandbox::Wiring::Dispatch, &ops)
        .unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: the PreToolUse answer of the call that activates carried files while the owner had
/// no session yet; the activation took the seed's queue and stash but not its call records, so
/// a compaction that kept that call sent its files again. A session adopts the seed's call
/// records with the rest. Found by seed 20240601, once PreToolUse answers carried files.
#[test]
fn a_compaction_keeps_what_the_activating_calls_pretooluse_answer_carried() {
    let ops = vec![Call(0, Read, 0), Activate(0, Implement), Compact(0)];
    crate::run::play(&ops).unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: a file going out in parts through the stash was queued again (it changed), and the
/// next call's PreToolUse answer carried its last part while the parts before it still waited
/// in the stash; a compaction that kept that call held parts 4 and 2 of 4. A file with parts
/// waiting in the stash goes on there, in order. Found by seed 20240601 (`--dispatch`), once
/// PreToolUse answers carried files.
#[test]
fn a_file_with_parts_in_the_stash_is_not_carried_ahead_of_them() {
    let ops = vec![
        Activate(0, Implement),
        Phase(0, 0),
        Call(0, Read, 0),
        Grow(crate::ops::Big::Interrogate, 3),
        Activate(0, Implement),
        SkillCall(0, Implement),
        Compact(0),
    ];
    crate::run::play_through_on(preload_test_support::sandbox::Wiring::Dispatch, &ops)
        .unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: one call's PreToolUse answer carried part 3 of a file and stashed part 4; under
/// `--dispatch` PostToolUse had no room left for part 4, and another hook of that PostToolUse
/// sent part 5: a compaction that kept the call held parts 3 and 5 of 5. A part a PreToolUse
/// answer carries is followed by the next on the next call. Found by seed 20240601
/// (`--dispatch`), once PreToolUse answers carried files.
#[test]
fn a_part_the_pretooluse_answer_carries_is_not_followed_by_a_stashed_one() {
    let ops = vec![
        Grow(crate::ops::Big::ParseParameters, 4),
        Activate(0, Implement),
        Call(0, Read, 0),
        SkillCall(0, Implement),
        Compact(0),
    ];
    crate::run::play_through_on(preload_test_support::sandbox::Wiring::Dispatch, &ops)
        .unwrap_or_else(|r| panic!("{r}"));
}

/// The Codex CLI's compaction keeps no call (its summary replaces the whole history): what the
/// latest call's answers carried goes out again in the new window. Fails when the hooks count
/// the latest call as kept, as Claude Code's compaction does.
#[test]
fn a_codex_compaction_sends_what_the_latest_call_carried_again() {
    let ops = vec![Activate(0, Implement), Call(0, Read, 0), Compact(0)];
    for wiring in [
        preload_test_support::sandbox::Wiring::Binaries,
        preload_test_support::sandbox::Wiring::Dispatch,
    ] {
        crate::run::play_through_as(crate::world::Client::Codex, wiring, &ops)
            .unwrap_or_else(|r| panic!("{r}"));
    }
}

/// Finding: under `--dispatch`, the first part of a long command waited in the stash (the
/// answer's shared budget had no room for it) while the templates hook sent its second part and
/// called the file done; the call that then carried the first part could not be told to hold
/// it, and a compaction that kept that call sent the first part again. A file's later parts
/// now wait while an earlier part of it waits in the stash. Found by seed 1795882964037
/// (`--dispatch`).
#[test]
fn under_dispatch_a_compaction_keeps_the_first_part_a_kept_call_carried() {
    let ops = vec![
        Activate(0, Implement),
        Clear(0),
        Grow(crate::ops::Big::Interrogate, 1),
        Phase(0, 0),
        Grow(crate::ops::Big::AskRound, 1),
        Activate(0, Implement),
        Call(0, Read, 0),
        Compact(0),
    ];
    crate::run::play_through_on(preload_test_support::sandbox::Wiring::Dispatch, &ops)
        .unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: a compaction kept a call that carried the first part of a long command; the
/// window's progress came back without the number of parts its cut had, so when the file grew
/// the next call went on with part 2 of the new cut, and the window held parts of two cuts. A
/// kept call's record says its cut, and a changed cut starts the file again, marked updated.
/// Found by seed 1795882964037 (`--dispatch`) once the first finding was mended.
#[test]
fn under_dispatch_a_file_grown_after_a_compaction_kept_its_first_part_starts_again() {
    let ops = vec![
        Activate(0, Implement),
        Clear(0),
        Grow(crate::ops::Big::Interrogate, 1),
        Phase(0, 0),
        Grow(crate::ops::Big::AskRound, 1),
        Phase(0, 0),
        Call(0, Read, 0),
        Compact(0),
        Grow(crate::ops::Big::AskRound, 2),
        SkillCall(0, Implement),
    ];
    crate::run::play_through_on(preload_test_support::sandbox::Wiring::Dispatch, &ops)
        .unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: `engine session restart` removes `sessionId`, and without tmux the engine only
/// prints the line to restart with, so the conversation goes on in the same window. The next
/// write took the missing `sessionId` for a state of unknown window and let the part progress
/// go, so the long command's first part went out a second time. The hooks keep their own copy
/// of the window's conversation (`preloadConversation`), which the restart leaves. Found by
/// seed 1795887119024.
#[test]
fn a_window_that_outlives_its_restart_request_keeps_its_part_progress() {
    let ops = vec![
        Grow(crate::ops::Big::Interrogate, 2),
        Activate(0, Implement),
        Phase(0, 0),
        Restart(0),
        SkillCall(0, Implement),
    ];
    crate::run::play_through_on(preload_test_support::sandbox::Wiring::Binaries, &ops)
        .unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: the same, when the agent activates its session again after the restart request
/// (which clears `killRequested`): the core standards' parts went out again. Found by seed
/// 1795887300014 (`--dispatch`).
#[test]
fn under_dispatch_a_reactivation_after_a_restart_request_sends_no_part_again() {
    let ops = vec![
        Touch(5),
        Activate(0, Implement),
        Restart(0),
        Activate(0, Implement),
        SkillCall(0, Implement),
    ];
    crate::run::play_through_on(preload_test_support::sandbox::Wiring::Dispatch, &ops)
        .unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: `engine session dehydrate` in a window that then goes on and activates again. Found
/// by seed 1795887300105 (`--dispatch`).
#[test]
fn under_dispatch_a_dehydrated_window_that_goes_on_sends_no_part_again() {
    let ops = vec![
        Startup(0),
        Startup(0),
        Activate(0, Implement),
        Grow(crate::ops::Big::Interrogate, 8),
        Phase(0, 0),
        Clear(0),
        Dehydrate(0, 0),
        Activate(0, Implement),
    ];
    crate::run::play_through_on(preload_test_support::sandbox::Wiring::Dispatch, &ops)
        .unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: a conversation resumed after its session's restart request was not found by its
/// conversation (the restart removed `sessionId`), so the resumed window was sent the core
/// standards' parts it already held. Found by seed 1795887485030 (Codex).
#[test]
fn a_conversation_resumed_after_a_restart_request_goes_on() {
    let ops = vec![Activate(0, Implement), Touch(5), Restart(0), Resume(0, 0)];
    crate::run::play_through_as(
        crate::world::Client::Codex,
        preload_test_support::sandbox::Wiring::Binaries,
        &ops,
    )
    .unwrap_or_else(|r| panic!("{r}"));
}

/// The other finding of seed 1795887300115 (`--dispatch`): a restart request, then two new
/// client processes.
#[test]
fn under_dispatch_start_ups_after_a_restart_request_send_no_pack_twice() {
    let ops = vec![
        Call(0, Read, 0),
        Activate(0, Implement),
        Touch(4),
        Restart(0),
        SkillCall(0, Implement),
        Startup(0),
        Startup(0),
    ];
    crate::run::play_through_on(preload_test_support::sandbox::Wiring::Dispatch, &ops)
        .unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: `engine session idle` (the end of a skill) removes the owner's `pid` and keeps it as
/// `lastKnownPid`; activating the next skill took the idle session for another process's and
/// started a new window in it, so the first skill's files went out again. An idle session stays
/// the window of the owner that left it. Found by seed 1795889350009.
#[test]
fn the_next_skill_after_idle_goes_on_in_the_same_window() {
    let ops = vec![Activate(0, Implement), Idle(0), Activate(0, Do)];
    crate::run::play_through_on(preload_test_support::sandbox::Wiring::Binaries, &ops)
        .unwrap_or_else(|r| panic!("{r}"));
}

/// The same, for a skill the client loaded before the session existed. Found by seed
/// 1795889350033.
#[test]
fn a_skill_loaded_before_the_first_session_is_not_sent_again_after_idle() {
    let ops = vec![
        SlashSkill(0, Implement),
        Activate(0, Do),
        Idle(0),
        Activate(0, Implement),
    ];
    crate::run::play_through_on(preload_test_support::sandbox::Wiring::Binaries, &ops)
        .unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: the next skill after idle in another session: the window did not move there from
/// the idle session (its owner no longer in `pid`), so the new session's state started from the
/// core standards. Found by seed 1795889531118.
#[test]
fn the_next_session_after_idle_takes_the_window_with_it() {
    let ops = vec![
        Activate(0, Implement),
        Exit(0),
        Resume(1, 0),
        Idle(1),
        Activate(1, Implement),
    ];
    crate::run::play_through_on(preload_test_support::sandbox::Wiring::Binaries, &ops)
        .unwrap_or_else(|r| panic!("{r}"));
}

/// Where the model was wrong: the owner's record is the session it left idle (the hooks find it
/// by `lastKnownPid`), which holds what the claim stashed. Found by seed 1795889662036
/// (`--dispatch`).
#[test]
fn under_dispatch_what_is_stashed_in_an_idle_session_is_in_flight() {
    let ops = vec![
        Activate(0, Implement),
        Idle(0),
        Clear(0),
        SkillCall(0, Test),
    ];
    crate::run::play_through_on(preload_test_support::sandbox::Wiring::Dispatch, &ops)
        .unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: a process that found no session remembers that answer by a fingerprint of the
/// sessions directories and the PID cache; the engine's `idle` of the session it activated
/// since removes the PID cache and brings the fingerprint back, so the idle session was not
/// found, and the compaction's SessionStart left its old window's record in place (the files
/// the compaction dropped stayed recorded as in context). Holding a session now clears the
/// remembered answer. Found by seed 1795890088065.
#[test]
fn a_compaction_after_idle_starts_the_idle_sessions_window_again() {
    let ops = vec![
        Activate(0, Implement),
        Startup(0),
        Activate(0, Implement),
        Idle(0),
        Compact(0),
    ];
    crate::run::play_through_on(preload_test_support::sandbox::Wiring::Binaries, &ops)
        .unwrap_or_else(|r| panic!("{r}"));
}

/// Where the model was wrong: a conversation resumed in a new process takes over the idle
/// session that holds it (its `pid` now the new owner's, its lifecycle still idle), and the
/// hooks find that session by its `pid` whatever its lifecycle, with the stash it holds. Found
/// by seed 1795890328018 (`--dispatch`).
#[test]
fn under_dispatch_a_resumed_conversation_in_its_idle_session_is_judged_by_that_session() {
    let ops = vec![
        Activate(0, Test),
        Compact(0),
        Idle(0),
        Compact(0),
        Activate(0, Test),
        Startup(0),
        Resume(0, 2),
    ];
    crate::run::play_through_on(preload_test_support::sandbox::Wiring::Dispatch, &ops)
        .unwrap_or_else(|r| panic!("{r}"));
}

/// Where the model was wrong, the same way: the stash a resumed conversation's idle session
/// holds is in flight. Found by seed 1795890328154 (`--dispatch`).
#[test]
fn under_dispatch_the_stash_of_a_resumed_idle_session_is_in_flight() {
    let ops = vec![
        Activate(0, Implement),
        Idle(0),
        Call(0, Read, 0),
        Compact(0),
        Resume(0, 0),
        SkillCall(0, Implement),
    ];
    crate::run::play_through_on(preload_test_support::sandbox::Wiring::Dispatch, &ops)
        .unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: a `/clear` keeps the replaced window resumable, but wrote its record after the
/// skills the client holds were cleared for the new window; a `--resume` of the old
/// conversation then did not know the client held the skill, and after its compaction (when
/// the client puts the skill back) the next activation sent SKILL.md again. The record is now
/// written first. Found by seed 1795891230181 (`--dispatch`; the per-binary wiring too).
#[test]
fn a_conversation_resumed_after_clear_knows_the_skills_its_client_holds() {
    let ops = vec![
        SkillCall(0, Implement),
        Compact(0),
        Activate(0, Implement),
        Clear(0),
        Resume(0, 0),
        Compact(0),
        Activate(0, Implement),
    ];
    crate::run::play_through_on(preload_test_support::sandbox::Wiring::Binaries, &ops)
        .unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: a client killed while a restart of its session was under way runs no `SessionEnd`,
/// and a client already running took the session over with `engine session continue`: the
/// engine replaced the lists, and a later `--resume` of the old conversation got the standards
/// again. The guard engine now keeps the window just before the `continue`. Found once the
/// model resumed a conversation only after the second its starts ran in (the client drops a
/// resume text identical to one it holds, and the text names the time to the second).
#[test]
fn a_window_continued_after_its_client_was_killed_is_resumed_without_sending_it_again() {
    let ops = vec![
        Startup(1),
        Activate(0, Implement),
        SkillCall(0, Implement),
        Call(0, Read, 1),
        Restart(0),
        Crash(0),
        Continue(1),
        Call(1, Read, 2),
        Resume(0, 0),
        Call(0, Read, 3),
    ];
    crate::run::play_through_on(preload_test_support::sandbox::Wiring::Binaries, &ops)
        .unwrap_or_else(|r| panic!("{r}"));
}

/// Finding: a process that already held a session of its own ran `engine session continue` on
/// another, dehydrated one whose owner had gone. The engine replaces the taken session's lists
/// with the process's seed, but this process had none (its window lived in its own session),
/// so the taken session kept the ended window's lists, and the files this process held (its
/// skill's phase commands and templates, some delivered by the `continue` call's own
/// PreToolUse) went out again. The guard engine now writes the window as the process's seed
/// once the call's own deliveries are in it. Found by `make soak`.
#[test]
fn a_process_that_continues_another_session_keeps_its_own_window() {
    let ops = vec![
        Startup(0),
        Startup(1),
        Activate(1, Implement),
        Activate(0, Implement),
        Dehydrate(0, 0),
        Startup(0),
        Continue(1),
    ];
    crate::run::play_through(&ops).unwrap_or_else(|r| panic!("{r}"));
}
