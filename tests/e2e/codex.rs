//! The Codex CLI scenarios: the product installed by `preload install --agent codex` (the
//! project's `.codex/hooks.json`), the real `codex exec` against a scripted Responses API model
//! on loopback, judged by what the model received, with the checks of the Claude Code
//! scenarios: every file the hooks delivered into a context window reached it exactly once.
//! See `docs/e2e.md`.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::client::Run;
use crate::codex_client::{self, Mode, codex_or_skip};
use crate::codex_model::{
    CodexModel, FINAL_TEXT, SUMMARY, Script, Step, compacted, heavy, last_turn, patch, shell,
    shell_of,
};
use crate::model::Request;
use crate::received::Received;
use crate::scenario::{PHASE_CALLS, activate, assert_within_phase_calls, log, phase};
use crate::support::{
    self, Paths, assert_clean, compaction_point, delivered_to_main, deliveries, dump, notice,
    request_summary, resume_point, union,
};
use crate::world::{SESSION_START_CHUNKS, World, succeeded};
use preload_core::HookEvent;
use preload_test_support::sandbox::{Wiring, bin, repo};

mod resume;
mod trust;

/// The prompt of a run that works on the estimate (Codex expands no `/skill`: the scripted
/// agent activates the session itself, as the engine's protocol asks).
const PROMPT: &str = "Add a total to the estimate.";
/// The prompt of a resumed run.
const CARRY_ON: &str = "Carry on.";
/// What the session gate says when it denies a call before any session.
const GATE: &str = "§CMD_REQUIRE_ACTIVE_SESSION";
/// A Codex scenario: the client, a world with the product installed for Codex, the scripted
/// model and the client's private `CODEX_HOME`.
pub struct CodexScenario {
    /// Its name (also the directory of its saved requests).
    pub name: &'static str,
    /// The client executable (the native `codex`).
    pub codex: PathBuf,
    /// The world.
    pub world: World,
    /// The scripted model.
    pub model: CodexModel,
    /// The client's `CODEX_HOME`.
    pub codex_home: PathBuf,
    /// How the hooks come to run: trusted by install, or `--dangerously-bypass-hook-trust`.
    pub trust: Trust,
}

/// How a scenario's hooks come to run in the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// `preload install --agent codex` without `--trust`; every run passes
    /// `--dangerously-bypass-hook-trust` (the harness trusts the project).
    Bypass,
    /// `preload install --agent codex --trust-project`: the hooks and the project trusted in
    /// `config.toml` by install, the runs without the bypass.
    Installed,
    /// `preload install --agent codex` without `--trust`, the runs without the bypass (the
    /// harness trusts the project): Codex skips every hook.
    None,
}

impl CodexScenario {
    /// Sets up `name` in `world` with the product installed by `preload install --agent
    /// codex`; `None` (printed) when the client cannot run and `PRELOAD_E2E` does not require
    /// it. A failing install fails the scenario.
    pub fn new(name: &'static str, world: World) -> Option<Self> {
        Self::with_trust(name, world, Trust::Bypass)
    }

    /// [`Self::new`] in a world with a directive beside `docs/GLOSSARY.md` (the example has
    /// none there), and that directive's path as the hooks name it.
    pub fn with_docs_directive(name: &'static str) -> Option<(Self, String)> {
        let world = World::new();
        let docs_directive = docs_directive(&world);
        Self::new(name, world).map(|s| (s, docs_directive))
    }

    /// [`Self::new`], the hooks coming to run as `trust` says.
    pub fn with_trust(name: &'static str, world: World, trust: Trust) -> Option<Self> {
        Self::wired_as(name, world, trust, |world, home| {
            install(world, home, trust);
        })
    }

