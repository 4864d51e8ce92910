//! The report of a delivery log, line by line.

use super::*;

fn line(hook: &str, event: &str, file: &str) -> String {
    format!(
        r#"{{"ts":"t","hook":"{hook}","event":"{event}","file":"{file}","source":"s","toolCall":1,"sessionExists":true,"dedupResult":"new"}}"#
    )
}

#[test]
fn counts_deliveries_duplicates_and_skips() {
    let log = [
        line("session-start", "seed", "/a"),
        line("templates", "direct-deliver", "/b"),
        line("overflow", "queue-pending", "/c"),
        line("injections", "claim-deliver", "/c"),
        // The guard engine's new name and its old one count as one hook.
        line("guards", "claim-deliver", "/b"),
        line("templates", "skip-dedup", "/b"),
        line("overflow", "skip-inode", "/d"),
        line("overflow", "over-budget", "/e").replace("\"new\"", "\"carried-over\""),
        line("overflow", "over-budget", "/e").replace("\"new\"", "\"split 1-2/5\""),
        "not json".to_owned(),
    ]
    .join("\n");
    let r = Report::from_log(&log);
    assert_eq!(r.total_events, 9);
    assert_eq!(
        r.over_budget.get("/e"),
        Some(&OverBudget {
            splits: vec!["split 1-2/5 (guards)".into()],
            carried_over: 1
        })
    );
    assert_eq!(r.deliveries, 3);
    assert_eq!(r.unique_files, 2);
    assert_eq!(r.dedup_skips, 2);
    assert_eq!(r.unreadable_lines, 1);
    assert_eq!(r.per_hook.get("guards"), Some(&1));
    assert_eq!(r.per_hook.get("overflow"), None);
    assert_eq!(r.per_hook.get("templates"), Some(&1));
    assert_eq!(
        r.duplicates,
        vec![Duplicate {
            file: "/b".into(),
            count: 2,
            hooks: vec!["templates".into(), "guards".into()]
        }]
    );
    let text = r.render();
    for shown in [
        "Duplicate deliveries: 1",
        "/b: 2x via templates, guards",
        "/e: split 1-2/5 (guards), carried over 1x",
    ] {
        assert!(text.contains(shown), "{shown:?} missing from:\n{text}");
    }
}

#[test]
fn lists_the_packs_delivered() {
    let key = "/p/.claude/context-packs.json#basics";
    let log = [
        line("session-start", "direct-deliver", key),
        line(
            "overflow",
            "queue-pending",
            "/p/.claude/context-packs.json#later",
        ),
        line("overflow", "claim-deliver", "/p/docs/a.md"),
        line("overflow", "claim-deliver", "/p/notes.md#heading"),
    ]
    .join("\n");
    let r = Report::from_log(&log);
    assert_eq!(
        r.packs,
        vec![PackDelivery {
            key: key.into(),
            hook: "session-start".into(),
            source: "s".into()
        }]
    );
}

#[test]
fn an_empty_log_has_nothing() {
    let r = Report::from_log("");
    assert_eq!(r, Report::default());
    assert!(r.render().contains("(none)"));
}
