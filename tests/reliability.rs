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

use crate::common::{Sandbox, bin, litter, read_json};

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
    let mut cmd = Command::new(bin(name));
    cmd.args(args)
        .env_clear()
        .env(env::HOME, &sb.home)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env(env::CLAUDE_SUPERVISOR_PID, sb.pid.to_string())
        .env(env::PRELOAD_TEST_LOG, &sb.log)
        .env(env::CLAUDE_SESSION_CACHE_DIR, sb.root())
        .env(env::TMPDIR, sb.root())
        .current_dir(&sb.project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in extra {
        cmd.env(k, v);
    }
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

// ---------------------------------------------------------------------------------------------
// Crashes
// ---------------------------------------------------------------------------------------------

/// A session whose `.state.json` is large (so a write takes a while) with one stash entry.
fn crash_session(sb: &Sandbox) -> (PathBuf, Vec<u8>) {
    let history: Vec<Value> = (0..200)
        .map(|i| json!({"i": i, "note": format!("{i:05} {}", "lorem ipsum ".repeat(20))}))
        .collect();
    let dir = sb.active_session(
        "crash",
        &json!({"zHistory": history, "pendingAllowInjections": [
            {"ruleId": "preload", "content": "STASHED-ONCE", "agentId": ""}
        ]}),
    );
    let path = dir.join(".state.json");
    (path.clone(), fs::read(&path).unwrap())
}

/// Kill `preload-injections` with SIGKILL at random instants of its run, 200 times. After each
/// kill the state is the old or the new version, never partial; the next hook reclaims the
/// dead holder's lock at once and delivers what is left; no lock or temporary survives; the
/// stash entry reaches stdout at most once over the killed and the next run.
#[test]
fn hooks_killed_at_random_instants_leave_old_or_new_state_and_no_litter() {
    let sb = Sandbox::bare();
    let (path, old_bytes) = crash_session(&sb);
    let dir = path.parent().unwrap().to_path_buf();
    let old: Value = serde_json::from_slice(&old_bytes).unwrap();
    let input = post_tool_use(&sb).to_string();
    // One clean run: the new version and how long a run takes.
    let clean = run_raw(&sb, "preload-injections", &[], input.as_bytes(), &[]);
    clean.assert_contract("clean run");
    assert!(clean.context().contains("STASHED-ONCE"));
    let new = read_json(&path);
    assert_ne!(old, new);
    let mut span = Duration::MAX;
    for _ in 0..3 {
        fs::write(&path, &old_bytes).unwrap();
        let r = run_raw(&sb, "preload-injections", &[], input.as_bytes(), &[]);
        span = span.min(r.elapsed);
    }
    let span_us = (span.as_micros() as usize).max(500);
    let seed = seed_from_clock();
    let mut rng = Rng::new(seed);
    let mut tally: BTreeMap<&str, usize> = BTreeMap::new();
    const TRIALS: usize = 200;
    // Zero timeout: the next hook succeeds only when it reclaims without waiting.
    let no_wait = [(env::PRELOAD_LOCK_TIMEOUT_MS, "0")];
    for trial in 0..TRIALS {
        fs::write(&path, &old_bytes).unwrap();
        let started = Instant::now();
        let mut child = command(&sb, "preload-injections", &[], &[])
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let offset = Duration::from_micros(rng.below(span_us * 12 / 10) as u64);
        while started.elapsed() < offset {
            std::hint::spin_loop();
        }
        let _ = child.kill();
        let killed = finish(&mut child, Vec::new(), started);
        let what = format!("trial {trial} (seed {seed}, kill at {offset:?})");
        let after = read_json(&path);
        let committed = if after == old {
            false
        } else {
            assert_eq!(after, new, "{what}: partial state");
            true
        };
        let lock_left = dir.join(".state.json.lock").exists();
        let temps_left = litter(&dir).iter().filter(|n| n.contains(".tmp.")).count();
        // Where in the write the kill landed, as the files show it.
        let step = match (committed, lock_left, temps_left > 0) {
            _ if killed.code.is_some() => "step: run finished",
            (false, false, false) => "step: before the lock",
            (false, true, false) => "step: lock held, nothing written",
            (false, _, true) => "step: temporary being written",
            (true, true, _) => "step: renamed, lock held",
            (true, false, _) => "step: lock released, not exited",
        };
        *tally.entry(step).or_default() += 1;
        *tally
            .entry(if committed { "state new" } else { "state old" })
            .or_default() += 1;
        *tally.entry("lock left by the killed run").or_default() += usize::from(lock_left);
        *tally
            .entry("temporaries left by the killed run")
            .or_default() += temps_left;
        if killed.code.is_some() {
            *tally.entry("run finished before the kill").or_default() += 1;
        }
        // The next hook: reclaims at once, delivers what is left, leaves nothing behind.
        let next = run_raw(&sb, "preload-injections", &[], input.as_bytes(), &no_wait);
        next.assert_contract(&what);
        let delivered_now = next.context().contains("STASHED-ONCE");
        let delivered_before = killed.stdout.contains("STASHED-ONCE");
        assert_eq!(
            delivered_now, !committed,
            "{what}: next run delivers exactly what is left"
        );
        assert!(
            !(delivered_now && delivered_before),
            "{what}: delivered twice"
        );
        if committed && killed.code.is_none() {
            // Claude Code reads a hook's output only from a clean exit: this one call's
            // output is lost (see docs/reliability.md, "the one window").
            *tally.entry("committed, killed before exit").or_default() += 1;
        }
        assert_eq!(read_json(&path), new, "{what}");
        assert!(litter(&dir).is_empty(), "{what}: litter {:?}", litter(&dir));
    }
    println!("crash trials: {TRIALS}, run span {span:?}, seed {seed}: {tally:?}");
    assert!(
        tally.get("state old").copied().unwrap_or(0) > 0,
        "some kills landed before commit"
    );
}

/// The engine's bash holder killed while it holds the lock: the next hook takes the lock over
/// at once (PID check), even with no time to wait.
#[test]
fn a_killed_bash_lock_holder_is_reclaimed_at_once() {
    let sb = Sandbox::bare();
    let dir = sb.active_session(
        "bash",
        &json!({"pendingAllowInjections": [{"ruleId": "r", "content": "AFTER-BASH", "agentId": ""}]}),
    );
    let state = dir.join(".state.json");
    let lock = dir.join(".state.json.lock");
    let script = format!(
        "mkdir '{l}' && echo $$ > '{l}/pid' && exec sleep 30",
        l = lock.display()
    );
    let mut holder = Command::new("bash").arg("-c").arg(&script).spawn().unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    while !lock.join("pid").exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(2));
    }
    let input = post_tool_use(&sb).to_string();
    let no_wait = [(env::PRELOAD_LOCK_TIMEOUT_MS, "0")];
    // Alive: excluded, fails open, state untouched.
    let blocked = run_raw(&sb, "preload-injections", &[], input.as_bytes(), &no_wait);
    blocked.assert_contract("live holder");
    assert!(blocked.stdout.is_empty());
    assert!(
        lock.join("pid").exists(),
        "a live holder's lock is never taken"
    );
    holder.kill().unwrap();
    holder.wait().unwrap();
    let next = run_raw(&sb, "preload-injections", &[], input.as_bytes(), &no_wait);
    next.assert_contract("dead holder");
    assert!(next.context().contains("AFTER-BASH"), "{next:?}");
    assert!(!lock.exists());
    assert!(
        read_json(&state)["pendingAllowInjections"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

// ---------------------------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------------------------

const FIELDS: &[&str] = &[
    "session_id",
    "transcript_path",
    "cwd",
    "hook_event_name",
    "tool_name",
    "tool_input",
    "tool_response",
    "prompt",
    "source",
    "trigger",
    "agent_id",
    "stop_hook_active",
    "tool_use_id",
    "permission_mode",
];

const TOOL_FIELDS: &[&str] = &[
    "command",
    "skill",
    "file_path",
    "args",
    "questions",
    "pattern",
    "content",
    "description",
];

fn nasty_string(rng: &mut Rng, sb: &Sandbox) -> String {
    let project = sb.project.to_string_lossy().into_owned();
    let choices = [
        String::new(),
        "../../../../etc/passwd".to_owned(),
        format!("{project}/../../etc/shadow"),
        format!("{project}/sessions/../.claude/../sessions/x/.state.json"),
        "a\u{0}b".to_owned(),
        "line1\nline2\r\n\\n".to_owned(),
        "§CMD_../../../etc §FMT_/ §INV_A\u{0}B".to_owned(),
        "ünïcødé 😀 \u{202e} \u{feff}".to_owned(),
        "x".repeat(70_000),
        "Phase: 1: Interrogation\nengine session phase 3.A".to_owned(),
        "implement".to_owned(),
        "/".to_owned(),
        "~/.claude/.directives/COMMANDS.md".to_owned(),
        format!("{project}/.directives/INVARIANTS.md"),
        "engine session phase sessions/x \"2: Plan\"".to_owned(),
        "\u{7f}\u{1b}[31m".to_owned(),
    ];
    rng.pick(&choices).clone()
}

fn nasty_value(rng: &mut Rng, sb: &Sandbox, depth: usize) -> Value {
    match rng.below(if depth > 3 { 7 } else { 9 }) {
        0 => Value::Null,
        1 => json!(rng.below(2) == 0),
        2 => json!(rng.next() as i64),
        3 => json!(-1.5e308),
        4..=6 => json!(nasty_string(rng, sb)),
        7 => Value::Array(
            (0..rng.below(4))
                .map(|_| nasty_value(rng, sb, depth + 1))
                .collect(),
        ),
        _ => {
            let mut map = serde_json::Map::new();
            for _ in 0..rng.below(5) {
                let key = (*rng.pick(TOOL_FIELDS)).to_owned();
                map.insert(key, nasty_value(rng, sb, depth + 1));
            }
            Value::Object(map)
        }
    }
}

/// One generated stdin.
fn nasty_stdin(rng: &mut Rng, sb: &Sandbox) -> Vec<u8> {
    let events = [
        "PreToolUse",
        "PostToolUse",
        "SessionStart",
        "UserPromptSubmit",
        "Stop",
        "PreCompact",
        "Nonsense",
        "",
    ];
    let mut obj = serde_json::Map::new();
    for field in FIELDS {
        if rng.below(3) == 0 {
            continue;
        }
        let value = match (*field, rng.below(3)) {
            ("cwd", 0) => json!(sb.project),
            ("hook_event_name", 0) => json!(rng.pick(&events)),
            ("tool_name", 0) => json!(rng.pick(&["Bash", "Skill", "Read", "AskUserQuestion", "x"])),
            _ => nasty_value(rng, sb, 0),
        };
        obj.insert((*field).to_owned(), value);
    }
    let text = Value::Object(obj).to_string();
    match rng.below(12) {
        // Truncated.
        0 => text.as_bytes()[..rng.below(text.len())].to_vec(),
        // A byte flipped into non-UTF-8.
        1 => {
            let mut bytes = text.into_bytes();
            let at = rng.below(bytes.len());
            bytes[at] = 0xff;
            bytes
        }
        // Random bytes.
        2 => (0..rng.below(512)).map(|_| rng.next() as u8).collect(),
        // Nested deeper than any parser limit.
        3 => {
            let depth = 1 + rng.below(5000);
            let open = rng.pick(&["[", "{\"a\":"]).to_owned();
            open.repeat(depth).into_bytes()
        }
        _ => text.into_bytes(),
    }
}

fn fixed_stdins(sb: &Sandbox) -> Vec<Vec<u8>> {
    let deep = format!("{{\"tool_input\":{}1{}}}", "[".repeat(120), "]".repeat(120));
    let deep_obj = format!(
        "{{\"cwd\":\"{}\",\"tool_input\":{}1{}}}",
        sb.project.display(),
        "{\"a\":".repeat(126),
        "}".repeat(126)
    );
    vec![
        Vec::new(),
        b"   \n\t".to_vec(),
        b"null".to_vec(),
        b"[]".to_vec(),
        b"\"string\"".to_vec(),
        b"42".to_vec(),
        b"{}".to_vec(),
        b"{\"cwd\": 5}".to_vec(),
        b"{} {}".to_vec(),
        b"{\"a\":1}\n{\"b\":2}".to_vec(),
        vec![0xff, 0xfe, 0x00, 0x7b],
        b"\xef\xbb\xbf{}".to_vec(),
        deep.into_bytes(),
        deep_obj.into_bytes(),
        format!(
            "{{\"cwd\":\"{}\",\"prompt\":\"{}\"}}",
            sb.project.display(),
            "p".repeat(3_000_000)
        )
        .into_bytes(),
    ]
}

/// Thousands of generated stdins over every hook binary: every run exits 0 within its budget
/// with an empty stdout or exactly one JSON object; 10 MB of stdin and a stdin that never
/// closes are refused the same way.
#[test]
fn hostile_stdin_never_breaks_any_hook() {
    let sb = Sandbox::new();
    sb.active_session(
        "hostile",
        &json!({"pendingPreloads": [sb.engine_path("SIGILS.md")]}),
    );
    let seed = seed_from_clock();
    const PER_HOOK: usize = 110;
    let started = Instant::now();
    let runs = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for (worker, hooks) in HOOKS.chunks(HOOKS.len().div_ceil(3)).enumerate() {
            let sb = &sb;
            let runs = &runs;
            scope.spawn(move || {
                let mut rng = Rng::new(seed ^ ((worker as u64 + 1) * 0x9E37_79B9));
                for (name, args) in hooks {
                    let mut inputs = fixed_stdins(sb);
                    inputs.extend((0..PER_HOOK).map(|_| nasty_stdin(&mut rng, sb)));
                    for stdin in inputs {
                        let run = run_raw(sb, name, args, &stdin, &[]);
                        let head: String =
                            String::from_utf8_lossy(&stdin[..stdin.len().min(120)]).into();
                        run.assert_contract(&format!("{name} {args:?} seed {seed} stdin {head:?}"));
                        runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    // 10 MB: more than the 8 MiB read.
                    let huge = run_raw(sb, name, args, &vec![b' '; 10 * 1024 * 1024], &[]);
                    huge.assert_contract(&format!("{name} {args:?} 10 MB stdin"));
                    runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            });
        }
        // A stdin that never closes (one hook is enough: the runner is shared).
        scope.spawn(|| {
            let started = Instant::now();
            let mut child = command(&sb, "preload-injections", &[], &[])
                .spawn()
                .unwrap();
            let held = child.stdin.take();
            let mut out = String::new();
            child
                .stdout
                .take()
                .unwrap()
                .read_to_string(&mut out)
                .unwrap();
            let status = child.wait().unwrap();
            drop(held);
            assert_eq!(status.code(), Some(0));
            assert!(out.is_empty());
            assert!(started.elapsed() < HANG);
        });
    });
    let state = sb.state("hostile");
    assert!(state.is_object(), "the session state stays a JSON object");
    println!(
        "hostile stdin: {} runs over {} hook registrations in {:?} (seed {seed})",
        runs.into_inner(),
        HOOKS.len(),
        started.elapsed()
    );
}

// ---------------------------------------------------------------------------------------------
// Bad files
// ---------------------------------------------------------------------------------------------

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

/// Run every hook once; each must keep the contract.
fn run_every_hook(sb: &Sandbox, what: &str) {
    for (name, args, input) in working_inputs(sb) {
        let run = run_json(sb, name, args, &input);
        run.assert_contract(&format!("{what}: {name} {args:?}"));
    }
}

fn make_fifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
}

/// What can stand where a JSON file is expected.
enum Bad {
    Text(Vec<u8>),
    Directory,
    Fifo,
}

fn bad_files(valid: &str) -> Vec<(&'static str, Bad)> {
    vec![
        ("not JSON", Bad::Text(b"{not json".to_vec())),
        ("empty", Bad::Text(Vec::new())),
        (
            "truncated",
            Bad::Text(valid.as_bytes()[..valid.len() / 2].to_vec()),
        ),
        ("an array", Bad::Text(b"[{\"pid\": 1}]".to_vec())),
        ("a string", Bad::Text(b"\"text\"".to_vec())),
        ("not UTF-8", Bad::Text(vec![b'{', 0xff, 0xfe, b'}'])),
        (
            "huge",
            Bad::Text({
                let mut v = b"{\"pad\": \"".to_vec();
                v.resize(17 * 1024 * 1024, b'a');
                v.extend_from_slice(b"\"}");
                v
            }),
        ),
        ("a directory", Bad::Directory),
        ("a FIFO", Bad::Fifo),
    ]
}

fn plant(path: &Path, bad: &Bad) {
    match bad {
        Bad::Text(bytes) => fs::write(path, bytes).unwrap(),
        Bad::Directory => fs::create_dir_all(path.join("inside")).unwrap(),
        Bad::Fifo => make_fifo(path),
    }
}

fn assert_untouched(path: &Path, bad: &Bad, what: &str) {
    let meta = fs::symlink_metadata(path).unwrap_or_else(|e| panic!("{what}: {e}"));
    match bad {
        Bad::Text(bytes) => {
            assert!(meta.is_file(), "{what}: replaced");
            assert!(fs::read(path).unwrap() == *bytes, "{what}: rewritten");
        }
        Bad::Directory => assert!(meta.is_dir() && path.join("inside").is_dir(), "{what}"),
        Bad::Fifo => {
            use std::os::unix::fs::FileTypeExt;
            assert!(meta.file_type().is_fifo(), "{what}");
        }
    }
}

/// Corrupt, empty, truncated, non-object, huge, directory or FIFO session states: every hook
/// fails open, never hangs, and never rewrites or replaces the file.
#[test]
fn broken_session_states_are_never_overwritten() {
    let valid = serde_json::to_string_pretty(&json!({"pid": std::process::id(),
        "skill": "implement", "lifecycle": "active", "currentPhase": "1: Interrogation",
        "preloadedFiles": [], "pendingPreloads": []}))
    .unwrap();
    std::thread::scope(|scope| {
        for (label, bad) in bad_files(&valid) {
            scope.spawn(move || {
                let sb = Sandbox::new();
                let dir = sb.sessions.join("broken");
                fs::create_dir_all(&dir).unwrap();
                let state = dir.join(".state.json");
                plant(&state, &bad);
                // The PID cache points the hooks straight at it.
                fs::write(
                    sb.root().join(format!("claude-session-cache-{}", sb.pid)),
                    format!("{}\n", dir.display()),
                )
                .unwrap();
                run_every_hook(&sb, label);
                assert_untouched(&state, &bad, label);
                assert!(litter(&dir).is_empty(), "{label}: {:?}", litter(&dir));
            });
        }
    });
}

/// The same for the owner's seed file and for `guards.json`.
#[test]
fn broken_seeds_and_guards_are_never_overwritten() {
    let valid = serde_json::to_string_pretty(&json!({"pid": std::process::id(),
        "lifecycle": "seeding", "preloadedFiles": [], "pendingPreloads": []}))
    .unwrap();
    std::thread::scope(|scope| {
        for (label, bad) in bad_files(&valid) {
            scope.spawn(move || {
                let sb = Sandbox::new();
                let seeds = sb.sessions.join(".seeds");
                fs::create_dir_all(&seeds).unwrap();
                let seed = sb.seed_path();
                plant(&seed, &bad);
                let guards = sb.home.join(".claude/engine/guards.json");
                let _ = fs::remove_file(&guards);
                plant(&guards, &bad);
                run_every_hook(&sb, label);
                assert_untouched(&seed, &bad, &format!("seed {label}"));
                assert_untouched(&guards, &bad, &format!("guards {label}"));
                assert!(litter(&seeds).is_empty(), "{label}: {:?}", litter(&seeds));
            });
        }
    });
}

/// A state that parses but has the wrong type in every field the hooks read: no hook panics,
/// and whatever they write keeps every field they do not own.
#[test]
fn wrong_types_in_every_state_field_fail_open() {
    let sb = Sandbox::new();
    let weird = json!({"skill": 7, "lifecycle": ["active"], "currentPhase": {"n": 1},
        "preloadedFiles": "not-a-list", "pendingPreloads": {"a": 1}, "touchedDirs": [1, 2],
        "pendingAllowInjections": "x", "injectedRules": 5, "contextUsage": "high",
        "toolCallsSinceLastLog": "many", "loading": "yes", "preloadParts": [],
        "zKeep": {"deep": [1, {"x": null}]}});
    sb.active_session("weird", &weird);
    run_every_hook(&sb, "wrong types");
    let after = sb.state("weird");
    assert_eq!(after["zKeep"], weird["zKeep"], "unknown fields survive");
    assert_eq!(after["pid"], json!(sb.pid));
}

/// Directive trees with a symlink loop, a FIFO and a directory named like a directive, and
/// 10,000 files: the hooks fail open or deliver, never hang, never read the FIFO.
#[test]
fn hostile_directive_trees_never_hang_a_hook() {
    let sb = Sandbox::new();
    sb.active_session("trees", &json!({}));
    let pkg = sb.project.join("packages/estimate");
    symlink("..", pkg.join(".directives/loop")).unwrap();
    symlink(&pkg, pkg.join("src/loop")).unwrap();
    symlink("self-loop", sb.project.join(".directives/self-loop")).unwrap();
    make_fifo(&pkg.join(".directives/PITFALLS-FIFO.md"));
    fs::create_dir_all(pkg.join(".directives/commands/CMD_DIRECTORY.md")).unwrap();
    make_fifo(
        &sb.home
            .join(".claude/engine/.directives/commands/CMD_FIFO.md"),
    );
    let many = sb.project.join("wide");
    for i in 0..100 {
        let d = many.join(format!("d{i}/.directives"));
        fs::create_dir_all(&d).unwrap();
        for j in 0..100 {
            fs::write(d.join(format!("F{j}.md")), "x").unwrap();
        }
    }
    fs::write(many.join("d7/main.ts"), "x").unwrap();
    let mut inputs = working_inputs(&sb);
    for target in [
        pkg.join("src/loop/src/loop/src/total.ts"),
        many.join("d7/main.ts"),
    ] {
        inputs.push((
            "preload-overflow",
            &[],
            json!({"cwd": sb.project, "hook_event_name": "PreToolUse",
            "tool_name": "Read", "tool_input": {"file_path": target}}),
        ));
    }
    for (name, args, input) in inputs {
        let run = run_json(&sb, name, args, &input);
        run.assert_contract(&format!("trees: {name} {args:?}"));
    }
    let state = sb.state("trees");
    let everything = state.to_string();
    assert!(
        !everything.contains("FIFO.md\""),
        "a FIFO is never queued as a preload: {state}"
    );
}

// ---------------------------------------------------------------------------------------------
// Containment
// ---------------------------------------------------------------------------------------------

fn core_context(sb: &Sandbox, extra: &[(&str, String)]) -> preload_core::Context {
    let mut pairs = vec![
        (env::HOME.to_owned(), sb.home.to_string_lossy().into_owned()),
        (env::CLAUDE_SUPERVISOR_PID.to_owned(), sb.pid.to_string()),
        (
            env::PRELOAD_TEST_LOG.to_owned(),
            sb.log.to_string_lossy().into_owned(),
        ),
    ];
    pairs.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
    let input = preload_core::HookInput::from_value(json!({"cwd": sb.project}));
    preload_core::Context::new(
        preload_core::primitives::env::Env::from_pairs(pairs),
        "reliability",
        &input,
        Duration::from_secs(5),
    )
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

/// Preloaded content comes only from regular files, at most `PRELOAD_MAX_FILE_BYTES`: FIFOs,
/// directories and devices are dropped from the queue without being opened for reading or
/// blocking; a larger file goes out as a pointer and its content is never read into the
/// output; the delivery log holds paths, never contents.
#[test]
fn preloads_come_only_from_regular_files_within_the_size_cap() {
    use preload_core::pipeline::preload::{self, Mode, Request};
    let sb = Sandbox::new();
    let dir = sb.active_session("contain", &json!({}));
    let fifo = sb.project.join("pipe.md");
    make_fifo(&fifo);
    let folder = sb
        .project_file("folder.md/inside", "x")
        .parent()
        .unwrap()
        .to_path_buf();
    let huge = sb.project_file(
        "huge.md",
        &format!("HUGE-CONTENT-MARKER\n{}", "h".repeat(300 * 1024)),
    );
    let fits = sb.project_file("fits.md", "SMALL-CONTENT-MARKER\n");
    let link = sb.project.join("link-to-fits.md");
    symlink(&fits, &link).unwrap();
    let paths: Vec<String> = [
        fifo.as_path(),
        &folder,
        Path::new("/dev/zero"),
        &huge,
        &fits,
    ]
    .iter()
    .map(|p| p.to_string_lossy().into_owned())
    .collect();
    let target = preload_core::mechanisms::session::PreloadState {
        path: dir.join(".state.json"),
        is_session: true,
    };
    {
        let paths = paths.clone();
        let target = target.clone();
        let sb_home = sb.home.clone();
        let _ = sb_home;
        let ctx = core_context(&sb, &[]);
        preload_core::state::update(
            &target.path,
            Instant::now() + Duration::from_secs(2),
            preload_core::state::Durability::PerCall,
            |s| {
                for p in &paths {
                    s.add_path(preload_core::state::QUEUED, p);
                }
            },
        )
        .unwrap();
        let requests = preload::pending_requests(
            &ctx,
            &preload_core::state::load(&target.path).unwrap(),
            "rule",
        );
        let batch = within("ensure over hostile files", move || {
            let mut packer = preload_core::primitives::delivery::Packer::new(9_500);
            preload::ensure(&ctx, &target, &requests, Mode::Claim, &mut packer).map(|b| b.text())
        })
        .unwrap();
        assert!(batch.contains("SMALL-CONTENT-MARKER"), "{batch}");
        assert!(
            !batch.contains("HUGE-CONTENT-MARKER"),
            "a file over the cap is not inlined"
        );
        assert!(
            batch.contains(&format!("[Preloaded: {}]", huge.display())),
            "pointer block: {batch}"
        );
        assert!(batch.chars().count() < 2_000, "{}", batch.chars().count());
    }
    let state = sb.state("contain");
    let preloaded = crate::common::strings(&state, "preloadedFiles");
    for bad in [&paths[0], &paths[1], &paths[2]] {
        assert!(
            !preloaded.contains(bad),
            "{bad} is not a regular file: {state}"
        );
    }
    assert!(
        crate::common::strings(&state, "pendingPreloads").is_empty(),
        "{state}"
    );
    // The symlink to an already delivered file is the same file: skipped by inode.
    let ctx = core_context(&sb, &[]);
    let mut packer = preload_core::primitives::delivery::Packer::new(9_500);
    let again = preload::ensure(
        &ctx,
        &target,
        &[Request::new(link.to_string_lossy(), "t")],
        Mode::Direct,
        &mut packer,
    )
    .unwrap();
    assert!(again.text().is_empty());
    // A cap of 10 bytes turns the small file into a pointer too.
    let small_cap = core_context(&sb, &[(env::PRELOAD_MAX_FILE_BYTES, "10".to_owned())]);
    let other = sb.project_file("other.md", "OTHER-CONTENT-MARKER, longer than ten bytes\n");
    let mut packer = preload_core::primitives::delivery::Packer::new(9_500);
    let capped = preload::ensure(
        &small_cap,
        &target,
        &[Request::new(other.to_string_lossy(), "t")],
        Mode::Direct,
        &mut packer,
    )
    .unwrap();
    assert!(
        !capped.text().contains("OTHER-CONTENT-MARKER") && capped.text().contains("[Preloaded: ")
    );
    let log = fs::read_to_string(&sb.log).unwrap();
    assert!(log.contains("fits.md"), "deliveries are logged");
    for marker in [
        "SMALL-CONTENT-MARKER",
        "HUGE-CONTENT-MARKER",
        "OTHER-CONTENT-MARKER",
    ] {
        assert!(!log.contains(marker), "the delivery log holds paths only");
    }
}

/// § references can only name `<…>/.directives/{commands,formats,invariants}/<KIND>_<NAME>.md`
/// inside the project root, `~/.claude`, or the engine, whatever the text around them; a
/// `.directives` above the project root is never used.
#[test]
fn references_never_name_a_path() {
    let sb = Sandbox::new();
    let outside = sb.project.parent().unwrap().join(".directives/commands");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("CMD_ABOVE_ROOT.md"), "x").unwrap();
    sb.directive("commands/CMD_ABOVE_ROOT_ENGINE.md", "x");
    let ctx = core_context(&sb, &[]);
    let resolver = preload_core::pipeline::preload::resolver(&ctx);
    let from = sb.project.join("packages/estimate/src/total.ts");
    let names = [
        "ABOVE_ROOT",
        "ABOVE_ROOT_ENGINE",
        "SELECT_MODE",
        "X",
        "../../etc/passwd",
        "A/B",
        "A\u{0}B",
        "..",
        "A.B",
    ];
    let glue = [
        "", " ", "`", "```\n", "\n", "/", "..", "§", "_", "é", "\u{0}", "§CMD_", "§FMT_", "§INV_",
    ];
    let mut rng = Rng::new(seed_from_clock());
    let shape = regex_lite(&sb);
    let mut resolved = 0;
    for _ in 0..3000 {
        let mut text = String::new();
        for _ in 0..rng.below(12) {
            text.push_str(glue[rng.below(glue.len())]);
            if rng.below(2) == 0 {
                text.push_str(["§CMD_", "§FMT_", "§INV_"][rng.below(3)]);
                text.push_str(names[rng.below(names.len())]);
            }
        }
        for found in resolver.references_of(&from, &text) {
            let s = found.to_string_lossy();
            assert!(shape(&s), "{s:?} from {text:?}");
            assert!(!s.contains("ABOVE_ROOT.md"), "left the project root: {s}");
            resolved += 1;
        }
    }
    assert!(
        resolved > 100,
        "the generated texts do name real directives ({resolved})"
    );
}

/// `<root>/.directives/<folder>/<KIND>_<NAME>.md` with root the project or `~/.claude` tree.
fn regex_lite(sb: &Sandbox) -> impl Fn(&str) -> bool {
    let roots = [sb.project.clone(), sb.home.join(".claude")];
    move |path: &str| {
        let p = Path::new(path);
        let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
            return false;
        };
        let Some(folder) = p
            .parent()
            .and_then(|d| d.file_name())
            .and_then(|n| n.to_str())
        else {
            return false;
        };
        let kind = match folder {
            "commands" => "CMD_",
            "formats" => "FMT_",
            "invariants" => "INV_",
            _ => return false,
        };
        let stem = name.strip_prefix(kind).and_then(|n| n.strip_suffix(".md"));
        let stem_ok = stem.is_some_and(|s| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        });
        let in_directives = p
            .parent()
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .is_some_and(|n| n == ".directives");
        stem_ok && in_directives && roots.iter().any(|r| p.starts_with(r)) && !path.contains("/../")
    }
}

