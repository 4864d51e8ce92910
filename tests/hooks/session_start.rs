//! SessionStart spread over N registrations (`--chunk I/N`): generated once, cut at block
//! boundaries, every slice within the budget, nothing lost.

use std::fs;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::{files, session_start};
use preload_core::primitives::env;
use preload_test_support::pipeline_steps::headers;
use preload_test_support::sandbox::{Sandbox, bin, strings};
use preload_test_support::session_openings::lists;

/// Run all N registrations at once, as Claude Code does; their `additionalContext`s by index.
fn run_chunks(sb: &Sandbox, n: usize, source: &str, env: &[(&str, &str)]) -> Vec<String> {
    let input = json!({"hook_event_name": "SessionStart", "source": source, "session_id": "sess-1",
        "cwd": sb.project})
    .to_string();
    let children: Vec<_> = (0..n)
        .map(|i| {
            let mut cmd = Command::new(bin("preload-session-start"));
            cmd.env_clear()
                .env("HOME", &sb.home)
                .env("CLAUDE_SUPERVISOR_PID", sb.pid.to_string())
                .env("PRELOAD_TEST_LOG", &sb.log)
                .env("CLAUDE_SESSION_CACHE_DIR", sb.root())
                .env("TMPDIR", sb.root())
                .envs(preload_test_support::sandbox::LOADED_MACHINE_LIMITS)
                .args(["--chunk", &format!("{i}/{n}")])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            for (k, v) in env {
                cmd.env(k, v);
            }
            let mut child = cmd.spawn().unwrap();
            std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
            child
        })
        .collect();
    children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success());
            assert!(out.stderr.is_empty());
            let stdout = String::from_utf8(out.stdout).unwrap();
            if stdout.is_empty() {
                return String::new();
            }
            assert_eq!(stdout.matches('\n').count(), 1, "one JSON line");
            let v: Value = serde_json::from_str(&stdout).unwrap();
            assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
            v["hookSpecificOutput"]["additionalContext"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// Every slice starts at a block boundary.
fn assert_block_boundaries(slices: &[String]) {
    for s in slices.iter().filter(|s| !s.is_empty()) {
        assert!(
            [
                "═",
                "[Preloaded: ",
                "[Session Files: ",
                "## Session Recovery",
                "[preload overflow"
            ]
            .iter()
            .any(|p| s.starts_with(p)),
            "slice starts mid-block: {:?}",
            &s[..s.len().min(80)]
        );
    }
}

#[test]
fn chunks_are_generated_once_and_hold_whole_blocks() {
    let sb = Sandbox::new();
    sb.active_session("s", &json!({"currentPhase": "1: Interrogation"}));
    let slices = run_chunks(&sb, 8, "startup", &[("PRELOAD_OUTPUT_BUDGET", "1000")]);
    assert!(
        slices.iter().filter(|s| !s.is_empty()).count() > 2,
        "spread over several slots"
    );
    for s in &slices {
        assert!(s.chars().count() <= 1000);
        assert!(!s.contains("\\n"));
    }
    assert_block_boundaries(&slices);
    let all = slices.concat();
    assert_eq!(
        all.matches("MANDATORY PRELOAD").count(),
        1,
        "generated once"
    );
    let raw: Vec<&str> = all
        .lines()
        .filter(|l| l.starts_with("[Preloaded: "))
        .collect();
    let mut distinct = raw.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), raw.len(), "no block or part twice: {raw:?}");
    sb.assert_no_duplicates();
    preload_test_support::sandbox::assert_shown_recorded(&all, &sb.state("s"));
    // A second round with the same session_id + source reads the cache: same text, no new events.
    let events = sb.events().len();
    let again = run_chunks(&sb, 8, "startup", &[("PRELOAD_OUTPUT_BUDGET", "1000")]);
    assert_eq!(again, slices);
    assert_eq!(sb.events().len(), events);
}

