//! The opt-in scenario against the real engine (idealic-ai/engine): a checkout named by
//! `PRELOAD_E2E_ENGINE` is installed in a throwaway `HOME` the way its setup installs it, the
//! product replaces the bash hooks it replaces (`preload install` over the engine's own
//! wiring), and the real client runs `/implement` through phases 0 to 3.A with the engine's
//! own `session.sh` (activation with session parameters, phase changes with the proof it
//! demands, `log.sh`), then `/compact` and a plain `continue`, both with `--resume`. What the
//! scripted model received is judged point by point; every point is checked and printed before
//! the test fails, so one run tells the whole story. `make e2e-engine ENGINE=<checkout> JQ=<jq>`
//! runs it; without `PRELOAD_E2E_ENGINE` it records why it did not run (never a silent pass).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::client::Options;
use crate::model::{Kind, ModelServer, Script, Step, bash, tool};
use crate::received::{EXPANSION, Received};
use crate::scenario::{IMPLEMENT_PROMPT, PHASE_CALLS, Scenario, edit_total, write_plan};
use crate::support::{
    client_or_skip, compaction_point, delivered_to_main, deliveries, events, notice, record,
    report_cost,
};
use crate::world::World;
use preload_test_support::engine_model::CORE;

mod points;

/// Names the engine checkout to install (opt-in).
pub const ENGINE_ENV: &str = "PRELOAD_E2E_ENGINE";
/// Names the jq (1.7 or newer) the engine's scripts run with; else the first `jq` on `PATH`.
pub const JQ_ENV: &str = "PRELOAD_E2E_JQ";
/// The session directory the scripted agent activates (under `sessions/`).
const SESSION: &str = "implement-total";
/// How long the scripted model serves the three client runs at most.
const SERVER_LIFETIME: Duration = Duration::from_secs(540);

/// The session parameters the agent pipes to `engine session activate` (`§CMD_PARSE_PARAMETERS`
/// requires these six). No directory of interest: the engine's activation registers every
/// directive it finds under one (and up to the project root) as already touched, so the hooks
/// would never deliver them; here the package's and the project's directives are found by the
/// agent's own calls.
const PARAMETERS: &str = r#"{"taskSummary": "add a total to the estimate", "scope": "Code Changes Allowed", "directoriesOfInterest": [], "contextPaths": [], "requestFiles": [], "extraInfo": ""}"#;

/// The proof `session.sh phase` demands to leave each phase of the engine's `/implement` (the
/// phase's `proof` plus the `required` fields of its steps' and commands' schemas), keyed by
/// the phase entered.
fn proof_to_enter(label: &str) -> &'static str {
    match label {
        "1" => {
            r#"{"mode": "general", "sessionDir": "sessions/implement-total", "parametersParsed": "activated, 0 context paths", "contextSourcesPresented": "none offered", "filesLoaded": "2: total.ts, parser.ts", "intentReported": "reported: Setup"}"#
        }
        "2" => {
            r#"{"depthChosen": "Short", "roundsCompleted": "1 round: scope", "executed": "asked one scoping round", "intentReported": "reported: Interrogation", "questionsAsked": "1 question on scope"}"#
        }
        "3" => {
            r#"{"planWritten": "IMPLEMENTATION_PLAN.md", "planPresented": "inline summary", "userApproved": "approved", "reviewOffered": "yes, offered on the plan", "decision": "declined", "graphOffered": "no, linear plan", "intentReported": "reported: Planning", "resultsPresented": "1 step walked through"}"#
        }
        "3.A" => {
            r#"{"pathChosen": "3.A", "pathsAvailable": "inline,agent,parallel", "ticketAdvanced": "none: no ticket attached"}"#
        }
        _ => "{}",
    }
}

fn activate() -> Step {
    bash(&format!(
        "engine session activate sessions/{SESSION} implement <<'EOF'\n{PARAMETERS}\nEOF"
    ))
}

fn phase(label: &str, name: &str) -> Step {
    bash(&format!(
        "engine session phase sessions/{SESSION} \"{label}: {name}\" <<'EOF'\n{}\nEOF",
        proof_to_enter(label)
    ))
}

fn log(line: &str) -> Step {
    bash(&format!(
        "engine log sessions/{SESSION}/IMPLEMENTATION_LOG.md <<'EOF'\n## {line}\n*   **Note**: scripted\nEOF"
    ))
}

fn read(world: &World, rel: &str) -> Step {
    tool(
        "Read",
        json!({"file_path": world.sandbox.project.join(rel)}),
    )
}

/// The phases the scripted run enters, in order: (label, name).
const PHASES: &[(&str, &str)] = &[
    ("1", "Interrogation"),
    ("2", "Planning"),
    ("3", "Execution"),
    ("3.A", "Build Loop"),
];