/// Nothing a hook writes follows a symlink planted in a shared temporary directory: the state
/// file itself, its temporaries, and the PID cache in `CLAUDE_SESSION_CACHE_DIR`. A FIFO
/// planted as the PID cache does not stall the session lookup.
#[test]
fn planted_symlinks_and_fifos_are_never_followed_by_writers() {
    let sb = Sandbox::bare();
    let victim = sb.root().join("victim");
    fs::write(&victim, "KEEP").unwrap();
    // The state path itself a symlink: replaced, never written through.
    let linked = sb.root().join("linked.json");
    symlink(&victim, &linked).unwrap();
    preload_core::primitives::file::write_atomic(&linked, b"{}").unwrap();
    assert_eq!(fs::read_to_string(&victim).unwrap(), "KEEP");
    assert!(fs::symlink_metadata(&linked).unwrap().is_file());
    // The PID cache a symlink to the victim.
    let dir = sb.active_session(
        "cache",
        &json!({"pendingAllowInjections": [
        {"ruleId": "r", "content": "VIA-SCAN", "agentId": ""}]}),
    );
    let cache = sb.root().join(format!("claude-session-cache-{}", sb.pid));
    symlink(&victim, &cache).unwrap();
    let input = post_tool_use(&sb);
    let run = run_json(&sb, "preload-injections", &[], &input);
    run.assert_contract("cache symlink");
    assert!(run.context().contains("VIA-SCAN"));
    assert_eq!(
        fs::read_to_string(&victim).unwrap(),
        "KEEP",
        "the cache write replaced the link"
    );
    assert_eq!(
        fs::read_to_string(&cache).unwrap().trim(),
        dir.to_string_lossy()
    );
    // The PID cache a FIFO: the lookup falls back to the scan at once.
    fs::remove_file(&cache).unwrap();
    make_fifo(&cache);
    sb.active_session(
        "cache",
        &json!({"pendingAllowInjections": [
        {"ruleId": "r", "content": "PAST-FIFO", "agentId": ""}]}),
    );
    let run = run_raw(
        &sb,
        "preload-injections",
        &[],
        input.to_string().as_bytes(),
        &[],
    );
    run.assert_contract("cache FIFO");
    assert!(run.context().contains("PAST-FIFO"), "{run:?}");
}

