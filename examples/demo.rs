//! `make demo`: a whole preload lifecycle on the bundled example, driven through the real
//! release binaries exactly as Claude Code would call them, then a report.
//!
//! Run it with `cargo run --release --locked --example demo [-- --keep]`. It copies
//! `examples/` into a temporary `HOME` and project, fires every event at the handlers the
//! wiring table of `preload install` registers for it (in parallel, as Claude Code does), and
//! reads the delivery log, the state files and every answer. It needs no network and writes
//! nothing outside its temporary directory (`--keep` leaves that directory for inspection).
//!
//! Exit status: 0 when every file went out once per context window, nothing is left pending
//! and every answer kept to the output contract; 1 otherwise.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use preload_cli::install::wiring::{SESSION_START_CHUNKS, WIRING, Wiring};
use preload_cli::report::Report;
use preload_core::mechanisms::context::DEFAULT_MAX_FILE_BYTES;
use preload_core::mechanisms::packs;
use serde_json::{Value, json};

/// The session the demo activates.
const SESSION: &str = "2026_01_01_DEMO_ESTIMATE";
/// The longest any one call may take before the demo gives up on it.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);
/// Tool calls allowed after the last step to drain what is still queued (the example's core
/// standards alone are about 160 KB, and one output carries under 10,000 characters).
const MAX_DRAIN_CALLS: usize = 40;
/// While draining, a log entry first and then every this many tool calls, as an agent keeps
/// its heartbeat (the shipped rules block at 10 calls without one).
const DRAIN_LOG_EVERY: usize = 5;

/// The proof for leaving `/implement`'s phase 0: every field its `Proof required to leave this
/// phase` list names (its command files' proof schemas and the phase's own).
const PROOF_OF_SETUP: &str = r#"{"mode": "default", "sessionDir": "sessions/2026_01_01_DEMO_ESTIMATE", "parametersParsed": "add a running total to the estimate parser", "contextIngested": "2: parser.ts, total.ts"}
"#;
/// The proof for leaving phase 1.
const PROOF_OF_INTERROGATION: &str = r#"{"depthChosen": "short (user)", "roundsCompleted": "1 round, 2 decisions", "questionsAsked": "2, on scope and rounding", "answersLogged": "hook", "interactionsLogged": "0, logged by the hooks"}
"#;
/// The proof for leaving phase 2.
const PROOF_OF_PLANNING: &str = r#"{"planWritten": "IMPLEMENTATION_PLAN.md", "itemsWalked": "3 of 3", "userApproved": "looks good, go", "logEntries": "2 entries"}
"#;

/// One process the demo ran.
#[derive(Debug)]
struct Call {
    label: String,
    millis: f64,
    stdout: String,
    stderr: String,
    code: Option<i32>,
}

impl Call {
    fn json(&self) -> Option<Value> {
        serde_json::from_str::<Value>(self.stdout.trim())
            .ok()
            .filter(Value::is_object)
    }

    /// Every text that reaches the model: context, deny reasons, block reasons.
    fn context_chars(&self) -> usize {
        let Some(v) = self.json() else { return 0 };
        [
            &v["hookSpecificOutput"]["additionalContext"],
            &v["hookSpecificOutput"]["permissionDecisionReason"],
            &v["reason"],
        ]
        .iter()
        .filter_map(|t| t.as_str())
        .map(|t| t.chars().count())
        .sum()
    }

    fn denied(&self) -> bool {
        self.json().is_some_and(|v| {
            v["hookSpecificOutput"]["permissionDecision"] == "deny" || v["decision"] == "block"
        })
    }
}

/// One context window: its delivery log and what its answers cost.
#[derive(Debug)]
struct Window {
    name: &'static str,
    log: PathBuf,
    chars: usize,
}

struct Demo {
    bin: PathBuf,
    root: PathBuf,
    home: PathBuf,
    project: PathBuf,
    pid: u32,
    tool_call: u32,
    windows: Vec<Window>,
    calls: Vec<Call>,
    problems: Vec<String>,
    notes: Vec<String>,
    /// What `SessionEnd` left wrong: the process's seed kept, or the session gone.
    ending: Vec<String>,
}

fn matches(row: &Wiring, value: Option<&str>) -> bool {
    match row.matcher {
        None | Some("*" | "") => true,
        Some(list) => value.is_some_and(|v| list.split(['|', ',']).any(|m| m.trim() == v)),
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => f64::midpoint(values[n / 2 - 1], values[n / 2]),
    }
}

