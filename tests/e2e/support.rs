//! What every scenario shares: finding the client or saying why a scenario cannot run (and
//! recording it for the summary line of `make test`), printing notices that test capture does
//! not swallow, the context-cost report, failing with the whole story, the hooks' delivery log,
//! and the paths the example engine delivers.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::model::{Kind, Request};
use crate::received::Received;
use crate::world::World;
use preload_test_support::sandbox::repo;

/// Writes one line to the terminal, past the test harness's output capture, so skips and
/// context costs show under `cargo test` and `make test` alike.
pub fn notice(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "[e2e] {line}");
}

/// `PRELOAD_E2E`: `require` makes every scenario that cannot run fail with its reason (what
/// `.ci/run` sets); anything else lets it skip with a printed reason.
pub const REQUIRE_ENV: &str = "PRELOAD_E2E";
/// `PRELOAD_E2E_STATUS`: a directory where each scenario records whether it ran or why not, one
/// file per scenario; `make test` prints the summary line from it.
pub const STATUS_ENV: &str = "PRELOAD_E2E_STATUS";

/// What makes the scenarios run.
const HINT: &str = "`make e2e-setup` installs the pinned client into .e2e/ (or set \
                    PRELOAD_E2E_CLAUDE to a client executable)";

/// True when `PRELOAD_E2E=require`.
pub fn required() -> bool {
    std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "require")
}

/// Records `outcome` (`ran`, or `skipped: <reason>`) for `scenario` in [`STATUS_ENV`].
pub fn record(scenario: &str, outcome: &str) {
    let Some(dir) = std::env::var_os(STATUS_ENV).filter(|d| !d.is_empty()) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let _ = fs::create_dir_all(&dir);
    let _ = fs::write(dir.join(scenario), format!("{outcome}\n"));
}

/// The client for `scenario`. When it cannot run (the client is missing or does not start),
/// fails with the reason under `PRELOAD_E2E=require`, else prints the reason and returns
/// `None`. A product failure is never a reason: the scenario runs and fails.
pub fn client_or_skip(scenario: &str) -> Option<PathBuf> {
    run_or_skip(scenario, crate::client::locate(), HINT)
}

/// The client `located` for `scenario` (its path, or why it cannot run): as
/// [`client_or_skip`] says, with `hint` saying how to make it run.
pub fn run_or_skip(
    scenario: &str,
    located: Result<PathBuf, String>,
    hint: &str,
) -> Option<PathBuf> {
    match located {
        Ok(path) => {
            record(scenario, "ran");
            Some(path)
        }
        Err(reason) if required() => {
            record(scenario, &format!("failed: {reason}"));
            panic!("{scenario} cannot run ({REQUIRE_ENV}=require): {reason}; {hint}");
        }
        Err(reason) => {
            notice(&format!("SKIPPED {scenario}: {reason}; {hint}"));
            record(scenario, &format!("skipped: {reason}"));
            None
        }
    }
}

/// Prints what the hooks added to `conversation` (characters and estimated tokens).
pub fn report_cost(scenario: &str, conversation: &str, received: &Received) {
    let chars = received.hook_chars();
    let blocks = received.headers().len();
    notice(&format!(
        "context cost {scenario} [{conversation}]: {chars} chars (~{} tokens) in {} hook \
         contexts, {blocks} preloaded blocks",
        chars / 4,
        received.hook_contexts().len()
    ));
}

/// Saves every recorded request of `scenario` under `target/e2e/<scenario>/requests.json`, with
/// the hooks' delivery log, the settings and the state files of `world`; returns the requests
/// file.
pub fn dump(scenario: &str, requests: &[Request], world: &World) -> PathBuf {
    let dir = repo().join("target/e2e").join(scenario);
    let _ = fs::remove_dir_all(&dir);
    let _ = fs::create_dir_all(&dir);
    let path = dir.join("requests.json");
    let all: Vec<Value> = requests
        .iter()
        .map(|r| {
            json!({"method": r.method, "path": r.path, "kind": format!("{:?}", r.kind),
                "body": r.body})
        })
        .collect();
    let _ = fs::write(
        &path,
        serde_json::to_string_pretty(&all).unwrap_or_default(),
    );
    for entry in fs::read_dir(world.sandbox.root())
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("delivery-log") {
            let _ = fs::copy(entry.path(), dir.join(&name));
        }
    }
    let _ = fs::copy(world.settings_path(), dir.join("settings.local.json"));
    if world.sandbox.sessions.is_dir() {
        let _ = copy_tree_files(&world.sandbox.sessions, &dir.join("sessions"));
    }
    // The client's own transcripts, as it wrote them.
    let transcripts = world.sandbox.home.join(".claude/projects");
    if transcripts.is_dir() {
        let _ = copy_tree_files(&transcripts, &dir.join("transcripts"));
    }
    path
}

