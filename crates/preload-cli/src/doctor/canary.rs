//! `preload doctor --canary`: the installed binaries prove, in a throwaway sandbox, that a
//! SessionStart and a PreToolUse round trip put a known file's content in the output once.
//!
//! The sandbox has its own `HOME` with a tiny engine: the six core standards, `COMMANDS.md`
//! carrying marker A, and of the default rules only `preload` (there is no session to
//! activate, so the session gate stays out); and a project whose `src/.directives/AGENTS.md`
//! carries marker B. Every registration the wiring gives SessionStart runs: marker A must be
//! in their answers exactly once. Then a Read of `src/main.txt` runs through the PreToolUse
//! registrations (directive discovery queues AGENTS.md, the preload rule claims and stashes
//! it) and the PostToolUse ones (the stash is handed out): marker B exactly once. A second
//! identical round trip must bring neither marker again. Nothing outside the sandbox is read
//! or written, and the sandbox is removed.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::Finding;
use crate::calls::{self, Registration};
use crate::install::guards::DEFAULT_GUARDS;
use crate::sandbox::Sandbox;
use preload_core::mechanisms::session::CORE_STANDARDS;
use preload_core::primitives::env::{self, Env};

/// The rule of the default set the canary keeps.
const PRELOAD_RULE: &str = "preload";

/// A canary's world and its markers.
struct World {
    sandbox: Sandbox,
    env: Vec<(String, String)>,
    marker_a: String,
    marker_b: String,
    main: PathBuf,
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn world() -> Result<World, String> {
    let sandbox = Sandbox::empty("canary", Path::new("/")).map_err(|e| e.to_string())?;
    let nonce = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let marker_a = format!("preload-canary-A-{}-{nonce}", std::process::id());
    let marker_b = format!("preload-canary-B-{}-{nonce}", std::process::id());
    let home = sandbox.root().join("home");
    let engine = home.join(".claude/engine");
    for rel in CORE_STANDARDS {
        let body = if rel == "COMMANDS.md" {
            format!("# Commands\n\n{marker_a}\n")
        } else {
            format!("# {rel}\n\nA core standard of the canary.\n")
        };
        write(&engine.join(".directives").join(rel), &body)?;
    }
    fs::create_dir_all(home.join(".claude/skills")).map_err(|e| e.to_string())?;
    std::os::unix::fs::symlink(engine.join(".directives"), home.join(".claude/.directives"))
        .map_err(|e| format!("cannot link the directives: {e}"))?;
    let rules: Vec<Value> = serde_json::from_str::<Vec<Value>>(DEFAULT_GUARDS)
        .map_err(|e| format!("the default rules do not parse: {e}"))?
        .into_iter()
        .filter(|r| r["id"] == PRELOAD_RULE)
        .collect();
    write(&engine.join("guards.json"), &Value::from(rules).to_string())?;
    write(
        &sandbox.project.join("src/.directives/AGENTS.md"),
        &format!("# Agents\n\n{marker_b}\n"),
    )?;
    let main = sandbox.project.join("src/main.txt");
    write(&main, "the canary's source file\n")?;
    let env = sandbox.env(
        &Env::from_pairs([(env::HOME, home.to_string_lossy())]),
        std::process::id(),
    );
    Ok(World {
        sandbox,
        env,
        marker_a,
        marker_b,
        main,
    })
}

/// Runs every registration the wiring gives `input`; their answers' texts, joined.
fn round(bin_dir: &Path, world: &World, input: &Value) -> Result<String, String> {
    let registrations: Vec<Registration> = calls::registrations_for(input);
    if registrations.is_empty() {
        return Err(format!("the wiring has no registration for {input}"));
    }
    let mut texts = Vec::new();
    for reg in registrations {
        let call = calls::call(
            bin_dir,
            reg.row.binary,
            &reg.args,
            &world.env,
            &world.sandbox.project,
            &input.to_string(),
        )
        .map_err(|e| e.to_string())?;
        if call.code != Some(0) || (!call.stdout.trim().is_empty() && call.answer().is_none()) {
            return Err(format!(
                "{} broke the output contract (exit {:?}, stdout {:?})",
                reg.label(),
                call.code,
                call.stdout.chars().take(200).collect::<String>()
            ));
        }
        if call.decision().as_deref() == Some("deny") {
            return Err(format!(
                "{} denied the canary's Read: {}",
                reg.label(),
                call.text()
            ));
        }
        texts.push(call.text());
    }
    Ok(texts.join("\n"))
}

fn tool_call(world: &World, event: &str) -> Value {
    let mut input = json!({
        "hook_event_name": event,
        "session_id": "preload-canary",
        "cwd": world.sandbox.project,
        "transcript_path": world.sandbox.root().join("canary.jsonl"),
        "tool_name": "Read",
        "tool_input": {"file_path": world.main},
    });
    if event == "PostToolUse" {
        input["tool_response"] = json!({"type": "text", "file": {"filePath": world.main}});
    }
    input
}

/// The canary; what it proved, or what went wrong.
pub fn canary(bin_dir: &Path) -> Result<String, String> {
    let world = world()?;
    let start = json!({
        "hook_event_name": "SessionStart",
        "source": "startup",
        "session_id": "preload-canary",
        "cwd": world.sandbox.project,
        "transcript_path": world.sandbox.root().join("canary.jsonl"),
    });
    let started = round(bin_dir, &world, &start)?;
    let a = started.matches(&world.marker_a).count();
    if a != 1 {
        return Err(format!(
            "SessionStart put the marker of COMMANDS.md in its answers {a} times, not once"
        ));
    }
    let mut trips = Vec::new();
    for _ in 0..2 {
        let before = round(bin_dir, &world, &tool_call(&world, "PreToolUse"))?;
        let after = round(bin_dir, &world, &tool_call(&world, "PostToolUse"))?;
        trips.push(format!("{before}\n{after}"));
    }
    let b = [
        trips[0].matches(&world.marker_b).count(),
        trips[1].matches(&world.marker_b).count(),
    ];
    if b != [1, 0] {
        return Err(format!(
            "the Read round trips put the marker of src/.directives/AGENTS.md in their answers {} and {} times, not once and then never",
            b[0], b[1]
        ));
    }
    if trips.iter().any(|t| t.contains(&world.marker_a)) {
        return Err("a tool call sent COMMANDS.md again after SessionStart".into());
    }
    Ok(format!(
        "canary: with the binaries in {}, SessionStart put a core standard's marker in its answers once, and a Read's PreToolUse/PostToolUse round trip a discovered directive's marker once (a second round trip neither again); sandbox removed",
        bin_dir.display()
    ))
}

/// The canary as a finding.
pub fn check_canary(bin_dir: &Path, findings: &mut Vec<Finding>) {
    match canary(bin_dir) {
        Ok(what) => findings.push(Finding::ok(what)),
        Err(why) => findings.push(Finding::fail(
            format!("canary: {why}"),
            "reinstall from a fresh build (`make install`), then `preload doctor --canary` again; `preload explain` shows what one input does",
        )),
    }
}