    /// Sets up `name` in `world` with `hooks` (a `hooks.json` document) as the project's
    /// `.codex/hooks.json` instead of the product: for the harness's own checks.
    pub fn with_hooks(name: &'static str, world: World, hooks: &Value) -> Option<Self> {
        Self::wired(name, world, |world, _| {
            let dir = world.sandbox.project.join(".codex");
            fs::create_dir_all(&dir).expect(".codex/");
            fs::write(dir.join("hooks.json"), hooks.to_string()).expect("hooks.json");
            world.wiring = "stand-in hooks written by the e2e harness".into();
        })
    }

    fn wired(
        name: &'static str,
        world: World,
        wire: impl FnOnce(&mut World, &Path),
    ) -> Option<Self> {
        Self::wired_as(name, world, Trust::Bypass, wire)
    }

    fn wired_as(
        name: &'static str,
        world: World,
        trust: Trust,
        wire: impl FnOnce(&mut World, &Path),
    ) -> Option<Self> {
        let codex = codex_or_skip(name)?;
        let mut world = world;
        let model = CodexModel::start();
        let codex_home = codex_client::codex_home_with(&world, &model, trust != Trust::Installed);
        wire(&mut world, &codex_home);
        notice(&format!("{name}: hooks wired by {}", world.wiring));
        Some(Self {
            name,
            codex,
            world,
            model,
            codex_home,
            trust,
        })
    }

    /// One client run of `steps` with `prompt`; must exit 0.
    pub fn run_any(&self, steps: Vec<Step>, prompt: &str, mode: Mode) -> Run {
        self.model.set_script(Script::new(steps));
        let what = format!("{mode:?}");
        let bypass = self.trust == Trust::Bypass;
        let run = codex_client::run(
            &self.codex,
            &self.world,
            &self.codex_home,
            prompt,
            mode,
            bypass,
        );
        notice(&format!(
            "{}: codex run {what} took {:.1} s",
            self.name,
            run.elapsed.as_secs_f64()
        ));
        if run.code != Some(0) {
            self.save(&self.model.requests());
        }
        run.assert_ok();
        run
    }

    /// [`Self::run_any`], and the client must have taken every hook's answer (a PreToolUse
    /// answer that allows with a decision and no `updatedInput` is one it rejects, dropping
    /// its context: `codex_rejects_an_allow_without_updated_input`).
    pub fn run(&self, steps: Vec<Step>, prompt: &str, mode: Mode) -> Run {
        let run = self.run_any(steps, prompt, mode);
        let failed = codex_client::failed_hooks(&run);
        assert!(
            failed.is_empty(),
            "{}: the client rejected hook answers: {failed:?}\nstderr: {}",
            self.name,
            run.stderr
        );
        run
    }

    /// Every request so far, saved for inspection; returns them with the saved file.
    pub fn requests(&self) -> (Vec<Request>, PathBuf) {
        let requests = self.model.requests();
        let saved = self.save(&requests);
        notice(&format!("{}: {}", self.name, request_summary(&requests)));
        (requests, saved)
    }

