//! `make bench`: every hook binary timed on realistic inputs against the cost of starting a
//! process, printed as one table (hook, case, state size, median, p95, ratio to the floor, CPU
//! time, system calls per call); exits non-zero when a hook misses its target.
//!
//! Each hook call is paired with a call of a no-op binary built here (reads stdin, prints
//! `{}`), interleaved, so the ratio compares a hook with the process-spawn floor measured under
//! the same load. Targets: every call other than SessionStart within 2x the floor on typical
//! state and on 10 sessions, 5x on the large state (1,000 sessions, 5,000 preloaded files) and
//! on 1,000 and 10,000 sessions, the first call after a SessionStart included; SessionStart per
//! event (`events`): its registrations started at once, as the client starts them, within 1x of
//! as many no-ops started at once, on every source; the start-up hand-over look at most 3 us a
//! session (from the `startup` times at 10, 1,000 and 10,000 sessions). The `wirings` rows time
//! every event through the per-binary wiring and through `preload-dispatch` (wall and CPU time
//! of all the processes the client starts for the call; reported, no target).
//!
//! Environment: `BENCH_ITERS` (calls per case, default 15), `BENCH_ONLY` (comma-separated
//! scenarios: typical, large, sessions, transcript (the typical state with a 20 MB transcript,
//! typical targets), events, wirings; and, outside the table, chunks and contention), `BENCH_KEEP` (keep the sandboxes),
//! `BENCH_BIN_DIR` (the directory of the binaries to measure).

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::too_many_lines,
    clippy::doc_markdown
)]

mod events;
mod lookups;
mod measure;
mod sandbox;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use preload_core::primitives::env;
use preload_core::state::fields;
use serde_json::{Value, json};

use measure::{Call, median};
use sandbox::{Sandbox, Sizes, TRANSCRIPT};

type Error = Box<dyn std::error::Error>;

/// Typical scenario: each hook within this many no-ops.
const TYPICAL_RATIO: f64 = 2.0;
/// Large scenario: each hook within this many no-ops.
const LARGE_RATIO: f64 = 5.0;
/// SessionStart: all chunks together within this many no-ops.
const CHUNKS_RATIO: f64 = 10.0;
/// Characters of SessionStart text the chunks scenario delivers.
const SESSION_START_CHARS: usize = 250_000;
/// Bytes of the transcript of the `transcript` scenario.
const TRANSCRIPT_BYTES: usize = 20_000_000;
/// Hook processes started at once on one state file.
const CONTENDERS: usize = 8;

/// The binaries of the hooks, by name: in `BENCH_BIN_DIR` when it is set (`make bench` sets it
/// to the release binaries `make release` builds, the ones users install), else the ones cargo
/// built for the bench.
fn binary(name: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os("BENCH_BIN_DIR") {
        return PathBuf::from(dir).join(name);
    }
    // Cargo builds every binary of the package into one directory.
    Path::new(env!("CARGO_BIN_EXE_preload")).with_file_name(name)
}

