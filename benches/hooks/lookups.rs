//! Part of the `sessions` scenario, outside the table: finding the session costs the same with 10,000 sessions beside the
//! active one as with 10. The cases go through each lookup: the PID cache, the session index
//! (no PID cache can be written, as after `/tmp` was cleaned) and a resumed conversation.
//!
//! The verdict is on what a call reads: with `strace`, the other sessions' states one call opens
//! must not grow with their number (a scan would open 10,000). The times are printed with their
//! ratio; on a loaded machine their noise is larger than the 10% they are compared with, so
//! they decide only where `strace` is missing.

use std::time::Duration;

use serde_json::json;

use super::{
    Availability, Case, Error, Verdicts, call_for, measure, ms, run_cases, with, with_call_fields,
};
use crate::sandbox::{Sandbox, Sizes};
use preload_core::primitives::env;

/// The session counts compared.
const COUNTS: [usize; 2] = [10, 10_000];
/// 10,000 sessions: each case within this many times its time with 10.
const SESSIONS_RATIO: f64 = 1.10;
/// Differences below this are noise on a shared machine, whatever the ratio.
const NOISE: Duration = Duration::from_micros(300);

fn cases(sb: &Sandbox) -> Vec<Case> {
    let base = &sb.base_state;
    let no_cache = sb.root.join("no-such-directory/cache");
    let ls = json!({"hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "ls -la"}});
    let mut all = vec![
        Case::new(
            "preload-overflow",
            "PreToolUse Bash ls (PID cache)",
            ls.clone(),
            base.clone(),
        ),
        Case {
            env: vec![(
                env::CLAUDE_SESSION_CACHE_DIR.into(),
                no_cache.to_string_lossy().into_owned(),
            )],
            ..Case::new(
                "preload-overflow",
                "PreToolUse Bash ls, no PID cache (index)",
                ls,
                base.clone(),
            )
        },
        Case::new(
            "preload-session-start",
            "SessionStart resume (conversation)",
            json!({"hook_event_name": "SessionStart", "source": "resume",
                "session_id": "bench-resumed"}),
            with(
                base,
                &json!({"sessionId": "bench-resumed", "preloadConversation": "bench-resumed"}),
            ),
        ),
    ];
    with_call_fields(sb, &mut all);
    all
}

/// Run the scenario: the cases with 10 and with 10,000 sessions, compared case by case.
pub fn scenario_lookups(
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
        let generated = started.elapsed();
        let cases = cases(&sb);
        let res = run_cases(&sb, &cases, avail, noop, strace)?;
        // Other sessions' states one call opens, per measured case (with strace).
        let mut reads = Vec::new();
        for case in &cases {
            let Some(bin) = avail.path(case.bin) else {
                continue;
            };
            sb.restore(&case.state)?;
            reads.push(if strace {
                measure::count_other_session_opens(
                    &call_for(&sb, case, bin, 0),
                    &sb.state_file,
                    &sb.sessions,
                    &sb.root.join("strace-open.txt"),
                )
                .ok()
            } else {
                None
            });
        }
        println!(
            "   (sessions/{count}: generated in {:.1} s, measured in {:.1} s)",
            generated.as_secs_f64(),
            started.elapsed().saturating_sub(generated).as_secs_f64()
        );
        results.push((res, reads));
    }
    let (Some((few, few_reads)), Some((many, many_reads))) = (results.first(), results.last())
    else {
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
    for (i, (a, b)) in few.rows.iter().zip(&many.rows).enumerate() {
        let (a_read, b_read) = (
            few_reads.get(i).copied().flatten(),
            many_reads.get(i).copied().flatten(),
        );
        let ratio = b.median.as_secs_f64() / a.median.as_secs_f64().max(1e-6);
        let ok = match (a_read, b_read) {
            (Some(few), Some(many)) => many <= few,
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
        let read = |n: Option<usize>| n.map_or_else(|| "-".to_owned(), |n| n.to_string());
        println!(
            "{:<26} {:<42} {:>9} {:>9} {:>6.2}x  {:>13}  {verdict}",
            a.bin,
            a.label,
            ms(a.median),
            ms(b.median),
            ratio,
            format!("{} / {}", read(a_read), read(b_read))
        );
    }
    Ok(())
}
