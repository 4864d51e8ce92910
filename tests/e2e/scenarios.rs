//! The scenarios: the product's hooks in the real client, judged by what the model received.
//!
//! Each scenario prints its context cost, and skips with a printed reason when the client is
//! not installed or a product part it needs is not built yet.

use std::path::PathBuf;

use serde_json::json;

use crate::client::{self, Run};
use crate::model::{ModelServer, Request, Script, Step, bash, heavy, tool};
use crate::received::Received;
use crate::support::{
    PIPELINE, Part, Paths, assert_clean, client_or_skip, dump, notice, product_or_skip,
    report_cost, request_summary,
};
use crate::world::{SESSION, World};

/// The prompt that starts `/implement` (the client expands the skill itself).
const IMPLEMENT_PROMPT: &str = "/implement add a total to the estimate";

fn phase(label: &str) -> Step {
    bash(&format!(
        "engine session phase sessions/{SESSION} \"{label}\""
    ))
}

fn log(line: &str) -> Step {
    bash(&format!("engine session log sessions/{SESSION} '{line}'"))
}

fn activate() -> Step {
    bash(&format!(
        "engine session activate sessions/{SESSION} implement"
    ))
}

fn read(world: &World, rel: &str) -> Step {
    tool(
        "Read",
        json!({"file_path": world.sandbox.project.join(rel)}),
    )
}

/// The scripted `/implement` run. Engine commands (`engine session …`) pass the PreToolUse
/// hook untouched, and activation keeps directive discovery off until the first phase
/// transition (as the engine does), so every phase has an ordinary tool call after its
/// transition, and the directives are first touched in phase 1 (a Read: core names) and in the
/// build loop (a Write into a new directory: the skill's `TESTING.md` and `PITFALLS.md`).
fn implement_lifecycle(world: &World) -> Vec<Step> {
    let total = world.sandbox.project.join("packages/estimate/src/total.ts");
    let notes = world
        .sandbox
        .project
        .join("packages/estimate/notes/plan.md");
    vec![
        activate(),
        read(world, "packages/estimate/src/parser.ts"),
        phase("1: Interrogation"),
        bash("ls packages/estimate"),
        read(world, "packages/estimate/src/total.ts"),
        phase("2: Planning"),
        bash("ls packages/estimate/src"),
        phase("3: Execution"),
        bash("ls packages/estimate/tests"),
        phase("3.A: Build Loop"),
        tool(
            "Write",
            json!({"file_path": notes, "content": "# Plan\n\nAdd a total.\n"}),
        ),
        tool(
            "Edit",
            json!({"file_path": total, "old_string": "xs.reduce((a, b) => a + b, 0)",
                "new_string": "xs.reduce((sum, x) => sum + x, 0)"}),
        ),
        log("total edited"),
    ]
}

/// A scenario's client, world and server, set up or skipped.
struct Scenario {
    name: &'static str,
    claude: PathBuf,
    world: World,
    server: ModelServer,
}

impl Scenario {
    /// Sets up `name` with the product's hooks installed, or `None` (printed) when it must skip.
    fn new(name: &'static str, needs: &[Part], world: World) -> Option<Self> {
        let claude = client_or_skip(name)?;
        product_or_skip(name, needs)?;
        let mut world = world;
        world.install_product_hooks();
        notice(&format!("{name}: hooks wired by {}", world.wiring));
        Some(Self {
            name,
            claude,
            world,
            server: ModelServer::start(Script::default()),
        })
    }

    /// One client run of `script` with `prompt` (resuming `resume`); must exit 0.
    fn run(&self, script: Script, prompt: &str, resume: Option<&str>) -> Run {
        self.server.set_script(script);
        let run = client::run(&self.claude, &self.world, &self.server, prompt, resume);
        if run.code != Some(0) {
            dump(self.name, &self.server.requests(), &self.world);
        }
        run.assert_ok();
        run
    }

    /// Every request so far, saved for inspection; returns them with the saved file.
    fn requests(&self) -> (Vec<Request>, PathBuf) {
        let requests = self.server.requests();
        let saved = dump(self.name, &requests, &self.world);
        notice(&format!("{}: {}", self.name, request_summary(&requests)));
        (requests, saved)
    }

    fn paths(&self) -> Paths<'_> {
        Paths::new(&self.world)
    }
}