/// Which hook binaries exist and answer `--help` (a placeholder prints nothing).
struct Availability(HashMap<&'static str, Result<PathBuf, String>>);

impl Availability {
    fn check(names: &[&'static str]) -> Self {
        let mut map = HashMap::new();
        for name in names {
            let path = binary(name);
            let found = if path.is_file() {
                match std::process::Command::new(&path).arg("--help").output() {
                    Ok(out) if !out.stdout.is_empty() => Ok(path),
                    Ok(_) => Err("not implemented yet (prints no --help)".to_owned()),
                    Err(err) => Err(format!("cannot run: {err}")),
                }
            } else {
                Err("binary does not exist".to_owned())
            };
            map.insert(*name, found);
        }
        Self(map)
    }

    fn path(&self, name: &str) -> Option<&PathBuf> {
        self.0.get(name).and_then(|r| r.as_ref().ok())
    }

    fn print_skips(&self) {
        let mut names: Vec<_> = self.0.keys().copied().collect();
        names.sort_unstable();
        for name in names {
            if let Some(Err(why)) = self.0.get(name) {
                println!("  skip {name}: {why}");
            }
        }
    }
}

const HOOKS: [&str; 8] = [
    "preload-overflow",
    "preload-injections",
    "preload-templates",
    "preload-phase-commands",
    "preload-prompt-submit",
    "preload-session-start",
    "preload-compaction-reread",
    "preload-e2e-auto-answer",
];

/// One hook call to measure.
struct Case {
    bin: &'static str,
    label: String,
    args: Vec<String>,
    input: Value,
    env: Vec<(String, String)>,
    /// The active session's state, restored before every call.
    state: Value,
    /// Use a new `session_id` on every call (SessionStart generates once per id).
    fresh_session: bool,
    /// Measure the first call after a SessionStart: before every call the state is restored,
    /// then a SessionStart `startup` runs (not timed) and leaves what it leaves (the re-seeded
    /// window, the owner's seed the next call adopts).
    after_start: bool,
}

impl Case {
    /// A call of `bin` with `input` on `state`, in the conversation of the sandbox, without
    /// arguments or environment of its own.
    fn new(bin: &'static str, label: &str, input: Value, state: Value) -> Self {
        Self {
            bin,
            label: label.to_owned(),
            args: Vec::new(),
            input,
            env: Vec::new(),
            state,
            fresh_session: false,
            after_start: false,
        }
    }
}

fn with(base: &Value, fields: &Value) -> Value {
    let mut out = base.clone();
    if let (Some(o), Some(f)) = (out.as_object_mut(), fields.as_object()) {
        for (k, v) in f {
            o.insert(k.clone(), v.clone());
        }
    }
    out
}

/// The cases every scenario runs.
fn cases(sb: &Sandbox, chunks: usize) -> Vec<Case> {
    let base = &sb.base_state;
    let case = Case::new;
    let pre = |tool: &str, input: Value| json!({"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": input});
    let post = |tool: &str, input: Value, response: Value| {
        json!({"hook_event_name": "PostToolUse", "tool_name": tool, "tool_input": input,
               "tool_response": response})
    };
    let ls = || pre("Bash", json!({"command": "ls -la"}));
    let ls_post = || {
        post(
            "Bash",
            json!({"command": "ls"}),
            json!({"stdout": "a\nb\n"}),
        )
    };
    let after_start = |c: Case| Case {
        after_start: true,
        ..c
    };
    // A live process that owns no session (its hooks work on a seed): the benchmark's parent.
    let other_owner = std::os::unix::process::parent_id().to_string();
    let ownerless = |c: Case| Case {
        env: vec![(env::CLAUDE_SUPERVISOR_PID.into(), other_owner.clone())],
        ..c
    };
    let queued: Vec<String> = ["CMD_ASK_ROUND", "CMD_LOG_INTERACTION", "CMD_INTERROGATE"]
        .iter()
        .map(|c| sb.command(c))
        .collect();
    let stash_text = format!(
        "[Preloaded: {}]\n{}",
        sb.command("CMD_APPEND_LOG"),
        "Append a log entry with the template's fields.\n".repeat(40)
    );
    let mut all = vec![
        case("preload-overflow", "PreToolUse Bash ls", ls(), base.clone()),
        after_start(case(
            "preload-overflow",
            "PreToolUse Bash ls, first after SessionStart",
            ls(),
            base.clone(),
        )),
        after_start(case(
            "preload-injections",
            "PostToolUse Bash ls, first after SessionStart",
            post(
                "Bash",
                json!({"command": "ls -la"}),
                json!({"stdout": "a\n"}),
            ),
            base.clone(),
        )),
        ownerless(case(
            "preload-overflow",
            "PreToolUse Bash ls, owner has no session",
            ls(),
            base.clone(),
        )),
        case(
            "preload-overflow",
            "PreToolUse Read, new dir (discovery)",
            pre("Read", json!({"file_path": sb.deep_file})),
            base.clone(),
        ),
        case(
            "preload-overflow",
            "PreToolUse, 3 queued files (claim)",
            pre("Bash", json!({"command": "git status"})),
            with(base, &json!({"pendingPreloads": queued})),
        ),
        case(
            "preload-overflow",
            "PreToolUse heartbeat deny",
            pre("Bash", json!({"command": "cargo test"})),
            with(
                base,
                &json!({"toolCallsByTranscript": {TRANSCRIPT: 9}, "toolCallsSinceLastLog": 9}),
            ),
        ),
        case(
            "preload-injections",
            "PostToolUse, 2 stashed",
            ls_post(),
            with(
                base,
                &json!({"pendingAllowInjections": [
                    {"ruleId": "preload", "content": stash_text, "agentId": ""},
                    {"ruleId": "heartbeat-warn", "content": "[warn: heartbeat] §CMD_APPEND_LOG (3/10)", "agentId": ""}]}),
            ),
        ),
        case(
            "preload-injections",
            "PostToolUse, nothing stashed",
            ls_post(),
            base.clone(),
        ),
        ownerless(case(
            "preload-injections",
            "PostToolUse, owner has no session",
            ls_post(),
            base.clone(),
        )),
        case(
            "preload-templates",
            "PostToolUse Skill implement",
            post(
                "Skill",
                json!({"skill": "implement"}),
                json!("Launching skill: implement"),
            ),
            with(base, &json!({"currentPhase": "0: Setup"})),
        ),
        case(
            "preload-templates",
            "PostToolUse Read (not a skill)",
            post("Read", json!({"file_path": sb.deep_file}), json!("…")),
            base.clone(),
        ),
        case(
            "preload-phase-commands",
            "PostToolUse Bash `Phase: 2: Planning`",
            post(
                "Bash",
                json!({"command": format!("engine session phase {} \"2: Planning\"", sb.active.display())}),
                json!({"stdout": "Phase: 2: Planning\nSteps: §CMD_REPORT_INTENT, §CMD_GENERATE_PLAN\n",
                       "stderr": "", "interrupted": false}),
            ),
            with(base, &json!({"currentPhase": "2: Planning"})),
        ),
        case(
            "preload-prompt-submit",
            "UserPromptSubmit",
            json!({"hook_event_name": "UserPromptSubmit",
                   "prompt": "Go ahead with the plan and keep the log up to date"}),
            base.clone(),
        ),
    ];
    // The slice that generates the text, on every source.
    all.extend(
        ["startup", "resume", "clear", "compact"].map(|source| Case {
            args: vec!["--chunk".into(), format!("0/{chunks}")],
            fresh_session: true,
            ..case(
                "preload-session-start",
                &format!("SessionStart {source}, chunk 0/{chunks}"),
                json!({"hook_event_name": "SessionStart", "source": source}),
                base.clone(),
            )
        }),
    );
    all.extend([
        Case {
            args: vec!["pretooluse".into()],
            ..case(
                "preload-compaction-reread",
                "pretooluse, no compaction",
                pre("Bash", json!({"command": "ls"})),
                base.clone(),
            )
        },
        Case {
            env: vec![(env::E2E_AUTO_ANSWER.into(), "first".into())],
            ..case(
                "preload-e2e-auto-answer",
                "PreToolUse AskUserQuestion",
                pre(
                    "AskUserQuestion",
                    json!({"questions": [{"question": "Which depth?", "header": "Depth",
                        "options": [{"label": "Short (Recommended)"}, {"label": "Deep"}],
                        "multiSelect": false}]}),
                ),
                base.clone(),
            )
        },
    ]);
    with_call_fields(sb, &mut all);
    all
}

/// Give every case's input the sandbox's `cwd` and transcript, and a conversation.
fn with_call_fields(sb: &Sandbox, cases: &mut [Case]) {
    for c in cases {
        if let Some(o) = c.input.as_object_mut() {
            o.insert("cwd".into(), json!(sb.project));
            o.insert("transcript_path".into(), json!(sb.transcript));
            o.entry("session_id")
                .or_insert_with(|| json!(sandbox::CONVERSATION));
        }
    }
}

/// The environment every hook call gets (the process starts with an empty one).
fn base_env(sb: &Sandbox) -> Vec<(String, String)> {
    let path = |p: &Path| p.to_string_lossy().into_owned();
    vec![
        (env::HOME.into(), path(&sb.home)),
        ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
        (
            env::CLAUDE_SUPERVISOR_PID.into(),
            std::process::id().to_string(),
        ),
        (env::CLAUDE_SESSION_CACHE_DIR.into(), path(&sb.root)),
        (env::TMPDIR.into(), path(&sb.root.join("tmp"))),
        (env::PRELOAD_CACHE_DIR.into(), path(&sb.root.join("cache"))),
        (
            env::PRELOAD_MARKER_DIR.into(),
            path(&sb.root.join("markers")),
        ),
        (env::SESSION_REQUIRED.into(), "1".into()),
    ]
}

fn call_for(sb: &Sandbox, case: &Case, bin: &Path, n: usize) -> Call {
    let mut input = case.input.clone();
    if case.fresh_session {
        input["session_id"] = json!(format!("bench-{}-{n}", std::process::id()));
    }
    let mut env = base_env(sb);
    env.extend(case.env.iter().cloned());
    Call {
        bin: bin.to_path_buf(),
        args: case.args.clone(),
        stdin: input.to_string().into_bytes(),
        env,
        cwd: sb.project.clone(),
    }
}

/// One measured case.
struct Row {
    label: String,
    bin: &'static str,
    output: String,
    note: Option<String>,
    median: Duration,
    p95: Duration,
    /// Median user+system CPU time of one call.
    cpu: Duration,
    /// Every system call of one call (`strace -f -c`).
    all_syscalls: Option<usize>,
}

/// The results of one scenario.
struct Results {
    noop: Duration,
    noop_p95: Duration,
    rows: Vec<Row>,
}

fn iterations() -> usize {
    std::env::var("BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(15)
}

/// Put the state back for `case`'s next call (with `counters`, see [`Sandbox::restore_with`]),
/// and, for a case measured after a SessionStart, run one as the client does (`startup`, a new
/// conversation: every registration the wiring has, at once).
fn prepare(
    sb: &Sandbox,
    case: &Case,
    counters: Option<&[u8]>,
    counter: &mut usize,
) -> Result<(), Error> {
    sb.restore_with(&case.state, counters)?;
    if case.after_start {
        let start = Case {
            fresh_session: true,
            ..Case::new(
                "preload-session-start",
                "",
                json!({"hook_event_name": "SessionStart", "source": "startup",
                       "cwd": sb.project, "transcript_path": sb.transcript}),
                case.state.clone(),
            )
        };
        let call = call_for(sb, &start, &binary(start.bin), *counter);
        *counter += 1;
        let registrations: Vec<(PathBuf, Vec<String>)> =
            per_binary("SessionStart", &json!({"source": "startup"}))
                .into_iter()
                .map(|(bin, args)| (binary(bin), args))
                .collect();
        run_event(&call, &registrations)?;
    }
    Ok(())
}

fn run_cases(
    sb: &Sandbox,
    cases: &[Case],
    avail: &Availability,
    noop: &Path,
    strace: bool,
) -> Result<Results, Error> {
    let iters = iterations();
    let live: Vec<(&Case, PathBuf)> = cases
        .iter()
        .filter_map(|c| avail.path(c.bin).map(|p| (c, p.clone())))
        .collect();
    let mut rows = Vec::new();
    let mut counter = 0;
    // The counters file each case's second warm-up call left, put back before every measured
    // call: the counts are the same each time, and a counted call replaces the file as it does
    // in a running conversation.
    let mut counters = Vec::new();
    // Warm-up call with HOOK_DEBUG set: what the hook answers and why it failed open, if it did.
    for (case, bin) in &live {
        prepare(sb, case, None, &mut counter)?;
        let mut call = call_for(sb, case, bin, counter);
        counter += 1;
        call.env.push((env::HOOK_DEBUG.into(), "1".into()));
        let (_, out) = call.run_timed()?;
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
        call.env.pop();
        prepare(sb, case, None, &mut counter)?;
        let (_, out) = call_for(sb, case, bin, counter).run_timed()?;
        counter += 1;
        counters
            .push(std::fs::read(preload_core::mechanisms::counters::file_of(&sb.state_file)).ok());
        rows.push(Row {
            label: case.label.clone(),
            bin: case.bin,
            output: measure::summarize(&out),
            note: (!stderr.is_empty()).then_some(stderr),
            median: Duration::ZERO,
            p95: Duration::ZERO,
            cpu: Duration::ZERO,
            all_syscalls: None,
        });
    }
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); live.len()];
    let mut cpu: Vec<Vec<Duration>> = vec![Vec::new(); live.len()];
    let mut noop_samples = Vec::new();
    // Interleaved: each hook call right after a no-op call on the same input.
    for _ in 0..iters {
        for (i, (case, bin)) in live.iter().enumerate() {
            // After a SessionStart, the counters are what it leaves.
            let kept = counters[i].as_deref().filter(|_| !case.after_start);
            prepare(sb, case, kept, &mut counter)?;
            let call = call_for(sb, case, bin, counter);
            counter += 1;
            let (t, _) = call.run_timed_with(noop)?;
            noop_samples.push(t);
            let before = measure::children_cpu();
            let (t, _) = call.run_timed()?;
            cpu[i].push(measure::children_cpu().saturating_sub(before));
            samples[i].push(t);
        }
    }
    if live.is_empty() {
        // Nothing to compare with: still measure the floor.
        let call = Call {
            bin: noop.to_path_buf(),
            args: Vec::new(),
            stdin: b"{}".to_vec(),
            env: base_env(sb),
            cwd: sb.project.clone(),
        };
        for _ in 0..iters {
            noop_samples.push(call.run_timed()?.0);
        }
    }
    for (i, (case, bin)) in live.iter().enumerate() {
        rows[i].median = median(&mut samples[i]);
        rows[i].p95 = measure::p95(&mut samples[i]);
        rows[i].cpu = median(&mut cpu[i]);
        if strace {
            prepare(sb, case, None, &mut counter)?;
            let call = call_for(sb, case, bin, counter);
            counter += 1;
            rows[i].all_syscalls =
                measure::count_all_syscalls(&call, &sb.root.join("strace-c.txt")).ok();
        }
    }
    sb.restore(&sb.base_state)?;
    Ok(Results {
        noop_p95: measure::p95(&mut noop_samples),
        noop: median(&mut noop_samples),
        rows,
    })
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

fn ratio(d: Duration, noop: Duration) -> f64 {
    if noop.is_zero() {
        0.0
    } else {
        d.as_secs_f64() / noop.as_secs_f64()
    }
}

/// Collected target misses, printed at the end.
#[derive(Default)]
struct Verdicts(Vec<String>);

impl Verdicts {
    fn check(&mut self, ok: bool, what: String) -> &'static str {
        if ok {
            "ok"
        } else {
            self.0.push(what);
            "MISS"
        }
    }
}

/// The one table the benchmark prints, filled by every scenario.
static TABLE: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
/// What hooks said on stderr when asked why (`HOOK_DEBUG`), printed under the table.
static NOTES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn table_line(cells: &[String]) -> String {
    format!(
        "{:<34} {:<40} {:<23} {:>8} {:>8} {:>7} {:>7} {:>8} {:>6}",
        cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6], cells[7], cells[8]
    )
}

