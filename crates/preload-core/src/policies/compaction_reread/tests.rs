use std::fs;
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::primitives::delivery::chars;
use crate::primitives::env::{self, Env};

fn ctx_with(tmp: &Path, budget: Option<&str>) -> Context {
    let mut env = Env::from_pairs([
        (env::HOME, tmp.join("home").to_string_lossy().into_owned()),
        (
            env::PRELOAD_MARKER_DIR,
            tmp.join("m").to_string_lossy().into_owned(),
        ),
        (
            env::PRELOAD_LEGACY_MARKER_DIR,
            tmp.join("legacy").to_string_lossy().into_owned(),
        ),
        (env::CLAUDE_SUPERVISOR_PID, "1".into()),
    ]);
    if let Some(b) = budget {
        env.set(env::PRELOAD_OUTPUT_BUDGET, b);
    }
    let input = HookInput::from_value(json!({"cwd": tmp}));
    Context::new(env, NAME, &input, Duration::from_secs(5))
}

#[test]
fn reason_lists_files_within_a_small_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let ctx = ctx_with(tmp.path(), Some("600"));
    let files: Vec<PathBuf> = (0..50)
        .map(|i| PathBuf::from(format!("/d/handler-dispatches/dispatch-{i:03}.md")))
        .collect();
    let reread = Reread::Handler {
        dir: Some("/d".into()),
    };
    let text = reason(&ctx, &reread, &files, "held");
    assert!(chars(&text) <= 600, "{} chars", chars(&text));
    assert!(text.contains("dispatch-000.md"));
    assert!(text.contains("more in /d/handler-dispatches"), "{text}");
    assert!(text.ends_with("held"));
}

#[test]
fn injection_parts_and_names_what_does_not_fit() {
    let tmp = tempfile::tempdir().unwrap();
    let ctx = ctx_with(tmp.path(), Some("2000"));
    let big = (0..300)
        .map(|i| format!("progress line {i}"))
        .collect::<Vec<_>>()
        .join("\n");
    let a = tmp.path().join("a.md");
    let b = tmp.path().join("b.md");
    fs::write(&a, &big).unwrap();
    fs::write(&b, "small").unwrap();
    let missing = tmp.path().join("gone.md");
    let reread = Reread::Worker {
        dispatch_file: a.clone(),
    };
    let text = injection(&ctx, &reread, &[a.clone(), b.clone(), missing.clone()]);
    assert!(chars(&text) <= 2000, "{} chars", chars(&text));
    for piece in [
        format!("[Preloaded: {} (part 1/", a.display()),
        format!("{} (from part 2/", a.display()),
        b.display().to_string(),
        format!("Could not be read by the hook: {}", missing.display()),
    ] {
        assert!(text.contains(&piece), "{piece:?} missing from:\n{text}");
    }
}

#[test]
fn injection_without_files_says_where_to_look() {
    let tmp = tempfile::tempdir().unwrap();
    let ctx = ctx_with(tmp.path(), None);
    let reread = Reread::Loop {
        loop_file: None,
        loops_dir: "/p/docs/loops".into(),
    };
    let text = injection(&ctx, &reread, &[]);
    assert!(text.contains("/p/docs/loops/"));
    assert!(text.contains("Do NOT pause"));
}
