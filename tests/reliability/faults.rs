//! Faults of the machine under the hooks: a process killed at each step of a write, a full disk,
//! a read-only sessions directory, a clock set back or forward, and a client that closed the
//! pipe before the answer. Each test checks that the hook fails open, leaves no file
//! half-written, and that the next call delivers exactly what was left. Figures are printed with `--nocapture` and quoted in `docs/reliability.md`.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant, SystemTime};

use preload_core::primitives::env;
use serde_json::{Value, json};

use preload_test_support::files::{self, Dirs};
use preload_test_support::sandbox::{Answer, Sandbox, bin, litter, read_json, strings};

const STASHED: &str = "STASHED-ONCE";

/// A process that has exited and been reaped: its PID names nobody.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

/// A PostToolUse call of the main agent.
fn post_tool_use() -> Value {
    json!({"hook_event_name": "PostToolUse", "tool_name": "Bash",
        "tool_input": {"command": "ls"}, "tool_response": {"stdout": ""}})
}

/// `calls` tool calls of `read` (PreToolUse, then PostToolUse), each answer held to the
/// contract; the busy session's stashed entry and queued file reach the model once each
/// (`what` names the case in a failure).
fn assert_each_once_over(sb: &Sandbox, read: &Value, calls: usize, what: &str) {
    let mut seen = String::new();
    for _ in 0..calls {
        let pre = sb.run("preload-overflow", read.clone());
        pre.assert_contract();
        seen.push_str(&pre.context());
        let post = sb.run("preload-injections", post_tool_use());
        post.assert_contract();
        seen.push_str(&post.context());
    }
    assert_eq!(seen.matches(STASHED).count(), 1, "{what}: the stash once");
    assert_eq!(
        seen.matches("CMD_QUEUED.md]").count(),
        1,
        "{what}: the queued file once"
    );
}

/// The hooks that write state, in the order a conversation calls them, each with an input
/// that makes it write: the guard engine on `read`, stash delivery, the templates of `skill`
/// (when given), the prompt `prompt`, a session's end and a start-up chunk.
fn writing_calls(
    read: &Value,
    skill: Option<&str>,
    prompt: &str,
) -> Vec<(&'static str, &'static [&'static str], Value)> {
    let mut calls: Vec<(&str, &[&str], Value)> = vec![
        ("preload-overflow", &[], read.clone()),
        ("preload-injections", &[], post_tool_use()),
    ];
    if let Some(skill) = skill {
        calls.push((
            "preload-templates",
            &[],
            json!({"hook_event_name": "PostToolUse", "tool_name": "Skill", "tool_input": {"skill": skill}}),
        ));
    }
    calls.extend([
        (
            "preload-prompt-submit",
            &[][..],
            json!({"hook_event_name": "UserPromptSubmit", "prompt": prompt}),
        ),
        (
            "preload-session-end",
            &[],
            json!({"hook_event_name": "SessionEnd", "reason": "other"}),
        ),
        (
            "preload-session-start",
            &["--chunk", "0/1"],
            json!({"hook_event_name": "SessionStart", "source": "startup"}),
        ),
    ]);
    calls
}

/// The answer of hook `name` where it cannot record anything: it printed nothing it could not
/// record (the stashed entry stays stashed), and the guard engine fails open (`what` names the
/// case in a failure).
fn assert_failed_open(name: &str, answer: &Answer, what: &str) {
    assert!(
        !answer.context().contains(STASHED),
        "{what}: printed what it cannot record"
    );
    if name == "preload-overflow" {
        assert_eq!(answer.decision(), "allow", "{what}: fails open");
    }
}

/// A session whose state is large enough (about 60 KB) that a write takes several blocks, with
/// one stashed entry for the main agent and one file queued.
fn busy_session(sb: &Sandbox) -> PathBuf {
    let history: Vec<Value> = (0..150)
        .map(|i| json!({"i": i, "note": format!("{i:05} {}", "lorem ipsum ".repeat(30))}))
        .collect();
    let queued = sb.directive("commands/CMD_QUEUED.md", "# queued\n");
    let dir = sb.active_session(
        "s",
        &json!({"zHistory": history, "pendingPreloads": [queued],
            "pendingAllowInjections": [{"ruleId": "r", "content": STASHED, "agentId": ""}]}),
    );
    dir.join(".state.json")
}

/// Every entry of a directory tree with its bytes (directories as empty), sorted.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    files::snapshot(dir, Dirs::Listed, &[])
}