fn push_line(cells: &[String]) {
    if let Ok(mut t) = TABLE.lock() {
        t.push(table_line(cells));
    }
}

fn print_the_table() {
    println!();
    println!(
        "{}",
        table_line(&[
            "hook".into(),
            "case".into(),
            "state".into(),
            "median".into(),
            "p95".into(),
            "x floor".into(),
            "CPU".into(),
            "syscalls".into(),
            "target".into(),
        ])
    );
    if let Ok(t) = TABLE.lock() {
        for line in t.iter() {
            println!("{line}");
        }
    }
    if let Ok(notes) = NOTES.lock() {
        for note in notes.iter() {
            println!("  note: {note}");
        }
    }
}

fn count(n: Option<usize>, strace: bool) -> String {
    match n {
        Some(n) => n.to_string(),
        None if strace => "-".into(),
        None => "n/a".into(),
    }
}

/// Add the rows of one scenario (`state` says its size) to the table; `limit` is the ratio
/// target (none: reported only).
fn print_table(state: &str, res: &Results, limit: Option<f64>, strace: bool, v: &mut Verdicts) {
    push_line(&[
        "no-op floor".into(),
        "reads stdin, prints {}".into(),
        state.into(),
        ms(res.noop),
        ms(res.noop_p95),
        "1.00".into(),
        String::new(),
        String::new(),
        String::new(),
    ]);
    for row in &res.rows {
        let r = ratio(row.median, res.noop);
        // A SessionStart registration is judged with its event's others (`events`).
        let limit = limit.filter(|_| row.bin != "preload-session-start");
        let verdict = match limit {
            Some(limit) => v.check(
                r <= limit,
                format!(
                    "{state}: {} {} took {} ms = {r:.2}x the floor (target {limit}x)",
                    row.bin,
                    row.label,
                    ms(row.median),
                ),
            ),
            None => "-",
        };
        push_line(&[
            row.bin.into(),
            row.label.clone(),
            state.into(),
            ms(row.median),
            ms(row.p95),
            format!("{r:.2}"),
            ms(row.cpu),
            count(row.all_syscalls, strace),
            verdict.into(),
        ]);
        if row.output.starts_with("BAD") {
            if let Ok(mut notes) = NOTES.lock() {
                notes.push(format!("{} {}: {}", row.bin, row.label, row.output));
            }
        }
        if let Some(note) = &row.note {
            if let Ok(mut notes) = NOTES.lock() {
                notes.push(format!(
                    "{} {}: {}",
                    row.bin,
                    row.label,
                    note.replace('\n', " | ")
                ));
            }
        }
    }
}