/// With `HOOK_DEBUG` on, stderr may speak, but never carries file or stash contents.
#[test]
fn debug_output_holds_no_contents() {
    let sb = Sandbox::new();
    sb.active_session(
        "debug",
        &json!({"pendingAllowInjections": [
        {"ruleId": "r", "content": "SECRET-STASH-CONTENT", "agentId": ""}],
        "pendingPreloads": [sb.engine_path("SIGILS.md")]}),
    );
    let sigils = fs::read_to_string(sb.engine_path("SIGILS.md")).unwrap();
    let probe = sigils
        .lines()
        .find(|l| l.len() > 20)
        .unwrap_or("")
        .to_owned();
    for (name, args, input) in working_inputs(&sb) {
        let run = run_raw(
            &sb,
            name,
            args,
            input.to_string().as_bytes(),
            &[(env::HOOK_DEBUG, "1")],
        );
        assert_eq!(run.code, Some(0), "{name}");
        assert!(
            !run.stderr.contains("SECRET-STASH-CONTENT"),
            "{name}: {}",
            run.stderr
        );
        assert!(
            probe.is_empty() || !run.stderr.contains(&probe),
            "{name}: {}",
            run.stderr
        );
    }
    let log = fs::read_to_string(&sb.log).unwrap_or_default();
    assert!(!log.contains("SECRET-STASH-CONTENT"));
    assert!(probe.is_empty() || !log.contains(&probe));
}