#[test]
fn session_start_context_reaches_the_model_once() {
    let needs = [Part::Hook("preload-session-start")];
    let Some(s) = Scenario::new("session_start_once", &needs, World::new()) else {
        return;
    };
    s.run(Script::main(vec![bash("echo hello")]), "Say hello.", None);
    let (requests, saved) = s.requests();
    let got = Received::last_of(&requests, "main").expect("the main conversation");
    let p = s.paths();
    let mut expected = p.core_standards();
    expected.push(p.project("docs/TOC.md"));
    assert_clean(
        s.name,
        "each standard once",
        &got.check_each_once(&expected),
        &got,
        &saved,
    );
    let first_call = got.bash_call("echo hello").expect("the scripted call");
    let early = got.check_arrives_within(&expected, 0, first_call, "before the first tool call");
    assert_clean(s.name, "standards at start-up", &early, &got, &saved);
    assert_clean(
        s.name,
        "real newlines",
        &got.check_no_literal_newlines(),
        &got,
        &saved,
    );
    assert!(
        got.hook_contexts()
            .iter()
            .any(|c| c.label == "SessionStart"),
        "SessionStart spoke"
    );
    report_cost(s.name, "main", &got);
}

#[test]
fn implement_lifecycle_delivers_each_file_once_at_its_phase() {
    let Some(s) = Scenario::new("implement_lifecycle", PIPELINE, World::new()) else {
        return;
    };
    let run = s.run(
        Script::main(implement_lifecycle(&s.world)),
        IMPLEMENT_PROMPT,
        None,
    );
    let (requests, saved) = s.requests();
    let got = Received::last_of(&requests, "main").expect("the main conversation");
    let p = s.paths();

    let mut at_start = p.core_standards();
    at_start.push(p.project("docs/TOC.md"));
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
    let mut phase1 = p.cmds(&["CMD_INTERROGATE", "CMD_ASK_ROUND", "CMD_LOG_INTERACTION"]);
    phase1.extend(p.core_directives());
    let phase2 = p.cmds(&["CMD_GENERATE_PLAN", "CMD_APPEND_LOG"]);
    let phase3 = p.cmds(&["CMD_SELECT_EXECUTION_PATH"]);
    // CMD_SELECT_EXECUTION_PATH refers to it, so it may come with phase 3 or at 3.A.
    let mut phase3a = p.cmds(&["CMD_HANDOFF_TO_AGENT"]);
    phase3a.extend(p.skill_directives());

    let expected: Vec<String> = [&at_start, &phase0, &phase1, &phase2, &phase3, &phase3a]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    assert_clean(
        s.name,
        "each file exactly once",
        &got.check_each_once(&expected),
        &got,
        &saved,
    );

    let call = |needle: &str| {
        got.bash_call(needle)
            .unwrap_or_else(|| panic!("no call {needle}"))
    };
    let (activate, p1, p2, p3, p3a) = (
        call("session activate"),
        call("\"1: Interrogation\""),
        call("\"2: Planning\""),
        call("\"3: Execution\""),
        call("\"3.A: Build Loop\""),
    );
    let end = got.messages.len();
    let mut timing = got.check_arrives_within(&at_start, 0, activate, "at session start");
    timing.extend(got.check_arrives_within(&phase0, activate, p1, "in phase 0"));
    timing.extend(got.check_arrives_within(&phase1, p1, p2, "in phase 1"));
    timing.extend(got.check_arrives_within(&phase2, p2, p3, "in phase 2"));
    timing.extend(got.check_arrives_within(&phase3, p3, p3a, "in phase 3"));
    timing.extend(got.check_arrives_within(&phase3a[..1], p3, end, "by phase 3.A"));
    timing.extend(got.check_arrives_within(&phase3a[1..], p3a, end, "in phase 3.A"));
    assert_clean(s.name, "each file at its phase", &timing, &got, &saved);

    let expansion = got
        .text_position("Base directory for this skill: ")
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
    assert_clean(
        s.name,
        "real newlines",
        &got.check_no_literal_newlines(),
        &got,
        &saved,
    );

    let state = s.world.session_state().expect("the session was activated");
    assert_eq!(
        state["pid"],
        json!(run.pid),
        "the owner PID is the client's (CLAUDE_PID)"
    );
    s.world.sandbox.assert_no_duplicates();
    report_cost(s.name, "main", &got);
}

