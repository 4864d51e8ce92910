//! Files that change after they were delivered, and growing logs: a changed file goes out once
//! more at the next tool call, marked `(updated)`, and never while unchanged; a log goes out as
//! its last lines with a header saying so, and its growth is not chased.

use std::fmt::Write as _;
use std::fs;
use std::time::Duration;

use preload_core::state::stamps::fnv1a;
use serde_json::json;

use preload_test_support::pipeline_steps::{drain, seen, session_start, tool_call};
use preload_test_support::sandbox::{Sandbox, strings};
use preload_test_support::session_openings::implement_in_phase_one_drained;

fn ls(sb: &Sandbox) -> String {
    seen(&tool_call(sb, "Bash", json!({"command": "ls"})))
}

#[test]
fn a_delivered_file_edited_on_disk_goes_out_once_more_marked_updated() {
    let sb = Sandbox::new();
    implement_in_phase_one_drained(&sb);
    let file = sb.engine_path("commands/CMD_INTERROGATE.md");
    assert_eq!(sb.delivery_count("CMD_INTERROGATE.md"), 1);
    let stamps = &sb.state("work")["preloadedStamps"];
    assert!(stamps[file.as_str()].is_string(), "stamped: {stamps}");

    // Unchanged: nothing.
    for _ in 0..2 {
        assert!(!ls(&sb).contains("CMD_INTERROGATE.md"));
    }
    // Written again with the same content (the metadata moves, the content does not): nothing.
    let before = fs::metadata(&file).unwrap().modified().unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let text = fs::read_to_string(&file).unwrap();
    fs::write(&file, &text).unwrap();
    assert_ne!(fs::metadata(&file).unwrap().modified().unwrap(), before);
    assert!(!ls(&sb).contains("CMD_INTERROGATE.md"));
    assert_eq!(sb.delivery_count("CMD_INTERROGATE.md"), 1);

    // Edited: once more, with this call, marked as an update.
    fs::write(&file, format!("{text}\nA rule added during the session.\n")).unwrap();
    let got = ls(&sb);
    assert!(
        got.contains(&format!("[Preloaded: {file} (updated)]\n")),
        "{got}"
    );
    assert!(got.contains("A rule added during the session."));
    assert_eq!(sb.delivery_count("CMD_INTERROGATE.md"), 2);
    assert!(strings(&sb.state("work"), "preloadedFiles").contains(&file));
    for _ in 0..2 {
        assert!(
            !ls(&sb).contains("CMD_INTERROGATE.md"),
            "never while unchanged"
        );
    }
    let requeued = sb
        .events()
        .iter()
        .filter(|e| e["source"] == "changed-on-disk")
        .count();
    assert_eq!(requeued, 1);
}

#[test]
fn a_stamp_written_by_an_earlier_release_still_tells_a_touched_file_from_an_edited_one() {
    let sb = Sandbox::new();
    implement_in_phase_one_drained(&sb);
    let file = sb.engine_path("commands/CMD_INTERROGATE.md");
    let text = fs::read_to_string(&file).unwrap();
    // The stamp as an earlier release wrote it: the same metadata, the text's FNV-1a.
    let mut state = sb.state("work");
    let stamp = state["preloadedStamps"][file.as_str()]
        .as_str()
        .unwrap()
        .to_owned();
    let (meta, current) = stamp.rsplit_once(':').unwrap();
    assert_ne!(
        current,
        fnv1a(&text),
        "stamps are written with another hash now"
    );
    state["preloadedStamps"][file.as_str()] = json!(format!("{meta}:{}", fnv1a(&text)));
    sb.session("work", &state);

    // Written again with the same content: nothing, and the stamp is renewed in today's kind.
    std::thread::sleep(Duration::from_millis(20));
    fs::write(&file, &text).unwrap();
    assert!(!ls(&sb).contains("CMD_INTERROGATE.md"));
    assert_eq!(sb.delivery_count("CMD_INTERROGATE.md"), 1);
    let renewed = sb.state("work")["preloadedStamps"][file.as_str()]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!renewed.ends_with(&fnv1a(&text)), "{renewed}");

    // Edited with the old stamp in place: once more, marked as an update.
    let mut state = sb.state("work");
    state["preloadedStamps"][file.as_str()] = json!(format!("{meta}:{}", fnv1a(&text)));
    sb.session("work", &state);
    fs::write(&file, format!("{text}\nA rule added during the session.\n")).unwrap();
    let got = ls(&sb);
    assert!(
        got.contains(&format!("[Preloaded: {file} (updated)]\n")),
        "{got}"
    );
    assert_eq!(sb.delivery_count("CMD_INTERROGATE.md"), 2);
}