fn answer(out: &Output) -> Answer {
    let answer = Answer::from_output(out);
    answer.assert_contract();
    answer
}

// ---------------------------------------------------------------------------------------------
// A kill at each step of a write
// ---------------------------------------------------------------------------------------------

/// What a writer killed (SIGKILL) at one step of `state::update` leaves on disk, made with a
/// dead PID exactly as the writer names its files; and whether the state is the new version.
fn leave_aftermath(step: &str, state: &Path, old: &[u8], new: &[u8], pid: u32) -> bool {
    let lock = PathBuf::from(format!("{}.lock", state.display()));
    let staged = PathBuf::from(format!("{}.tmp.{pid}.0", lock.display()));
    let temp = PathBuf::from(format!("{}.tmp.{pid}.1", state.display()));
    let holder = |dir: &Path| {
        fs::create_dir(dir).unwrap();
        fs::write(dir.join("pid"), format!("{pid}\n")).unwrap();
    };
    // The state is the new version once the rename is done.
    let committed = matches!(
        step,
        "renamed, lock not released" | "lock renamed away, not deleted"
    );
    fs::write(state, if committed { new } else { old }).unwrap();
    match step {
        "lock being staged, pid not yet written" => fs::create_dir(&staged).unwrap(),
        "lock staged, not yet in place" => holder(&staged),
        "lock held, nothing written" | "renamed, lock not released" => holder(&lock),
        "temporary half-written" => {
            holder(&lock);
            fs::write(&temp, &new[..new.len() / 2]).unwrap();
        }
        "temporary synced, not renamed" => {
            holder(&lock);
            fs::write(&temp, new).unwrap();
        }
        "lock renamed away, not deleted" => {
            holder(&PathBuf::from(format!("{}.tmp.{pid}.2", lock.display())));
        }
        other => unreachable!("unknown step {other}"),
    }
    committed
}

/// `preload-injections` killed at each step of its one write: the next call (given no time to
/// wait for a lock) takes the dead writer's lock over at once, delivers the stashed entry
/// exactly when the killed write had not committed, and leaves no lock, staged lock or
/// temporary behind.
#[test]
fn a_kill_at_each_write_step_is_recovered_by_the_next_call() {
    let sb = Sandbox::new();
    let state = busy_session(&sb);
    let dir = state.parent().unwrap().to_path_buf();
    let old = fs::read(&state).unwrap();
    let clean = answer(
        &sb.command("preload-injections")
            .write_stdin(post_tool_use().to_string())
            .output()
            .unwrap(),
    );
    assert!(clean.context().contains(STASHED));
    let new = fs::read(&state).unwrap();
    assert_ne!(old, new);
    let steps = [
        "lock being staged, pid not yet written",
        "lock staged, not yet in place",
        "lock held, nothing written",
        "temporary half-written",
        "temporary synced, not renamed",
        "renamed, lock not released",
        "lock renamed away, not deleted",
    ];
    let mut slowest = Duration::ZERO;
    for step in steps {
        let committed = leave_aftermath(step, &state, &old, &new, dead_pid());
        let started = Instant::now();
        let next = answer(
            &sb.command("preload-injections")
                .env(env::PRELOAD_LOCK_TIMEOUT_MS, "0")
                .write_stdin(post_tool_use().to_string())
                .output()
                .unwrap(),
        );
        slowest = slowest.max(started.elapsed());
        assert_eq!(
            next.context().contains(STASHED),
            !committed,
            "{step}: the next call delivers exactly what is left"
        );
        assert_eq!(fs::read(&state).unwrap(), new, "{step}: the new version");
        assert!(litter(&dir).is_empty(), "{step}: litter {:?}", litter(&dir));
    }
    println!(
        "kill at each write step: {} steps recovered by the next call, the slowest in {slowest:?}",
        steps.len()
    );
}