#[test]
fn a_block_larger_than_a_slice_goes_out_in_labelled_parts() {
    // No example engine: its standards (about 160 KB) would fill the ten slots before the TOC.
    let sb = Sandbox::bare();
    let toc = "- an entry of the table of contents\n".repeat(120);
    fs::create_dir_all(sb.project.join("docs")).unwrap();
    fs::write(sb.project.join("docs/TOC.md"), &toc).unwrap();
    let slices = run_chunks(&sb, 10, "clear", &[("PRELOAD_OUTPUT_BUDGET", "1000")]);
    assert_block_boundaries(&slices);
    let all = slices.concat();
    let parts = all.matches("docs/TOC.md (part ").count();
    assert!(parts >= 4, "{parts} parts");
    assert!(all.contains(&format!("TOC.md (part {parts}/{parts})]")));
    assert!(!all.contains("[preload overflow"));
    assert!(
        lists(&sb.seed(), "preloadedFiles", "docs/TOC.md"),
        "complete: in context"
    );
}

#[test]
fn too_few_slots_point_at_the_rest_which_stays_queued() {
    let sb = Sandbox::new();
    sb.active_session("s", &json!({"currentPhase": "1: Interrogation"}));
    let slices = run_chunks(&sb, 2, "resume", &[("PRELOAD_OUTPUT_BUDGET", "800")]);
    assert!(slices.iter().all(|s| s.chars().count() <= 800));
    assert!(
        slices[1].contains("[preload overflow: "),
        "pointer in the last slot: {:?}",
        slices[1]
    );
    let state = sb.state("s");
    let pending = strings(&state, "pendingPreloads");
    assert!(!pending.is_empty());
    preload_test_support::sandbox::assert_shown_recorded(&slices.concat(), &state);
    assert!(
        pending
            .iter()
            .any(|p| p.ends_with("CMD_INTERROGATE.md") || p.ends_with("SKILL.md"))
    );
}

/// The lock file the registrations of this test process's `sess-1` event take in `dir`.
fn generation_lock(dir: &std::path::Path, source: &str) -> std::path::PathBuf {
    let client = std::process::id();
    let started = preload_core::primitives::process::start_time(client).unwrap_or(0);
    preload_core::mechanisms::start_text::lock_file(
        dir,
        &format!("sess-1_{source}_{client}-{started}"),
    )
}

/// The cache directory `cache/` of `sb`, with the lock of its `startup` event held by this
/// process, as a registration generating the text holds it.
fn held_generation_lock(sb: &Sandbox) -> (String, nix::fcntl::Flock<fs::File>) {
    use nix::fcntl::{Flock, FlockArg};
    let dir = sb.root().join("cache");
    fs::create_dir_all(&dir).unwrap();
    let held = Flock::lock(
        fs::File::create(generation_lock(&dir, "startup")).unwrap(),
        FlockArg::LockExclusiveNonblock,
    )
    .unwrap();
    (dir.to_string_lossy().into_owned(), held)
}

#[test]
fn a_held_generation_lock_is_waited_for_then_the_registration_fails_open() {
    let sb = Sandbox::new();
    let (cache, held) = held_generation_lock(&sb);
    let env = [
        ("PRELOAD_CACHE_DIR", cache.as_str()),
        ("PRELOAD_BUDGET_MS", "400"),
    ];
    let started = std::time::Instant::now();
    let slices = run_chunks(&sb, 1, "startup", &env);
    assert!(
        slices[0].is_empty(),
        "generated under another holder's lock"
    );
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(250),
        "the lock was not waited for"
    );
    drop(held);
    let slices = run_chunks(&sb, 1, "startup", &env);
    assert!(slices[0].contains("MANDATORY PRELOAD"));
}

