//! One scenario: the client, a world with the product installed, the scripted model, the
//! scripted steps the engine's protocol asks for, and the checks every scenario makes on what
//! the model received.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::client::{self, Options, Run};
use crate::model::{ModelServer, Request, Script, Step, bash, tool};
use crate::received::{EXPANSION, Received};
use crate::support::{self, Paths, assert_clean, client_or_skip, dump, notice, request_summary};
use crate::world::{SESSION, World};

/// The prompt that starts `/implement` (the client expands the skill itself).
pub const IMPLEMENT_PROMPT: &str = "/implement add a total to the estimate";

/// `engine session phase sessions/<SESSION> "<label>"`.
pub fn phase(label: &str) -> Step {
    phase_of(SESSION, label)
}

/// The proof the scripted agent pipes to enter phase `label` of the bundled `/implement`: what
/// the phase before it asks for to be left (its `Proof required to leave this phase` list).
pub fn proof_to_enter(label: &str) -> Option<&'static str> {
    let proof = match label.split(": ").next()? {
        "1" => {
            r#"{"mode": "default", "sessionDir": "sessions/e2e", "parametersParsed": "add a total to the estimate", "contextIngested": "2: parser.ts, total.ts"}"#
        }
        "2" => {
            r#"{"depthChosen": "short (user)", "roundsCompleted": "1 round, 2 decisions", "questionsAsked": "2, on scope", "answersLogged": "hook", "interactionsLogged": "0, logged by the hooks"}"#
        }
        "3" => {
            r#"{"planWritten": "IMPLEMENTATION_PLAN.md", "itemsWalked": "declined by user", "userApproved": "go", "logEntries": "1 entry"}"#
        }
        "3.A" => r#"{"pathChosen": "inline (user)", "logEntries": "1 entry"}"#,
        "4" => {
            r#"{"planStepsCompleted": "1 of 1", "testsPass": "npm test: 3 passed", "logEntries": "2 entries", "requestFile": "none, built inline", "responseReviewed": "none, built inline"}"#
        }
        _ => return None,
    };
    Some(proof)
}

/// `engine session phase sessions/<session> "<label>"`, with the proof the phase being left
/// asks for piped in.
pub fn phase_of(session: &str, label: &str) -> Step {
    let command = format!("engine session phase sessions/{session} \"{label}\"");
    match proof_to_enter(label) {
        Some(proof) => bash(&format!("{command} <<'EOF'\n{proof}\nEOF")),
        None => bash(&command),
    }
}

/// `engine session activate sessions/<SESSION> implement`.
pub fn activate() -> Step {
    activate_of(SESSION)
}

/// `engine session activate sessions/<session> implement`.
pub fn activate_of(session: &str) -> Step {
    bash(&format!(
        "engine session activate sessions/{session} implement"
    ))
}

/// `engine log` of a progress line into the session's log (resets the heartbeat).
pub fn log(line: &str) -> Step {
    bash(&format!(
        "engine log sessions/{SESSION}/IMPLEMENTATION_LOG.md <<'EOF'\n## {line}\nEOF"
    ))
}

/// The model starts a sub-agent (the `Agent` tool, waited for) with `description`; its prompt
/// begins with `marker`, which names the sub-agent's conversation in the script.
pub fn agent(description: &str, marker: &str, task: &str) -> Step {
    tool(
        "Agent",
        json!({"description": description, "subagent_type": "general-purpose",
            "prompt": format!("{marker}: {task}"), "run_in_background": false}),
    )
}

/// A Read of a project file.
pub fn read(world: &World, rel: &str) -> Step {
    tool(
        "Read",
        json!({"file_path": world.sandbox.project.join(rel)}),
    )
}

/// A Write of a short plan into a new directory of the project's package
/// (`packages/estimate/notes/plan.md`).
pub fn write_plan(world: &World) -> Step {
    let notes = world
        .sandbox
        .project
        .join("packages/estimate/notes/plan.md");
    tool(
        "Write",
        json!({"file_path": notes, "content": "# Plan\n\nAdd a total.\n"}),
    )
}