/// What every state scenario measures with: the hooks found, the no-op floor, whether strace
/// counts system calls, and the chunks a `SessionStart` row is cut into.
struct Setup<'a> {
    avail: &'a Availability,
    noop: &'a Path,
    strace: bool,
    chunks: usize,
}

impl Setup<'_> {
    /// Every case in the state of `sb`, printed as the table rows of `state` against `limit`
    /// (times the floor).
    fn measure(
        &self,
        sb: &Sandbox,
        state: &str,
        limit: f64,
        v: &mut Verdicts,
    ) -> Result<Results, Error> {
        let cases = cases(sb, self.chunks);
        let res = run_cases(sb, &cases, self.avail, self.noop, self.strace)?;
        print_table(state, &res, Some(limit), self.strace, v);
        Ok(res)
    }
}

fn scenario_typical(setup: &Setup, v: &mut Verdicts) -> Result<(), Error> {
    let sb = Sandbox::generate(Sizes::TYPICAL, std::process::id())?;
    setup.measure(&sb, "typical (1 session, 50)", TYPICAL_RATIO, v)?;
    Ok(())
}

fn scenario_large(setup: &Setup, v: &mut Verdicts) -> Result<(), Error> {
    let sb = Sandbox::generate(Sizes::large(1), std::process::id())?;
    if let Ok(mut notes) = NOTES.lock() {
        notes.push(format!(
            "large state: {} KB state file, {:.1} MB of generated files under {}",
            std::fs::metadata(&sb.state_file).map_or(0, |m| m.len()) / 1000,
            sb.bytes as f64 / 1e6,
            sb.sessions.display()
        ));
    }
    setup.measure(&sb, "large (1,000 s, 5,000)", LARGE_RATIO, v)?;
    Ok(())
}