fn copy_tree_files(from: &Path, to: &Path) -> std::io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree_files(&entry.path(), &target)?;
        } else if entry.file_type()?.is_file() {
            fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// The checks every context gets: each file of `files` (what the hooks logged as delivered into
/// it, and what the scenario expects; none is a vacuous pass) reached the model exactly once, no
/// block came twice, the skill's SKILL.md (in `skill_dir`) at most once (the client's own
/// expansions included), no literal backslash-n, then a client's own checks (`more`: what each
/// checks, its problems); then prints the context cost.
pub fn assert_context(
    scenario: &str,
    what: &str,
    got: &Received,
    files: &[String],
    skill_dir: &str,
    more: Vec<(&str, Vec<String>)>,
    saved: &Path,
) {
    assert!(
        !files.is_empty(),
        "{scenario}: {what}: no file to check (a vacuous pass)"
    );
    let checks = [
        (
            "every preloaded file exactly once",
            got.check_each_once(files),
        ),
        (
            "the skill's protocol at most once",
            got.check_skill_at_most_once(skill_dir),
        ),
        ("real newlines", got.check_no_literal_newlines()),
    ];
    for (check, problems) in checks.into_iter().chain(more) {
        assert_clean(scenario, &format!("{what}: {check}"), &problems, got, saved);
    }
    report_cost(scenario, what, got);
}

/// Fails with every problem, the headers received, and where the requests were saved.
pub fn assert_clean(
    scenario: &str,
    what: &str,
    problems: &[String],
    received: &Received,
    dump: &Path,
) {
    if problems.is_empty() {
        return;
    }
    let headers: Vec<String> = received
        .headers()
        .iter()
        .map(|h| format!("  m{}: {}", h.message, h.label))
        .collect();
    panic!(
        "{scenario}: {what}:\n  {}\nheaders received:\n{}\nrequests saved to {}",
        problems.join("\n  "),
        headers.join("\n"),
        dump.display()
    );
}

/// How many requests of each kind arrived (for the scenario report).
pub fn request_summary(requests: &[Request]) -> String {
    let turns = requests
        .iter()
        .filter(|r| matches!(r.kind, Kind::Turn(_)))
        .count();
    let count = |k: &Kind| requests.iter().filter(|r| &r.kind == k).count();
    format!(
        "{} requests: {turns} turns, {} compaction, {} side, {} other",
        requests.len(),
        count(&Kind::Compaction),
        count(&Kind::Side),
        count(&Kind::Other)
    )
}

/// Paths as the hooks write them in `[Preloaded: …]` headers.
pub struct Paths<'a> {
    world: &'a World,
}

impl<'a> Paths<'a> {
    /// Paths inside `world`.
    pub fn new(world: &'a World) -> Self {
        Self { world }
    }

    /// An engine directive (`~/.claude/engine/.directives/<rel>`, symlinks resolved).
    pub fn engine(&self, rel: &str) -> String {
        self.world.sandbox.engine_path(rel)
    }

    /// A command file.
    pub fn cmd(&self, name: &str) -> String {
        self.engine(&format!("commands/{name}.md"))
    }

    /// A project file.
    pub fn project(&self, rel: &str) -> String {
        self.world
            .sandbox
            .project
            .join(rel)
            .to_string_lossy()
            .into_owned()
    }

    /// The `implement` skill's directory.
    pub fn skill_dir(&self) -> String {
        self.world
            .sandbox
            .home
            .join(".claude/skills/implement")
            .to_string_lossy()
            .into_owned()
    }

    /// The `test` skill's directory.
    pub fn test_skill_dir(&self) -> String {
        self.world
            .sandbox
            .home
            .join(".claude/skills/test")
            .to_string_lossy()
            .into_owned()
    }

    /// What the `test` skill brings of its own at its activation: its phase 0 command and its
    /// templates.
    pub fn test_skill_own(&self) -> Vec<String> {
        let dir = self.test_skill_dir();
        vec![
            self.cmd("CMD_RUN_TESTS"),
            format!("{dir}/assets/TEMPLATE_TESTING_LOG.md"),
            format!("{dir}/assets/TEMPLATE_TESTING_DEBRIEF.md"),
        ]
    }

    /// A file of the `implement` skill.
    pub fn skill(&self, rel: &str) -> String {
        format!("{}/{rel}", self.skill_dir())
    }

    /// The six core standards SessionStart seeds.
    pub fn core_standards(&self) -> Vec<String> {
        ["COMMANDS.md", "INVARIANTS.md", "SIGILS.md"]
            .iter()
            .map(|f| self.engine(f))
            .chain(
                [
                    "CMD_DEHYDRATE",
                    "CMD_RESUME_SESSION",
                    "CMD_PARSE_PARAMETERS",
                ]
                .iter()
                .map(|c| self.cmd(c)),
            )
            .collect()
    }

    /// Directives any first touch under `packages/estimate/` discovers (core names).
    pub fn core_directives(&self) -> Vec<String> {
        [
            ".directives/AGENTS.md",
            ".directives/INVARIANTS.md",
            "packages/estimate/.directives/INVARIANTS.md",
        ]
        .iter()
        .map(|f| self.project(f))
        .collect()
    }

