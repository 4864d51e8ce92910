//! The one-process-per-event wiring (`preload install --dispatch`), derived from [`WIRING`].
//!
//! Each event of the table gets one handler, `preload-dispatch <Event>`, which runs the
//! event's rows in the table's order in one process; `SessionStart` keeps its
//! [`SESSION_START_CHUNKS`] registrations (`preload-dispatch SessionStart --chunk I/N`), since
//! each answer is cut at 10,000 characters. The handler's matcher is the rows' common matcher
//! (none when they differ: the dispatcher applies each row's own), its timeout the longest of
//! theirs. The rows' `if` filters have no place here: one process serves every call.
//! `install::wiring::WiringMode` says which of the two wirings a settings file holds or install
//! writes.

use serde_json::{Value, json};

use preload_core::policies::DISPATCHER;
use preload_core::policies::wiring::{SESSION_START_CHUNKS, WIRING, Wiring};
use preload_core::primitives::hook::HookEvent;

/// The events of the table, in its order.
pub fn events() -> Vec<HookEvent> {
    let mut events: Vec<HookEvent> = Vec::new();
    for row in WIRING {
        if !events.contains(&row.event) {
            events.push(row.event);
        }
    }
    events
}

/// The rows of `event`, in the table's order.
pub fn rows_of(event: HookEvent) -> impl Iterator<Item = &'static Wiring> {
    WIRING.iter().filter(move |w| w.event == event)
}

/// The matcher every row of `event` shares, or `None` (every call).
fn common_matcher(event: HookEvent) -> Option<&'static str> {
    let mut rows = rows_of(event);
    let first = rows.next()?.matcher;
    rows.all(|w| w.matcher == first).then_some(first).flatten()
}

/// The handlers of `event` for binaries in `prefix`.
fn handlers_of(event: HookEvent, prefix: &str) -> Vec<Value> {
    let command = format!("{prefix}/{DISPATCHER}");
    let timeout = rows_of(event).map(|w| w.timeout).max().unwrap_or(5);
    let handler = |args: Vec<String>| json!({"type": "command", "command": command, "args": args, "timeout": timeout});
    if rows_of(event).any(|w| w.chunked) {
        (0..SESSION_START_CHUNKS)
            .map(|i| {
                handler(vec![
                    event.name().to_owned(),
                    "--chunk".into(),
                    format!("{i}/{SESSION_START_CHUNKS}"),
                ])
            })
            .collect()
    } else {
        vec![handler(vec![event.name().to_owned()])]
    }
}

/// The dispatch handlers grouped by (event, matcher), in the table's order.
pub fn groups(prefix: &str) -> Vec<(&'static str, Option<&'static str>, Vec<Value>)> {
    events()
        .into_iter()
        .map(|event| {
            (
                event.name(),
                common_matcher(event),
                handlers_of(event, prefix),
            )
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use preload_core::pipeline::runner::budget_for;
    use preload_core::policies::dispatch;

    #[test]
    fn one_handler_per_event_and_session_start_keeps_its_chunks() {
        let groups = groups("/b");
        let names: Vec<&str> = groups.iter().map(|(e, _, _)| *e).collect();
        let events: Vec<&str> = events().into_iter().map(HookEvent::name).collect();
        assert_eq!(names, events);
        for (event, _, handlers) in &groups {
            let expected = if *event == "SessionStart" {
                SESSION_START_CHUNKS
            } else {
                1
            };
            assert_eq!(handlers.len(), expected, "{event}");
            for h in handlers {
                assert_eq!(h["command"], "/b/preload-dispatch");
                assert_eq!(h["args"][0], *event);
                assert!(h.get("if").is_none());
            }
        }
        let start = &groups
            .iter()
            .find(|(e, _, _)| *e == "SessionStart")
            .unwrap()
            .2;
        assert_eq!(
            start[5]["args"],
            json!([
                "SessionStart",
                "--chunk",
                format!("5/{SESSION_START_CHUNKS}")
            ])
        );
    }

    #[test]
    fn the_matcher_is_shared_or_none() {
        for (event, matcher, _) in groups("/b") {
            let rows: Vec<_> = rows_of(HookEvent::from_name(event).unwrap()).collect();
            match matcher {
                Some(m) => assert!(rows.iter().all(|w| w.matcher == Some(m)), "{event}"),
                None => assert!(
                    rows.iter().any(|w| w.matcher.is_none_or(|m| m == "*"))
                        || rows.windows(2).any(|p| p[0].matcher != p[1].matcher),
                    "{event}: a row narrows it"
                ),
            }
        }
    }

    #[test]
    fn every_row_runs_in_the_dispatcher() {
        for row in WIRING {
            let policy = dispatch::handler_of(row.binary, row.args, None)
                .unwrap_or_else(|| panic!("no policy for {} {:?}", row.binary, row.args));
            assert_eq!(policy.event, row.event, "{} {:?}", row.binary, row.args);
        }
    }

    #[test]
    fn the_policies_budgets_fit_the_dispatch_timeout() {
        let env = preload_core::primitives::env::Env::from_pairs::<&str, &str>([]);
        for (event, _, handlers) in groups("/b") {
            let hook_event: HookEvent = HookEvent::from_name(event).unwrap();
            let worst: u128 = dispatch::plan(WIRING, hook_event, None)
                .iter()
                .map(|p| budget_for(&env, p.event).as_millis() + 50)
                .sum();
            let timeout = u128::from(handlers[0]["timeout"].as_u64().unwrap()) * 1000;
            assert!(
                worst < timeout,
                "{event}: {worst} ms of budgets, {timeout} ms timeout"
            );
        }
    }
}