/// An Edit of the package's `total.ts` (the sum's names).
pub fn edit_total(world: &World) -> Step {
    let total = world.sandbox.project.join("packages/estimate/src/total.ts");
    tool(
        "Edit",
        json!({"file_path": total, "old_string": "xs.reduce((a, b) => a + b, 0)",
            "new_string": "xs.reduce((sum, x) => sum + x, 0)"}),
    )
}

/// A scenario's client, world and server, set up (product installed) or skipped.
pub struct Scenario {
    /// Its name (also the directory of its saved requests).
    pub name: &'static str,
    /// The client executable.
    pub claude: PathBuf,
    /// The world.
    pub world: World,
    /// The scripted model.
    pub server: ModelServer,
}

impl Scenario {
    /// Sets up `name` in `world` with the product installed by `preload install`; `None`
    /// (printed) when the client cannot run and `PRELOAD_E2E` does not require it. A failing
    /// install fails the scenario.
    pub fn new(name: &'static str, world: World) -> Option<Self> {
        let claude = client_or_skip(name)?;
        let mut world = world;
        world.install_product();
        notice(&format!("{name}: product installed by {}", world.wiring));
        Some(Self {
            name,
            claude,
            world,
            server: ModelServer::start(Script::default()),
        })
    }

    /// One client run of `script` with `prompt`; must exit 0.
    pub fn run(&self, script: Script, prompt: &str) -> Run {
        self.run_with(script, prompt, &Options::default())
    }

    /// One client run with `options`; must exit 0.
    pub fn run_with(&self, script: Script, prompt: &str, options: &Options) -> Run {
        self.server.set_script(script);
        let run = client::run(&self.claude, &self.world, &self.server, prompt, options);
        self.check_run(&run, &self.server);
        run
    }

    /// Saves the requests of `server` when `run` failed, then fails with the client's output.
    pub fn check_run(&self, run: &Run, server: &ModelServer) {
        if run.code != Some(0) {
            dump(self.name, &server.requests(), &self.world);
        }
        run.assert_ok();
    }

    /// Every request so far, saved for inspection; returns them with the saved file.
    pub fn requests(&self) -> (Vec<Request>, PathBuf) {
        let requests = self.server.requests();
        let saved = dump(self.name, &requests, &self.world);
        notice(&format!("{}: {}", self.name, request_summary(&requests)));
        (requests, saved)
    }