/// Run 1: `/implement`, activation, two ordinary calls in each phase right after entering it,
/// a log before the heartbeat warns, a Read in the package in phase 1 (its core directives) and
/// a Write and an Edit in it in phase 3.A (the directives `/implement` declares).
fn first_run(world: &World) -> Vec<Step> {
    vec![
        activate(),
        bash("ls packages/estimate"),
        bash("ls packages/estimate/src"),
        log("Setup: mode general"),
        phase("1", "Interrogation"),
        read(world, "packages/estimate/src/total.ts"),
        bash("ls packages/estimate/tests"),
        log("Interrogation: short"),
        phase("2", "Planning"),
        read(world, "packages/estimate/src/parser.ts"),
        bash("ls packages"),
        log("Plan written"),
        phase("3", "Execution"),
        bash("ls packages/estimate"),
        bash("ls packages/estimate/src"),
        log("Path chosen: inline"),
        phase("3.A", "Build Loop"),
        write_plan(world),
        edit_total(world),
        log("Total edited"),
        bash("ls packages/estimate/notes"),
    ]
}

/// Run 3 (`continue` after the compaction): ordinary calls in phase 3.A (enough for what the new
/// context window queues to go out), a re-read of a file read before the compaction, logs.
fn third_run(world: &World) -> Vec<Step> {
    vec![
        bash("ls packages/estimate"),
        read(world, "packages/estimate/src/parser.ts"),
        log("Continued after compaction"),
        bash("ls packages/estimate/src"),
        bash("ls packages/estimate/tests"),
        log("Tests listed"),
        bash("ls packages/estimate/notes"),
        bash("ls packages"),
        log("Notes listed"),
        bash("ls"),
        bash("ls packages/estimate"),
        log("Package listed"),
        bash("ls packages/estimate/src"),
        bash("ls"),
        log("Done"),
    ]
}

/// The engine checkout and jq, or `None` after recording why the scenario does not run.
pub(crate) fn engine_or_skip(name: &str) -> Option<(PathBuf, PathBuf)> {
    let Some(engine) = std::env::var_os(ENGINE_ENV).filter(|v| !v.is_empty()) else {
        let reason = format!(
            "{ENGINE_ENV} is not set (the real-engine scenario is opt-in: make e2e-engine \
             ENGINE=<engine checkout> JQ=<jq 1.7+>)"
        );
        notice(&format!("NOT RUN {name}: {reason}"));
        record(name, &format!("skipped: {reason}"));
        return None;
    };
    let engine = PathBuf::from(engine);
    let engine = engine.canonicalize().unwrap_or(engine);
    let jq = std::env::var_os(JQ_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| which("jq"))
        .map(|jq| jq.canonicalize().unwrap_or(jq));
    let fail = |why: String| -> ! {
        record(name, &format!("failed: {why}"));
        panic!("{name}: {why}");
    };
    if !engine.join("scripts/session.sh").is_file() {
        fail(format!(
            "{ENGINE_ENV}={} is not an engine checkout (no scripts/session.sh)",
            engine.display()
        ));
    }
    let Some(jq) = jq else {
        fail(format!("no jq: set {JQ_ENV} to a jq 1.7 or newer"));
    };
    let version = Command::new(&jq)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let new_enough = version
        .strip_prefix("jq-")
        .and_then(|v| {
            let mut parts = v.split(['.', '-']);
            Some((
                parts.next()?.parse::<u32>().ok()?,
                parts.next()?.parse::<u32>().ok()?,
            ))
        })
        .is_some_and(|(major, minor)| major > 1 || (major == 1 && minor >= 7));
    if !new_enough {
        fail(format!(
            "{} answers {version:?}; the engine's scripts need jq 1.7 or newer ({JQ_ENV})",
            jq.display()
        ));
    }
    Some((engine, jq))
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    })
}

/// The outcome of one judged point.
struct Point {
    name: String,
    problems: Vec<String>,
    evidence: Vec<String>,
}

impl Point {
    fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            problems: Vec::new(),
            evidence: Vec::new(),
        }
    }
}

/// Paths in a real-engine world, as the hooks print them (symlinks resolved).
struct EnginePaths {
    directives: PathBuf,
    skill_link: PathBuf,
    skill_real: PathBuf,
    project: PathBuf,
}

impl EnginePaths {
    fn new(world: &World) -> Self {
        let claude = world.sandbox.home.join(".claude");
        let skill_link = claude.join("skills/implement");
        Self {
            directives: claude
                .join(".directives")
                .canonicalize()
                .expect("~/.claude/.directives"),
            skill_real: skill_link.canonicalize().expect("the implement skill"),
            skill_link,
            project: world.sandbox.project.clone(),
        }
    }