// ---------------------------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------------------------

/// Packages with their own directives for the hammer's discovery.
const HAMMER_PACKAGES: usize = 24;

/// The hook processes of the hammer, in the mix they run: the guard engine with discovery and
/// claims, phase commands, stash delivery and templates.
fn hammer_input(sb: &Sandbox, kind: usize, n: usize) -> (&'static str, Value) {
    const PHASES: [&str; 6] = [
        "0: Setup",
        "1: Interrogation",
        "2: Planning",
        "3: Execution",
        "3.A: Build Loop",
        "4: Synthesis",
    ];
    let files = [
        "packages/estimate/src/total.ts",
        "packages/estimate/src/parser.ts",
        "packages/estimate/tests/parser.test.ts",
        "docs/TOC.md",
    ];
    let package = format!("pkgs/p{:02}/src/code.ts", n % HAMMER_PACKAGES);
    let base = json!({"cwd": sb.project, "session_id": "hammer", "transcript_path": "/tmp/x/hammer.jsonl"});
    let mut v = base;
    let extra = match kind % 4 {
        0 if n % 2 == 0 => json!({"hook_event_name": "PreToolUse", "tool_name": "Read",
            "tool_input": {"file_path": sb.project.join(files[n / 2 % files.len()])}}),
        0 => json!({"hook_event_name": "PreToolUse", "tool_name": "Read",
            "tool_input": {"file_path": sb.project.join(package)}}),
        1 => {
            let phase = PHASES[n % PHASES.len()];
            json!({"hook_event_name": "PostToolUse", "tool_name": "Bash",
                "tool_input": {"command": format!("engine session phase sessions/hammer \"{phase}\"")},
                "tool_response": {"stdout": format!("Phase: {phase}")}})
        }
        2 => {
            json!({"hook_event_name": "PostToolUse", "tool_name": "Read", "tool_input": {"file_path": "/x"}})
        }
        _ => {
            json!({"hook_event_name": "PostToolUse", "tool_name": "Skill", "tool_input": {"skill": "implement"}})
        }
    };
    v.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let name = [
        "preload-overflow",
        "preload-phase-commands",
        "preload-injections",
        "preload-templates",
    ][kind % 4];
    (name, v)
}