/// The typical state with a long conversation's transcript (20 MB): the first call of a prompt
/// reads the end of it to check its branch, a compaction the calls of its latest response.
fn scenario_transcript(setup: &Setup, v: &mut Verdicts) -> Result<(), Error> {
    let sizes = Sizes {
        transcript_bytes: TRANSCRIPT_BYTES,
        ..Sizes::TYPICAL
    };
    let mut sb = Sandbox::generate(sizes, std::process::id())?;
    // Calls of the window carried files: the first call of a prompt checks its branch.
    sb.base_state[fields::CARRIERS] = json!([{fields::CALL_ID: "toolu_call-00000002",
        fields::CALL_FILES: [sb.base_state["preloadedFiles"][0].clone()]}]);
    sb.restore(&sb.base_state)?;
    setup.measure(
        &sb,
        "transcript (1 session, 50; 20 MB transcript)",
        TYPICAL_RATIO,
        v,
    )?;
    Ok(())
}

/// 10 and 10,000 session directories beside the active session (typical state otherwise): what
/// a project's history costs a call.
fn scenario_sessions(setup: &Setup, v: &mut Verdicts) -> Result<(), Error> {
    let mut startup = Vec::new();
    for (sessions, state, limit) in [
        (10, "10 sessions", TYPICAL_RATIO),
        (1_000, "1,000 sessions", LARGE_RATIO),
        (10_000, "10,000 sessions", LARGE_RATIO),
    ] {
        let sizes = Sizes {
            sessions,
            ..Sizes::TYPICAL
        };
        let sb = Sandbox::generate(sizes, std::process::id())?;
        let res = setup.measure(&sb, state, limit, v)?;
        let row = res
            .rows
            .iter()
            .find(|r| r.label.starts_with("SessionStart startup"));
        startup.extend(row.map(|r| (sessions, r.median)));
    }
    events::handover(&startup, v);
    Ok(())
}

/// The processes the per-binary wiring starts for one call of `event`: the registrations the
/// client runs for it (matcher, `if` rule, a chunked row's every chunk), as `preload explain`
/// and `preload timings` see them.
fn per_binary(event: &str, input: &Value) -> Vec<(&'static str, Vec<String>)> {
    let mut call = input.clone();
    call["hook_event_name"] = json!(event);
    preload_cli::calls::registrations_for(&call)
        .into_iter()
        .map(|r| (r.row.binary, r.args))
        .collect()
}

/// The processes `preload install --dispatch` starts for one call of `event`.
fn dispatched(event: &str) -> Vec<(&'static str, Vec<String>)> {
    use preload_cli::install::wiring::SESSION_START_CHUNKS;
    if event == "SessionStart" {
        (0..SESSION_START_CHUNKS)
            .map(|i| {
                let args = vec![
                    event.to_owned(),
                    "--chunk".to_owned(),
                    format!("{i}/{SESSION_START_CHUNKS}"),
                ];
                ("preload-dispatch", args)
            })
            .collect()
    } else {
        vec![("preload-dispatch", vec![event.to_owned()])]
    }
}

/// Start `procs` at once on `call`'s input, as Claude Code starts an event's handlers; the wall
/// time until the last exits and the CPU time they used together.
fn run_event(call: &Call, procs: &[(PathBuf, Vec<String>)]) -> Result<(Duration, Duration), Error> {
    let cpu_before = measure::children_cpu();
    let start = Instant::now();
    let children: Vec<_> = procs
        .iter()
        .map(|(bin, args)| {
            let mut c = call.clone();
            c.args.clone_from(args);
            c.spawn_with(bin)
        })
        .collect::<Result<_, _>>()?;
    for child in children {
        child.wait_with_output()?;
    }
    Ok((
        start.elapsed(),
        measure::children_cpu().saturating_sub(cpu_before),
    ))
}

