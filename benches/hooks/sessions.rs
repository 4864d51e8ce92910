//! The `sessions` scenario: finding the session costs the same with 10,000 sessions beside the
//! active one as with 10. The cases go through each lookup: the PID cache, the session index
//! (no PID cache can be written, as after `/tmp` was cleaned) and a resumed conversation.
//!
//! The verdict is on what a call reads: with `strace`, the other sessions' states one call opens
//! must not grow with their number (a scan would open 10,000). The times are printed with their
//! ratio; on a loaded machine their noise is larger than the 10% they are compared with, so
//! they decide only where `strace` is missing.

use std::time::Duration;

use serde_json::json;

use super::{Availability, Case, Error, Verdicts, ms, run_cases, with};
use crate::sandbox::{Sandbox, Sizes};
use preload_core::env;

/// The session counts compared.
const COUNTS: [usize; 2] = [10, 10_000];
/// 10,000 sessions: each case within this many times its time with 10.
const SESSIONS_RATIO: f64 = 1.10;
/// Differences below this are noise on a shared machine, whatever the ratio.
const NOISE: Duration = Duration::from_micros(300);

fn cases(sb: &Sandbox) -> Vec<Case> {
    let base = &sb.base_state;
    let no_cache = sb.root.join("no-such-directory/cache");
    let mut all = vec![
        Case {
            bin: "preload-overflow",
            label: "PreToolUse Bash ls (PID cache)".to_owned(),
            args: Vec::new(),
            input: json!({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                "tool_input": {"command": "ls -la"}}),
            env: Vec::new(),
            state: base.clone(),
            fresh_session: false,
        },
        Case {
            bin: "preload-overflow",
            label: "PreToolUse Bash ls, no PID cache (index)".to_owned(),
            args: Vec::new(),
            input: json!({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                "tool_input": {"command": "ls -la"}}),
            env: vec![(
                env::CLAUDE_SESSION_CACHE_DIR.into(),
                no_cache.to_string_lossy().into_owned(),
            )],
            state: base.clone(),
            fresh_session: false,
        },
        Case {
            bin: "preload-session-start",
            label: "SessionStart resume (conversation)".to_owned(),
            args: Vec::new(),
            input: json!({"hook_event_name": "SessionStart", "source": "resume",
                "session_id": "bench-resumed"}),
            env: Vec::new(),
            state: with(base, &json!({"sessionId": "bench-resumed"})),
            fresh_session: false,
        },
    ];
    for c in &mut all {
        if let Some(o) = c.input.as_object_mut() {
            o.insert("cwd".into(), json!(sb.project));
            o.insert("transcript_path".into(), json!(sb.transcript));
            o.entry("session_id")
                .or_insert_with(|| json!("bench-session"));
        }
    }
    all
}

/// Run the scenario: the cases with 10 and with 10,000 sessions, compared case by case.
pub fn scenario_sessions(
    avail: &Availability,
    noop: &std::path::Path,
    strace: bool,
    v: &mut Verdicts,
) -> Result<(), Error> {
    let mut results = Vec::new();
    for count in COUNTS {
        let started = std::time::Instant::now();
        let sb = Sandbox::generate(
            Sizes {
                sessions: count,
                ..Sizes::TYPICAL
            },
            std::process::id(),
        )?;
        // The generated files are written back first, so the writeback of 10,000 new sessions
        // does not land on the first synced writes measured.
        let _ = std::process::Command::new("sync").status();
        let generated = started.elapsed();
        let res = run_cases(&sb, &cases(&sb), avail, noop, strace)?;
        println!(
            "   (sessions/{count}: generated in {:.1} s, measured in {:.1} s)",
            generated.as_secs_f64(),
            started.elapsed().saturating_sub(generated).as_secs_f64()
        );
        results.push(res);
    }
    let (Some(few), Some(many)) = (results.first(), results.last()) else {
        return Ok(());
    };
    println!();
    println!(
        "== sessions: median ms with {} and with {} sessions; other sessions' states one call \
         reads must not grow (without strace: within {SESSIONS_RATIO}x or {} ms)",
        COUNTS[0],
        COUNTS[1],
        ms(NOISE)
    );
    println!(
        "{:<26} {:<42} {:>9} {:>9} {:>7}  {:>13}  verdict",
        "binary", "case", "10", "10,000", "ratio", "states read"
    );
    println!(
        "{:<26} {:<42} {:>9} {:>9}",
        "no-op",
        "",
        ms(few.noop),
        ms(many.noop)
    );
    for (a, b) in few.rows.iter().zip(&many.rows) {
        let ratio = b.median.as_secs_f64() / a.median.as_secs_f64().max(1e-6);
        let ok = match (a.syscalls, b.syscalls) {
            (Some(few), Some(many)) => many.other_sessions <= few.other_sessions,
            _ => ratio <= SESSIONS_RATIO || b.median.saturating_sub(a.median) <= NOISE,
        };
        let verdict = v.check(
            ok,
            format!(
                "sessions: {} {} took {} with {} sessions, {ratio:.2}x its {} with {} (or read \
                 more states)",
                a.bin,
                a.label,
                ms(b.median),
                COUNTS[1],
                ms(a.median),
                COUNTS[0]
            ),
        );
        // Other sessions' states opened by one call, with 10 and with 10,000 (strace).
        let read = |row: &super::Row| {
            row.syscalls
                .map_or_else(|| "-".to_owned(), |s| s.other_sessions.to_string())
        };
        println!(
            "{:<26} {:<42} {:>9} {:>9} {:>6.2}x  {:>13}  {verdict}",
            a.bin,
            a.label,
            ms(a.median),
            ms(b.median),
            ratio,
            format!("{} / {}", read(a), read(b))
        );
    }
    Ok(())
}