// ---------------------------------------------------------------------------------------------
// Disk full
// ---------------------------------------------------------------------------------------------

/// A process with the sandbox's environment (as `Sandbox::command` sets it) and `input`, its
/// `cwd` and `session_id` filled in, ready on stdin.
fn sandboxed(sb: &Sandbox, program: &Path, input: &Value) -> (Command, Vec<u8>) {
    let mut input = input.clone();
    if let Some(obj) = input.as_object_mut() {
        obj.entry("cwd").or_insert_with(|| json!(sb.project));
        obj.entry("session_id")
            .or_insert_with(|| json!(sb.conversation));
    }
    let cmd = super::sandboxed_command(sb, program);
    (cmd, input.to_string().into_bytes())
}

/// Start `cmd`, write `stdin`, wait for it.
fn run_command(mut cmd: Command, stdin: &[u8]) -> (Answer, Duration) {
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let _ = std::io::Write::write_all(&mut child.stdin.take().unwrap(), stdin);
    let out = child.wait_with_output().unwrap();
    (answer(&out), started.elapsed())
}

/// Run a hook with files limited to `kib` KiB (`RLIMIT_FSIZE`) and `SIGXFSZ` ignored, so a write
/// past the limit fails with `EFBIG` as a write to a full disk fails with `ENOSPC`.
fn run_with_file_limit(sb: &Sandbox, kib: u32, name: &str, args: &[&str], input: &Value) -> Answer {
    let (mut cmd, stdin) = sandboxed(sb, Path::new("bash"), input);
    let script = format!("ulimit -f {kib} && trap '' XFSZ && exec \"$@\"");
    cmd.args(["-c", &script, "bash"]).arg(bin(name)).args(args);
    run_command(cmd, &stdin).0
}

/// The disk is full: with no byte left (0 KiB), and with room only for small files (4 KiB:
/// a lock's `pid`, a seed, the counters fit; the 60 KB state does not). Each hook exits 0 with
/// its fail-open answer, the state stays byte for byte, every file that did change is whole,
/// no temporary is left, nothing stashed is printed; once there is room, everything arrives
/// exactly once.
#[test]
fn a_full_disk_changes_nothing_and_loses_nothing() {
    let sb = Sandbox::new();
    let state = busy_session(&sb);
    let before = snapshot(&sb.sessions);
    let read = json!({"hook_event_name": "PreToolUse", "tool_name": "Read",
        "tool_input": {"file_path": sb.project.join("README.md")}});
    let calls = writing_calls(&read, None, "/do x");
    let mut runs = 0;
    for kib in [0, 4] {
        for (name, args, input) in &calls {
            let answer = run_with_file_limit(&sb, kib, name, args, input);
            runs += 1;
            assert_failed_open(name, &answer, &format!("{name} ({kib} KiB)"));
            if *name == "preload-session-start" {
                // What it made is out, and what is recorded as in context was shown.
                let shown = preload_test_support::sandbox::shown_parts(&answer.context());
                if sb.seed_path().is_file() {
                    let seed = read_json(&sb.seed_path());
                    assert!(!shown.is_empty(), "{kib} KiB: it prints what it recorded");
                    for file in strings(&seed, "preloadedFiles") {
                        let whole = shown.iter().any(|(p, i, n)| *p == file && i == n);
                        assert!(whole, "{kib} KiB: {file} recorded but never shown");
                    }
                }
            }
        }
        assert_eq!(
            fs::read(&state).unwrap(),
            before.iter().find(|(p, _)| *p == state).unwrap().1,
            "{kib} KiB: the state untouched"
        );
        for (path, bytes) in snapshot(&sb.sessions) {
            if path.is_file() && path.extension().is_some_and(|e| e == "json") {
                assert!(
                    serde_json::from_slice::<Value>(&bytes).is_ok(),
                    "{kib} KiB: {} is whole",
                    path.display()
                );
            }
        }
        assert!(litter(state.parent().unwrap()).is_empty());
        assert!(litter(&sb.sessions.join(".seeds")).is_empty());
    }
    println!("full disk: {runs} hook runs at 0 and 4 KiB, all failed open, nothing torn or lost");

    // Room again: the stashed entry and the queued file, once each.
    assert_each_once_over(&sb, &read, 3, "room again");
}