#[test]
fn a_pack_goes_out_again_when_one_of_its_files_changes() {
    let sb = Sandbox::new();
    implement_in_phase_one_drained(&sb);
    assert_eq!(sb.delivery_count("#project-basics"), 1);
    let conventions = sb.project.join("docs/CONVENTIONS.md");
    let text = fs::read_to_string(&conventions).unwrap();
    fs::write(&conventions, format!("{text}\n*   Never log a price.\n")).unwrap();
    let got = ls(&sb);
    assert!(
        got.contains("#project-basics (updated)]\nPROJECT CONTEXT"),
        "{got}"
    );
    assert!(got.contains("Never log a price."));
    // A file the pack only mentions is not part of what was sent.
    let tasks = sb.project.join("docs/TASKS.md");
    fs::write(&tasks, "# Tasks\n\n1.  Something else.\n").unwrap();
    assert!(!ls(&sb).contains("PROJECT CONTEXT"));
    assert_eq!(sb.delivery_count("#project-basics"), 2);
}

#[test]
fn the_sessions_own_documents_are_not_followed() {
    let sb = Sandbox::new();
    implement_in_phase_one_drained(&sb);
    // A session document delivered (as SessionStart does after a compaction) then appended to.
    let log = sb.sessions.join("work/IMPLEMENTATION_LOG.md");
    fs::write(&log, "# Log\n\n## First entry\n").unwrap();
    session_start(&sb, "compact");
    drain(&sb, "work", 30);
    assert_eq!(sb.delivery_count("work/IMPLEMENTATION_LOG.md"), 1);
    fs::write(&log, "# Log\n\n## First entry\n\n## Second entry\n").unwrap();
    assert!(!ls(&sb).contains(&format!("[Preloaded: {}", log.display())));
    assert_eq!(sb.delivery_count("work/IMPLEMENTATION_LOG.md"), 1);
}

fn dialogue(lines: usize) -> String {
    (1..=lines).fold(String::new(), |mut out, i| {
        let _ = writeln!(out, "**User**: line {i}");
        out
    })
}

#[test]
fn a_growing_log_goes_out_as_its_last_lines_with_a_header_saying_so() {
    let sb = Sandbox::new();
    implement_in_phase_one_drained(&sb);
    let path = sb.sessions.join("work/DIALOGUE.md");
    fs::write(&path, dialogue(250)).unwrap();
    let text = session_start(&sb, "compact").context();
    let header = format!("[Preloaded: {} (last 100 of 250 lines)]\n", path.display());
    assert!(text.contains(&header), "{}", text.len());
    assert!(text.contains("**User**: line 151\n") && text.contains("**User**: line 250"));
    assert!(!text.contains("**User**: line 150\n"));
    // It grows: not sent again.
    fs::write(&path, dialogue(260)).unwrap();
    assert!(!ls(&sb).contains(&format!("[Preloaded: {}", path.display())));
    assert_eq!(sb.delivery_count("DIALOGUE.md"), 1);
}

#[test]
fn the_configuration_names_the_logs_and_their_length() {
    let sb = Sandbox::new();
    fs::write(
        sb.project.join(".claude/context-packs.json"),
        r#"{"logs": [{"glob": "sessions/*/DIALOGUE.md", "tailLines": 10}]}"#,
    )
    .unwrap();
    implement_in_phase_one_drained(&sb);
    let path = sb.sessions.join("work/DIALOGUE.md");
    fs::write(&path, dialogue(30)).unwrap();
    let text = session_start(&sb, "compact").context();
    assert!(text.contains(&format!(
        "[Preloaded: {} (last 10 of 30 lines)]\n**User**: line 21\n",
        path.display()
    )));
}