    /// Saves the requests, the delivery log and the state (`support::dump`), with the wiring,
    /// the client's output and its rollout files; returns the requests file.
    fn save(&self, requests: &[Request]) -> PathBuf {
        let saved = dump(self.name, requests, &self.world);
        let dir = saved
            .parent()
            .expect("the scenario's directory")
            .to_path_buf();
        let _ = fs::copy(self.hooks_file(), dir.join("hooks.json"));
        let _ = fs::copy(self.codex_home.join("config.toml"), dir.join("config.toml"));
        for entry in fs::read_dir(self.world.sandbox.root())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("codex-") && entry.path().is_file() {
                let _ = fs::copy(entry.path(), dir.join(&name));
            }
        }
        copy_files(&self.codex_home.join("sessions"), &dir.join("rollouts"));
        saved
    }

    /// The project's `.codex/hooks.json`.
    pub fn hooks_file(&self) -> PathBuf {
        self.world.sandbox.project.join(".codex/hooks.json")
    }

    /// Paths as the hooks write them.
    pub fn paths(&self) -> Paths<'_> {
        Paths::new(&self.world)
    }

    /// The world's delivery log.
    pub fn log(&self) -> &Path {
        &self.world.sandbox.log
    }

    /// Run `steps` (an activation of `/implement`, then phase 1 among shell calls) and check
    /// what the activation scenarios share: the model got the standards, phase 0's and phase
    /// 1's files, each once (and whatever else the log says was delivered), phase 0's with the
    /// activation's calls and phase 1's with its transition's, and the session is owned by the
    /// codex process in phase 1. The last turn and where the requests were saved.
    pub fn assert_activation(&self, steps: Vec<Step>) -> (Received, PathBuf) {
        let run = self.run(steps, PROMPT, Mode::New);
        let (requests, saved) = self.requests();
        let got = last_turn(&requests).expect("the conversation");
        let p = self.paths();
        let mut expected = at_start(&p);
        expected.extend(phase0(&p));
        expected.extend(p.phase_one());
        let logged = delivered_to_main(self.log(), 0, usize::MAX);
        self.assert_context("main", &got, &union(&expected, &logged), &saved);
        self.assert_within_calls("phase 0", &got, "session activate", &phase0(&p), &saved);
        self.assert_within_calls(
            "phase 1",
            &got,
            "\"1: Interrogation\"",
            &p.phase_one(),
            &saved,
        );
        self.assert_owner(&run, "1: Interrogation");
        (got, saved)
    }

    /// Check [`Self::assert_context`] of a conversation that read a file under
    /// `packages/estimate/src` in phase 1 and patched one under `docs/`: the standards, phase
    /// 1's files, the project's and the package's directives and `docs_directive`, each once
    /// (and whatever else the log says was delivered).
    #[track_caller]
    pub fn assert_discovered(
        &self,
        what: &str,
        got: &Received,
        docs_directive: &str,
        saved: &Path,
    ) {
        let p = self.paths();
        let mut expected = at_start(&p);
        expected.extend(p.phase_one());
        expected.extend(p.core_directives());
        expected.push(docs_directive.to_owned());
        let logged = delivered_to_main(self.log(), 0, usize::MAX);
        self.assert_context(what, got, &union(&expected, &logged), saved);
    }

    /// The checks every context gets ([`support::assert_context`]), after at least one hook
    /// context reached the model, and nothing came with a denied call.
    pub fn assert_context(&self, what: &str, got: &Received, files: &[String], saved: &Path) {
        assert!(
            !got.hook_contexts().is_empty(),
            "{}: {what}: no hook context reached the model",
            self.name
        );
        let denied = (
            "nothing with a denied call",
            got.check_nothing_with_denied_calls(),
        );
        let skill_dir = self.paths().skill_dir();
        support::assert_context(self.name, what, got, files, &skill_dir, vec![denied], saved);
    }

    /// `files` arrived whole after the shell call containing `needle` and within
    /// [`PHASE_CALLS`] ordinary tool calls of it.
    pub fn assert_within_calls(
        &self,
        what: &str,
        got: &Received,
        needle: &str,
        files: &[String],
        saved: &Path,
    ) {
        let from = got
            .bash_call(needle)
            .unwrap_or_else(|| panic!("{}: {what}: no call {needle}", self.name));
        let when = format!("within {PHASE_CALLS} ordinary tool calls of {needle}");
        let what = format!("{what}: {when}");
        assert_within_phase_calls(self.name, &what, got, files, (from, from), &when, saved);
    }

    /// The client applied [`glossary_patch`], and `directive` arrived whole with it or within
    /// [`PHASE_CALLS`] ordinary tool calls of it.
    pub fn assert_patch_brings(&self, got: &Received, directive: &str, saved: &Path) {
        assert!(
            fs::read_to_string(self.world.sandbox.project.join("docs/GLOSSARY.md"))
                .expect("the glossary")
                .contains(PATCHED),
            "{}: the client applied the patch",
            self.name
        );
        let patched = got
            .messages
            .iter()
            .position(|m| m.tool_uses.iter().any(|(name, _)| name == "apply_patch"))
            .expect("the patch");
        let by = got.after_ordinary_calls(patched, PHASE_CALLS);
        let when = format!("with the patch or within {PHASE_CALLS} ordinary tool calls of it");
        assert_clean(
            self.name,
            "the patch's directive",
            &got.check_arrives_within(&[directive.to_owned()], patched, by, &when),
            got,
            saved,
        );
    }

    /// The session was activated and its owner is the `codex` process of `run`: the hooks'
    /// parent, the same for every event of a run.
    pub fn assert_owner(&self, run: &Run, phase: &str) {
        let state = self
            .world
            .session_state()
            .expect("the session was activated");
        assert_eq!(
            state["pid"],
            json!(run.pid),
            "{}: the owner PID is the codex process's",
            self.name
        );
        assert_eq!(state["currentPhase"], phase, "{}", self.name);
    }
}