// ---------------------------------------------------------------------------------------------
// A read-only sessions directory
// ---------------------------------------------------------------------------------------------

/// Makes `sessions/` read-only for the hooks: without root, its directories lose write
/// permission; as root (which write permission does not stop), the hooks run as `nobody`, the
/// rest of the sandbox is theirs and `sessions/` stays root's, read-only to them.
struct ReadOnly<'a> {
    sb: &'a Sandbox,
    as_nobody: bool,
}

const NOBODY: u32 = 65_534;

fn walk(dir: &Path, each: &mut dyn FnMut(&Path, bool)) {
    each(dir, true);
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() && !path.is_symlink() {
            walk(&path, each);
        } else {
            each(&path, false);
        }
    }
}

impl<'a> ReadOnly<'a> {
    fn new(sb: &'a Sandbox) -> Self {
        let as_nobody = nix::unistd::geteuid().is_root();
        if as_nobody {
            walk(sb.root(), &mut |p, _| {
                std::os::unix::fs::lchown(p, Some(NOBODY), Some(NOBODY)).unwrap();
            });
            walk(&sb.sessions, &mut |p, is_dir| {
                std::os::unix::fs::lchown(p, Some(0), Some(0)).unwrap();
                let mode = if is_dir { 0o755 } else { 0o644 };
                fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
            });
        } else {
            walk(&sb.sessions, &mut |p, is_dir| {
                if is_dir {
                    fs::set_permissions(p, fs::Permissions::from_mode(0o555)).unwrap();
                }
            });
        }
        Self { sb, as_nobody }
    }

    fn run(&self, name: &str, args: &[&str], input: &Value) -> (Answer, Duration) {
        let (mut cmd, stdin) = sandboxed(self.sb, &bin(name), input);
        cmd.args(args);
        if self.as_nobody {
            cmd.uid(NOBODY).gid(NOBODY);
        }
        run_command(cmd, &stdin)
    }
}

impl Drop for ReadOnly<'_> {
    fn drop(&mut self) {
        let me = nix::unistd::geteuid().as_raw();
        walk(self.sb.root(), &mut |p, is_dir| {
            if self.as_nobody {
                let _ = std::os::unix::fs::lchown(p, Some(me), Some(me));
            }
            if is_dir {
                let _ = fs::set_permissions(p, fs::Permissions::from_mode(0o755));
            }
        });
    }
}

/// Every hook that writes state, on a sessions directory it may not write: exit 0, the
/// fail-open answer, not a byte changed under `sessions/`, nothing printed that could not be
/// recorded; with write access back, everything arrives exactly once.
#[test]
fn a_read_only_sessions_directory_changes_nothing_and_loses_nothing() {
    let sb = Sandbox::new();
    let state = busy_session(&sb);
    session_seed_of_another_run(&sb);
    let before = snapshot(&sb.sessions);
    let read = json!({"hook_event_name": "PreToolUse", "tool_name": "Read",
        "tool_input": {"file_path": sb.project.join("README.md")}});
    let mut slowest = Duration::ZERO;
    {
        let guard = ReadOnly::new(&sb);
        for (name, args, input) in writing_calls(&read, Some("implement"), "/implement x") {
            let (answer, took) = guard.run(name, args, &input);
            slowest = slowest.max(took);
            assert_failed_open(name, &answer, name);
        }
        assert_eq!(
            snapshot(&sb.sessions),
            before,
            "not a byte changed under sessions/"
        );
    }
    assert_each_once_over(&sb, &read, 3, "writable again");
    assert!(strings(&read_json(&state), "pendingPreloads").is_empty());
    println!(
        "read-only sessions directory ({}): 6 hooks failed open, the slowest in {slowest:?}",
        if nix::unistd::geteuid().is_root() {
            "hooks run as nobody: root writes through permissions"
        } else {
            "directories mode 0555"
        }
    );
}

