//! What one hook input changed, for `preload explain`: the delivery log's events grouped by
//! what became of each file, the state's fields before and after, and the files written.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use preload_core::state::fields;
use preload_core::state::{Field, State};
use preload_core::state::{IN_CONTEXT, Paths, QUEUED};

/// The files under `dirs` and their bytes (for the before and after of a run).
pub fn snapshot(dirs: &[PathBuf]) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack: Vec<PathBuf> = dirs.to_vec();
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(path),
                Ok(t) if t.is_file() => {
                    if let Ok(bytes) = fs::read(&path) {
                        out.insert(path, bytes);
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The files created, changed and removed between two snapshots, named by `name`.
pub fn file_changes(
    before: &BTreeMap<PathBuf, Vec<u8>>,
    after: &BTreeMap<PathBuf, Vec<u8>>,
    name: &dyn Fn(&Path) -> String,
) -> Vec<String> {
    let mut out = Vec::new();
    for (path, bytes) in after {
        match before.get(path) {
            None => out.push(format!("created  {}", name(path))),
            Some(old) if old != bytes => out.push(format!("changed  {}", name(path))),
            Some(_) => {}
        }
    }
    for path in before.keys().filter(|p| !after.contains_key(*p)) {
        out.push(format!("removed  {}", name(path)));
    }
    out
}

fn field(event: &Value, key: &str) -> String {
    event[key].as_str().unwrap_or("").to_owned()
}

/// The log's events grouped: delivered in these answers, stashed for `PostToolUse`, queued,
/// carried over, skipped as already in context, seeded, over the budget.
pub fn render_events(events: &[Value]) -> String {
    let stashed: Vec<String> = events
        .iter()
        .filter(|e| e["event"] == "stash-inject")
        .map(|e| field(e, "file"))
        .collect();
    let mut groups: Vec<(&str, Vec<String>)> = vec![
        ("delivered in these answers", Vec::new()),
        (
            "stashed for PostToolUse (preload-injections hands them out after the tool runs)",
            Vec::new(),
        ),
        ("queued for the next calls", Vec::new()),
        ("carried over (did not fit this output)", Vec::new()),
        ("skipped, already delivered", Vec::new()),
        ("recorded as in context (SessionStart seed)", Vec::new()),
        ("over the output budget", Vec::new()),
        ("shadowing an engine command", Vec::new()),
    ];
    for e in events {
        let (kind, file, source, dedup, hook) = (
            field(e, "event"),
            field(e, "file"),
            field(e, "source"),
            field(e, "dedupResult"),
            field(e, "hook"),
        );
        let (at, line) = match kind.as_str() {
            "direct-deliver" | "claim-deliver" if !stashed.contains(&file) => {
                (0, format!("{file}  ({kind} by {hook}: {source})"))
            }
            "stash-inject" => (1, format!("{file}  ({source})")),
            "queue-pending" if dedup == "deferred" => (3, format!("{file}  ({source})")),
            "queue-pending" => (2, format!("{file}  ({source})")),
            "skip-dedup" | "skip-inode" => {
                let by = if kind == "skip-inode" {
                    "the same file by inode"
                } else {
                    "by path"
                };
                (4, format!("{file}  (in context {by}; {source})"))
            }
            "seed" => (5, file),
            "over-budget" if file.is_empty() => (6, format!("a whole answer of {hook}: {dedup}")),
            "over-budget" => (6, format!("{file}  ({dedup})")),
            "override-detect" => (7, format!("{file}  (shadows {source})")),
            _ => continue,
        };
        if !groups[at].1.contains(&line) {
            groups[at].1.push(line);
        }
    }
    let mut out = String::new();
    for (title, lines) in groups.iter().filter(|(_, l)| !l.is_empty()) {
        let _ = writeln!(out, "{title}:");
        for line in lines {
            let _ = writeln!(out, "  {line}");
        }
    }
    if out.is_empty() {
        out.push_str("files: nothing delivered, queued, stashed or skipped\n");
    }
    out
}

fn paths(state: Option<&State>, list: Paths<'_>) -> Vec<String> {
    state.map(|s| s.path_list(list)).unwrap_or_default()
}

fn len_of(state: Option<&State>, key: &str) -> usize {
    match state.and_then(|s| s.get(key)) {
        Some(Value::Array(items)) => items.len(),
        Some(Value::Object(map)) => map.len(),
        _ => 0,
    }
}

/// The fields of the state file that changed, before → after (`real` turns the copy's paths
/// into the project's).
pub fn render_state_diff(
    before: Option<&State>,
    after: Option<&State>,
    real: &dyn Fn(&str) -> String,
) -> String {
    let mut out = String::new();
    let list = |title: &str, items: Vec<String>, out: &mut String| {
        if !items.is_empty() {
            let _ = writeln!(out, "  {title}:");
            for item in items {
                let _ = writeln!(out, "    {}", real(&item));
            }
        }
    };
    let (old, new) = (paths(before, IN_CONTEXT), paths(after, IN_CONTEXT));
    list(
        "preloadedFiles, added",
        new.iter().filter(|f| !old.contains(f)).cloned().collect(),
        &mut out,
    );
    let (old, new) = (paths(before, QUEUED), paths(after, QUEUED));
    list(
        "pendingPreloads, added",
        new.iter().filter(|f| !old.contains(f)).cloned().collect(),
        &mut out,
    );
    list(
        "pendingPreloads, taken out",
        old.iter().filter(|f| !new.contains(f)).cloned().collect(),
        &mut out,
    );
    for key in [fields::STASH, fields::TOUCHED_DIRS, fields::INJECTED_RULES] {
        let (a, b) = (len_of(before, key), len_of(after, key));
        if a != b {
            let _ = writeln!(out, "  {key}: {a} -> {b} entries");
        }
    }
    let shown = [
        &IN_CONTEXT.key(),
        &QUEUED.key(),
        fields::STASH,
        fields::TOUCHED_DIRS,
        fields::INJECTED_RULES,
    ];
    let keys = |s: Option<&State>| -> Vec<String> {
        s.map(|s| s.keys().map(str::to_owned).collect())
            .unwrap_or_default()
    };
    let value = |s: Option<&State>, key: &str| s.and_then(|s| s.field(key)).map(Field::to_value);
    let mut other: Vec<String> = keys(after)
        .into_iter()
        .chain(keys(before))
        .filter(|k| !shown.contains(&k.as_str()))
        .filter(|k| value(before, k) != value(after, k))
        .collect();
    other.sort();
    other.dedup();
    if !other.is_empty() {
        let _ = writeln!(out, "  also changed: {}", other.join(", "));
    }
    if out.is_empty() {
        out.push_str("  (no field changed)\n");
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(kind: &str, file: &str, dedup: &str) -> Value {
        json!({"event": kind, "file": file, "source": "src", "hook": "guards", "dedupResult": dedup})
    }

    #[test]
    fn events_are_grouped_by_what_became_of_each_file() {
        let text = render_events(&[
            event("queue-pending", "/q", "new"),
            event("claim-deliver", "/s", "new"),
            event("stash-inject", "/s", "new"),
            event("claim-deliver", "/d", "new"),
            event("skip-dedup", "/k", "path"),
            event("queue-pending", "/c", "deferred"),
            event("over-budget", "/c", "carried-over"),
        ]);
        // The first line under the section whose title starts with `title`.
        let section = |title: &str| {
            let mut lines = text.lines().skip_while(|l| !l.starts_with(title));
            lines.nth(1).unwrap_or("").to_owned()
        };
        assert_eq!(
            section("delivered in these answers"),
            "  /d  (claim-deliver by guards: src)",
            "{text}"
        );
        assert_eq!(section("stashed for PostToolUse"), "  /s  (src)", "{text}");
        assert_eq!(
            section("queued for the next calls"),
            "  /q  (src)",
            "{text}"
        );
        assert_eq!(section("carried over"), "  /c  (src)", "{text}");
        assert_eq!(
            section("skipped, already delivered"),
            "  /k  (in context by path; src)",
            "{text}"
        );
        assert!(text.contains("/c  (carried-over)"), "{text}");
    }

    #[test]
    fn the_state_diff_names_what_moved() {
        let before =
            State::parse(r#"{"pendingPreloads": ["/a", "/b"], "lifecycle": "active"}"#).unwrap();
        let after = State::parse(
            r#"{"pendingPreloads": ["/b"], "preloadedFiles": ["/a"], "lifecycle": "active", "toolCallsSinceLastLog": 1}"#,
        )
        .unwrap();
        let text = render_state_diff(Some(&before), Some(&after), &|s: &str| {
            s.replace("/a", "/real/a")
        });
        assert!(
            text.contains("preloadedFiles, added:\n    /real/a"),
            "{text}"
        );
        assert!(
            text.contains("pendingPreloads, taken out:\n    /real/a"),
            "{text}"
        );
        assert!(
            text.contains("also changed: toolCallsSinceLastLog"),
            "{text}"
        );
        assert!(!text.contains("lifecycle"), "{text}");
    }
}
