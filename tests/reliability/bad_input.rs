//! Bad input: hostile stdin, generated and fixed, never breaks a hook's contract.

use super::*;

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
            let out = child.wait_with_output().unwrap();
            drop(held);
            assert_eq!(out.status.code(), Some(0));
            assert!(out.stdout.is_empty());
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