#[test]
fn a_generator_that_dies_without_writing_is_taken_over() {
    let sb = Sandbox::new();
    // This process plays a generator that dies before the text is written: the kernel lets go
    // of its lock, which ends the registrations' wait with no text to read.
    let (cache, held) = held_generation_lock(&sb);
    let dies = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(150));
        drop(held);
    });
    // Waiting out their time (three quarters of 2 s) would end in nothing printed.
    let env = [
        ("PRELOAD_CACHE_DIR", cache.as_str()),
        ("PRELOAD_BUDGET_MS", "2000"),
    ];
    let slices = run_chunks(&sb, 3, "startup", &env);
    dies.join().unwrap();
    assert!(
        slices[0].contains("MANDATORY PRELOAD"),
        "the registrations did not take over: {slices:?}"
    );
    assert_block_boundaries(&slices);
}

#[test]
fn lock_directories_of_earlier_builds_are_swept() {
    let sb = Sandbox::new();
    let dir = sb.root().join("cache");
    fs::create_dir_all(&dir).unwrap();
    let client = std::process::id();
    let started = preload_core::primitives::process::start_time(client).unwrap_or(0);
    let old = dir.join(format!("sess-0_startup_{client}-{started}.slots.lock"));
    let spare = dir.join(preload_core::primitives::lock::SPARE);
    let recent = dir.join("sess-9_startup_1-1.slots.lock");
    for lock in [&old, &spare, &recent] {
        fs::create_dir_all(lock).unwrap();
        fs::write(lock.join("pid"), "4000000").unwrap();
    }
    let an_hour_ago = nix::sys::time::TimeVal::new(
        i64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs(),
        )
        .unwrap()
            - 3600,
        0,
    );
    for lock in [&old, &spare] {
        nix::sys::stat::utimes(lock.as_path(), &an_hour_ago, &an_hour_ago).unwrap();
    }
    let cache = dir.to_string_lossy().into_owned();
    let slices = run_chunks(&sb, 3, "startup", &[("PRELOAD_CACHE_DIR", &cache)]);
    assert!(slices[0].contains("MANDATORY PRELOAD"));
    assert!(
        !old.exists() && !spare.exists(),
        "old lock directories left"
    );
    assert!(recent.join("pid").is_file(), "a recent one was removed");
}

