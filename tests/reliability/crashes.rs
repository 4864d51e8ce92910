//! Crashes: hooks killed at random instants and mid-discovery, a killed bash lock holder: old or new state, no litter, nothing lost.

use super::*;

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

/// Hook `name` started with `stdin` and killed `offset` after its start (spinning up to that
/// instant), then reaped: what it had written by then.
fn killed_at(sb: &Sandbox, name: &str, stdin: &[u8], offset: Duration) -> Run {
    let started = Instant::now();
    let mut child = command(sb, name, &[], &[]).spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    while started.elapsed() < offset {
        std::hint::spin_loop();
    }
    let _ = child.kill();
    finish(&mut child, Vec::new(), started)
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
        let offset = Duration::from_micros(rng.below(span_us * 12 / 10) as u64);
        let killed = killed_at(&sb, "preload-injections", input.as_bytes(), offset);
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
                &preload_test_support::sandbox::LOADED_MACHINE_LIMITS,
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
            let idle = preload_test_support::sandbox::strings(&state, "pendingPreloads").is_empty()
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
        let offset = Duration::from_micros(rng.below(span_us * 3 / 2) as u64);
        let killed = killed_at(&sb, "preload-overflow", read.to_string().as_bytes(), offset);
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
        let preloaded = preload_test_support::sandbox::strings(&state, "preloadedFiles");
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