/// Every event through both wirings on typical state: wall time and CPU time of everything the
/// client starts for one call (reported, no target: the per-binary processes run in parallel).
fn scenario_wirings(noop: &Path, v: &mut Verdicts) -> Result<(), Error> {
    let sb = Sandbox::generate(Sizes::TYPICAL, std::process::id())?;
    let phase_cmd = format!(
        "engine session phase {} \"2: Planning\"",
        sb.active.display()
    );
    let events: Vec<(&str, &str, Value)> = vec![
        ("SessionStart", "startup", json!({"source": "startup"})),
        ("SessionStart", "compact", json!({"source": "compact"})),
        (
            "UserPromptSubmit",
            "prompt",
            json!({"prompt": "Go ahead with the plan"}),
        ),
        (
            "PreToolUse",
            "Bash ls",
            json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}),
        ),
        (
            "PostToolUse",
            "Bash ls",
            json!({"tool_name": "Bash", "tool_input": {"command": "ls"},
            "tool_response": {"stdout": "a\n"}}),
        ),
        (
            "PostToolUse",
            "engine session phase",
            json!({"tool_name": "Bash",
            "tool_input": {"command": phase_cmd},
            "tool_response": {"stdout": "Phase: 2: Planning\n"}}),
        ),
        ("PreCompact", "auto", json!({"trigger": "auto"})),
        ("Stop", "stop", json!({})),
        (
            "SubagentStart",
            "agent",
            json!({"agent_id": "bench-agent", "agent_type": "general-purpose"}),
        ),
        ("SessionEnd", "other", json!({"reason": "other"})),
    ];
    let iters = iterations();
    let mut counter = 0;
    for (event, what, fields) in events {
        let located = |procs: Vec<(&'static str, Vec<String>)>| -> Vec<(PathBuf, Vec<String>)> {
            procs
                .into_iter()
                .map(|(bin, args)| (binary(bin), args))
                .collect()
        };
        let wirings = [
            ("per-binary", located(per_binary(event, &fields))),
            ("dispatch", located(dispatched(event))),
        ];
        let mut walls = vec![Vec::new(); 2];
        let mut cpus = vec![Vec::new(); 2];
        let mut floor = Vec::new();
        for _ in 0..iters {
            for (w, (_, procs)) in wirings.iter().enumerate() {
                sb.restore(&sb.base_state)?;
                let mut input = fields.clone();
                input["hook_event_name"] = json!(event);
                input["cwd"] = json!(sb.project);
                input["transcript_path"] = json!(sb.transcript);
                input["session_id"] = json!(format!("bench-w-{}-{counter}", std::process::id()));
                counter += 1;
                let mut env = base_env(&sb);
                env.push((
                    env::PRELOAD_LEGACY_MARKER_DIR.into(),
                    sb.root.join("legacy").to_string_lossy().into_owned(),
                ));
                let call = Call {
                    bin: noop.to_path_buf(),
                    args: Vec::new(),
                    stdin: input.to_string().into_bytes(),
                    env,
                    cwd: sb.project.clone(),
                };
                floor.push(call.run_timed()?.0);
                let (wall, cpu) = run_event(&call, procs)?;
                walls[w].push(wall);
                cpus[w].push(cpu);
            }
        }
        let noop_median = median(&mut floor);
        for (w, (name, procs)) in wirings.iter().enumerate() {
            let m = median(&mut walls[w]);
            push_line(&[
                format!("{event} {what}"),
                format!(
                    "{name}: {} process{}",
                    procs.len(),
                    if procs.len() == 1 { "" } else { "es" }
                ),
                "typical (1 session, 50)".into(),
                ms(m),
                ms(measure::p95(&mut walls[w])),
                format!("{:.2}", ratio(m, noop_median)),
                ms(median(&mut cpus[w])),
                "n/a".into(),
                "-".into(),
            ]);
        }
    }
    let _ = v;
    sb.restore(&sb.base_state)?;
    Ok(())
}

/// The number of SessionStart chunks the installed wiring registers, when it can be read.
fn wired_chunks() -> Option<usize> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("hooks/settings.json");
    let text = std::fs::read_to_string(path).ok()?;
    let n = text.matches("--chunk").count();
    (n > 0).then_some(n)
}