#[test]
fn a_symlinked_cache_directory_is_refused() {
    let sb = Sandbox::new();
    let real = sb.root().join("elsewhere");
    fs::create_dir_all(&real).unwrap();
    let link = sb.root().join("cache-link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let cache = link.to_string_lossy().into_owned();
    let slices = run_chunks(&sb, 2, "startup", &[("PRELOAD_CACHE_DIR", &cache)]);
    assert!(slices.iter().all(String::is_empty), "fails open");
    assert_eq!(
        fs::read_dir(&real).unwrap().count(),
        0,
        "nothing written through the link"
    );
}

#[test]
fn the_default_cache_directory_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    run_chunks(&sb, 1, "startup", &[]);
    let uid = nix::unistd::geteuid().as_raw();
    let dir = sb.root().join(format!("claude-preload-{uid}"));
    assert_eq!(
        fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let client = std::process::id();
    let started = preload_core::primitives::process::start_time(client).unwrap_or(0);
    assert!(
        dir.join(format!("sess-1_startup_{client}-{started}.slots"))
            .is_file()
    );
}

#[test]
fn a_malformed_chunk_argument_prints_nothing() {
    let sb = Sandbox::new();
    for arg in ["5/5", "x", "1/0"] {
        let a = sb.run_args(
            "preload-session-start",
            &["--chunk", arg],
            json!({"source": "startup"}),
        );
        a.assert_contract();
        assert_eq!(a.stdout, "");
    }
    assert!(!sb.seed_path().exists());
}

/// SessionStart without `--chunk` as process `owner`, for conversation `conversation`.
fn start_as(
    sb: &Sandbox,
    owner: &str,
    source: &str,
    conversation: &str,
) -> preload_test_support::sandbox::Answer {
    let out = sb
        .command("preload-session-start")
        .env("CLAUDE_SUPERVISOR_PID", owner)
        .write_stdin(
            json!({"hook_event_name": "SessionStart", "source": source,
                "session_id": conversation, "cwd": sb.project})
            .to_string(),
        )
        .output()
        .unwrap();
    preload_test_support::sandbox::Answer::from_output(&out)
}

/// Whether the parts a text shows start the standards' `COMMANDS.md` with its first part.
fn commands_from_part_one(parts: &[(String, usize, usize)]) -> bool {
    parts
        .iter()
        .any(|(p, part, _)| p.ends_with("COMMANDS.md") && *part == 1)
}

#[test]
fn resume_goes_on_with_the_conversations_context_window() {
    let sb = Sandbox::new();
    // The first process (gone by now) had session `s` and delivered the start-up files.
    let first = "4000001";
    sb.active_session("s", &json!({"pid": 4_000_001}));
    let started = start_as(&sb, first, "startup", "conv-1");
    started.assert_contract();
    let delivered = preload_test_support::sandbox::shown_parts(&started.context());
    assert!(commands_from_part_one(&delivered), "{delivered:?}");
    assert_eq!(sb.state("s")["sessionId"], "conv-1");

    // `claude --resume` replays conv-1 in a new process: nothing it holds is sent again (only
    // what it was still owed goes on, part after part), and the session is the new process's.
    let resumed = start_as(&sb, &sb.pid.to_string(), "resume", "conv-1");
    resumed.assert_contract();
    for (path, part, total) in preload_test_support::sandbox::shown_parts(&resumed.context()) {
        let before = delivered.iter().find(|(p, ..)| *p == path);
        assert!(
            before.is_none_or(|(_, seen, all)| seen < all && part > *seen && total == *all),
            "re-sent on resume: {path} part {part}/{total} after {before:?}"
        );
    }
    assert!(resumed.context().contains("Session: s"));
    let state = sb.state("s");
    assert_eq!(state["pid"], json!(sb.pid));
    for (file, part, total) in &delivered {
        if part == total {
            assert!(strings(&state, "preloadedFiles").contains(file), "{file}");
        }
    }

    // Another conversation resumed is a context window of its own: it gets the standards.
    let other = start_as(&sb, &sb.pid.to_string(), "resume", "conv-2");
    let fresh = preload_test_support::sandbox::shown_parts(&other.context());
    assert!(commands_from_part_one(&fresh), "{fresh:?}");
}

/// A resume of a conversation the owner's session does not serve yet, whose current phase's
/// command is longer than a slice, with every registration started through a wrapper of its
/// own (`timeout`, as a supervisor or a user's wrapper starts hooks), so no two share a parent:
/// the text is still generated once for the event (the cache belongs to the owner, not to each
/// registration's parent), and every file the session records as in context is in a slice,
/// whole, or in parts with the rest queued. Before, each registration generated its own text;
/// the first one's made the session serve the conversation, so the others went on from a
/// window that already held everything, printed nothing, and the long file and every block
/// after it were recorded but never sent.
#[test]
fn a_resume_through_wrapped_registrations_sends_everything_it_records() {
    let mut sb = Sandbox::new();
    let long = "A line of the interrogation protocol.\n".repeat(3_000);
    sb.directive(
        "commands/CMD_INTERROGATE.md",
        &format!("# CMD_INTERROGATE\n{long}"),
    );
    sb.active_session(
        "work",
        &json!({"currentPhase": "1: Interrogation", "sessionId": "the-first-conversation"}),
    );
    sb.conversation = "a-resumed-conversation".to_owned();
    let input = json!({"hook_event_name": "SessionStart", "source": "resume",
        "session_id": sb.conversation, "cwd": sb.project, "transcript_path": "/tmp/x/t.jsonl"});
    let total = preload_cli::install::wiring::SESSION_START_CHUNKS;
    let slices: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..total)
            .map(|i| {
                let (sb, input) = (&sb, input.to_string());
                scope.spawn(move || {
                    let out = sb
                        .command_through(&["timeout", "30"], "preload-session-start")
                        .args(["--chunk", &format!("{i}/{total}")])
                        .write_stdin(input)
                        .output()
                        .unwrap();
                    let answer = preload_test_support::sandbox::Answer::from_output(&out);
                    answer.assert_contract();
                    answer.context()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let text = slices.join("\n");
    let state = sb.state("work");
    let interrogate = sb.engine_path("commands/CMD_INTERROGATE.md");
    assert!(
        text.contains(&format!("[Preloaded: {interrogate} (part 1/")),
        "the long command starts in the text"
    );
    let whole: Vec<String> = preload_test_support::sandbox::shown_parts(&text)
        .into_iter()
        .filter(|(_, part, total)| part == total)
        .map(|(path, ..)| path)
        .collect();
    for file in strings(&state, "preloadedFiles") {
        assert!(
            whole.contains(&file),
            "{file} is recorded as in context but no slice holds it whole"
        );
    }
    preload_test_support::sandbox::assert_shown_recorded(&text, &state);
}

/// A hook given another event's input (a wiring mistake) answers nothing and writes nothing:
/// SessionStart's text never goes out with a tool call, and the guard engine says nothing
/// about a SessionStart.
#[test]
fn a_hook_given_another_events_input_answers_nothing() {
    let sb = Sandbox::new();
    let tool = json!({"hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "ls"}});
    for args in [&[][..], &["--chunk", "0/32"][..]] {
        let answer = sb.run_args("preload-session-start", args, tool.clone());
        assert_eq!(answer.code, 0);
        assert_eq!(answer.stdout, "", "{args:?}");
    }
    assert!(!sb.seed_path().exists(), "no seed written");
    let start = json!({"hook_event_name": "SessionStart", "source": "startup"});
    let answer = sb.run("preload-overflow", start);
    assert_eq!((answer.code, answer.stdout.as_str()), (0, ""));
    // Its own event's input still gets its answer.
    let answer = sb.run("preload-overflow", tool);
    assert!(
        answer.stdout.contains("\"permissionDecision\""),
        "{}",
        answer.stdout
    );
}

#[test]
fn session_start_without_a_session_seeds_and_delivers_the_standards() {
    let sb = Sandbox::new();
    // As the client runs it: every registration of the wiring.
    let a =
        sb.session_start_event(&json!({"hook_event_name": "SessionStart", "source": "startup"}));
    let json = a.json.clone().unwrap();
    assert_eq!(json["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let text = a.context();
    assert!(text.contains("| Session: (none)"));
    let shown = files(&text);
    assert_eq!(
        shown.len(),
        8,
        "6 standards + TOC + the example's context pack: {shown:?}"
    );
    assert!(
        shown
            .iter()
            .any(|h| h.ends_with("/.claude/context-packs.json#project-basics"))
    );
    assert!(shown.iter().all(|h| h.starts_with('/')), "absolute paths");
    assert!(text.contains(&format!(
        "[Preloaded: {} (part 1/",
        sb.engine_path("COMMANDS.md")
    )));
    let seed = sb.seed();
    let mut recorded = strings(&seed, "preloadedFiles");
    recorded.sort();
    let mut expected = shown.clone();
    expected.sort();
    assert_eq!(recorded, expected, "every part out, every file recorded");
    assert_eq!(
        sb.events().iter().filter(|e| e["event"] == "seed").count(),
        8
    );
    assert_eq!(sb.deliveries().len(), 8);
    // CMD_PARSE_PARAMETERS's format reference waits for the next tool call.
    assert!(lists(&seed, "pendingPreloads", "FMT_SESSION_PARAMETERS.md"));
}

#[test]
fn session_start_keeps_what_does_not_fit_queued() {
    let mut sb = Sandbox::new();
    sb.active_session("s", &json!({"currentPhase": "1: Interrogation"}));
    sb.extra_env
        .push(("PRELOAD_OUTPUT_BUDGET".into(), "1200".into()));
    let a = session_start(&sb, "compact");
    a.assert_contract();
    let text = a.context();
    assert!(text.chars().count() <= 1200);
    assert!(text.contains("[preload overflow: "));
    let state = sb.state("s");
    let delivered = headers(&text);
    let pending = strings(&state, "pendingPreloads");
    preload_test_support::sandbox::assert_shown_recorded(&text, &state);
    for f in ["CMD_INTERROGATE.md", "/implement/SKILL.md"] {
        let queued = pending.iter().any(|p| p.ends_with(f));
        let shown = delivered.iter().any(|p| p.ends_with(f));
        assert!(
            queued != shown,
            "{f} either delivered or queued, never lost nor both"
        );
    }
}

#[test]
fn session_start_on_a_completed_session_reseeds_but_skips_the_skill() {
    let sb = Sandbox::new();
    sb.active_session(
        "done",
        &json!({"lifecycle": "completed", "preloadedFiles": ["/old.md"]}),
    );
    let a = session_start(&sb, "startup");
    a.assert_contract();
    assert!(!a.context().contains("SKILL.md]"));
    assert!(!strings(&sb.state("done"), "preloadedFiles").contains(&"/old.md".to_owned()));
}

/// A fork whose parent's session cannot be written in time (its lock held past the wait) goes
/// on from the parent's window in a seed of its own, marked a fork (the session gate lets a
/// fork through), and gets nothing its parent's window holds again; the session is left as
/// it was.
#[test]
fn a_fork_whose_session_is_locked_goes_on_from_its_parents_window_in_its_seed() {
    let mut sb = Sandbox::new();
    let dir = sb.active_session("work", &json!({}));
    let parent = session_start(&sb, "startup");
    let held: Vec<String> = strings(&sb.state("work"), "preloadedFiles");
    assert!(!files(&parent.context()).is_empty() && !held.is_empty());
    let conversation = sb.conversation.clone();
    let mut client = Command::new("perl")
        .args([
            "-e",
            "sleep 60",
            "--",
            "claude",
            "--resume",
            &conversation,
            "--fork-session",
        ])
        .spawn()
        .unwrap();
    // The hooks read the fork's parent from the client's command line: wait until it is perl's.
    let cmdline = format!("/proc/{}/cmdline", client.id());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !fs::read(&cmdline).is_ok_and(|c| c.windows(14).any(|w| w == b"--fork-session")) {
        assert!(
            std::time::Instant::now() < deadline,
            "the client never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    sb.extra_env
        .push((env::CLAUDE_PID.into(), client.id().to_string()));
    sb.extra_env
        .push((env::PRELOAD_LOCK_TIMEOUT_MS.into(), "100".into()));
    let lock = dir.join(".state.json.lock");
    fs::create_dir(&lock).unwrap();
    fs::write(lock.join("pid"), format!("{}\n", sb.pid)).unwrap();
    let before = fs::read(dir.join(".state.json")).unwrap();
    let fork = sb.run(
        "preload-session-start",
        json!({"hook_event_name": "SessionStart", "source": "fork", "session_id": "fork-conv"}),
    );
    fs::remove_dir_all(&lock).unwrap();
    let _ = client.kill();
    let _ = client.wait();
    fork.assert_contract();
    let again: Vec<String> = files(&fork.context())
        .into_iter()
        .filter(|f| held.contains(f))
        .collect();
    assert!(again.is_empty(), "sent again in the fork: {again:?}");
    // The seed as the hooks read it: the file the engine reads and its carry.
    let seed = preload_core::mechanisms::ledger::read_seed(&sb.seed_path()).unwrap();
    assert_eq!(seed.str("preloadForkOf"), Some(conversation.as_str()));
    let in_seed = seed.path_list(preload_core::state::IN_CONTEXT);
    assert!(held.iter().all(|f| in_seed.contains(f)), "{in_seed:?}");
    assert_eq!(fs::read(dir.join(".state.json")).unwrap(), before);
}
