//! The lifecycle scenarios: the product as `preload install` leaves it, in the real client,
//! judged by what the model received. Every context is checked against the hooks' own delivery
//! log: each file they delivered reached the model exactly once.

use std::path::PathBuf;

use serde_json::json;

use crate::client::Options;
use crate::model::{Request, Script, Step, bash, heavy, tool};
use crate::received::{EXPANSION, Received};
use crate::scenario::{
    IMPLEMENT_PROMPT, PHASE_CALLS, Scenario, activate, edit_total, log, phase, read, write_plan,
};
use crate::support::{
    Paths, assert_clean, compaction_point, delivered_to_main, delivered_to_sub, notice,
    resume_point, union,
};
use crate::world::World;

mod calls;

/// What the auto-answer hook tells the model for [`ask_depth`] (strategy `first`).
const AUTO_ANSWER: &str = "[E2E Auto-Answer] User selections (auto, strategy first):\n1. How deep \
                           should the interrogation go?\n   -> Short";
/// The synthesis rule's text (`guards.json`, `synthesis-commands`).
const SYNTHESIS: &str = "[warn: synthesis] §CMD_RUN_SYNTHESIS_PIPELINE";

/// An `AskUserQuestion` call with one question of two options.
fn ask_depth() -> Step {
    tool(
        "AskUserQuestion",
        json!({"questions": [{"question": "How deep should the interrogation go?",
            "header": "Depth", "multiSelect": false,
            "options": [{"label": "Short", "description": "one round"},
                        {"label": "Long", "description": "three rounds"}]}]}),
    )
}

/// The scripted `/implement` run, phases 0 to 4. Engine commands (`engine session …`,
/// `engine log …`) pass the guard untouched, and activation keeps discovery and the heartbeat
/// off until the first phase transition (as the engine does). Every phase has an ordinary tool
/// call right after its transition (phase 0 too: the example's phase 0 is more than one output
/// holds, and what is left goes out on the next call), and the agent logs before the
/// heartbeat's third call. The directives are first touched in phase 1 (a Read: core names and
/// the skill's declared ones) and in the build loop (a Write into a new directory, which also
/// brings the package's checklist).
fn implement_lifecycle(world: &World) -> Vec<Step> {
    vec![
        activate(),
        bash("ls packages/estimate"),
        phase("1: Interrogation"),
        ask_depth(),
        read(world, "packages/estimate/src/total.ts"),
        log("interrogation: short"),
        phase("2: Planning"),
        bash("ls packages/estimate/src"),
        phase("3: Execution"),
        bash("ls packages/estimate/tests"),
        log("plan written"),
        phase("3.A: Build Loop"),
        write_plan(world),
        edit_total(world),
        log("total edited"),
        phase("4: Synthesis"),
        bash("ls packages/estimate"),
    ]
}

/// The calls that open the stages of [`implement_lifecycle`].
const START: &str = "session activate";
const P1: &str = "\"1: Interrogation\"";
const P2: &str = "\"2: Planning\"";
const P3: &str = "\"3: Execution\"";
const P3A: &str = "\"3.A: Build Loop\"";
const P4: &str = "\"4: Synthesis\"";