fn scenario_chunks(
    avail: &Availability,
    noop: &Path,
    chunks: usize,
    v: &mut Verdicts,
) -> Result<(), Error> {
    let name = "preload-session-start";
    println!();
    println!("== SessionStart with all {chunks} chunks (--chunk I/{chunks}), ~250 KB of text");
    let Some(bin) = avail.path(name) else {
        println!("  skip {name}: not available");
        return Ok(());
    };
    let sizes = Sizes {
        sessions: 1,
        preloaded: 6,
        directives: 0,
        skill_lines: 1_500,
        command_bytes: 19_000,
        transcript_bytes: 0,
    };
    let sb = Sandbox::generate(sizes, std::process::id())?;
    let rounds = iterations().div_ceil(2).max(3);
    let case = Case {
        fresh_session: true,
        ..Case::new(
            name,
            "",
            json!({"hook_event_name": "SessionStart", "source": "startup",
                   "cwd": sb.project, "transcript_path": sb.transcript}),
            sb.base_state.clone(),
        )
    };
    let mut seq_totals = Vec::new();
    let mut par_walls = Vec::new();
    let mut noop_one = Vec::new();
    let mut noop_par = Vec::new();
    let mut first_chunk = Vec::new();
    let mut total_chars = 0;
    let mut nonempty = 0;
    let mut over_budget = 0;
    let mut bad = Vec::new();
    let mut counter = 0;
    for round in 0..rounds {
        // Sequential: one registration after the other.
        sb.restore(&case.state)?;
        let call = call_for(&sb, &case, bin, counter);
        counter += 1;
        let mut sum = Duration::ZERO;
        let mut chars = 0;
        let mut filled = 0;
        for i in 0..chunks {
            let mut c = call.clone();
            c.args = vec!["--chunk".into(), format!("{i}/{chunks}")];
            noop_one.push(c.run_timed_with(noop)?.0);
            let (t, out) = c.run_timed()?;
            if i == 0 {
                first_chunk.push(t);
            }
            sum += t;
            let text = measure::context_of(&out);
            let n = text.chars().count();
            let summary = measure::summarize(&out);
            if summary.starts_with("BAD") {
                bad.push(format!("chunk {i}: {summary}"));
            }
            if n > 9_500 {
                over_budget += 1;
            }
            if n > 0 {
                filled += 1;
            }
            chars += n;
        }
        seq_totals.push(sum);
        if round == 0 {
            total_chars = chars;
            nonempty = filled;
        }
        // Parallel: all registrations at once, as Claude Code runs them.
        sb.restore(&case.state)?;
        let call = call_for(&sb, &case, bin, counter);
        counter += 1;
        let start = Instant::now();
        let children: Vec<_> = (0..chunks)
            .map(|i| {
                let mut c = call.clone();
                c.args = vec!["--chunk".into(), format!("{i}/{chunks}")];
                c.spawn()
            })
            .collect::<Result<_, _>>()?;
        for child in children {
            child.wait_with_output()?;
        }
        par_walls.push(start.elapsed());
        let start = Instant::now();
        let children: Vec<_> = (0..chunks)
            .map(|_| call.spawn_with(noop))
            .collect::<Result<_, _>>()?;
        for child in children {
            child.wait_with_output()?;
        }
        noop_par.push(start.elapsed());
    }
    let one = median(&mut noop_one);
    let seq = median(&mut seq_totals);
    let par = median(&mut par_walls);
    let npar = median(&mut noop_par);
    let first = median(&mut first_chunk);
    let extra = seq.saturating_sub(one * u32::try_from(chunks).unwrap_or(u32::MAX));
    println!(
        "  text delivered: {total_chars} chars in {nonempty} non-empty slices; slices over the \
         9,500 budget: {over_budget}{}",
        if bad.is_empty() {
            String::new()
        } else {
            format!("; BAD: {}", bad.join(", "))
        }
    );
    println!(
        "  one no-op: {} ms; {chunks} no-ops at once: {} ms",
        ms(one),
        ms(npar)
    );
    println!(
        "  chunk 0 alone (generates the text): {} ms = {:.2}x no-op",
        ms(first),
        ratio(first, one)
    );
    println!(
        "  all {chunks} one after the other: {} ms = {:.2}x one no-op; above {chunks} no-ops: {} ms = {:.2}x one no-op",
        ms(seq),
        ratio(seq, one),
        ms(extra),
        ratio(extra, one)
    );
    let verdict = v.check(
        ratio(par, one) <= CHUNKS_RATIO,
        format!(
            "SessionStart: all {chunks} chunks at once took {} ms = {:.2}x one no-op (limit {CHUNKS_RATIO}x)",
            ms(par),
            ratio(par, one)
        ),
    );
    println!(
        "  all {chunks} at once (as Claude Code runs them): {} ms = {:.2}x one no-op, {:.2}x {chunks} no-ops at once  [{verdict}]",
        ms(par),
        ratio(par, one),
        ratio(par, npar)
    );
    Ok(())
}

/// Start `n` copies of a call at once; the wall time until the last exits, and the outputs.
fn burst(
    calls: &[Call],
    bin: Option<&Path>,
) -> Result<(Duration, Vec<std::process::Output>), Error> {
    let start = Instant::now();
    let children: Vec<_> = calls
        .iter()
        .map(|c| bin.map_or_else(|| c.spawn(), |b| c.spawn_with(b)))
        .collect::<Result<_, _>>()?;
    let mut outs = Vec::new();
    for child in children {
        outs.push(child.wait_with_output()?);
    }
    Ok((start.elapsed(), outs))
}