    fn core_standards(&self) -> Vec<String> {
        CORE.iter()
            .map(|f| self.directives.join(f).to_string_lossy().into_owned())
            .collect()
    }

    fn project(&self, rel: &str) -> String {
        self.project.join(rel).to_string_lossy().into_owned()
    }

    /// The skill's JSON block (its session parameters).
    fn skill_json(&self) -> Value {
        let text = fs::read_to_string(self.skill_real.join("SKILL.md")).expect("SKILL.md");
        let block = text
            .split("```json\n")
            .nth(1)
            .and_then(|rest| rest.split("\n```").next())
            .expect("SKILL.md has a JSON block");
        serde_json::from_str(block).expect("SKILL.md's JSON block parses")
    }

    /// The command files of phase `label` (its `steps` and `commands` that have a file in
    /// `.directives/commands/`), and for phase 0 the templates the skill names.
    fn phase_files(&self, label: &str) -> Vec<String> {
        let skill = self.skill_json();
        let mut files = Vec::new();
        let phase = skill["phases"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["label"] == label);
        for field in ["steps", "commands"] {
            for cmd in phase
                .and_then(|p| p[field].as_array())
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                let Some(name) = cmd.strip_prefix("§CMD_") else {
                    continue;
                };
                let file = self.directives.join(format!("commands/CMD_{name}.md"));
                let file = file.to_string_lossy().into_owned();
                if Path::new(&file).is_file() && !files.contains(&file) {
                    files.push(file);
                }
            }
        }
        if label == "0" {
            for key in ["logTemplate", "debriefTemplate", "planTemplate"] {
                if let Some(rel) = skill[key].as_str() {
                    let file = self.skill_real.join(rel);
                    if file.is_file() {
                        files.push(file.to_string_lossy().into_owned());
                    }
                }
            }
        }
        files
    }

    /// Every arrival of SKILL.md in `got`: the client's expansions (under the skill's link or
    /// its real directory) and `[Preloaded: …/SKILL.md]` blocks.
    fn skill_arrivals(&self, got: &Received) -> Vec<String> {
        let dirs = [&self.skill_link, &self.skill_real];
        let mut arrivals = Vec::new();
        for (i, m) in got.messages.iter().enumerate() {
            for t in &m.texts {
                for dir in dirs {
                    let needle = format!("{EXPANSION}{}\n", dir.display());
                    for _ in t.matches(needle.as_str()) {
                        arrivals.push(format!("the client's expansion at m{i}"));
                    }
                }
            }
        }
        // A block whole, or the first part of a file sent in parts (check_each_once sees that
        // every part came once).
        for h in got.headers() {
            let skill_md = dirs
                .iter()
                .any(|d| h.path == d.join("SKILL.md").to_string_lossy());
            if skill_md && h.part.is_none_or(|(i, _)| i == 1) {
                arrivals.push(format!(
                    "[Preloaded: {}] at m{}",
                    short(&h.label),
                    h.message
                ));
            }
        }
        arrivals
    }
}

/// Where each file of `files` is complete in `got`, for the evidence.
fn arrivals(got: &Received, files: &[String]) -> Vec<String> {
    files
        .iter()
        .map(|f| {
            let parts: Vec<String> = got
                .headers()
                .iter()
                .filter(|h| &h.path == f)
                .map(|h| {
                    let part = h
                        .part
                        .map_or(String::new(), |(i, n)| format!(" part {i}/{n}"));
                    format!("m{}{part}", h.message)
                })
                .collect();
            format!("{}: {}", short(f), parts.join(", "))
        })
        .collect()
}

/// A path without the sandbox prefix, for reading.
fn short(path: &str) -> String {
    for marker in ["/.claude/engine/", "/project/"] {
        if let Some(at) = path.find(marker) {
            return path[at + 1..].to_owned();
        }
    }
    path.to_owned()
}

/// The number of lines of the delivery log (events so far).
fn log_len(log: &Path) -> usize {
    events(log).len()
}

/// The SessionStart contexts of `got` whose text carries the banner's `[Session Context]`
/// line (with the session it names).
fn banners(got: &Received) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (i, m) in got.messages.iter().enumerate() {
        for t in &m.texts {
            for line in t.lines() {
                if line.contains("[Session Context]") {
                    found.push((i, line.trim().to_owned()));
                }
            }
        }
    }
    found
}

/// Everything the points judge: the three conversations the model received, the session's
/// state at the end, where each run's events start in the hooks' log.
struct Judged {
    p: EnginePaths,
    core: Vec<String>,
    /// Run 1's last turn (the first context).
    first: Received,
    /// The compaction request of run 2 (the conversation it summarised).
    summarised: Received,
    /// Run 3's last turn (the context after the compaction, resumed).
    after: Received,
    state: Value,
    /// The session's state right after run 2 (the compaction of the resumed conversation).
    state_after_compaction: Value,
    log: PathBuf,
    log_after_run1: usize,
    log_after_run2: usize,
    run1_request: String,
    run3_request: String,
    compaction_request: String,
}