impl Demo {
    fn new(bin: PathBuf, root: PathBuf) -> Result<Self, String> {
        let home = root.join("home");
        let project = root.join("project");
        let io = |what: &str, e: std::io::Error| format!("cannot set up {what}: {e}");
        preload_test_support::example::lay_out(&home, &project)
            .map_err(|e| io("the bundled example", e))?;
        for dir in ["cache", "markers"] {
            fs::create_dir_all(root.join(dir)).map_err(|e| io(dir, e))?;
        }
        Ok(Self {
            bin,
            home,
            project,
            pid: std::process::id(),
            tool_call: 0,
            windows: vec![Window {
                name: "before compaction",
                log: root.join("delivery-log-1.jsonl"),
                chars: 0,
            }],
            calls: Vec::new(),
            problems: Vec::new(),
            notes: Vec::new(),
            ending: Vec::new(),
            root,
        })
    }

    fn session_dir(&self) -> PathBuf {
        self.project.join("sessions").join(SESSION)
    }

    fn command(&self, binary: &str, args: &[String]) -> Command {
        let mut cmd = Command::new(self.bin.join(binary));
        cmd.args(args)
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("CLAUDE_SUPERVISOR_PID", self.pid.to_string())
            .env("CLAUDE_SESSION_CACHE_DIR", &self.root)
            .env("TMPDIR", &self.root)
            .env("PRELOAD_CACHE_DIR", self.root.join("cache"))
            .env("PRELOAD_MARKER_DIR", self.root.join("markers"))
            .env("PRELOAD_LEGACY_MARKER_DIR", self.root.join("markers"))
            .env("TOOL_CALL_NUM", self.tool_call.to_string())
            .current_dir(&self.project)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(window) = self.windows.last() {
            cmd.env("PRELOAD_TEST_LOG", &window.log);
        }
        cmd
    }