    /// Directives only an Edit or Write under `packages/estimate/` discovers, because
    /// `/implement` declares them.
    pub fn skill_directives(&self) -> Vec<String> {
        ["TESTING.md", "PITFALLS.md"]
            .iter()
            .map(|f| self.project(&format!("packages/estimate/.directives/{f}")))
            .collect()
    }

    /// The key a context pack of the project's configuration is recorded under.
    pub fn pack(&self, name: &str) -> String {
        format!("{}#{name}", self.project(".claude/context-packs.json"))
    }

    /// Command files by name.
    pub fn cmds(&self, names: &[&str]) -> Vec<String> {
        names.iter().map(|c| self.cmd(c)).collect()
    }

    /// The command files of phase 1 of the example's `/implement` (`1: Interrogation`).
    pub fn phase_one(&self) -> Vec<String> {
        self.cmds(&["CMD_INTERROGATE", "CMD_ASK_ROUND", "CMD_LOG_INTERACTION"])
    }
}

/// One delivery the hooks recorded in their event log (`direct-deliver` or `claim-deliver`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The hook (binary name without `preload-`).
    pub hook: String,
    /// The delivered file.
    pub file: String,
    /// Why (`session-start(startup)`, `guards(preload)`, … ` [sub-agent <id>]`).
    pub source: String,
    /// Index of the event in the log (all events counted).
    pub index: usize,
}

impl Delivery {
    /// The sub-agent whose context received it, if any.
    pub fn sub_agent(&self) -> Option<&str> {
        preload_core::primitives::delivery::sub_agent_of_source(&self.source)
    }

    /// Whether the hooks recorded a skill the client loaded itself, without a `[Preloaded: …]`
    /// header: its expansion of a `/skill` prompt (`prompt-submit`, `skill-expansion(…)`), a
    /// `Skill` tool call (`templates`, `skill-call(…)`), or its re-injection of the skills
    /// invoked before a compaction (`session-start`, `client-skill-reload(compact)`).
    /// [`crate::received::Received::check_skill_at_most_once`] counts these arrivals.
    pub fn is_client_expansion(&self) -> bool {
        ["skill-expansion(", "skill-call(", "client-skill-reload("]
            .iter()
            .any(|s| self.source.starts_with(s))
    }
}

/// Every event of a delivery log, parsed (a missing log is empty).
pub fn events(log: &Path) -> Vec<Value> {
    fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("delivery log lines are JSON"))
        .collect()
}

/// Every delivery of a log, in order.
pub fn deliveries(log: &Path) -> Vec<Delivery> {
    events(log)
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            matches!(
                e["event"].as_str(),
                Some("direct-deliver" | "claim-deliver")
            )
        })
        .map(|(index, e)| Delivery {
            hook: e["hook"].as_str().unwrap_or_default().to_owned(),
            file: e["file"].as_str().unwrap_or_default().to_owned(),
            source: e["source"].as_str().unwrap_or_default().to_owned(),
            index,
        })
        .collect()
}

/// Index of the first event SessionStart logged for a compaction (`session-start(compact)`):
/// where the log's second context window starts.
pub fn compaction_point(log: &Path) -> Option<usize> {
    events(log).iter().position(|e| {
        e["hook"] == "session-start" && e["source"].as_str().is_some_and(|s| s.contains("compact"))
    })
}

/// Index of the first event SessionStart logged for a resume (`session-start(resume)`): where
/// the log of the resuming client starts.
pub fn resume_point(log: &Path) -> Option<usize> {
    events(log).iter().position(|e| {
        e["hook"] == "session-start" && e["source"].as_str().is_some_and(|s| s.contains("resume"))
    })
}

/// The files the hooks delivered into the main agent's context (events `from..to`), as
/// `[Preloaded: …]` blocks: every delivery but the client's own skill expansion and the
/// sub-agents' copies. Each must reach the model exactly once.
pub fn delivered_to_main(log: &Path, from: usize, to: usize) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for d in deliveries(log) {
        if (from..to).contains(&d.index)
            && !d.is_client_expansion()
            && d.sub_agent().is_none()
            && !files.contains(&d.file)
        {
            files.push(d.file);
        }
    }
    files
}

/// The files the hooks delivered into one sub-agent's context as `[Preloaded: …]` blocks (not
/// the skills the client loaded into it itself).
pub fn delivered_to_sub(log: &Path) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for d in deliveries(log) {
        if d.sub_agent().is_some() && !d.is_client_expansion() && !files.contains(&d.file) {
            files.push(d.file);
        }
    }
    files
}

/// Every file of `a` followed by those of `b` it does not hold.
pub fn union(a: &[String], b: &[String]) -> Vec<String> {
    let mut all = a.to_vec();
    all.extend(b.iter().filter(|f| !a.contains(f)).cloned());
    all
}
