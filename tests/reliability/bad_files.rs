//! Bad files: broken states, seeds, guards and caches on disk, and hostile directive trees: never overwritten, never a hang.

use super::*;

/// Run every hook once; each must keep the contract.
fn run_every_hook(sb: &Sandbox, what: &str) {
    for (name, args, input) in working_inputs(sb) {
        let run = run_json(sb, name, args, &input);
        run.assert_contract(&format!("{what}: {name} {args:?}"));
    }
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

/// `check` on each of [`bad_files`] (their truncation cut from `valid`), each in a sandbox of
/// its own, all on threads at once.
fn each_bad_file_at_once(valid: &Value, check: impl Fn(Sandbox, &'static str, Bad) + Sync) {
    let valid = serde_json::to_string_pretty(valid).unwrap();
    std::thread::scope(|scope| {
        for (label, bad) in bad_files(&valid) {
            let check = &check;
            scope.spawn(move || check(Sandbox::new(), label, bad));
        }
    });
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
    let valid = json!({"pid": std::process::id(),
        "skill": "implement", "lifecycle": "active", "currentPhase": "1: Interrogation",
        "preloadedFiles": [], "pendingPreloads": []});
    each_bad_file_at_once(&valid, |sb, label, bad| {
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

/// The same for the owner's seed file and for `guards.json`.
#[test]
fn broken_seeds_and_guards_are_never_overwritten() {
    let valid = json!({"pid": std::process::id(),
        "lifecycle": "seeding", "preloadedFiles": [], "pendingPreloads": []});
    each_bad_file_at_once(&valid, |sb, label, bad| {
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
    // The loaded machine's budget (under emulation a call can outlive the default 300 ms and
    // fail open): a FIFO that stalled the read would still show, past `HANG`.
    let stdin = input.to_string();
    let run = run_raw(
        &sb,
        "preload-overflow",
        &[],
        stdin.as_bytes(),
        &preload_test_support::sandbox::LOADED_MACHINE_LIMITS,
    );
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