fn scenario_contention(
    avail: &Availability,
    noop: &Path,
    chunks: usize,
    v: &mut Verdicts,
) -> Result<(), Error> {
    println!();
    println!(
        "== contention: {CONTENDERS} hook processes on one state file at once (typical sandbox)"
    );
    let sb = Sandbox::generate(Sizes::TYPICAL, std::process::id())?;
    let all_cases = cases(&sb, chunks);
    let rounds = iterations();
    let mut counter = 0;
    let mut noop_walls = Vec::new();
    let mut noop_one = Vec::new();
    println!(
        "{:<26} {:<40} {:>12} {:>10} {:>12} {:>8}",
        "binary", "case", "wall ms", "x no-op", "x 8 no-ops", "lost"
    );
    let mut lines = Vec::new();
    for (name, label) in [
        ("preload-overflow", "PreToolUse Bash ls"),
        ("preload-injections", "PostToolUse, 2 stashed"),
    ] {
        let Some(bin) = avail.path(name) else {
            println!("  skip {name}: not available");
            continue;
        };
        let Some(case) = all_cases.iter().find(|c| c.bin == name && c.label == label) else {
            continue;
        };
        // Injections: one stashed entry per agent, each agent drains its own.
        let state = if name == "preload-injections" {
            let entries: Vec<Value> = (0..CONTENDERS)
                .map(|a| {
                    json!({"ruleId": "preload", "agentId": format!("agent-{a}"),
                                "content": format!("[warn: bench] entry for agent {a}")})
                })
                .collect();
            with(&case.state, &json!({"pendingAllowInjections": entries}))
        } else {
            case.state.clone()
        };
        let mut walls = Vec::new();
        let mut lost = 0;
        for _ in 0..rounds {
            sb.restore(&state)?;
            let calls: Vec<Call> = (0..CONTENDERS)
                .map(|a| {
                    let mut call = call_for(&sb, case, bin, counter);
                    if name == "preload-injections" {
                        let mut input = case.input.clone();
                        input["agent_id"] = json!(format!("agent-{a}"));
                        call.stdin = input.to_string().into_bytes();
                    }
                    call
                })
                .collect();
            counter += 1;
            noop_one.push(calls[0].run_timed_with(noop)?.0);
            let (t, _) = burst(&calls, Some(noop))?;
            noop_walls.push(t);
            let (t, outs) = burst(&calls, None)?;
            walls.push(t);
            let after: Value = serde_json::from_str(&std::fs::read_to_string(&sb.state_file)?)?;
            lost += if name == "preload-overflow" {
                let before = state["toolCallsByTranscript"][TRANSCRIPT]
                    .as_u64()
                    .unwrap_or(0);
                let now = after["toolCallsByTranscript"][TRANSCRIPT]
                    .as_u64()
                    .unwrap_or(0);
                (before + CONTENDERS as u64).saturating_sub(now) as usize
            } else {
                let delivered = outs
                    .iter()
                    .filter(|o| measure::context_of(o).contains("entry for agent"))
                    .count();
                let left = after["pendingAllowInjections"]
                    .as_array()
                    .map_or(0, Vec::len);
                // Every entry is either delivered (once) or still stashed.
                CONTENDERS.abs_diff(delivered + left)
            };
        }
        lines.push((name, label, median(&mut walls), lost));
    }
    let one = median(&mut noop_one);
    let eight = median(&mut noop_walls);
    println!(
        "{:<26} {:<40} {:>12} {:>10} {:>12} {:>8}",
        "no-op x8",
        "",
        ms(eight),
        format!("{:.2}", ratio(eight, one)),
        "1.00",
        ""
    );
    for (name, label, wall, lost) in lines {
        let verdict = v.check(
            lost == 0,
            format!("contention: {name} lost {lost} updates over {rounds} rounds"),
        );
        println!(
            "{:<26} {:<40} {:>12} {:>10.2} {:>12.2} {:>8}",
            name,
            label,
            ms(wall),
            ratio(wall, one),
            ratio(wall, eight),
            format!("{lost} {verdict}")
        );
    }
    println!(
        "   (overflow: the heartbeat counter must rise by exactly {CONTENDERS}; injections: each agent's entry delivered once)"
    );
    Ok(())
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let load = std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "{cpu}, {cores} cores, Linux {}, load average {load}",
        kernel.trim()
    )
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("bench: {err}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Error> {
    let started = Instant::now();
    let only: Option<Vec<String>> = std::env::var("BENCH_ONLY")
        .ok()
        .map(|s| s.split(',').map(|x| x.trim().to_owned()).collect());
    let wants = |name: &str| only.as_ref().is_none_or(|o| o.iter().any(|x| x == name));
    // Outside the table, only when asked for by name.
    let extra = |name: &str| only.as_ref().is_some_and(|o| o.iter().any(|x| x == name));
    let work = tempfile::Builder::new()
        .prefix("preload-bench-noop")
        .tempdir()?;
    let noop = measure::build_noop(work.path())?;
    let strace = measure::strace_available();
    // As many registrations as the wiring has, or enough for 250 KB at 9,500 chars each
    // (with room for slices cut at block boundaries).
    let needed = SESSION_START_CHARS.div_ceil(9_500) + 4;
    let chunks = wired_chunks().unwrap_or(0).max(needed);
    let avail = Availability::check(&HOOKS);
    println!("preload hooks benchmark");
    println!("machine: {}", machine());
    println!(
        "calls per case: {} (median); chunks: {chunks}{}",
        iterations(),
        match wired_chunks() {
            Some(n) if n >= needed => " (as hooks/settings.json wires them)".to_owned(),
            Some(n) =>
                format!(" (hooks/settings.json wires {n}: too few for 250 KB at 9,500 chars each)"),
            None => " (enough for 250 KB at 9,500 chars each)".to_owned(),
        }
    );
    println!(
        "median and p95 of wall time in ms, interleaved with the no-op floor (a Rust binary that \
         reads stdin and prints {{}}); x floor = median / floor median; CPU = median user+system \
         ms of the call's processes; syscalls = {}; state: sessions and preloaded files",
        if strace {
            "every system call of one call (strace -f -c)"
        } else {
            "n/a (strace is not installed)"
        }
    );
    avail.print_skips();
    let mut verdicts = Verdicts::default();
    let setup = Setup {
        avail: &avail,
        noop: &noop,
        strace,
        chunks,
    };
    if wants("typical") {
        scenario_typical(&setup, &mut verdicts)?;
    }
    if wants("large") {
        scenario_large(&setup, &mut verdicts)?;
    }
    if wants("sessions") {
        scenario_sessions(&setup, &mut verdicts)?;
    }
    if wants("transcript") {
        scenario_transcript(&setup, &mut verdicts)?;
    }
    if wants("events") {
        events::scenario_events(&noop, &mut verdicts)?;
    }
    if wants("wirings") {
        scenario_wirings(&noop, &mut verdicts)?;
    }
    print_the_table();
    if extra("chunks") {
        scenario_chunks(&avail, &noop, chunks, &mut verdicts)?;
    }
    if extra("contention") {
        scenario_contention(&avail, &noop, chunks, &mut verdicts)?;
    }
    if wants("sessions") {
        lookups::scenario_lookups(&avail, &noop, strace, &mut verdicts)?;
    }
    println!();
    if verdicts.0.is_empty() {
        println!("all targets met ({:.0} s)", started.elapsed().as_secs_f64());
        Ok(())
    } else {
        println!("targets missed ({:.0} s):", started.elapsed().as_secs_f64());
        for miss in &verdicts.0 {
            println!("  - {miss}");
        }
        Err(format!("{} target(s) missed", verdicts.0.len()).into())
    }
}
