//! SessionStart judged as the client runs it: the wiring's registrations of one event started at
//! once, against as many no-ops started at once (one registration alone does the work of all,
//! so its own time says little); and the start-up hand-over look, whose cost grows with the
//! sessions a project keeps.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use super::{Error, Verdicts, base_env, binary, iterations, ms, per_binary, push_line, run_event};
use crate::measure::{self, Call, median};
use crate::sandbox::{Sandbox, Sizes};

/// An event's registrations started at once: within this many times as many no-ops started at
/// once.
const EVENT_RATIO: f64 = 1.0;
/// The start-up hand-over look: at most this many microseconds per session.
const HANDOVER_US_PER_SESSION: f64 = 3.0;

/// Every SessionStart source on typical and on large state, per event.
pub fn scenario_events(noop: &Path, v: &mut Verdicts) -> Result<(), Error> {
    let iters = iterations();
    let mut counter = 0;
    for (sizes, state) in [
        (Sizes::TYPICAL, "typical (1 session, 50)"),
        (Sizes::large(1), "large (1,000 s, 5,000)"),
    ] {
        let sb = Sandbox::generate(sizes, std::process::id())?;
        for source in ["startup", "resume", "clear", "compact"] {
            let procs: Vec<(PathBuf, Vec<String>)> =
                per_binary("SessionStart", &json!({"source": source}))
                    .into_iter()
                    .map(|(bin, args)| (binary(bin), args))
                    .collect();
            let noops: Vec<(PathBuf, Vec<String>)> = procs
                .iter()
                .map(|_| (noop.to_path_buf(), Vec::new()))
                .collect();
            let (mut walls, mut floors, mut cpus) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..iters {
                sb.restore(&sb.base_state)?;
                let input = json!({"hook_event_name": "SessionStart", "source": source,
                    "cwd": sb.project, "transcript_path": sb.transcript,
                    "session_id": format!("bench-e-{}-{counter}", std::process::id())});
                counter += 1;
                let call = Call {
                    bin: noop.to_path_buf(),
                    args: Vec::new(),
                    stdin: input.to_string().into_bytes(),
                    env: base_env(&sb),
                    cwd: sb.project.clone(),
                };
                floors.push(run_event(&call, &noops)?.0);
                let (wall, cpu) = run_event(&call, &procs)?;
                walls.push(wall);
                cpus.push(cpu);
            }
            let (wall, floor) = (median(&mut walls), median(&mut floors));
            let r = super::ratio(wall, floor);
            let verdict = v.check(
                r <= EVENT_RATIO,
                format!(
                    "{state}: SessionStart {source}, {} registrations at once took {} ms = {r:.2}x \
                     as many no-ops at once (target {EVENT_RATIO}x)",
                    procs.len(),
                    ms(wall),
                ),
            );
            push_line(&[
                format!("SessionStart {source}"),
                format!("{} registrations at once, per event", procs.len()),
                state.into(),
                ms(wall),
                ms(measure::p95(&mut walls)),
                format!("{r:.2}"),
                ms(median(&mut cpus)),
                format!("{} no-ops: {} ms", noops.len(), ms(floor)),
                verdict.into(),
            ]);
        }
    }
    Ok(())
}

/// A session count and the median SessionStart `startup` at it.
pub type Point = (usize, Duration);

/// The start-up hand-over look from the SessionStart `startup` times at growing session counts
/// (`(sessions, median)`, in order): what one more session costs, judged from the fewest to
/// the most (10 to 10,000: at most 30 ms in all), and shown between each two counts beside it
/// (from 10 to 1,000 the difference is about 3 ms, within the spread of two runs, so it shows
/// whether the cost grows faster than the count, and is not judged).
pub fn handover(startup: &[Point], v: &mut Verdicts) {
    let (Some(first), Some(last)) = (startup.first(), startup.last()) else {
        return;
    };
    // Between each two counts, when there are more than the two judged.
    let mut spans: Vec<(&Point, &Point, bool)> = if startup.len() > 2 {
        startup
            .windows(2)
            .map(|pair| (&pair[0], &pair[1], false))
            .collect()
    } else {
        Vec::new()
    };
    if first.0 < last.0 {
        spans.push((first, last, true));
    }
    for ((fewer, before), (more, after), judged) in spans {
        let per_session = after.saturating_sub(*before).as_secs_f64() * 1e6 / (more - fewer) as f64;
        let verdict = if judged {
            v.check(
                per_session <= HANDOVER_US_PER_SESSION,
                format!(
                    "SessionStart startup's hand-over look from {fewer} to {more} sessions: \
                     {per_session:.2} us a session (target {HANDOVER_US_PER_SESSION} us)"
                ),
            )
        } else {
            "-"
        };
        push_line(&[
            "SessionStart startup".into(),
            format!("hand-over look, us a session ({fewer} to {more})"),
            format!("{fewer} to {more} sessions"),
            ms(*before),
            ms(*after),
            format!("{per_session:.2}"),
            String::new(),
            String::new(),
            verdict.into(),
        ]);
    }
}