    /// Run one process with `stdin`; never waits longer than [`CALL_TIMEOUT`].
    fn spawn(&self, label: String, binary: &str, args: &[String], stdin: &str) -> Call {
        let failed = |why: String| Call {
            label: label.clone(),
            millis: 0.0,
            stdout: String::new(),
            stderr: why,
            code: None,
        };
        let started = Instant::now();
        let mut child = match self.command(binary, args).spawn() {
            Ok(c) => c,
            Err(e) => return failed(format!("cannot start {binary}: {e}")),
        };
        if let Some(mut input) = child.stdin.take() {
            let _ = input.write_all(stdin.as_bytes());
        }
        let pid = child.id();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        match rx.recv_timeout(CALL_TIMEOUT) {
            Ok(Ok(out)) => Call {
                label,
                millis: started.elapsed().as_secs_f64() * 1000.0,
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                code: out.status.code(),
            },
            Ok(Err(e)) => failed(format!("{binary}: {e}")),
            Err(_) => {
                if let Ok(raw) = i32::try_from(pid) {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(raw),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                failed(format!("{binary} did not finish within {CALL_TIMEOUT:?}"))
            }
        }
    }

    /// Fire `event` at every registered handler whose matcher takes `match_value`, all at
    /// once; returns their answers.
    fn fire(&mut self, event: &str, match_value: Option<&str>, mut input: Value) -> Vec<Call> {
        if let Some(obj) = input.as_object_mut() {
            obj.insert("hook_event_name".into(), json!(event));
            obj.insert("session_id".into(), json!("demo-session"));
            obj.insert(
                "transcript_path".into(),
                json!(self.root.join("transcript.jsonl")),
            );
            obj.insert("cwd".into(), json!(self.project));
        }
        let stdin = input.to_string();
        let mut jobs: Vec<(String, &str, Vec<String>)> = Vec::new();
        for row in WIRING
            .iter()
            .filter(|r| r.event.name() == event && matches(r, match_value))
        {
            let args: Vec<String> = row.args.iter().map(|a| (*a).to_owned()).collect();
            let label = if args.is_empty() {
                row.binary.to_owned()
            } else {
                format!("{} {}", row.binary, args.join(" "))
            };
            if row.chunked {
                for i in 0..SESSION_START_CHUNKS {
                    let mut chunk = args.clone();
                    chunk.push("--chunk".into());
                    chunk.push(format!("{i}/{SESSION_START_CHUNKS}"));
                    jobs.push((label.clone(), row.binary, chunk));
                }
            } else {
                jobs.push((label, row.binary, args));
            }
        }
        let this = &*self;
        let calls: Vec<Call> = std::thread::scope(|scope| {
            let handles: Vec<_> = jobs
                .iter()
                .map(|(label, binary, args)| {
                    let stdin = &stdin;
                    scope.spawn(move || this.spawn(label.clone(), binary, args, stdin))
                })
                .collect();
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        for call in &calls {
            self.check_contract(call);
            if let Some(window) = self.windows.last_mut() {
                window.chars += call.context_chars();
            }
        }
        self.calls.extend(calls.iter().map(|c| Call {
            label: c.label.clone(),
            millis: c.millis,
            stdout: String::new(),
            stderr: String::new(),
            code: c.code,
        }));
        calls
    }

    /// CONTRACT section 4: exit 0, empty stderr, stdout empty or one JSON object on one line.
    fn check_contract(&mut self, call: &Call) {
        let mut wrong = Vec::new();
        if call.code != Some(0) {
            wrong.push(format!("exit {:?}", call.code));
        }
        if !call.stderr.is_empty() {
            wrong.push(format!("stderr {:?}", call.stderr.trim()));
        }
        if !call.stdout.is_empty()
            && (call.json().is_none() || call.stdout.trim_end().contains('\n'))
        {
            wrong.push("stdout is not one JSON line".into());
        }
        if !wrong.is_empty() {
            self.problems
                .push(format!("{}: {}", call.label, wrong.join(", ")));
        }
    }

    /// One tool call: `PreToolUse`, then (unless denied) `PostToolUse`.
    #[allow(clippy::needless_pass_by_value)]
    fn tool(&mut self, name: &str, tool_input: Value, response: Value) {
        self.tool_call += 1;
        let pre = self.fire(
            "PreToolUse",
            Some(name),
            json!({"tool_name": name, "tool_input": tool_input, "tool_use_id": format!("toolu_{}", self.tool_call)}),
        );
        if let Some(denied) = pre.iter().find(|c| c.denied()) {
            let reason = denied.json().map_or_else(String::new, |v| {
                let text = v["hookSpecificOutput"]["permissionDecisionReason"]
                    .as_str()
                    .or_else(|| v["reason"].as_str())
                    .unwrap_or_default()
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .chars()
                    .take(100)
                    .collect::<String>();
                format!(": {text}")
            });
            self.notes.push(format!(
                "tool call {} ({name}) denied by {}{reason}",
                self.tool_call, denied.label
            ));
            return;
        }
        self.fire(
            "PostToolUse",
            Some(name),
            json!({"tool_name": name, "tool_input": tool_input, "tool_response": response,
                   "tool_use_id": format!("toolu_{}", self.tool_call)}),
        );
    }

    fn read(&mut self, rel: &str) {
        let path = self.project.join(rel);
        let content = fs::read_to_string(&path).unwrap_or_default();
        self.tool(
            "Read",
            json!({"file_path": path}),
            json!({"type": "text", "file": {"filePath": path, "content": content}}),
        );
    }

    fn edit(&mut self, rel: &str) {
        let path = self.project.join(rel);
        self.tool(
            "Edit",
            json!({"file_path": path, "old_string": "a + b", "new_string": "a + b"}),
            json!({"filePath": path, "success": true}),
        );
    }

    /// A `preload` subcommand (not a hook); returns its stdout.
    fn cli(&mut self, args: &[&str], stdin: &str) -> String {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        let label = format!("preload {}", args[0]);
        let call = self.spawn(label.clone(), "preload", &args, stdin);
        if call.code != Some(0) {
            self.notes.push(format!(
                "{label} failed (exit {:?}): {}",
                call.code,
                call.stderr.trim()
            ));
        }
        let out = call.stdout.clone();
        self.calls.push(call);
        out
    }

    fn bash(&mut self, command: &str, stdout: &str) {
        self.tool(
            "Bash",
            json!({"command": command, "description": "engine session"}),
            json!({"stdout": stdout, "stderr": "", "interrupted": false}),
        );
    }

    /// The state file hooks work on: the session, else this process's seed.
    fn state(&self) -> Option<(PathBuf, Value)> {
        let session = self.session_dir().join(".state.json");
        let seed = self
            .project
            .join("sessions/.seeds")
            .join(format!("{}.json", self.pid));
        [session, seed].into_iter().find_map(|p| {
            let v = serde_json::from_str::<Value>(&fs::read_to_string(&p).ok()?).ok()?;
            Some((p, v))
        })
    }

    fn pending(&self) -> usize {
        self.state().map_or(0, |(_, s)| {
            ["pendingPreloads", "pendingAllowInjections"]
                .iter()
                .map(|k| s[*k].as_array().map_or(0, Vec::len))
                .sum()
        })
    }

    fn run(&mut self) {
        let dir = self.session_dir();
        let dir_s = dir.to_string_lossy().into_owned();
        let rel = format!("sessions/{SESSION}");

        // 1. Claude starts.
        self.fire(
            "SessionStart",
            Some("startup"),
            json!({"source": "startup"}),
        );
        // 2. The user asks for /implement; Claude Code expands the skill and calls it.
        self.fire(
            "UserPromptSubmit",
            None,
            json!({"prompt": "/implement add a running total to the estimate parser"}),
        );
        self.tool(
            "Skill",
            json!({"skill": "implement", "args": "add a running total to the estimate parser"}),
            json!({"success": true, "commandName": "implement"}),
        );
        // 3. The agent activates its session (the session gate holds other tools until then).
        let activated = self.cli(&["activate", &dir_s, "--skill", "implement"], "");
        self.bash(
            &format!("engine session activate {rel} implement"),
            &activated,
        );
        // 4. Phases 1, 2 and 3.A, with work in between; each transition pipes the proof the
        //    phase being left asks for (its `Proof required to leave this phase` list).
        for (phase, work, proof) in [
            (
                "1: Interrogation",
                "packages/estimate/src/parser.ts",
                PROOF_OF_SETUP,
            ),
            (
                "2: Planning",
                "packages/estimate/tests/parser.test.ts",
                PROOF_OF_INTERROGATION,
            ),
            (
                "3.A: Build Loop",
                "packages/estimate/src/total.ts",
                PROOF_OF_PLANNING,
            ),
        ] {
            let said = self.cli(&["phase", &dir_s, phase], proof);
            self.bash(
                &format!("engine session phase {rel} \"{phase}\" <<'EOF'\n{proof}EOF"),
                &said,
            );
            self.read(work);
            self.tool(
                "Grep",
                json!({"pattern": "total", "path": self.project.join("packages/estimate")}),
                json!({"mode": "files_with_matches", "filenames": []}),
            );
            self.edit("packages/estimate/src/total.ts");
        }
        // 5. The context fills up: compaction, then a new context window.
        self.fire(
            "PreCompact",
            Some("auto"),
            json!({"trigger": "auto", "custom_instructions": ""}),
        );
        self.windows.push(Window {
            name: "after compaction",
            log: self.root.join("delivery-log-2.jsonl"),
            chars: 0,
        });
        self.fire(
            "SessionStart",
            Some("compact"),
            json!({"source": "compact"}),
        );
        // 6. Resume the work.
        self.read("packages/estimate/src/total.ts");
        self.edit("packages/estimate/src/total.ts");
        self.read("packages/estimate/tests/parser.test.ts");
        let mut drained = 0;
        while self.pending() > 0 && drained < MAX_DRAIN_CALLS {
            if drained % DRAIN_LOG_EVERY == 0 {
                self.bash(
                    &format!("engine log {rel}/IMPLEMENTATION_LOG.md <<'EOF'\n## Reading on\nEOF"),
                    "",
                );
            }
            self.read("packages/estimate/src/parser.ts");
            drained += 1;
        }
        if drained > 0 {
            let calls = if drained == 1 { "call" } else { "calls" };
            self.notes.push(format!(
                "{drained} more tool {calls} delivered what was still queued"
            ));
        }
        self.fire("Stop", None, json!({"stop_hook_active": false}));
        // 7. The user quits.
        self.quit();
    }

    /// `SessionEnd` as the user quits: the process's seed goes, the session stays.
    fn quit(&mut self) {
        self.fire(
            "SessionEnd",
            Some("prompt_input_exit"),
            json!({"reason": "prompt_input_exit"}),
        );
        let seed = self
            .project
            .join("sessions/.seeds")
            .join(format!("{}.json", self.pid));
        if seed.exists() {
            self.ending
                .push(format!("the process's seed {} is left", seed.display()));
        }
        if !self.session_dir().join(".state.json").is_file() {
            self.ending.push("the session is gone".into());
        }
    }

    /// The context packs a window received: name, the hook and moment that delivered each, and
    /// its estimated tokens as rendered now.
    fn print_packs(&self, report: &Report) {
        let loaded = packs::load(&self.project, &self.home.join(".claude"), &self.home);
        println!("context packs delivered ({}):", report.packs.len());
        for delivery in &report.packs {
            let tokens = loaded.by_key(&delivery.key).map_or_else(
                || "not configured".to_owned(),
                |pack| {
                    let rendered = packs::render(&loaded, pack, DEFAULT_MAX_FILE_BYTES);
                    format!(
                        "{} files loaded, ~{} tokens",
                        rendered.files_loaded, rendered.tokens
                    )
                },
            );
            println!(
                "  {:<16} by {} at {}: {tokens}",
                packs::name_of_key(&delivery.key).unwrap_or(&delivery.key),
                delivery.hook,
                delivery.source,
            );
        }
    }

    /// Print the report; true when the run passed.
    fn report(&self) -> bool {
        let mut ok = true;
        println!("=== preload demo: the bundled /implement lifecycle ===");
        println!(
            "{} tool calls, {} hook and CLI processes",
            self.tool_call,
            self.calls.len()
        );
        let mut duplicates = 0;
        let mut delivered = 0;
        let mut without_pack: Vec<&str> = Vec::new();
        for window in &self.windows {
            let report = Report::from_log(&fs::read_to_string(&window.log).unwrap_or_default());
            delivered += report.deliveries;
            duplicates += report.duplicates.len();
            println!(
                "\n--- context window: {} ({} events, {} files delivered, {} dedup skips) ---",
                window.name, report.total_events, report.unique_files, report.dedup_skips
            );
            println!("files delivered per hook:");
            if report.per_hook.is_empty() {
                println!("  (none)");
            }
            for (hook, n) in &report.per_hook {
                println!("  {hook:<16} {n}");
            }
            for d in &report.duplicates {
                println!(
                    "  DUPLICATE {}: {}x via {}",
                    d.file,
                    d.count,
                    d.hooks.join(", ")
                );
            }
            self.print_packs(&report);
            if report.packs.is_empty() {
                without_pack.push(window.name);
            }
            println!(
                "context cost: {} chars, about {} tokens",
                window.chars,
                window.chars / 4
            );
        }
        let pending = self.pending();
        println!("\nduplicates:   {duplicates} (must be 0)");
        println!(
            "pending left: {pending} (must be 0){}",
            self.state()
                .map(|(p, _)| format!(" in {}", p.display()))
                .unwrap_or_default()
        );
        let total: usize = self.windows.iter().map(|w| w.chars).sum();
        println!(
            "context cost: {total} chars, about {} tokens in all",
            total / 4
        );
        println!("\nlatency per hook (median ms, calls):");
        let mut by_label: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for call in &self.calls {
            by_label.entry(&call.label).or_default().push(call.millis);
        }
        for (label, mut times) in by_label {
            let n = times.len();
            println!("  {label:<40} {:>7.2} ms  ({n})", median(&mut times));
        }
        for note in &self.notes {
            println!("note: {note}");
        }
        for problem in &self.problems {
            println!("CONTRACT: {problem}");
        }
        if duplicates > 0 {
            println!("FAIL: files were delivered more than once in one context window");
            ok = false;
        }
        if pending > 0 {
            println!("FAIL: files are still pending after the drain");
            ok = false;
        }
        if !self.problems.is_empty() {
            println!("FAIL: answers broke the output contract");
            ok = false;
        }
        for wrong in &self.ending {
            println!("FAIL: after SessionEnd, {wrong}");
            ok = false;
        }
        for window in &without_pack {
            println!("FAIL: the context window {window} received no context pack");
            ok = false;
        }
        if delivered == 0 {
            println!("FAIL: no file was delivered at all; are the hook binaries complete?");
            ok = false;
        }
        if ok {
            println!("\nPASS");
        }
        ok
    }
}

fn main() -> ExitCode {
    let keep = std::env::args().any(|a| a == "--keep");
    let bin = std::env::current_exe()
        .ok()
        .and_then(|p| Some(p.parent()?.parent()?.to_path_buf()));
    let Some(bin) = bin else {
        eprintln!("demo: cannot locate the binaries");
        return ExitCode::FAILURE;
    };
    let missing: Vec<&str> = WIRING
        .iter()
        .map(|w| w.binary)
        .chain(["preload"])
        .filter(|b| !bin.join(b).is_file())
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "demo: missing in {}: {}; run `cargo build --release --locked` first",
            bin.display(),
            missing.join(", ")
        );
        return ExitCode::FAILURE;
    }
    let tmp = match tempfile::Builder::new().prefix("preload-demo").tempdir() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("demo: cannot create a temporary directory: {e}");
            return ExitCode::FAILURE;
        }
    };
    let root = tmp
        .path()
        .canonicalize()
        .unwrap_or_else(|_| tmp.path().to_path_buf());
    let mut demo = match Demo::new(bin, root) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("demo: {e}");
            return ExitCode::FAILURE;
        }
    };
    demo.run();
    let ok = demo.report();
    if keep {
        let kept = tmp.keep();
        println!("kept {}", kept.display());
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