/// Sets up the world, the product and the scripted model, or `None` (recorded) when the
/// scenario does not run.
fn set_up(name: &'static str) -> Option<Scenario> {
    let (engine, jq) = engine_or_skip(name)?;
    let claude = client_or_skip(name)?;
    let mut world = World::real_engine(&engine, &jq).unwrap_or_else(|e| {
        record(name, &format!("failed: {e}"));
        panic!("{name}: {e}")
    });
    world.install_product();
    notice(&format!(
        "{name}: engine {} installed by its setup functions (its hooks wired by its \
         configure_hooks), then the product by {} (sandbox {})",
        engine.display(),
        world.wiring,
        world.sandbox.root().display()
    ));
    Some(Scenario {
        name,
        claude,
        world,
        server: ModelServer::start_for(Script::default(), SERVER_LIFETIME),
    })
}

/// Runs the three client runs and gathers what the points judge.
fn run_and_gather(s: &Scenario) -> (Judged, PathBuf) {
    // Run 1: /implement through phase 3.A.
    let run = s.run(Script::main(first_run(&s.world)), IMPLEMENT_PROMPT);
    let id = run.session_id().expect("the client reports its session id");
    let after_run1 = s.server.requests().len();
    let log_after_run1 = log_len(s.log());
    // Run 2: `claude -p /compact --resume <id>`.
    let resume = Options::resuming(id);
    s.run_with(Script::main(Vec::new()), "/compact", &resume);
    let after_run2 = s.server.requests().len();
    let log_after_run2 = log_len(s.log());
    let state_after_compaction = s.world.state_of(SESSION).unwrap_or_default();
    // Run 3: `claude -p continue --resume <id>`.
    s.run_with(Script::main(third_run(&s.world)), "continue", &resume);
    let (requests, saved) = s.requests();
    compaction_point(s.log()).expect("SessionStart ran with source compact");
    let last_turn = |upto: usize| {
        requests[..upto]
            .iter()
            .rposition(|r| r.kind == Kind::Turn("main".into()))
            .unwrap_or_default()
    };
    let p = EnginePaths::new(&s.world);
    let judged = Judged {
        core: p.core_standards(),
        p,
        first: Received::last_of(&requests[..after_run1], "main").expect("run 1's conversation"),
        summarised: Received::compacted(&requests[..after_run2])
            .expect("run 2 asked for a compaction"),
        after: Received::last_of(&requests[after_run2..], "main")
            .expect("run 3's conversation (after the compaction)"),
        state: s
            .world
            .state_of(SESSION)
            .expect("the engine activated the session"),
        state_after_compaction,
        log: s.log().to_path_buf(),
        log_after_run1,
        log_after_run2,
        run1_request: format!("request {} (run 1's last turn)", last_turn(after_run1)),
        run3_request: format!("request {} (run 3's last turn)", last_turn(requests.len())),
        compaction_request: requests[..after_run2]
            .iter()
            .rposition(|r| r.kind == Kind::Compaction)
            .map_or_else(String::new, |i| {
                format!("request {i} (the compaction request)")
            }),
    };
    (judged, saved)
}

#[test]
fn real_engine_implement_compact_and_resume() {
    const NAME: &str = "real_engine_implement";
    let Some(s) = set_up(NAME) else {
        return;
    };
    let (j, saved) = run_and_gather(&s);
    let points = [
        points::core_standards(&j),
        points::each_once(&j),
        points::phase_commands(&j),
        points::directives(&j),
        points::after_compaction(&j),
        points::plain_resume(&j),
    ];
    // (7) What the hooks added per context.
    report_cost(NAME, "run 1 (first context)", &j.first);
    report_cost(NAME, "summarised (run 1's conversation)", &j.summarised);
    report_cost(NAME, "after the compaction, resumed", &j.after);

    let mut failed = Vec::new();
    for point in &points {
        let verdict = if point.problems.is_empty() {
            "PASS"
        } else {
            "FAIL"
        };
        notice(&format!("{NAME}: point {}: {verdict}", point.name));
        for e in &point.evidence {
            notice(&format!("    evidence: {e}"));
        }
        for problem in &point.problems {
            notice(&format!("    problem: {problem}"));
        }
        if !point.problems.is_empty() {
            failed.push(point.name.clone());
        }
    }
    notice(&format!("{NAME}: requests saved to {}", saved.display()));
    assert!(
        failed.is_empty(),
        "{NAME}: points failed: {failed:?} (details above; requests in {})",
        saved.display()
    );
}