/// 15 hook processes of four kinds and one bash writer using the engine's lock hammer one
/// session, while this process stashes entries through the core: afterwards every queued file
/// was delivered exactly once, every stash entry reached stdout exactly once, every bash
/// increment is in the file, the state is valid JSON and no lock or temporary is left.
#[test]
fn sixteen_writers_on_one_session_lose_nothing() {
    let sb = Sandbox::new();
    let refs = [
        "§CMD_APPEND_LOG",
        "§CMD_ASK_ROUND",
        "§CMD_REPORT_INTENT",
        "§CMD_LOG_INTERACTION",
    ];
    for i in 0..HAMMER_PACKAGES {
        sb.project_file(&format!("pkgs/p{i:02}/src/code.ts"), "x");
        sb.project_file(
            &format!("pkgs/p{i:02}/.directives/INVARIANTS.md"),
            &format!("# Package {i}\nFollow {}.\n", refs[i % refs.len()]),
        );
    }
    let dir = sb.active_session(
        "hammer",
        &json!({"bashCounter": 0, "pendingAllowInjections": []}),
    );
    let state_path = dir.join(".state.json");
    const BASH_ITERATIONS: usize = 25;
    const HOOK_WORKERS: usize = 15;
    let started = Instant::now();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let outputs = std::sync::Mutex::new(Vec::<(String, Run)>::new());
    let mut stashed = Vec::new();
    let bash_result = std::thread::scope(|scope| {
        for worker in 0..HOOK_WORKERS {
            let (sb, stop, outputs) = (&sb, &stop, &outputs);
            scope.spawn(move || {
                let mut n = worker;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let (name, input) = hammer_input(sb, worker, n);
                    let run = run_json(sb, name, &[], &input);
                    outputs.lock().unwrap().push((name.to_owned(), run));
                    n += 1;
                }
            });
        }
        // The engine's bash, on the same file.
        let bash = scope.spawn(|| {
            let out = Command::new("bash")
                .arg(crate::common::repo().join("tests/support/bash-counter-writer.sh"))
                .arg(&state_path)
                .arg("bashCounter")
                .arg(BASH_ITERATIONS.to_string())
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        });
        // Stash producer: the guard engine's write, through the core's locked update.
        let mut i = 0;
        while !bash.is_finished() || started.elapsed() < Duration::from_secs(2) {
            let entry = format!("STASH-ENTRY-{i:04}");
            let pushed = preload_core::state::update(
                &state_path,
                Instant::now() + Duration::from_secs(2),
                preload_core::state::Durability::PerCall,
                |s| {
                    s.array_mut("pendingAllowInjections")
                        .push(json!({"ruleId": "hammer", "content": entry, "agentId": ""}));
                },
            );
            if pushed.is_ok() {
                stashed.push(format!("STASH-ENTRY-{i:04}"));
            }
            i += 1;
            std::thread::sleep(Duration::from_millis(7));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        bash.join().unwrap()
    });
    let hammer_time = started.elapsed();
    // Drain what is left, one hook at a time, as the agent would: a call, its PostToolUse, and
    // `engine log` when the heartbeat blocks (a denied call claims nothing).
    for round in 0..60 {
        let state = read_json(&state_path);
        let pending = crate::common::strings(&state, "pendingPreloads");
        let stash = state["pendingAllowInjections"]
            .as_array()
            .map_or(0, Vec::len);
        if pending.is_empty() && stash == 0 {
            break;
        }
        let (name, input) = hammer_input(&sb, 0, round);
        let run = run_json(&sb, name, &[], &input);
        let blocked = run.json()["hookSpecificOutput"]["permissionDecision"] == "deny";
        outputs.lock().unwrap().push((name.to_owned(), run));
        let mut calls = vec![hammer_input(&sb, 2, round)];
        if blocked {
            let mut log = hammer_input(&sb, 0, round).1;
            log["tool_name"] = json!("Bash");
            log["tool_input"] =
                json!({"command": "engine log sessions/hammer/IMPLEMENTATION_LOG.md"});
            calls.push(("preload-overflow", log));
            calls.push(hammer_input(&sb, 2, round));
        }
        for (name, input) in calls {
            let run = run_json(&sb, name, &[], &input);
            outputs.lock().unwrap().push((name.to_owned(), run));
        }
    }
    let outputs = outputs.into_inner().unwrap();
    let mut per_hook: BTreeMap<&str, usize> = BTreeMap::new();
    for (name, run) in &outputs {
        run.assert_contract(name);
        *per_hook.entry(name.as_str()).or_default() += 1;
    }
    // The state: valid JSON, every bash increment in it.
    let state = read_json(&state_path);
    let counts: Vec<usize> = bash_result
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    let (bash_ok, bash_timeouts, bash_reclaims) = (counts[0], counts[1], counts[2]);
    // Nobody died, yet bash may "reclaim": its `rm pid; rmdir` after the holder it saw had
    // released and exited can hit the next holder's lock. A native holder notices before its
    // write and aborts, so what follows holds whatever the count.
    eprintln!("bash reclaims of a lock that had changed hands: {bash_reclaims}");
    assert_eq!(
        state["bashCounter"],
        json!(bash_ok),
        "bash increments lost ({bash_result})"
    );
    // Every stash entry out exactly once.
    let delivered_text: String = outputs
        .iter()
        .filter(|(name, _)| name == "preload-injections")
        .map(|(_, run)| run.context())
        .collect::<Vec<_>>()
        .join("\n");
    let left = state["pendingAllowInjections"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        left.iter().all(|e| e["ruleId"] != "hammer"),
        "stash not drained: {left:?}"
    );
    for entry in &stashed {
        assert_eq!(delivered_text.matches(entry.as_str()).count(), 1, "{entry}");
    }
    // Every queued file delivered exactly once.
    sb.assert_no_duplicates();
    let events = sb.events();
    let queued: std::collections::BTreeSet<String> = events
        .iter()
        .filter(|e| e["event"] == "queue-pending")
        .filter_map(|e| e["file"].as_str().map(str::to_owned))
        .collect();
    let preloaded = crate::common::strings(&state, "preloadedFiles");
    let delivered: std::collections::BTreeSet<String> =
        sb.deliveries().into_iter().map(|(_, f)| f).collect();
    for file in &queued {
        let history: Vec<String> = events
            .iter()
            .filter(|e| e["file"].as_str() == Some(file.as_str()))
            .map(ToString::to_string)
            .collect();
        assert!(
            preloaded.contains(file),
            "queued, never delivered: {file}\n{}\nstate: {state}",
            history.join("\n")
        );
    }
    for file in &delivered {
        assert!(
            preloaded.contains(file),
            "delivered but not recorded: {file}"
        );
    }
    assert!(crate::common::strings(&state, "pendingPreloads").is_empty());
    assert!(litter(&dir).is_empty(), "{:?}", litter(&dir));
    assert!(litter(&sb.sessions.join(".seeds")).is_empty());
    println!(
        "hammer: {} hook runs {per_hook:?} + bash {bash_ok} increments ({bash_timeouts} lock timeouts, {bash_reclaims} reclaims) + {} stash entries in {hammer_time:?}; {} files queued, {} deliveries, {} events",
        outputs.len(),
        stashed.len(),
        queued.len(),
        delivered.len(),
        events.len()
    );
}