/// `preload install --agent codex` in the world's project, with the world's `HOME` and the
/// client's `CODEX_HOME`, as a user installs it (`--dispatch` under `PRELOAD_WIRING=dispatch`).
/// Fails with install's output when it fails, and checks what it wrote: every command of the
/// project's `.codex/hooks.json` (a file install wrote anew) starts with `PRELOAD_AGENT=codex`
/// and runs a binary from the prefix, every event is wired, SessionStart has its
/// `--chunk I/N` registrations, and `guards.json` is the shipped default.
fn install(world: &mut World, codex_home: &Path, trust: Trust) {
    let dispatch = world.sandbox.wiring == Wiring::Dispatch;
    let trusting = trust == Trust::Installed;
    let mut install = world.user_command(bin("preload"));
    install
        .args(["install", "--agent", "codex"])
        .args(dispatch.then_some("--dispatch"))
        .args(trusting.then_some("--trust-project"))
        .env("CODEX_HOME", codex_home);
    let out = succeeded(install, "preload install --agent codex");
    let stdout = String::from_utf8_lossy(&out.stdout);
    if trusting {
        assert!(
            stdout.contains(" hooks trusted in ") && stdout.contains("trusted\n"),
            "install says it trusted the hooks and the project: {stdout}"
        );
    } else {
        assert!(
            stdout.contains("--trust") && stdout.contains("--dangerously-bypass-hook-trust"),
            "install says how Codex comes to run the hooks: {stdout}"
        );
    }
    let file = world.sandbox.project.join(".codex/hooks.json");
    let doc: Value = serde_json::from_str(&fs::read_to_string(&file).expect("install wrote it"))
        .expect("hooks.json is JSON");
    let prefix = format!("{}/preload", world.prefix().display());
    let mut problems = Vec::new();
    let mut chunks = 0;
    // `preload install --agent codex` wires every event the hooks serve.
    for event in HookEvent::ALL.map(HookEvent::name) {
        let commands: Vec<&str> = doc["hooks"][event]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|g| g["hooks"].as_array().into_iter().flatten())
            .filter_map(|h| h["command"].as_str())
            .collect();
        if commands.is_empty() {
            problems.push(format!("{event} is not wired"));
        }
        for command in &commands {
            if !command.starts_with("PRELOAD_AGENT=codex ") || !command.contains(&prefix) {
                problems.push(format!("{event}: {command}"));
            }
        }
        if event == "SessionStart" {
            chunks = commands.iter().filter(|c| c.contains(" --chunk ")).count();
        }
    }
    if chunks != SESSION_START_CHUNKS {
        problems.push(format!(
            "{chunks} SessionStart --chunk registrations, not {SESSION_START_CHUNKS}"
        ));
    }
    assert!(
        problems.is_empty(),
        "`preload install --agent codex` wrote: {problems:?}\n{doc:#}"
    );
    let guards = fs::read_to_string(world.sandbox.home.join(".claude/engine/guards.json"))
        .expect("install wrote guards.json");
    assert_eq!(
        guards,
        fs::read_to_string(repo().join("hooks/guards.json")).expect("hooks/guards.json"),
        "install writes the shipped default rules"
    );
    world.wiring = format!(
        "`preload install --agent codex{}{}` (the project's .codex/hooks.json, binaries in {})",
        if dispatch { " --dispatch" } else { "" },
        if trusting { " --trust-project" } else { "" },
        world.prefix().display()
    );
}

