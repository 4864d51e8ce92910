//! Reliability and security: crashes at random instants, hostile stdin, broken files on disk,
//! containment of what is read and written, and many writers at once (hooks and the engine's
//! bash). Figures are printed with `--nocapture` and quoted in `docs/reliability.md`.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::items_after_statements,
    clippy::panic,
    clippy::similar_names,
    clippy::too_many_lines
)]

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use preload_core::primitives::env;
use serde_json::{Value, json};

use preload_test_support::sandbox::{Sandbox, bin, litter, read_json};

mod bad_files;
mod bad_input;
mod concurrency;
mod containment;
mod crashes;
mod faults;

/// Every hook binary with the arguments it is registered with.
const HOOKS: &[(&str, &[&str])] = &[
    ("preload-session-start", &[]),
    ("preload-session-start", &["--chunk", "0/2"]),
    ("preload-prompt-submit", &[]),
    ("preload-templates", &[]),
    ("preload-phase-commands", &[]),
    ("preload-overflow", &[]),
    ("preload-injections", &[]),
    ("preload-compaction-reread", &["precompact"]),
    ("preload-compaction-reread", &["pretooluse"]),
    ("preload-compaction-reread", &["stop"]),
    ("preload-compaction-reread", &["sessionstart"]),
    ("preload-session-end", &[]),
    ("preload-e2e-auto-answer", &[]),
];

/// Longer than any hook may take (SessionStart budget 5 s); a run past it is a hang.
const HANG: Duration = Duration::from_secs(10);

/// A small deterministic generator (xorshift64*), seeded per test and printed on failure.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

fn seed_from_clock() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(7, |d| d.as_nanos() as u64)
}

/// What one process run gave.
#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl Run {
    /// CONTRACT 4 and 6: exit 0, nothing on stderr, stdout empty or exactly one JSON object on
    /// one line.
    fn assert_contract(&self, what: &str) {
        assert_eq!(
            self.code,
            Some(0),
            "{what}: exit code; stderr: {}",
            self.stderr
        );
        assert!(self.stderr.is_empty(), "{what}: stderr: {}", self.stderr);
        assert!(self.elapsed < HANG, "{what}: took {:?}", self.elapsed);
        if self.stdout.is_empty() {
            return;
        }
        assert!(
            self.stdout.ends_with('\n') && self.stdout.matches('\n').count() == 1,
            "{what}: one line: {:?}",
            self.stdout
        );
        let v: Value = serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("{what}: stdout is not JSON ({e}): {:?}", self.stdout));
        assert!(v.is_object(), "{what}: not an object: {v}");
    }

    fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim()).unwrap_or(Value::Null)
    }

    fn context(&self) -> String {
        let v = self.json();
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    }
}

/// A hook process with the sandbox's environment.
fn command(sb: &Sandbox, name: &str, args: &[&str], extra: &[(&str, &str)]) -> Command {
    let mut cmd = sandboxed_command(sb, &bin(name));
    cmd.args(args);
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd
}

/// `program` with the sandbox's environment (as `Sandbox::command` sets it, without the hooks'
/// budget), its three streams piped.
fn sandboxed_command(sb: &Sandbox, program: &Path) -> Command {
    let mut cmd = sb.std_command_at(&[], program, false);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Run a hook with raw stdin; the stdin writer tolerates a hook that exits without reading.
fn run_raw(sb: &Sandbox, name: &str, args: &[&str], stdin: &[u8], extra: &[(&str, &str)]) -> Run {
    let started = Instant::now();
    let mut child = command(sb, name, args, extra).spawn().expect("spawn hook");
    finish(&mut child, stdin.to_vec(), started)
}

fn finish(child: &mut Child, stdin: Vec<u8>, started: Instant) -> Run {
    let input = child.stdin.take();
    let writer = std::thread::spawn(move || {
        if let Some(mut input) = input {
            let _ = input.write_all(&stdin);
        }
    });
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code();
        }
        if started.elapsed() > HANG + Duration::from_secs(5) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_micros(300));
    };
    let elapsed = started.elapsed();
    let _ = writer.join();
    Run {
        code,
        stdout: String::from_utf8_lossy(&reader.join().unwrap_or_default()).into_owned(),
        stderr: String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned(),
        elapsed,
    }
}

fn run_json(sb: &Sandbox, name: &str, args: &[&str], input: &Value) -> Run {
    run_raw(sb, name, args, input.to_string().as_bytes(), &[])
}

fn post_tool_use(sb: &Sandbox) -> Value {
    json!({"hook_event_name": "PostToolUse", "tool_name": "Bash", "cwd": sb.project,
        "session_id": "s", "transcript_path": "/tmp/x/t.jsonl",
        "tool_input": {"command": "ls"}, "tool_response": {"stdout": ""}})
}

/// Inputs that make each hook do real work (a skill, a phase, a tool call).
fn working_inputs(sb: &Sandbox) -> Vec<(&'static str, &'static [&'static str], Value)> {
    let base = |extra: Value| {
        let mut v = json!({"cwd": sb.project, "session_id": "bad-files",
            "transcript_path": "/tmp/x/bad.jsonl"});
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        v
    };
    vec![
        (
            "preload-session-start",
            &[],
            base(json!({"hook_event_name": "SessionStart", "source": "startup"})),
        ),
        (
            "preload-session-start",
            &["--chunk", "1/2"],
            base(json!({"hook_event_name": "SessionStart", "source": "resume"})),
        ),
        (
            "preload-prompt-submit",
            &[],
            base(
                json!({"hook_event_name": "UserPromptSubmit", "prompt": "/implement add a thing"}),
            ),
        ),
        (
            "preload-templates",
            &[],
            base(
                json!({"hook_event_name": "PostToolUse", "tool_name": "Skill", "tool_input": {"skill": "implement"}}),
            ),
        ),
        (
            "preload-phase-commands",
            &[],
            base(
                json!({"hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_input": {"command": "engine session phase sessions/x \"1: Interrogation\""},
            "tool_response": {"stdout": "Phase: 1: Interrogation"}}),
            ),
        ),
        (
            "preload-overflow",
            &[],
            base(json!({"hook_event_name": "PreToolUse", "tool_name": "Read",
            "tool_input": {"file_path": sb.project.join("packages/estimate/src/total.ts")}})),
        ),
        (
            "preload-injections",
            &[],
            base(json!({"hook_event_name": "PostToolUse", "tool_name": "Read"})),
        ),
        (
            "preload-compaction-reread",
            &["precompact"],
            base(json!({"hook_event_name": "PreCompact", "trigger": "auto"})),
        ),
        (
            "preload-compaction-reread",
            &["pretooluse"],
            base(json!({"hook_event_name": "PreToolUse", "tool_name": "Read"})),
        ),
        (
            "preload-compaction-reread",
            &["stop"],
            base(json!({"hook_event_name": "Stop"})),
        ),
        (
            "preload-e2e-auto-answer",
            &[],
            base(
                json!({"hook_event_name": "PreToolUse", "tool_name": "AskUserQuestion",
            "tool_input": {"questions": [{"question": "q", "options": [{"label": "a"}]}]}}),
            ),
        ),
    ]
}

fn make_fifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
}

/// Run `f` on a thread; a hang becomes a test failure instead of a stuck suite.
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(HANG)
        .unwrap_or_else(|_| panic!("{what}: hung"))
}