/// Hook processes started at once on one session in the no-lost-update test.
const COUNTING_PROCESSES: usize = 24;
/// Calls each of them makes.
const CALLS_EACH: usize = 5;
/// Increments of the bash writer beside them.
const BASH_WRITES: usize = 30;

/// 24 guard-engine processes making 5 counted calls each, with a lock timeout short enough that
/// many cannot take the latch, and a bash writer making 30 increments with the engine's lock, on
/// one session: every one of the 150 updates is kept (each agent's count exact, whether it went
/// through the journal or not; every bash increment), the state stays valid JSON with its
/// foreign fields, and no lock is left. One more call folds the journal into the state.
#[test]
fn counts_from_24_contending_hooks_and_a_bash_writer_are_all_kept() {
    let sb = Sandbox::new();
    let foreign = json!({"nested": [1, "two", {"three": null}], "note": "kept"});
    let dir = sb.active_session(
        "counted",
        &json!({"bashCounter": 0, "foreignField": foreign, "taskSummary": "keep me"}),
    );
    let state_path = dir.join(".state.json");
    let journal = preload_core::mechanisms::counters::journal_of(&state_path);
    let key = |p: usize| match p % 3 {
        0 => "main".to_owned(),
        _ => format!("sub:agent-{}", p % 8),
    };
    let input = |p: usize, n: usize| {
        let mut v = json!({"hook_event_name": "PreToolUse", "cwd": sb.project,
            "session_id": sb.conversation, "transcript_path": "/tmp/x/main.jsonl"});
        if p % 3 != 0 {
            v["agent_id"] = json!(format!("agent-{}", p % 8));
        }
        if n % 2 == 0 {
            v["tool_name"] = json!("Bash");
            v["tool_input"] = json!({"command": format!("echo {p} {n}")});
        } else {
            v["tool_name"] = json!("Read");
            v["tool_input"] = json!({"file_path": sb.project.join("README.md")});
        }
        v
    };
    let most_pending = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::atomic::AtomicBool::new(false);
    let started = Instant::now();
    let (runs, bash) = std::thread::scope(|scope| {
        let bash = scope.spawn(|| {
            let out = Command::new("bash")
                .arg(crate::common::repo().join("tests/support/bash-counter-writer.sh"))
                .arg(&state_path)
                .arg("bashCounter")
                .arg(BASH_WRITES.to_string())
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        });
        let watcher = scope.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let pending = preload_core::primitives::journal::read(&journal).len();
                most_pending.fetch_max(pending, std::sync::atomic::Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        let workers: Vec<_> = (0..COUNTING_PROCESSES)
            .map(|p| {
                let (sb, input) = (&sb, &input);
                scope.spawn(move || {
                    (0..CALLS_EACH)
                        .map(|n| {
                            let stdin = input(p, n).to_string();
                            run_raw(
                                sb,
                                "preload-overflow",
                                &[],
                                stdin.as_bytes(),
                                // The loaded machine's budget: a call past the PreToolUse
                                // budget fails open and counts nothing, by design (tested on
                                // its own), which 24 processes on 2 busy cores, or under
                                // emulation, reach; what is tested here is the lock.
                                &[
                                    (env::PRELOAD_LOCK_TIMEOUT_MS, "3"),
                                    crate::common::LOADED_MACHINE_LIMITS[0],
                                ],
                            )
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let runs: Vec<Run> = workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect();
        let bash = bash.join().unwrap();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        watcher.join().unwrap();
        (runs, bash)
    });
    let elapsed = started.elapsed();
    assert_eq!(runs.len(), COUNTING_PROCESSES * CALLS_EACH);
    for run in &runs {
        run.assert_contract("preload-overflow under contention");
    }
    let bash: Vec<usize> = bash
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    // Valid JSON, foreign fields as they were, every bash increment kept.
    let state = read_json(&state_path);
    assert_eq!(state["foreignField"], foreign);
    assert_eq!(state["taskSummary"], "keep me");
    assert_eq!(bash[0], BASH_WRITES, "the bash writer timed out: {bash:?}");
    assert_eq!(state["bashCounter"], json!(BASH_WRITES));
    // Every count, read as every reader of the counters reads them.
    let mut expected: BTreeMap<String, u64> = BTreeMap::new();
    for p in 0..COUNTING_PROCESSES {
        *expected.entry(key(p)).or_default() += CALLS_EACH as u64;
    }
    let parsed = preload_core::state::load(&state_path).unwrap();
    let counters = preload_core::mechanisms::counters::current(&state_path, &parsed);
    let main_key = "main.jsonl";
    for (k, n) in &expected {
        let k = if k == "main" { main_key } else { k.as_str() };
        assert_eq!(counters.get(k), *n, "count of {k}");
    }
    let pending = preload_core::primitives::journal::read(&journal).len();
    // One more call, uncontended, folds whatever is left into the state itself.
    let last = run_raw(
        &sb,
        "preload-overflow",
        &[],
        input(0, 0).to_string().as_bytes(),
        &[],
    );
    last.assert_contract("the settling call");
    let state = read_json(&state_path);
    for (k, n) in &expected {
        let (k, n) = if k == "main" {
            (main_key, n + 1)
        } else {
            (k.as_str(), *n)
        };
        assert_eq!(
            state["toolCallsByTranscript"][k],
            json!(n),
            "{k} in the state"
        );
    }
    assert!(preload_core::primitives::journal::read(&journal).is_empty());
    assert!(
        fs::metadata(&journal).map_or(0, |m| m.len())
            <= preload_core::primitives::journal::MAX_BYTES
    );
    assert!(litter(&dir).is_empty(), "{:?}", litter(&dir));
    println!(
        "no lost update: {} hook calls and {} bash increments in {elapsed:?}: all counted; \
         at most {} counts waiting in the journal at once, {pending} at the end",
        runs.len(),
        bash[0],
        most_pending.load(std::sync::atomic::Ordering::Relaxed),
    );
}

/// Hook processes counting at once in each round.
const BURST: usize = 8;

/// The state's mirror of the counters, which the engine's readers see, holds every count of a
/// burst once the burst is over: a hook whose own mirror write found the lock busy is mirrored
/// by the holder, and no holder writes its older view over a newer one. (Before, 11 of 30
/// rounds of 8 release-built hooks ended with the mirror 1 to 6 counts behind the counters.)
#[test]
fn the_counters_mirror_holds_every_count_of_a_burst() {
    let sb = Sandbox::new();
    let dir = sb.active_session("burst", &json!({}));
    let state_path = dir.join(".state.json");
    let input = json!({"hook_event_name": "PreToolUse", "cwd": sb.project,
        "session_id": sb.conversation, "transcript_path": "/tmp/x/burst.jsonl",
        "tool_name": "Bash", "tool_input": {"command": "ls"}})
    .to_string();
    let mut behind = Vec::new();
    for round in 1..=6 {
        let runs: Vec<Run> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..BURST)
                .map(|_| {
                    let (sb, input) = (&sb, &input);
                    // The suites' budget: a hook its 300 ms watchdog stops between its count
                    // and its mirror, on a loaded machine, would leave the mirror behind.
                    scope.spawn(move || {
                        run_raw(
                            sb,
                            "preload-overflow",
                            &[],
                            input.as_bytes(),
                            &crate::common::LOADED_MACHINE_LIMITS,
                        )
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        for run in &runs {
            run.assert_contract("preload-overflow in a burst");
        }
        let state = read_json(&state_path);
        let parsed = preload_core::state::load(&state_path).unwrap();
        let counted =
            preload_core::mechanisms::counters::current(&state_path, &parsed).get("burst.jsonl");
        assert_eq!(counted, (round * BURST) as u64, "every count kept");
        let mirrored = state["toolCallsByTranscript"]["burst.jsonl"]
            .as_u64()
            .unwrap_or(0);
        if mirrored != counted {
            behind.push((round, counted - mirrored));
        }
    }
    assert!(
        behind.is_empty(),
        "rounds whose mirror fell behind (round, counts): {behind:?}"
    );
}

/// The compaction markers: a marker directory planted as a symlink (to a victim directory) is
/// refused, and a marker name planted as a symlink is replaced, never written through.
#[test]
fn planted_links_never_redirect_compaction_markers() {
    let sb = Sandbox::bare();
    let uid = nix::unistd::geteuid().as_raw();
    let marker_dir = sb.root().join(format!("claude-preload-{uid}"));
    let victim_dir = sb.root().join("victim-dir");
    fs::create_dir_all(&victim_dir).unwrap();
    symlink(&victim_dir, &marker_dir).unwrap();
    let register = json!({"hook_event_name": "PostToolUse", "tool_name": "Skill",
        "tool_input": {"skill": "handler"}, "session_id": "sid-1", "cwd": sb.project});
    let run = run_json(&sb, "preload-compaction-reread", &["register"], &register);
    run.assert_contract("linked marker dir");
    assert_eq!(
        fs::read_dir(&victim_dir).unwrap().count(),
        0,
        "wrote through a linked directory"
    );
    // A real private directory, with the marker's own name planted as a link.
    fs::remove_file(&marker_dir).unwrap();
    let run = run_json(&sb, "preload-compaction-reread", &["register"], &register);
    run.assert_contract("first register");
    let marker = marker_dir.join("handler-sid-1");
    assert!(
        marker.is_file(),
        "the registration is written: {:?}",
        fs::read_dir(&marker_dir).unwrap().count()
    );
    let victim = sb.root().join("victim");
    fs::write(&victim, "KEEP").unwrap();
    fs::remove_file(&marker).unwrap();
    symlink(&victim, &marker).unwrap();
    let run = run_json(&sb, "preload-compaction-reread", &["register"], &register);
    run.assert_contract("linked marker");
    assert_eq!(fs::read_to_string(&victim).unwrap(), "KEEP");
}

/// A directory inside the project that is a link to somewhere else: discovery through it never
/// brings in directives that physically live outside the project root.
#[test]
fn discovery_never_follows_a_link_out_of_the_project() {
    let sb = Sandbox::new();
    sb.active_session("escape", &json!({}));
    let outside = sb.root().join("outside");
    fs::create_dir_all(outside.join(".directives")).unwrap();
    fs::write(outside.join(".directives/AGENTS.md"), "OUTSIDE-AGENTS\n").unwrap();
    fs::write(outside.join("INVARIANTS.md"), "OUTSIDE-INVARIANTS\n").unwrap();
    fs::write(outside.join("code.ts"), "x").unwrap();
    symlink(&outside, sb.project.join("linked")).unwrap();
    // A directive file that is itself a link out of the project.
    fs::write(outside.join("COMMANDS.md"), "OUTSIDE-COMMANDS\n").unwrap();
    symlink(
        outside.join("COMMANDS.md"),
        sb.project.join("packages/estimate/.directives/COMMANDS.md"),
    )
    .unwrap();
    let mut seen = String::new();
    for n in 0..6 {
        let target = if n < 4 {
            "linked/code.ts"
        } else {
            "packages/estimate/src/total.ts"
        };
        let tool = if n % 2 == 0 { "Read" } else { "Edit" };
        let input = json!({"cwd": sb.project, "hook_event_name": "PreToolUse", "tool_name": tool,
            "session_id": "escape", "transcript_path": "/tmp/x/escape.jsonl",
            "tool_input": {"file_path": sb.project.join(target)}});
        let run = run_json(&sb, "preload-overflow", &[], &input);
        run.assert_contract("overflow through a link");
        seen.push_str(&run.stdout);
        let post = run_json(&sb, "preload-injections", &[], &post_tool_use(&sb));
        seen.push_str(&post.stdout);
    }
    let state = sb.state("escape").to_string();
    assert!(
        !seen.contains("OUTSIDE-"),
        "delivered from outside the project: {seen}"
    );
    assert!(
        !state.contains(&*outside.to_string_lossy()),
        "queued from outside: {state}"
    );
}

/// A FIFO where `guards.json` or the PID cache should be does not stall the guard engine: it
/// runs on without rules and still records what the call touched.
#[test]
fn fifos_in_place_of_guards_and_cache_do_not_stall_the_guard_engine() {
    let sb = Sandbox::new();
    sb.active_session("fifo-guards", &json!({}));
    let guards = sb.home.join(".claude/engine/guards.json");
    let _ = fs::remove_file(&guards);
    make_fifo(&guards);
    make_fifo(&sb.root().join(format!("claude-session-cache-{}", sb.pid)));
    let input = json!({"cwd": sb.project, "hook_event_name": "PreToolUse", "tool_name": "Read",
        "session_id": "f", "transcript_path": "/tmp/x/f.jsonl",
        "tool_input": {"file_path": sb.project.join("packages/estimate/src/total.ts")}});
    let run = run_json(&sb, "preload-overflow", &[], &input);
    run.assert_contract("FIFO guards");
    assert_eq!(
        run.json()["hookSpecificOutput"]["permissionDecision"],
        "allow"
    );
    let state = sb.state("fifo-guards");
    let touched = state["touchedDirs"]
        .as_object()
        .map_or(0, serde_json::Map::len);
    assert!(
        touched > 0,
        "the call went through, not around a blocked read: {state}"
    );
}

/// The `[Preloaded: <path>]` headers of a text.
fn preloaded_headers(text: &str) -> Vec<String> {
    text.match_indices("[Preloaded: ")
        .filter_map(|(at, _)| {
            let rest = &text[at + "[Preloaded: ".len()..];
            let end = rest.find(']')?;
            let path = &rest[..end];
            // A part label belongs to the same file; count its first part only.
            match path.split_once(" (part ") {
                Some((p, label)) if label.starts_with("1/") => Some(p.to_owned()),
                Some(_) => None,
                None => Some(path.to_owned()),
            }
        })
        .collect()
}

/// The guard engine killed at random instants of a call that discovers directives, counts and
/// claims: whatever instant it dies, the next calls deliver every discovered file exactly
/// once (none lost between discovery and queueing, none twice), the state stays valid JSON,
/// and no lock or temporary is left.
#[test]
fn the_guard_engine_killed_mid_discovery_loses_no_directive() {
    let sb = Sandbox::new();
    let read = json!({"cwd": sb.project, "hook_event_name": "PreToolUse", "tool_name": "Read",
        "session_id": "s", "transcript_path": "/tmp/x/k.jsonl",
        "tool_input": {"file_path": sb.project.join("packages/estimate/src/parser.ts")}});
    let post = post_tool_use(&sb);
    let fresh = json!({"touchedDirs": {}, "preloadedFiles": [], "pendingPreloads": []});
    // What a clean sequence delivers.
    let follow_ups = |sb: &Sandbox| -> String {
        let mut out = String::new();
        // The clean calls get the suites' budget (a loaded machine must not make them fail
        // open); the killed ones below keep the default.
        let run = |name: &str, input: &Value| {
            run_raw(
                sb,
                name,
                &[],
                input.to_string().as_bytes(),
                &crate::common::LOADED_MACHINE_LIMITS,
            )
        };
        for _ in 0..8 {
            let pre = run("preload-overflow", &read);
            pre.assert_contract("follow-up overflow");
            out.push_str(&pre.context());
            out.push_str(
                pre.json()["hookSpecificOutput"]["permissionDecisionReason"]
                    .as_str()
                    .unwrap_or(""),
            );
            let inj = run("preload-injections", &post);
            inj.assert_contract("follow-up injections");
            out.push_str(&inj.context());
            let state = sb.state("killed");
            let idle = crate::common::strings(&state, "pendingPreloads").is_empty()
                && state["pendingAllowInjections"]
                    .as_array()
                    .is_none_or(Vec::is_empty);
            if idle {
                break;
            }
        }
        out
    };
    sb.active_session("killed", &fresh);
    let started = Instant::now();
    let clean = follow_ups(&sb);
    let span = started.elapsed() / 4;
    let mut expected = preloaded_headers(&clean);
    expected.sort();
    assert!(
        !expected.is_empty(),
        "the clean sequence delivers directives: {clean}"
    );
    let seed = seed_from_clock();
    let mut rng = Rng::new(seed);
    let span_us = (span.as_micros() as usize).max(500);
    let mut tally: BTreeMap<&str, usize> = BTreeMap::new();
    const TRIALS: usize = 80;
    for trial in 0..TRIALS {
        let dir = sb.active_session("killed", &fresh);
        let started = Instant::now();
        let mut child = command(&sb, "preload-overflow", &[], &[]).spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(read.to_string().as_bytes())
            .unwrap();
        let offset = Duration::from_micros(rng.below(span_us * 3 / 2) as u64);
        while started.elapsed() < offset {
            std::hint::spin_loop();
        }
        let _ = child.kill();
        let killed = finish(&mut child, Vec::new(), started);
        let what = format!("trial {trial} (seed {seed}, kill at {offset:?})");
        let mid = read_json(&dir.join(".state.json"));
        assert!(mid.is_object(), "{what}");
        let committed = mid["touchedDirs"]
            .as_object()
            .is_some_and(|t| !t.is_empty());
        *tally
            .entry(if committed {
                "killed after its commit"
            } else {
                "killed before its commit"
            })
            .or_default() += 1;
        let mut out = if killed.code.is_some() {
            killed.stdout.clone()
        } else {
            String::new()
        };
        out.push_str(&follow_ups(&sb));
        let mut got = preloaded_headers(&out);
        got.sort();
        let state = sb.state("killed");
        let preloaded = crate::common::strings(&state, "preloadedFiles");
        for file in &expected {
            assert!(
                preloaded.contains(file),
                "{what}: {file} lost from the bookkeeping: {state}"
            );
        }
        let mut dedup = got.clone();
        dedup.dedup();
        assert_eq!(dedup, got, "{what}: delivered twice");
        if got != expected {
            *tally
                .entry("trials whose killed run took output with it")
                .or_default() += 1;
        }
        assert!(litter(&dir).is_empty(), "{what}: {:?}", litter(&dir));
    }
    println!(
        "guard engine crash trials: {TRIALS}, {} files per sequence, seed {seed}: {tally:?}",
        expected.len()
    );
}

/// SessionStart's chunk cache and the seeds: a cache directory planted as a link is refused, a
/// cache file planted as a link is replaced (never written through), a FIFO in its place does
/// not stall the registrations, and seeds and temporaries of dead processes are swept.
#[test]
fn session_start_cache_and_seeds_resist_planted_files_and_litter() {
    let sb = Sandbox::new();
    sb.active_session("ss", &json!({}));
    let uid = nix::unistd::geteuid().as_raw();
    let cache_dir = sb.root().join(format!("claude-preload-{uid}"));
    let victim_dir = sb.root().join("victim-dir");
    fs::create_dir_all(&victim_dir).unwrap();
    let victim = sb.root().join("victim");
    fs::write(&victim, "KEEP").unwrap();
    let start = |sid: &str, chunk: &str| {
        let input = json!({"hook_event_name": "SessionStart", "source": "startup",
            "session_id": sid, "cwd": sb.project, "transcript_path": "/tmp/x/ss.jsonl"});
        let run = run_json(&sb, "preload-session-start", &["--chunk", chunk], &input);
        run.assert_contract(&format!("session-start {sid} {chunk}"));
        run
    };
    symlink(&victim_dir, &cache_dir).unwrap();
    start("sid-1", "0/2");
    assert_eq!(
        fs::read_dir(&victim_dir).unwrap().count(),
        0,
        "wrote through a linked cache dir"
    );
    fs::remove_file(&cache_dir).unwrap();
    fs::create_dir_all(&cache_dir).unwrap();
    // The cache file's name: the conversation, the source, and the client process (this one).
    let client = std::process::id();
    let started = preload_core::primitives::process::start_time(client).unwrap_or(0);
    let cache_file = |sid: &str| cache_dir.join(format!("{sid}_startup_{client}-{started}.slots"));
    symlink(&victim, cache_file("sid-2")).unwrap();
    let run = start("sid-2", "0/2");
    assert!(run.context().contains("[Preloaded: "), "{run:?}");
    assert_eq!(fs::read_to_string(&victim).unwrap(), "KEEP");
    make_fifo(&cache_file("sid-3"));
    let first = start("sid-3", "0/2");
    let second = start("sid-3", "1/2");
    assert!(
        first.context().contains("[Preloaded: ") || second.context().contains("[Preloaded: "),
        "a FIFO in place of the cache stalls nothing: {first:?} {second:?}"
    );
    // Seeds and temporaries of dead processes go; the live owner's seed is written.
    let seeds = sb.sessions.join(".seeds");
    fs::create_dir_all(&seeds).unwrap();
    fs::write(
        seeds.join("4000000.json"),
        "{\"pid\": 4000000, \"lifecycle\": \"seeding\"}",
    )
    .unwrap();
    fs::write(seeds.join("4000000.json.tmp.4000000.3"), "{\"pid\": 40").unwrap();
    fs::write(seeds.join("4000001.json.lock.tmp.4000001.0"), "").unwrap();
    // A writer killed with the lock held leaves its temporary and its lock.
    let state_dir = sb.sessions.join("ss");
    fs::write(state_dir.join(".state.json.tmp.4000002.7"), "{").unwrap();
    fs::create_dir(state_dir.join(".state.json.lock")).unwrap();
    fs::write(state_dir.join(".state.json.lock/pid"), "4000002\n").unwrap();
    start("sid-4", "0/1");
    let plain = json!({"hook_event_name": "SessionStart", "source": "startup",
        "session_id": "sid-5", "cwd": sb.project});
    run_json(&sb, "preload-session-start", &[], &plain).assert_contract("session-start");
    let mut left: Vec<String> = fs::read_dir(&seeds)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    // Each new conversation of this owner replaced the window of the one before, which stays
    // resumable as an ended record.
    let ended: Vec<String> = left
        .iter()
        .filter(|n| n.ends_with(preload_core::mechanisms::session::ENDED_SUFFIX))
        .cloned()
        .collect();
    assert_eq!(
        ended,
        ["sid-2", "sid-3", "sid-4"].map(|sid| format!(
            "{}.{sid}{}",
            sb.pid,
            preload_core::mechanisms::session::ENDED_SUFFIX
        )),
        "the replaced conversations' windows"
    );
    left.retain(|n| !ended.contains(n));
    // The seed, and its carry (the conversation it serves, which the engine's activate drops).
    // (And the released lock the directory keeps for its next one.)
    assert_eq!(
        left,
        vec![
            preload_core::primitives::lock::SPARE.to_owned(),
            format!("{}.carry.json", sb.pid),
            format!("{}.json", sb.pid)
        ],
        "only the live owner's seed and carry stay"
    );
    assert!(litter(&state_dir).is_empty(), "{:?}", litter(&state_dir));
    assert!(
        litter(&cache_dir).iter().all(|n| !n.contains(".tmp.")),
        "{:?}",
        litter(&cache_dir)
    );
}