/// When a stage's files must be complete in the conversation.
#[derive(Debug, Clone, Copy)]
enum By {
    /// Before the call containing this text.
    Call(&'static str),
    /// Within [`PHASE_CALLS`] ordinary tool calls after the call containing this text (a phase
    /// transition).
    PhaseCalls(&'static str),
}

/// Files [`implement_lifecycle`] brings: when, not begun before the call containing `from`
/// (`None`: the start), complete [`By`] when.
struct Stage {
    when: &'static str,
    from: Option<&'static str>,
    by: By,
    files: Vec<String>,
}

fn stage(when: &'static str, from: Option<&'static str>, by: By, files: Vec<String>) -> Stage {
    Stage {
        when,
        from,
        by,
        files,
    }
}

/// The stages of [`implement_lifecycle`], from the example skill's JSON block: each phase's
/// `steps` and `commands` not already in context, its templates at phase 0.
fn lifecycle_files(p: &Paths) -> Vec<Stage> {
    let mut at_start = p.core_standards();
    at_start.push(p.project("docs/TOC.md"));
    // CMD_PARSE_PARAMETERS, a phase 0 step, is a core standard.
    let mut phase0 = p.cmds(&[
        "CMD_REPORT_INTENT",
        "CMD_SELECT_MODE",
        "CMD_INGEST_CONTEXT_BEFORE_WORK",
    ]);
    phase0.extend(
        ["LOG", "DEBRIEF", "PLAN"]
            .iter()
            .map(|t| p.skill(&format!("assets/TEMPLATE_IMPLEMENTATION_{t}.md"))),
    );
    vec![
        stage("at session start", None, By::Call(START), at_start),
        stage("in phase 0", Some(START), By::PhaseCalls(START), phase0),
        stage("in phase 1", Some(P1), By::PhaseCalls(P1), p.phase_one()),
        // Found by phase 1's Read; they go out after the phase's commands.
        stage(
            "in phase 1 (directives)",
            Some(P1),
            By::Call(P2),
            p.core_directives(),
        ),
        stage(
            "in phase 2",
            Some(P2),
            By::PhaseCalls(P2),
            p.cmds(&[
                "CMD_GENERATE_PLAN",
                "CMD_WALK_THROUGH_RESULTS",
                "CMD_APPEND_LOG",
            ]),
        ),
        stage(
            "in phase 3",
            Some(P3),
            By::PhaseCalls(P3),
            p.cmds(&["CMD_SELECT_EXECUTION_PATH"]),
        ),
        // Phase 3.A's commands; CMD_SELECT_EXECUTION_PATH refers to CMD_HANDOFF_TO_AGENT, so
        // it may come in phase 3 already.
        stage(
            "in phase 3 or 3.A",
            Some(P3),
            By::PhaseCalls(P3A),
            p.cmds(&["CMD_HANDOFF_TO_AGENT", "CMD_RUN_TESTS"]),
        ),
        // The directives the skill declares: a Read in phase 1 finds them (seed case 4.1).
        stage("by phase 3.A", Some(P1), By::Call(P4), p.skill_directives()),
        // The package's checklist waits for an edit: the build loop's Write.
        stage(
            "in phase 3.A",
            Some(P3A),
            By::Call(P4),
            vec![p.project("packages/estimate/.directives/CHECKLIST.md")],
        ),
        stage(
            "in phase 4",
            Some(P4),
            By::PhaseCalls(P4),
            p.cmds(&[
                "CMD_RUN_SYNTHESIS_PIPELINE",
                "CMD_GENERATE_DEBRIEF",
                "CMD_CLOSE_SESSION",
            ]),
        ),
    ]
}

#[test]
fn session_start_context_reaches_the_model_once() {
    let Some(s) = Scenario::new("session_start_once", World::new()) else {
        return;
    };
    // Before any session, the gate lets the agent read the project's settings.
    let settings = s.world.settings_path();
    s.run(
        Script::main(vec![tool("Read", json!({"file_path": settings}))]),
        "Say hello.",
    );
    let (requests, saved) = s.requests();
    let got = Received::last_of(&requests, "main").expect("the main conversation");
    assert!(
        got.errors().is_empty(),
        "the Read passed: {:?}",
        got.errors()
    );
    let p = s.paths();
    let mut expected = p.core_standards();
    expected.push(p.project("docs/TOC.md"));
    let logged = delivered_to_main(s.log(), 0, usize::MAX);
    s.assert_context("main", &got, &union(&expected, &logged), &saved);
    let first_call = got
        .messages
        .iter()
        .position(|m| !m.tool_uses.is_empty())
        .expect("the scripted call");
    let early = got.check_arrives_within(&expected, 0, first_call, "before the first tool call");
    assert_clean(s.name, "standards at start-up", &early, &got, &saved);
}

/// (a) The whole `/implement` lifecycle, phases 0 to 4, with `AskUserQuestion` answered by
/// `preload-e2e-auto-answer` in phase 1.
#[test]
fn implement_lifecycle_delivers_each_file_once_at_its_phase() {
    let Some(s) = Scenario::new("implement_lifecycle", World::new()) else {
        return;
    };
    check_implement_lifecycle(&s);
}

/// Runs [`implement_lifecycle`] in `s` (its product installed either way: settings or plugin)
/// and makes every check of the lifecycle scenario: each file once and at its phase, SKILL.md
/// once, the filtered directive absent, `AskUserQuestion` answered once, the synthesis rule
/// once, the session owned by the client and in phase 4, no duplicate in the delivery log.
pub fn check_implement_lifecycle(s: &Scenario) {
    let options = Options {
        auto_answer: true,
        ..Options::default()
    };
    let run = s.run_with(
        Script::main(implement_lifecycle(&s.world)),
        IMPLEMENT_PROMPT,
        &options,
    );
    let (requests, saved) = s.requests();
    let got = Received::last_of(&requests, "main").expect("the main conversation");
    let p = s.paths();

    let stages = lifecycle_files(&p);
    let expected: Vec<String> = stages.iter().flat_map(|s| s.files.clone()).collect();
    let logged = delivered_to_main(s.log(), 0, usize::MAX);
    s.assert_context("main", &got, &union(&expected, &logged), &saved);
    s.assert_skill_once("main", &got, &saved);

    // Each stage's files arrive whole after the call that opens it, a phase's commands within
    // two ordinary tool calls of entering the phase.
    let call = |needle: &str| {
        got.bash_call(needle)
            .unwrap_or_else(|| panic!("no call {needle}"))
    };
    let mut timing = Vec::new();
    for stage in &stages {
        let from = stage.from.map_or(0, call);
        let by = match stage.by {
            By::Call(needle) => call(needle),
            By::PhaseCalls(needle) => got.after_ordinary_calls(call(needle), PHASE_CALLS),
        };
        timing.extend(got.check_arrives_within(&stage.files, from, by, stage.when));
    }
    assert_clean(s.name, "each file at its phase", &timing, &got, &saved);

    let expansion = got
        .text_position(EXPANSION)
        .expect("the client expanded /implement");
    let resent = got.check_absent_after("skills/implement/SKILL.md", expansion);
    assert_clean(
        s.name,
        "SKILL.md after the client's expansion",
        &resent,
        &got,
        &saved,
    );
    let filtered = p.project("packages/estimate/.directives/CONTRIBUTING.md");
    assert_eq!(
        got.count(&filtered),
        0,
        "CONTRIBUTING.md is not a directive /implement declares"
    );

    let answered: Vec<usize> = got
        .errors()
        .iter()
        .filter(|(_, e)| e.contains(AUTO_ANSWER))
        .map(|(i, _)| *i)
        .collect();
    assert_eq!(
        answered.len(),
        1,
        "AskUserQuestion answered once by the auto-answer hook: {:?}",
        got.errors()
    );
    assert_eq!(
        got.count_text(SYNTHESIS),
        1,
        "the synthesis rule speaks once, in phase 4"
    );

    s.world
        .assert_session_owner(run.pid, "the owner PID is the client's (CLAUDE_PID)");
    let state = s.world.session_state().expect("the session was activated");
    assert_eq!(state["currentPhase"], "4: Synthesis");
    s.world.sandbox.assert_no_duplicates();
}

/// The checks of a resumed conversation: it holds the first run (`first_call` is a call of
/// it) and the second (its prompt `prompt`); every file the hooks delivered in either run is
/// in it exactly once; and what the hooks delivered after the resume (from SessionStart
/// `resume` on) arrived after the resume's prompt. The client drops a resume's SessionStart
/// context whose text is already in the conversation (see
/// `harness::the_client_keeps_every_session_start_context_of_a_resume`), so a file the hooks
/// send again on resume may be in the conversation once while the hooks think they sent it
/// twice: the second check catches that.
fn assert_resumed(
    s: &Scenario,
    got: &Received,
    first_call: &str,
    prompt: &str,
    expected: &[String],
    saved: &std::path::Path,
) {
    let resumed_at = got.text_position(prompt);
    assert!(
        resumed_at.is_some() && got.bash_call(first_call).is_some(),
        "the last conversation is the resumed one, holding the first run"
    );
    let logged = delivered_to_main(s.log(), 0, usize::MAX);
    s.assert_context("resumed", got, &union(expected, &logged), saved);
    let resume = resume_point(s.log()).expect("SessionStart ran for the resume");
    let after_resume = delivered_to_main(s.log(), resume, usize::MAX);
    notice(&format!(
        "{}: delivered after the resume: {after_resume:?}",
        s.name
    ));
    let late = got.check_arrives_within(
        &after_resume,
        resumed_at.unwrap_or_default(),
        got.messages.len(),
        "after the resume's prompt",
    );
    assert_clean(
        s.name,
        "what the hooks delivered after the resume reached the model after it",
        &late,
        got,
        saved,
    );
}

/// (f) A resumed session (`--resume`): the resumed conversation replays the first run, and every
/// file the hooks delivered in either run is in it exactly once.
#[test]
fn resume_does_not_resend_what_the_conversation_holds() {
    let Some(s) = Scenario::new("resume", World::new()) else {
        return;
    };
    let first = vec![
        activate(),
        phase("1: Interrogation"),
        bash("ls packages/estimate"),
    ];
    let run = s.run(Script::main(first), IMPLEMENT_PROMPT);
    let id = run.session_id().expect("the client reports its session id");
    let second = vec![
        read(&s.world, "packages/estimate/src/parser.ts"),
        bash("ls packages"),
    ];
    resume_into_phase_one(&s, id, second, &[]);
}

/// A resume of conversation `id` with `second` ("Carry on."): the resumed conversation holds
/// the standards, `also`, phase 1's commands and the core directives, each once, and what the
/// hooks delivered after the resume after its prompt ([`assert_resumed`]); the skill's protocol
/// once, phase 1's commands within their phase; the resuming client owns the session. The
/// resumed conversation, with the file its requests are saved in.
fn resume_into_phase_one(
    s: &Scenario,
    id: String,
    second: Vec<Step>,
    also: &[String],
) -> (Received, PathBuf) {
    let options = Options::resuming(id);
    let resumed = s.run_with(Script::main(second), "Carry on.", &options);
    let (requests, saved) = s.requests();
    let got = Received::last_of(&requests, "main").expect("the resumed conversation");
    let p = s.paths();
    let phase1 = p.phase_one();
    let mut expected = p.core_standards();
    expected.extend(also.iter().cloned());
    expected.extend(phase1.clone());
    expected.extend(p.core_directives());
    assert_resumed(s, &got, "session activate", "Carry on.", &expected, &saved);
    s.assert_skill_once("resumed", &got, &saved);
    s.assert_phase_files("resumed", &got, "1: Interrogation", &phase1, &saved);
    s.world
        .assert_session_owner(resumed.pid, "the resuming client owns the session");
    (got, saved)
}

/// A conversation resumed before it activated a session: the first client's SessionEnd turned
/// its seed into the conversation's record, and the resuming client goes on from it (the
/// standards are in the replayed conversation), then activates `/implement` and works through
/// phase 1. Every file once, the standards not sent again.
#[test]
fn resume_before_activation_goes_on_from_the_seed() {
    let Some(s) = Scenario::new("resume_seed", World::new()) else {
        return;
    };
    let settings = s.world.settings_path();
    let run = s.run(
        Script::main(vec![tool("Read", json!({"file_path": settings}))]),
        "Say hello.",
    );
    let id = run.session_id().expect("the client reports its session id");
    // The first client has ended: its SessionEnd took the seed out and kept what a resume of the
    // conversation goes on from.
    let seeds = s.world.sandbox.sessions.join(".seeds");
    assert!(
        !seeds.join(format!("{}.json", run.pid)).exists(),
        "SessionEnd removed the ended client's seed"
    );
    assert!(
        seeds.join(format!("{}.{id}.ended.json", run.pid)).is_file(),
        "SessionEnd kept the conversation's record"
    );
    goes_on_from_the_seed(&s, id);
}

/// The same when the first client's `SessionEnd` never ran (a client killed by the engine's
/// watchdog, or its terminal closed, runs none; here the first run is made without the
/// registration): its seed stays, the next client's start-up retires it as `SessionEnd` would
/// have, and a resume of the first conversation goes on from it.
#[test]
fn resume_after_a_client_without_session_end_goes_on_from_the_seed() {
    let Some(s) = Scenario::new("resume_unended", World::new()) else {
        return;
    };
    let settings = s.world.settings_path();
    let wired = std::fs::read_to_string(&settings).expect("the installed settings");
    let mut unended: serde_json::Value = serde_json::from_str(&wired).expect("settings JSON");
    let removed = unended["hooks"]
        .as_object_mut()
        .and_then(|hooks| hooks.remove("SessionEnd"));
    assert!(removed.is_some(), "install wired SessionEnd: {wired}");
    std::fs::write(&settings, unended.to_string()).expect("write settings");
    let run = s.run(
        Script::main(vec![tool("Read", json!({"file_path": settings}))]),
        "Say hello.",
    );
    std::fs::write(&settings, &wired).expect("write settings");
    let id = run.session_id().expect("the client reports its session id");
    let seeds = s.world.sandbox.sessions.join(".seeds");
    let (seed, record) = (
        seeds.join(format!("{}.json", run.pid)),
        seeds.join(format!("{}.{id}.ended.json", run.pid)),
    );
    assert!(
        seed.is_file() && !record.exists(),
        "no SessionEnd: the seed stays"
    );
    // Another client starts in the project and ends.
    s.run(Script::main(Vec::new()), "Say hello.");
    assert!(
        !seed.exists() && record.is_file(),
        "the next start-up retired the dead client's seed into the conversation's record"
    );
    goes_on_from_the_seed(&s, id);
}

/// A resume of conversation `id`, whose client ended before it activated a session: it goes
/// on from the seed's record (the standards are in the replayed conversation), then activates
/// `/implement` and works through phase 1. Every file once, the standards not sent again.
fn goes_on_from_the_seed(s: &Scenario, id: String) {
    let second = vec![
        activate(),
        bash("ls packages/estimate"),
        phase("1: Interrogation"),
        read(&s.world, "packages/estimate/src/parser.ts"),
        bash("ls packages"),
    ];
    let toc = s.paths().project("docs/TOC.md");
    let (got, saved) = resume_into_phase_one(s, id, second, std::slice::from_ref(&toc));
    let mut at_start = s.paths().core_standards();
    at_start.push(toc);
    let first_call = got
        .messages
        .iter()
        .position(|m| !m.tool_uses.is_empty())
        .expect("the first run's call");
    assert_clean(
        s.name,
        "the standards in the first run",
        &got.check_arrives_within(&at_start, 0, first_call, "before the first tool call"),
        &got,
        &saved,
    );
}

/// A worker's dispatch file, named in `~/.claude/worker-dispatch-path`; its path.
fn worker_dispatch(world: &World) -> String {
    let dispatch = world
        .sandbox
        .project_file(
            "docs/dispatches/estimate-total.md",
            "# Dispatch: add a total to the estimate\n\nStatus: active\n\n## Progress\n\n- parser read\n",
        )
        .to_string_lossy()
        .into_owned();
    std::fs::write(
        world.sandbox.home.join(".claude/worker-dispatch-path"),
        format!("{dispatch}\n"),
    )
    .expect("worker-dispatch-path");
    dispatch
}

/// Besides the example's start-up pack, a skill's (`implementing`) and a phase's (`asking`).
fn add_skill_and_phase_packs(world: &World) {
    let packs = world.sandbox.project.join(".claude/context-packs.json");
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&packs).expect("the example's packs"))
            .expect("packs JSON");
    config["packs"].as_array_mut().expect("packs").extend([
        json!({"name": "implementing", "on": "skill:implement",
            "files": [{"path": "docs/DECISIONS.md", "strategy": "index"}]}),
        json!({"name": "asking", "on": "phase:1", "files": [{"path": "docs/TASKS.md"}]}),
    ]);
    std::fs::write(&packs, config.to_string()).expect("packs written");
}