/// Copies the files of a tree (the client's rollouts), flattened into `to`.
fn copy_files(from: &Path, to: &Path) {
    let Ok(entries) = fs::read_dir(from) else {
        return;
    };
    let _ = fs::create_dir_all(to);
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            copy_files(&path, to);
        } else if let Some(name) = path.file_name() {
            let _ = fs::copy(&path, to.join(name));
        }
    }
}

/// The engine's protocol steps as the scripted agent runs them in Codex's shell.
fn activate_step() -> Step {
    shell_of(&activate())
}

fn phase_step(label: &str) -> Step {
    shell_of(&phase(label))
}

fn log_step(line: &str) -> Step {
    shell_of(&log(line))
}

/// A line of the example's `docs/GLOSSARY.md`, and what [`glossary_patch`] appends to it.
const GLOSSARY_LINE: &str =
    "*   **Total**: the sum of quantity times unit price over the line items, in cents.";
const PATCHED: &str = " Computed, never stored.";

/// An `apply_patch` of `docs/GLOSSARY.md` (a path relative to the project, as the model
/// writes it).
fn glossary_patch() -> Step {
    patch(&format!(
        "*** Begin Patch\n*** Update File: docs/GLOSSARY.md\n@@\n-{GLOSSARY_LINE}\n\
         +{GLOSSARY_LINE}{PATCHED}\n*** End Patch\n"
    ))
}

/// A directive beside `docs/GLOSSARY.md` (the example has none there): its path as the hooks
/// name it.
fn docs_directive(world: &World) -> String {
    let docs = world.sandbox.project.join("docs/.directives");
    fs::create_dir_all(&docs).expect("docs/.directives");
    fs::write(
        docs.join("INVARIANTS.md"),
        "# Docs invariants\n\nEvery document links back to TOC.md.\n",
    )
    .expect("a directive for docs/");
    docs.join("INVARIANTS.md").to_string_lossy().into_owned()
}

/// What SessionStart seeds every context window with: the core standards, the project's
/// table of contents and its start-up pack.
fn at_start(p: &Paths) -> Vec<String> {
    let mut files = p.core_standards();
    files.push(p.project("docs/TOC.md"));
    files.push(p.pack("project-basics"));
    files
}

/// Phase 0 of the example's `/implement`: its commands and, with Codex (no `Skill` call), the
/// skill's protocol and templates with the activation.
fn phase0(p: &Paths) -> Vec<String> {
    let mut files = p.cmds(&[
        "CMD_REPORT_INTENT",
        "CMD_SELECT_MODE",
        "CMD_INGEST_CONTEXT_BEFORE_WORK",
    ]);
    files.push(p.skill("SKILL.md"));
    files.extend(
        ["LOG", "DEBRIEF", "PLAN"]
            .iter()
            .map(|t| p.skill(&format!("assets/TEMPLATE_IMPLEMENTATION_{t}.md"))),
    );
    files
}

/// The index of the first tool call of a conversation.
fn first_call(got: &Received) -> usize {
    got.messages
        .iter()
        .position(|m| !m.tool_uses.is_empty())
        .expect("a scripted call")
}