/// Activates `/implement` and reaches phase 1 in a first run; returns the session id.
fn first_run_to_phase_one(s: &Scenario) -> String {
    let steps = vec![
        activate(),
        phase("1: Interrogation"),
        bash("ls packages/estimate"),
    ];
    let run = s.run(Script::main(steps), IMPLEMENT_PROMPT, None);
    run.session_id().expect("the client reports its session id")
}

#[test]
fn resume_does_not_resend_what_the_conversation_holds() {
    let Some(s) = Scenario::new("resume", PIPELINE, World::new()) else {
        return;
    };
    let id = first_run_to_phase_one(&s);
    let steps = vec![
        read(&s.world, "packages/estimate/src/parser.ts"),
        bash("ls packages"),
    ];
    s.run(Script::main(steps), "Carry on.", Some(&id));
    let (requests, saved) = s.requests();
    let got = Received::last_of(&requests, "main").expect("the resumed conversation");
    let p = s.paths();
    let mut expected = p.core_standards();
    expected.extend(p.cmds(&["CMD_REPORT_INTENT", "CMD_INTERROGATE", "CMD_ASK_ROUND"]));
    expected.extend(p.core_directives());
    let starts = got
        .hook_contexts()
        .iter()
        .filter(|c| c.label == "SessionStart")
        .count();
    assert!(
        starts >= 1,
        "the resumed conversation holds the start-up context"
    );
    assert_clean(
        s.name,
        "each file once across the resume",
        &got.check_each_once(&expected),
        &got,
        &saved,
    );
    assert_clean(
        s.name,
        "real newlines",
        &got.check_no_literal_newlines(),
        &got,
        &saved,
    );
    report_cost(s.name, "main", &got);
}

/// The client compacts in the middle of a run when the model reports a nearly full context
/// window: SessionStart (`source: compact`) must re-seed the new context once, with the skill's
/// current phase, and the files discovered after compaction must arrive once.
#[test]
fn compaction_reseeds_the_new_context_once() {
    let Some(s) = Scenario::new("compaction", PIPELINE, World::new()) else {
        return;
    };
    let steps = vec![
        activate(),
        phase("1: Interrogation"),
        bash("ls packages/estimate"),
        heavy(bash("ls packages")),
        read(&s.world, "packages/estimate/src/parser.ts"),
        bash("ls packages/estimate/src"),
    ];
    s.run(Script::main(steps), IMPLEMENT_PROMPT, None);
    let (requests, saved) = s.requests();
    let p = s.paths();

    let before = Received::compacted(&requests).expect("the client compacted the conversation");
    let mut before_expected = p.core_standards();
    before_expected.extend(p.cmds(&["CMD_INTERROGATE", "CMD_ASK_ROUND"]));
    assert_clean(
        s.name,
        "before compaction",
        &before.check_each_once(&before_expected),
        &before,
        &saved,
    );

    let after = Received::last_of(&requests, "main").expect("the conversation after compaction");
    assert!(
        after
            .text_position("continued from a previous conversation")
            .is_some(),
        "the last conversation is the compacted one"
    );
    let mut expected = p.core_standards();
    expected.push(p.skill("SKILL.md"));
    expected.extend(p.cmds(&["CMD_INTERROGATE", "CMD_ASK_ROUND", "CMD_LOG_INTERACTION"]));
    expected.extend(p.core_directives());
    assert_clean(
        s.name,
        "after compaction",
        &after.check_each_once(&expected),
        &after,
        &saved,
    );
    assert_clean(
        s.name,
        "real newlines",
        &after.check_no_literal_newlines(),
        &after,
        &saved,
    );
    report_cost(s.name, "before compaction", &before);
    report_cost(s.name, "after compaction", &after);
}

