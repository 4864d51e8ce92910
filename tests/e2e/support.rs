//! What every scenario shares: finding the client, knowing which product parts exist, printing
//! notices that test capture does not swallow, the context-cost report, failing with the whole
//! story, and the paths the example engine delivers.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{Sandbox, bin, repo};
use crate::model::{Kind, Request};
use crate::received::Received;
use crate::world::World;

/// Writes one line to the terminal, past the test harness's output capture, so skips and
/// context costs show under `cargo test` and `make test` alike.
pub fn notice(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "[e2e] {line}");
}

/// The client, or `None` after printing why `scenario` is skipped.
pub fn client_or_skip(scenario: &str) -> Option<PathBuf> {
    match crate::client::locate() {
        Ok(path) => Some(path),
        Err(reason) => {
            notice(&format!("SKIPPED {scenario}: {reason}"));
            None
        }
    }
}

/// Product parts a scenario can need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// A hook binary (by name) that answers `--help`.
    Hook(&'static str),
    /// `preload activate` and `preload phase` (the engine stand-in's backend).
    SessionCommands,
}

/// The full pipeline a lifecycle needs.
pub const PIPELINE: &[Part] = &[
    Part::Hook("preload-session-start"),
    Part::Hook("preload-prompt-submit"),
    Part::Hook("preload-overflow"),
    Part::Hook("preload-templates"),
    Part::Hook("preload-phase-commands"),
    Part::Hook("preload-injections"),
    Part::SessionCommands,
];

/// The parts of `needs` that are not built yet (placeholders that print nothing).
pub fn missing(needs: &[Part]) -> Vec<String> {
    needs
        .iter()
        .filter(|part| !exists(**part))
        .map(|part| match part {
            Part::Hook(name) => format!("{name} (prints no --help yet)"),
            Part::SessionCommands => "`preload activate` / `preload phase`".to_owned(),
        })
        .collect()
}

fn exists(part: Part) -> bool {
    match part {
        Part::Hook(name) => Command::new(bin(name))
            .arg("--help")
            .output()
            .is_ok_and(|o| o.status.success() && !o.stdout.is_empty()),
        Part::SessionCommands => {
            let sandbox = Sandbox::new();
            let dir = sandbox.sessions.join("probe");
            let run = |args: &[&str]| {
                sandbox
                    .command("preload")
                    .args(args)
                    .output()
                    .is_ok_and(|o| o.status.success())
            };
            let dir_arg = dir.to_string_lossy().into_owned();
            run(&["activate", &dir_arg, "--skill", "implement"])
                && dir.join(".state.json").is_file()
                && sandbox
                    .command("preload")
                    .args(["phase", &dir_arg, "1: Interrogation"])
                    .output()
                    .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("Phase:"))
        }
    }
}

/// `None` after printing why `scenario` is skipped when a part of `needs` is missing.
pub fn product_or_skip(scenario: &str, needs: &[Part]) -> Option<()> {
    let missing = missing(needs);
    if missing.is_empty() {
        Some(())
    } else {
        notice(&format!(
            "SKIPPED {scenario}: not built yet: {}",
            missing.join(", ")
        ));
        None
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
    let _ = fs::copy(&world.sandbox.log, dir.join("delivery-log.jsonl"));
    let _ = fs::copy(world.settings_path(), dir.join("settings.local.json"));
    if world.sandbox.sessions.is_dir() {
        let _ = copy_tree_files(&world.sandbox.sessions, &dir.join("sessions"));
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

    /// A file of the `implement` skill.
    pub fn skill(&self, rel: &str) -> String {
        self.world
            .sandbox
            .home
            .join(".claude/skills/implement")
            .join(rel)
            .to_string_lossy()
            .into_owned()
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

    /// Command files by name.
    pub fn cmds(&self, names: &[&str]) -> Vec<String> {
        names.iter().map(|c| self.cmd(c)).collect()
    }
}