/// Arrivals of the skill in `skill_dir` that are not the client's own (a hook's block).
pub fn not_by_the_client(got: &Received, skill_dir: &str) -> Vec<String> {
    got.skill_arrivals(skill_dir)
        .into_iter()
        .filter(|how| !how.starts_with("the client's expansion"))
        .collect()
}

/// (b) The client compacts in the middle of a worker's `/implement` run. SessionStart
/// (`compact`) re-seeds the new context once, the compaction re-read puts the worker's dispatch
/// file in it once (so the next tool call is not blocked), and the agent's re-read of a file it
/// read before compaction brings nothing twice.
#[test]
fn compaction_reseeds_the_new_context_once_and_rereads_the_dispatch() {
    let world = World::new();
    let dispatch = worker_dispatch(&world);
    // Besides the example's start-up pack, a skill's and a phase's: all three come again
    // after the compaction, once.
    add_skill_and_phase_packs(&world);
    let Some(s) = Scenario::new("compaction", world) else {
        return;
    };
    let steps = vec![
        activate(),
        phase("1: Interrogation"),
        read(&s.world, "packages/estimate/src/parser.ts"),
        heavy(bash("ls packages")),
        bash("ls packages/estimate/src"),
        read(&s.world, "packages/estimate/src/parser.ts"),
        bash("ls packages/estimate"),
    ];
    s.run(Script::main(steps), IMPLEMENT_PROMPT);
    let (requests, saved) = s.requests();
    let p = s.paths();
    let split = compaction_point(s.log()).expect("SessionStart ran for the compaction");

    let phase1 = p.phase_one();
    // The client summarises the conversation up to the exchange in flight and keeps that
    // exchange (the heavy step's call, its result and what the hooks added to it) after the
    // summary: what the hooks delivered on that call is in the new context, not the old one.
    let (after, kept) = after_compaction(&s, &requests, "the call in flight");
    let logged_before = delivered_to_main(s.log(), 0, split);
    let strays: Vec<String> = kept
        .iter()
        .filter(|f| !logged_before.contains(f))
        .map(|f| format!("kept across the compaction but never logged before it: {f}"))
        .collect();
    assert_clean(s.name, "the kept exchange", &strays, &after, &saved);

    let before = Received::compacted(&requests).expect("the client compacted the conversation");
    let packs: Vec<String> = ["project-basics", "implementing", "asking"]
        .iter()
        .map(|name| p.pack(name))
        .collect();
    let mut before_expected = p.core_standards();
    before_expected.extend(phase1.clone());
    before_expected.extend(packs.clone());
    let before_files: Vec<String> = union(&before_expected, &logged_before)
        .into_iter()
        .filter(|f| !kept.contains(f))
        .collect();
    s.assert_context("before compaction", &before, &before_files, &saved);
    s.assert_skill_once("before compaction", &before, &saved);
    s.assert_phase_files(
        "before compaction",
        &before,
        "1: Interrogation",
        &phase1,
        &saved,
    );

    // The skill's protocol must be there once: the client re-injects the skills invoked before
    // the compaction itself, so SessionStart must not send it again.
    s.assert_skill_once("after compaction", &after, &saved);
    assert_clean(
        s.name,
        "after compaction: the skill is the client's own re-injection",
        &not_by_the_client(&after, &p.skill_dir()),
        &after,
        &saved,
    );
    let mut expected = p.core_standards();
    expected.extend(phase1.clone());
    expected.extend(packs);
    expected.push(dispatch.clone());
    assert_eq!(
        after.count_text("[Compaction re-read]"),
        1,
        "the compaction re-read speaks once"
    );
    let blocked: Vec<String> = after
        .errors()
        .iter()
        .map(|(i, e)| format!("m{i}: {e}"))
        .collect();
    assert_clean(
        s.name,
        "no call is blocked after compaction (the re-read came with SessionStart)",
        &blocked,
        &after,
        &saved,
    );
    s.assert_after_compaction(&after, &expected, &kept, split, &saved);
}