/// (1) SessionStart seeds the new conversation with the core standards, the table of contents
/// and the start-up pack, each once and before the first tool call; before any session the
/// gate denies a shell call, its reason reaching the model as the call's output and nothing
/// else with it.
#[test]
fn codex_session_start_reaches_the_model_once() {
    let Some(s) = CodexScenario::new("codex_session_start", World::new()) else {
        return;
    };
    s.run(vec![shell("ls packages")], "Say hello.", Mode::New);
    let (requests, saved) = s.requests();
    let got = last_turn(&requests).expect("the conversation");
    let p = s.paths();
    let expected = at_start(&p);
    let logged = delivered_to_main(s.log(), 0, usize::MAX);
    s.assert_context("main", &got, &union(&expected, &logged), &saved);
    let early = got.check_arrives_within(&expected, 0, first_call(&got), "before the first call");
    assert_clean(s.name, "standards at start-up", &early, &got, &saved);
    let denied: Vec<&str> = got.errors().iter().map(|(_, e)| *e).collect();
    assert!(
        denied.len() == 1 && denied[0].contains(GATE),
        "{}: the gate denied the call before any session, once: {denied:?}",
        s.name
    );
}

/// (2) The agent activates `/implement` and enters phase 1 through the shell (the engine's
/// `engine session activate` / `engine session phase`, backed by `preload activate` and
/// `preload phase`): the skill's protocol and templates and phase 0's commands arrive with
/// the activation and the next calls, phase 1's commands with its transition and the next
/// calls, each once; the session is owned by the codex process.
#[test]
fn codex_activation_and_phase_deliver_each_file_once() {
    let Some(s) = CodexScenario::new("codex_activation", World::new()) else {
        return;
    };
    let steps = vec![
        activate_step(),
        shell("ls packages/estimate"),
        shell("ls packages/estimate/src"),
        phase_step("1: Interrogation"),
        shell("ls packages/estimate/tests"),
        log_step("interrogation: short"),
        shell("ls packages"),
    ];
    let (got, _) = s.assert_activation(steps);
    assert_eq!(
        got.skill_arrivals(&s.paths().skill_dir()).len(),
        1,
        "{}: the skill's protocol exactly once",
        s.name
    );
    s.world.sandbox.assert_no_duplicates();
}

/// (3) Directive discovery through Codex's own tools: a shell read (`sed -n`) of a file under
/// `packages/estimate/src` brings the project's and the package's directives, an `apply_patch`
/// of a file under `docs/` the directive beside it, each once and with the call that found
/// it (or the next); the directive `/implement` does not declare never comes.
#[test]
fn codex_shell_reads_and_patches_discover_directives_once() {
    let Some((s, docs_directive)) = CodexScenario::with_docs_directive("codex_discovery") else {
        return;
    };
    let steps = vec![
        activate_step(),
        phase_step("1: Interrogation"),
        shell("sed -n 1,40p packages/estimate/src/parser.ts"),
        shell("ls packages/estimate"),
        glossary_patch(),
        shell("ls docs"),
        shell("ls packages"),
    ];
    s.run(steps, PROMPT, Mode::New);
    let (requests, saved) = s.requests();
    let got = last_turn(&requests).expect("the conversation");
    let p = s.paths();
    s.assert_discovered("main", &got, &docs_directive, &saved);
    s.assert_within_calls(
        "the shell read",
        &got,
        "sed -n 1,40p packages/estimate/src/parser.ts",
        &p.core_directives(),
        &saved,
    );
    s.assert_patch_brings(&got, &docs_directive, &saved);
    assert_eq!(
        got.count(&p.project("packages/estimate/.directives/CONTRIBUTING.md")),
        0,
        "{}: CONTRIBUTING.md is not a directive /implement declares",
        s.name
    );
}