/// A seed of the owner beside its session, as SessionStart leaves one.
fn session_seed_of_another_run(sb: &Sandbox) {
    let seeds = sb.sessions.join(".seeds");
    fs::create_dir_all(&seeds).unwrap();
    fs::write(
        sb.seed_path(),
        json!({"pid": sb.pid, "lifecycle": "seeding", "preloadedFiles": []}).to_string(),
    )
    .unwrap();
}

// ---------------------------------------------------------------------------------------------
// The clock set back or forward
// ---------------------------------------------------------------------------------------------

fn set_time(path: &Path, at: SystemTime) {
    fs::File::open(path).unwrap().set_modified(at).unwrap();
}

/// A lock the engine's bash left without its `pid` (killed between `mkdir` and the write) is
/// abandoned after 10 s. When the clock was set back an hour after, the lock looks an hour
/// younger than now: it is still taken over, not honoured for an hour. One only a second
/// ahead is a live writer's and is waited for.
#[test]
fn a_lock_from_before_the_clock_was_set_back_is_taken_over() {
    let sb = Sandbox::new();
    let state = busy_session(&sb);
    let lock = PathBuf::from(format!("{}.lock", state.display()));
    let call = || {
        answer(
            &sb.command("preload-injections")
                .env(env::PRELOAD_LOCK_TIMEOUT_MS, "100")
                .write_stdin(post_tool_use().to_string())
                .output()
                .unwrap(),
        )
    };
    fs::create_dir(&lock).unwrap();
    set_time(&lock, SystemTime::now() + Duration::from_secs(1));
    let before = fs::read(&state).unwrap();
    assert!(
        !call().context().contains(STASHED),
        "a fresh lock is waited for"
    );
    assert_eq!(fs::read(&state).unwrap(), before);
    set_time(&lock, SystemTime::now() + Duration::from_secs(3_600));
    assert!(
        call().context().contains(STASHED),
        "an hour ahead: taken over"
    );
    assert!(!lock.exists());
    // And one from an hour ago (the clock set forward) too.
    fs::create_dir(&lock).unwrap();
    set_time(&lock, SystemTime::now() - Duration::from_secs(3_600));
    call();
    assert!(!lock.exists());
}

/// The SessionStart text is made once per event and shared by its registrations for 10 s. A
/// cache written before the clock was set back looks fresh for as long as the jump; it must
/// not be served to a later SessionStart, which would skip re-seeding the new context.
#[test]
fn a_session_start_cache_from_before_the_clock_was_set_back_is_made_again() {
    let sb = Sandbox::new();
    let input = json!({"hook_event_name": "SessionStart", "source": "compact"});
    let first = sb.run_args("preload-session-start", &["--chunk", "0/1"], input.clone());
    first.assert_contract();
    assert!(sb.seed_path().is_file());
    let uid = nix::unistd::geteuid().as_raw();
    let caches: Vec<PathBuf> = fs::read_dir(sb.root().join(format!("claude-preload-{uid}")))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "slots"))
        .collect();
    assert_eq!(caches.len(), 1, "{caches:?}");
    set_time(&caches[0], SystemTime::now() + Duration::from_secs(3_600));
    fs::remove_file(sb.seed_path()).unwrap();
    let again = sb.run_args("preload-session-start", &["--chunk", "0/1"], input);
    again.assert_contract();
    assert!(
        sb.seed_path().is_file(),
        "made again: the new context is seeded"
    );
    // The same text, made anew: only the session context line's clock (`YYYY-MM-DD HH:MM:SS`)
    // may differ.
    let timeless = |text: String| -> Vec<String> {
        text.lines()
            .map(|l| match l.split_once("Time: ") {
                Some((head, rest)) => format!("{head}Time: <t>{}", rest.get(19..).unwrap_or("")),
                None => l.to_owned(),
            })
            .collect()
    };
    assert_eq!(timeless(again.context()), timeless(first.context()));
}