/// The last conversation, which must be the compacted one (it goes on from the client's
/// summary), and what the client kept across the compaction with `in_flight`.
fn after_compaction(
    s: &Scenario,
    requests: &[Request],
    in_flight: &str,
) -> (Received, Vec<String>) {
    let after = Received::last_of(requests, "main").expect("the conversation after compaction");
    assert!(
        after
            .text_position("continued from a previous conversation")
            .is_some(),
        "the last conversation is the compacted one"
    );
    let kept = after.kept_across_compaction();
    notice(&format!(
        "{}: kept across the compaction with {in_flight}: {kept:?}",
        s.name
    ));
    (after, kept)
}

/// The client compacts right after a response of two parallel reads (their results are
/// heavy): it keeps every call of that response with what the hooks added to each, so the files
/// either carried are in the new context: neither SessionStart nor a later read beside them may
/// send them again.
#[test]
fn a_compaction_after_parallel_calls_keeps_what_every_call_carried() {
    // Directives of their own beside each read, so that more than one call carries files
    // whichever hook claims the project's own first.
    let world = World::new();
    let docs = world.sandbox.project.join("docs/.directives");
    std::fs::create_dir_all(&docs).expect("docs/.directives");
    std::fs::write(
        docs.join("INVARIANTS.md"),
        "# Docs invariants\n\nEvery document links back to TOC.md.\n",
    )
    .expect("a directive for docs/");
    let Some(s) = Scenario::new("parallel-compaction", world) else {
        return;
    };
    let file = |rel: &str| json!({"file_path": s.world.sandbox.project.join(rel)});
    let together = heavy(Step::Tools(vec![
        ("Read".into(), file("packages/estimate/src/parser.ts")),
        ("Read".into(), file("docs/GLOSSARY.md")),
    ]));
    // After it, a read beside each: a directive the kept calls carried is in the new context.
    let steps = vec![
        activate(),
        phase("1: Interrogation"),
        together,
        read(&s.world, "docs/TOC.md"),
        read(&s.world, "packages/estimate/src/total.ts"),
    ];
    s.run(Script::main(steps), IMPLEMENT_PROMPT);
    let (requests, saved) = s.requests();
    let p = s.paths();
    let split = compaction_point(s.log()).expect("SessionStart ran for the compaction");
    let (after, kept) = after_compaction(&s, &requests, "the calls in flight");
    // Each of these only the read beside it discovers: both kept means both calls were.
    for own in [
        "docs/.directives/INVARIANTS.md",
        "packages/estimate/.directives/INVARIANTS.md",
    ] {
        let path = s.world.sandbox.project.join(own).display().to_string();
        assert!(
            kept.contains(&path),
            "{}: {own}, carried by its own call, is kept across the compaction: {kept:?}",
            s.name
        );
    }
    let mut expected = p.core_standards();
    expected.extend(p.phase_one());
    s.assert_after_compaction(&after, &expected, &kept, split, &saved);
}

#[test]
fn a_project_without_engine_sessions_stays_silent() {
    let Some(s) = Scenario::new("no_engine", World::without_engine_sessions()) else {
        return;
    };
    let steps = vec![
        read(&s.world, "packages/estimate/src/parser.ts"),
        bash("echo hello"),
    ];
    s.run(Script::main(steps), IMPLEMENT_PROMPT);
    let (requests, saved) = s.requests();
    let turns = requests.iter().filter(|r| r.body.is_some()).count();
    assert!(turns >= 3, "the scripted calls ran: {turns} requests");
    for request in &requests {
        let Some(body) = &request.body else { continue };
        let got = Received::from_body(body);
        let spoke: Vec<String> = got
            .hook_contexts()
            .iter()
            .map(|c| format!("{}: {}", c.label, c.text))
            .chain(got.errors().iter().map(|(i, e)| format!("m{i}: {e}")))
            .collect();
        assert_clean(s.name, "no hook may speak", &spoke, &got, &saved);
    }
    assert!(
        !s.world.sandbox.sessions.exists(),
        "no sessions/ directory was created"
    );
    notice(&format!("context cost {}: 0 chars", s.name));
}