    /// Paths as the hooks write them.
    pub fn paths(&self) -> Paths<'_> {
        Paths::new(&self.world)
    }

    /// The world's delivery log.
    pub fn log(&self) -> &Path {
        &self.world.sandbox.log
    }

    /// The checks every context gets ([`support::assert_context`]).
    pub fn assert_context(&self, what: &str, got: &Received, files: &[String], saved: &Path) {
        let skill_dir = self.paths().skill_dir();
        support::assert_context(self.name, what, got, files, &skill_dir, Vec::new(), saved);
    }

    /// The skill's SKILL.md reached this context exactly once, counting the client's own
    /// expansions (at the prompt, a `Skill` call, after a compaction) with the hooks' blocks.
    pub fn assert_skill_once(&self, what: &str, got: &Received, saved: &Path) {
        let skill_dir = self.paths().skill_dir();
        let mut problems = got.check_skill_at_most_once(&skill_dir);
        if got.skill_arrivals(&skill_dir).is_empty() {
            problems.push(format!("{skill_dir}/SKILL.md never reached the model"));
        }
        assert_clean(
            self.name,
            &format!("{what}: the skill's protocol exactly once"),
            &problems,
            got,
            saved,
        );
    }

    /// The skill in `dir` reached `got` exactly once, as the client's expansion of the `Skill`
    /// call at message `called`.
    pub fn assert_skill_expanded_once(
        &self,
        what: &str,
        got: &Received,
        dir: &str,
        called: usize,
        saved: &Path,
    ) {
        let arrivals = got.skill_arrivals(dir);
        let expanded_after_call = got
            .text_position(&format!("{EXPANSION}{dir}\n"))
            .is_some_and(|at| at > called);
        let mut problems = got.check_skill_at_most_once(dir);
        if arrivals.len() != 1 || !expanded_after_call {
            problems.push(format!(
                "/test's SKILL.md once, the client's expansion of the Skill call: {arrivals:?}"
            ));
        }
        assert_clean(self.name, what, &problems, got, saved);
    }

    /// The checks of a run through phase 1 of `/implement` in the main conversation `got`: the
    /// standards, phase 1's commands and the core directives, with whatever else the hooks
    /// logged, each once; phase 1's commands within their phase.
    pub fn assert_through_phase_one(&self, got: &Received, saved: &Path) {
        self.assert_phase_one_context(got, self.paths().core_directives(), saved);
    }

    /// The checks of the main conversation `got` of `/implement` in phase 1: the standards and
    /// phase 1's commands, with whatever else the hooks logged, each once; the skill's protocol
    /// once; phase 1's commands within their phase.
    pub fn assert_main_in_phase_one(&self, got: &Received, saved: &Path) {
        self.assert_phase_one_context(got, Vec::new(), saved);
        self.assert_skill_once("main", got, saved);
    }

    /// The standards, phase 1's commands and `also`, with whatever else the hooks logged, each
    /// once in the main conversation `got`; phase 1's commands within their phase.
    fn assert_phase_one_context(&self, got: &Received, also: Vec<String>, saved: &Path) {
        let p = self.paths();
        let phase1 = p.phase_one();
        let mut expected = p.core_standards();
        expected.extend(phase1.clone());
        expected.extend(also);
        let logged = support::delivered_to_main(self.log(), 0, usize::MAX);
        self.assert_context("main", got, &support::union(&expected, &logged), saved);
        self.assert_phase_files("main", got, "1: Interrogation", &phase1, saved);
    }

    /// The context after the client compacted, `after`, holds `expected`, what the client kept
    /// across the compaction (`kept`) and what the hooks logged from the compaction on
    /// (`split`), each once.
    pub fn assert_after_compaction(
        &self,
        after: &Received,
        expected: &[String],
        kept: &[String],
        split: usize,
        saved: &Path,
    ) {
        let logged_after = support::delivered_to_main(self.log(), split, usize::MAX);
        self.assert_context(
            "after compaction",
            after,
            &support::union(&support::union(expected, kept), &logged_after),
            saved,
        );
    }

    /// `files` arrived whole after the transition to `label` (`engine session phase … "label"`)
    /// and within [`PHASE_CALLS`] ordinary tool calls of it.
    pub fn assert_phase_files(
        &self,
        what: &str,
        got: &Received,
        label: &str,
        files: &[String],
        saved: &Path,
    ) {
        let needle = format!("\"{label}\"");
        let entered = got
            .bash_call(&needle)
            .unwrap_or_else(|| panic!("{}: {what}: no transition to {label}", self.name));
        assert_within_phase_calls(
            self.name,
            &format!("{what}: phase {label}'s commands"),
            got,
            files,
            (entered, entered),
            &format!("within {PHASE_CALLS} ordinary tool calls of entering {label}"),
            saved,
        );
    }
}

/// How many ordinary tool calls after entering a phase its commands may take to reach the model.
pub const PHASE_CALLS: usize = 2;

/// `files` arrived whole in `got` after message `from` and within [`PHASE_CALLS`] ordinary tool
/// calls of message `start` (`when` says so in a problem); a problem fails scenario `name`'s
/// check `what`.
pub fn assert_within_phase_calls(
    name: &str,
    what: &str,
    got: &Received,
    files: &[String],
    (from, start): (usize, usize),
    when: &str,
    saved: &Path,
) {
    let by = got.after_ordinary_calls(start, PHASE_CALLS);
    let problems = got.check_arrives_within(files, from, by, when);
    assert_clean(name, what, &problems, got, saved);
}