/// Seeds are judged by their process (alive, same start time), never by their time stamps:
/// a live process's seed dated 1970 or a year ahead stays, a dead one's dated now goes.
#[test]
fn seeds_are_never_aged_by_the_clock() {
    let sb = Sandbox::new();
    let seeds = sb.sessions.join(".seeds");
    fs::create_dir_all(&seeds).unwrap();
    let live = std::os::unix::process::parent_id();
    let started = preload_core::primitives::process::start_time(live);
    let seed = |pid: u32, start: Option<u64>| {
        let path = seeds.join(format!("{pid}.json"));
        let mut doc = json!({"pid": pid, "lifecycle": "seeding", "preloadedFiles": []});
        if let Some(start) = start {
            doc["pidStartTime"] = json!(start);
        }
        fs::write(&path, doc.to_string()).unwrap();
        path
    };
    let live_seed = seed(live, started);
    set_time(&live_seed, SystemTime::UNIX_EPOCH + Duration::from_secs(60));
    let dead_seed = seed(dead_pid(), None);
    set_time(&dead_seed, SystemTime::now());
    let ahead = seed(
        std::process::id(),
        preload_core::primitives::process::start_time(std::process::id()),
    );
    set_time(
        &ahead,
        SystemTime::now() + Duration::from_secs(365 * 86_400),
    );
    let answer = sb
        .command("preload-session-start")
        .env(env::CLAUDE_SUPERVISOR_PID, "4000005")
        .write_stdin(
            json!({"hook_event_name": "SessionStart", "source": "startup", "cwd": sb.project})
                .to_string(),
        )
        .output()
        .unwrap();
    Answer::from_output(&answer).assert_contract();
    assert!(
        live_seed.is_file(),
        "a live process's seed dated 1970 stays"
    );
    assert!(
        ahead.is_file(),
        "a live process's seed dated a year ahead stays"
    );
    assert!(!dead_seed.exists(), "a dead process's seed dated now goes");
}

/// Time stamps in a state far in the past or the future, or not times at all, change no
/// decision: the queued file and the stash go out once, and the state stays valid.
#[test]
fn time_stamps_in_the_past_or_future_change_no_decision() {
    for stamp in [
        json!("9999-12-31T23:59:59Z"),
        json!("1970-01-01T00:00:00Z"),
        json!("yesterday"),
        json!(-1),
    ] {
        let sb = Sandbox::new();
        let state = busy_session(&sb);
        let mut doc = read_json(&state);
        for key in ["lastHeartbeat", "startedAt", "lastLogAt"] {
            doc[key] = stamp.clone();
        }
        doc["phaseHistory"] = json!([{"phase": "0: Setup", "ts": stamp.clone(), "proof": {}}]);
        fs::write(&state, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        let read = json!({"hook_event_name": "PreToolUse", "tool_name": "Read",
            "tool_input": {"file_path": sb.project.join("README.md")}});
        assert_each_once_over(&sb, &read, 2, &stamp.to_string());
        let after = read_json(&state);
        assert_eq!(after["startedAt"], stamp, "{stamp}: foreign fields kept");
    }
}

// ---------------------------------------------------------------------------------------------
// The client gave up
// ---------------------------------------------------------------------------------------------

/// Claude Code closed its end of the hook's stdout before the answer (it gave up on the call):
/// every hook still ends normally, with status 0, instead of being killed by `SIGPIPE`.
#[test]
fn a_closed_stdout_ends_every_hook_normally() {
    let sb = Sandbox::new();
    busy_session(&sb);
    for (name, args, input) in [
        (
            "preload-overflow",
            &[][..],
            json!({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}),
        ),
        ("preload-injections", &[][..], post_tool_use()),
        (
            "preload-session-start",
            &["--chunk", "0/2"][..],
            json!({"hook_event_name": "SessionStart", "source": "startup"}),
        ),
        (
            "preload-dispatch",
            &["PreToolUse"][..],
            json!({"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"file_path": "/etc/hosts"}}),
        ),
    ] {
        let (mut cmd, stdin) = sandboxed(&sb, &bin(name), &input);
        let mut child = cmd.args(args).spawn().unwrap();
        // Closed before the hook has its input, so before it can answer.
        drop(child.stdout.take());
        let _ = std::io::Write::write_all(&mut child.stdin.take().unwrap(), &stdin);
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name} {args:?} ended with {:?} (stderr {})",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
