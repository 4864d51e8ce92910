//! Containment: what the hooks read and write stays within the project's files, through no link or FIFO, and no content reaches the debug output.

use super::*;

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
            preload_core::state::Write::per_call(Instant::now() + Duration::from_secs(2)),
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
    let preloaded = preload_test_support::sandbox::strings(&state, "preloadedFiles");
    for bad in [&paths[0], &paths[1], &paths[2]] {
        assert!(
            !preloaded.contains(bad),
            "{bad} is not a regular file: {state}"
        );
    }
    assert!(
        preload_test_support::sandbox::strings(&state, "pendingPreloads").is_empty(),
        "{state}"
    );
    // The symlink to an already delivered file is the same file: skipped by inode.
    // What one file delivered directly (as a hook's own answer carries it) puts out.
    let direct = |ctx: &preload_core::Context, file: &Path| {
        let mut packer = preload_core::primitives::delivery::Packer::new(9_500);
        preload::ensure(
            ctx,
            &target,
            &[Request::new(file.to_string_lossy(), "t")],
            Mode::Direct,
            &mut packer,
        )
        .unwrap()
        .text()
    };
    assert!(direct(&core_context(&sb, &[]), &link).is_empty());
    // A cap of 10 bytes turns the small file into a pointer too.
    let small_cap = core_context(&sb, &[(env::PRELOAD_MAX_FILE_BYTES, "10".to_owned())]);
    let other = sb.project_file("other.md", "OTHER-CONTENT-MARKER, longer than ten bytes\n");
    let capped = direct(&small_cap, &other);
    assert!(!capped.contains("OTHER-CONTENT-MARKER") && capped.contains("[Preloaded: "));
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