/// (4) The client compacts in the middle of phase 1 (a heavy answer past
/// `model_auto_compact_token_limit`). Codex's summary replaces the whole history; SessionStart
/// (`compact`) seeds the new window: the standards, the table of contents and the pack again,
/// once each, before the next call, and the phase's commands once; the window before the
/// compaction had every file once too.
#[test]
fn codex_compaction_reseeds_the_new_window_once() {
    let Some(s) = CodexScenario::new("codex_compaction", World::new()) else {
        return;
    };
    let steps = vec![
        activate_step(),
        phase_step("1: Interrogation"),
        shell("sed -n 1,40p packages/estimate/src/parser.ts"),
        heavy(shell("ls packages")),
        shell("ls packages/estimate/src"),
        shell("sed -n 1,5p packages/estimate/src/parser.ts"),
        shell("ls packages/estimate"),
    ];
    s.run(steps, PROMPT, Mode::New);
    let (requests, saved) = s.requests();
    let p = s.paths();
    let split = compaction_point(s.log()).expect("SessionStart ran for the compaction");

    let before = compacted(&requests).expect("the client compacted the conversation");
    let mut before_expected = at_start(&p);
    before_expected.extend(p.phase_one());
    before_expected.extend(p.core_directives());
    let logged_before = delivered_to_main(s.log(), 0, split);
    s.assert_context(
        "before compaction",
        &before,
        &union(&before_expected, &logged_before),
        &saved,
    );

    let after = last_turn(&requests).expect("the conversation after compaction");
    let summary = after
        .text_position(SUMMARY)
        .expect("the last conversation is the compacted one");
    assert!(
        after.bash_call("session activate").is_none(),
        "{}: the summary replaced the whole history",
        s.name
    );
    let mut expected = at_start(&p);
    expected.extend(p.phase_one());
    let logged_after = delivered_to_main(s.log(), split, usize::MAX);
    s.assert_context(
        "after compaction",
        &after,
        &union(&expected, &logged_after),
        &saved,
    );
    let reseeded = after.check_arrives_within(
        &at_start(&p),
        summary,
        first_call(&after),
        "after the summary, before the next call",
    );
    assert_clean(
        s.name,
        "the new window's standards",
        &reseeded,
        &after,
        &saved,
    );
}

/// The harness's own check that the rule every Codex hook answer keeps is seen: the client
/// rejects a PreToolUse answer that allows with a decision and no `updatedInput` (it prints
/// `hook: PreToolUse Failed`, which [`codex_client::failed_hooks`] finds, and drops the
/// answer's context) and takes the same answer without the decision.
#[test]
fn codex_rejects_an_allow_without_updated_input() {
    let world = World::new();
    let answer = |decision: bool, path: &str| {
        let mut output = json!({"hookEventName": "PreToolUse",
            "additionalContext": format!("[Preloaded: {path}]\nstand-in\n")});
        if decision {
            output["permissionDecision"] = json!("allow");
        }
        json!({"hookSpecificOutput": output})
    };
    let allow = world.stand_in_hook("allow-without-input", &answer(true, "/allowed/ALLOW.md"));
    let plain = world.stand_in_hook("context-only", &answer(false, "/plain/PLAIN.md"));
    let handler = |command: &Path| json!({"type": "command", "command": command, "timeout": 10});
    let hooks = json!({"hooks": {"PreToolUse": [{"matcher": "*",
        "hooks": [handler(&allow), handler(&plain)]}]}});
    let Some(s) = CodexScenario::with_hooks("codex_rejects_allow", world, &hooks) else {
        return;
    };
    let run = s.run_any(vec![shell("ls")], "Say hello.", Mode::New);
    let (requests, saved) = s.requests();
    let got = last_turn(&requests).expect("the conversation");
    assert_eq!(
        codex_client::failed_hooks(&run),
        ["hook: PreToolUse Failed"],
        "{}: the client rejected the allow without updatedInput",
        s.name
    );
    assert_clean(
        s.name,
        "the context without a decision reached the model, the other one did not",
        &got.check_each_once(&["/plain/PLAIN.md".into()]),
        &got,
        &saved,
    );
    assert_eq!(
        got.count("/allowed/ALLOW.md"),
        0,
        "{}: a rejected answer's context is dropped",
        s.name
    );
}