/// A sub-agent moves the session to phase 2 and makes an ordinary tool call: the phase's
/// commands are claimed on a call that carries the sub-agent's `agent_id`, so they must reach the
/// sub-agent's conversation once and never the main one.
#[test]
fn subagent_calls_get_their_blocks_in_their_own_conversation() {
    const MARKER: &str = "SUBAGENT-E2E";
    let Some(s) = Scenario::new("subagent", PIPELINE, World::new()) else {
        return;
    };
    let main = vec![
        activate(),
        phase("1: Interrogation"),
        tool(
            "Agent",
            json!({"description": "Plan the estimate change", "subagent_type": "general-purpose",
                "prompt": format!("{MARKER}: move to planning and survey the package."),
                "run_in_background": false}),
        ),
    ];
    let sub = vec![phase("2: Planning"), bash("ls packages/estimate")];
    s.run(
        Script::main(main).agent("sub", MARKER, sub),
        IMPLEMENT_PROMPT,
        None,
    );
    let (requests, saved) = s.requests();
    let p = s.paths();
    let sub_got = Received::last_of(&requests, "sub").expect("the sub-agent's conversation");
    let main_got = Received::last_of(&requests, "main").expect("the main conversation");
    let planning = p.cmds(&["CMD_GENERATE_PLAN", "CMD_APPEND_LOG"]);
    assert_clean(
        s.name,
        "sub-agent",
        &sub_got.check_each_once(&planning),
        &sub_got,
        &saved,
    );
    let mut main_expected = p.core_standards();
    main_expected.extend(p.cmds(&["CMD_INTERROGATE", "CMD_ASK_ROUND"]));
    assert_clean(
        s.name,
        "main",
        &main_got.check_each_once(&main_expected),
        &main_got,
        &saved,
    );
    let leaked: Vec<String> = planning
        .iter()
        .filter(|f| main_got.count(f) > 0)
        .map(|f| format!("claimed for the sub-agent, delivered to the main conversation: {f}"))
        .collect();
    assert_clean(s.name, "main", &leaked, &main_got, &saved);
    assert_clean(
        s.name,
        "real newlines",
        &sub_got.check_no_literal_newlines(),
        &sub_got,
        &saved,
    );
    report_cost(s.name, "main", &main_got);
    report_cost(s.name, "sub-agent", &sub_got);
}

#[test]
fn a_project_without_engine_sessions_stays_silent() {
    let Some(s) = Scenario::new("no_engine", PIPELINE, World::without_engine_sessions()) else {
        return;
    };
    let steps = vec![
        read(&s.world, "packages/estimate/src/parser.ts"),
        bash("echo hello"),
    ];
    s.run(Script::main(steps), IMPLEMENT_PROMPT, None);
    let (requests, saved) = s.requests();
    for request in &requests {
        let Some(body) = &request.body else { continue };
        let got = Received::from_body(body);
        let spoke: Vec<String> = got
            .hook_contexts()
            .iter()
            .map(|c| format!("{}: {}", c.label, c.text))
            .collect();
        assert_clean(s.name, "no hook may speak", &spoke, &got, &saved);
    }
    assert!(
        !s.world.sandbox.sessions.exists(),
        "no sessions/ directory was created"
    );
    notice(&format!("context cost {}: 0 chars", s.name));
}

/// Claude Code runs the read-only tool calls of one response at the same time, and their
/// PreToolUse and PostToolUse hooks with them: four hooks claim the phase's queue and discover
/// the same directories at once, and every file must still reach the model exactly once.
#[test]
fn parallel_tool_calls_deliver_each_file_once() {
    let Some(s) = Scenario::new("parallel", PIPELINE, World::new()) else {
        return;
    };
    let file = |rel: &str| json!({"file_path": s.world.sandbox.project.join(rel)});
    let together = Step::Tools(vec![
        ("Read".into(), file("packages/estimate/src/parser.ts")),
        ("Read".into(), file("packages/estimate/src/total.ts")),
        (
            "Read".into(),
            file("packages/estimate/tests/parser.test.ts"),
        ),
        (
            "Grep".into(),
            json!({"pattern": "parse", "path": s.world.sandbox.project.join("packages/estimate")}),
        ),
    ]);
    let steps = vec![activate(), phase("1: Interrogation"), together, bash("ls")];
    s.run(Script::main(steps), IMPLEMENT_PROMPT, None);
    let (requests, saved) = s.requests();
    let got = Received::last_of(&requests, "main").expect("the main conversation");
    let p = s.paths();
    let mut expected = p.core_standards();
    expected.extend(p.cmds(&["CMD_INTERROGATE", "CMD_ASK_ROUND", "CMD_LOG_INTERACTION"]));
    expected.extend(p.core_directives());
    assert_clean(
        s.name,
        "each file once across parallel calls",
        &got.check_each_once(&expected),
        &got,
        &saved,
    );
    report_cost(s.name, "main", &got);
}
