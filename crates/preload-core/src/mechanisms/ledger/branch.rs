//! The window as the active branch: each file a tool call carried is recorded with that call
//! (its `tool_use_id`, the transcript entry that carried it), so a rewind that leaves the call
//! off the client's active branch takes what it carried out of the window, and the file is
//! due again.

use crate::mechanisms::stash;
use crate::state::{Audience, CallRecord, IN_CONTEXT, PartsCut, Records, State, stamps};

/// How many calls' carriers a window keeps: a rewind further back than that many calls that
/// carried files leaves the oldest in the window.
const CARRIER_RECORDS: usize = 256;

/// The carrier of what the prompt `prompt_id` carried (a skill the client expanded, the packs
/// sent with it): the transcript names the prompt by its `promptId`.
pub fn prompt_carrier(prompt_id: &str) -> String {
    format!("prompt:{prompt_id}")
}

/// The carrier of what a SessionStart text of a window that goes on (a resume) carried: the
/// transcript names that text by the entry it hangs off, `at`.
pub fn start_carrier(at: &str) -> String {
    format!("start:{at}")
}

/// Note that the main agent's call (or prompt, [`prompt_carrier`], or start text,
/// [`start_carrier`]) `call` carried `files` whole in its answer `text`: which of them it carried
/// as a new text of a file the window held before (`(updated)`), and the runs of parts it carried
/// of files cut in parts, are read from the text.
pub fn note_carried(s: &mut State, call: &str, files: &[String], text: &str) {
    let parts: Vec<(String, [u64; 3])> = crate::primitives::delivery::cut_files(text)
        .into_iter()
        .map(|c| (c.path, [c.first as u64, c.last as u64, c.n as u64]))
        .collect();
    let whole: Vec<String> = files
        .iter()
        .filter(|f| !parts.iter().any(|(p, _)| p == *f))
        .cloned()
        .collect();
    let renewed: Vec<String> = crate::primitives::delivery::renewed_paths(text)
        .into_iter()
        .filter(|r| whole.contains(r) || parts.iter().any(|(p, _)| p == r))
        .collect();
    add_record(s, call, &whole, &renewed, &parts);
}

/// Add to the carrier record of `call` (made when there is none): `files` whole, `renewed` of
/// them, and runs of parts (`[a, b, n]`, the lowest to the highest of one cut).
fn add_record(
    s: &mut State,
    call: &str,
    files: &[String],
    renewed: &[String],
    parts: &[(String, [u64; 3])],
) {
    if files.is_empty() && parts.is_empty() {
        return;
    }
    s.change_call_record(Records::Carriers, call, CARRIER_RECORDS, |record| {
        record.add_files(files);
        record.add_updated(renewed);
        for (path, run) in parts {
            record.hold(path, *run);
        }
    });
}

/// Copy the carriers of `record` (another state of this window) into `s`.
pub fn adopt_carriers(s: &mut State, record: &State) {
    for carrier in record.call_records(Records::Carriers) {
        add_record(
            s,
            &carrier.tool_use_id,
            &carrier.files,
            &carrier.updated,
            &carrier.held(),
        );
    }
}

/// Take what the calls `abandoned` carried out of the window: each of their files still in it
/// is queued again (once: a file carried by a call the branch keeps stays), and their records
/// go. A file they carried only as a new text of one the window held before (`updated`) is
/// still on the branch in its older text: it is queued as changed, to go out marked updated. A
/// file they carried parts of goes on from the first part they carried: the branch holds the
/// ones before it. Returns the files queued.
pub fn take_back(s: &mut State, abandoned: &[String]) -> Vec<String> {
    if abandoned.is_empty() || !s.has_call_records(Records::Carriers) {
        return Vec::new();
    }
    let (gone, kept): (Vec<CallRecord>, Vec<CallRecord>) = s
        .call_records(Records::Carriers)
        .into_iter()
        .partition(|r| abandoned.contains(&r.tool_use_id));
    if gone.is_empty() {
        return Vec::new();
    }
    let kept_whole = |file: &str| kept.iter().any(|r| r.files.iter().any(|f| f == file));
    let mut out: Vec<String> = Vec::new();
    for file in gone.iter().flat_map(|r| &r.files) {
        if s.has_path(IN_CONTEXT, file) && !kept_whole(file) && !out.contains(file) {
            out.push(file.clone());
        }
    }
    for file in &out {
        // Renewed by every abandoned call that carried it: its first text is still there.
        let first_text_kept = gone
            .iter()
            .all(|r| !r.files.contains(file) || r.updated.contains(file));
        if first_text_kept {
            stamps::mark_stale(s, file);
        }
        s.owe(Audience::Main, file);
    }
    // Parts: the lowest part of each cut the abandoned calls carried, unless a kept call holds
    // the file whole.
    let mut cuts: Vec<(String, u64, u64)> = Vec::new();
    for (path, [a, _, n]) in gone.iter().flat_map(CallRecord::held) {
        match cuts.iter_mut().find(|(p, _, m)| *p == path && *m == n) {
            Some(cut) => cut.1 = cut.1.min(a),
            None => cuts.push((path, a, n)),
        }
    }
    let renewed = |path: &str| gone.iter().any(|r| r.updated.iter().any(|u| u == path));
    for (path, first, n) in cuts {
        // Parts waiting in the stash go out in order first: that file is left as it is.
        if kept_whole(&path)
            || out.contains(&path)
            || stash::holds_block_of(s, Audience::Main.agent_id(), &path)
        {
            continue;
        }
        let whole = s.has_path(IN_CONTEXT, &path);
        let done = s.parts_done(Audience::Main, &path);
        if !whole && done.is_none_or(|d| d < first) {
            // Not out, or not that far: nothing of it to take back.
            continue;
        }
        if first > 1 {
            s.set_parts_done(Audience::Main, &path, Some(first - 1));
            if s.parts_cut(Audience::Main, &path).is_none() {
                // The cut goes on marked updated when its parts were.
                let cut = PartsCut {
                    parts: n,
                    updated: renewed(&path),
                };
                s.set_parts_cut(Audience::Main, &path, Some(cut));
            }
        } else {
            // None of this cut is left: it starts again from its first part, marked updated
            // when the window holds an older text of the file.
            s.set_parts_done(Audience::Main, &path, None);
            s.set_parts_cut(Audience::Main, &path, None);
            if renewed(&path) {
                stamps::mark_stale(s, &path);
            }
        }
        s.owe(Audience::Main, &path);
        out.push(path);
    }
    s.set_call_records(Records::Carriers, kept, CARRIER_RECORDS);
    out
}

/// Mark the window's branch as checked at prompt `prompt`; false when it was already.
pub fn check_branch_at(s: &mut State, prompt: &str) -> bool {
    if s.branch_at() == Some(prompt) {
        return false;
    }
    s.set_branch_at(prompt);
    true
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::state::{QUEUED, fields};

    fn state() -> State {
        State::parse(r#"{"preloadedFiles": ["/std", "/a", "/b", "/c"], "pendingPreloads": []}"#)
            .unwrap()
    }

    fn owned(paths: &[&str]) -> Vec<String> {
        paths.iter().map(|p| (*p).to_owned()).collect()
    }

    #[test]
    fn what_an_abandoned_call_carried_is_due_again_once() {
        let mut s = state();
        note_carried(&mut s, "toolu_1", &owned(&["/a"]), "");
        note_carried(&mut s, "toolu_2", &owned(&["/b"]), "");
        note_carried(&mut s, "toolu_2", &owned(&["/b", "/c"]), "");
        note_carried(&mut s, "toolu_3", &owned(&[]), "");
        assert_eq!(s.items(fields::CARRIERS).len(), 2);
        let back = take_back(&mut s, &owned(&["toolu_2", "toolu_9"]));
        assert_eq!(back, owned(&["/b", "/c"]));
        assert_eq!(s.path_list(IN_CONTEXT), owned(&["/std", "/a"]));
        assert_eq!(s.path_list(QUEUED), owned(&["/b", "/c"]));
        // Its record is gone: the same rewind seen again takes nothing more.
        assert!(take_back(&mut s, &owned(&["toolu_2"])).is_empty());
        assert_eq!(s.items(fields::CARRIERS).len(), 1);
    }

    #[test]
    fn a_file_a_kept_call_also_carried_stays() {
        let mut s = state();
        note_carried(&mut s, "toolu_1", &owned(&["/a"]), "");
        note_carried(&mut s, "toolu_2", &owned(&["/a", "/b"]), "");
        assert_eq!(take_back(&mut s, &owned(&["toolu_2"])), owned(&["/b"]));
        assert!(s.has_path(IN_CONTEXT, "/a"));
    }

    #[test]
    fn a_rewound_new_text_of_a_file_goes_out_again_as_changed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.md");
        std::fs::write(&file, "new text\n").unwrap();
        let path = file.to_string_lossy().into_owned();
        let meta = std::fs::metadata(&file).unwrap();
        let mut s = State::parse(&format!(r#"{{"preloadedFiles": ["{path}", "/b"]}}"#)).unwrap();
        stamps::set(
            &mut s,
            &path,
            &stamps::Stamp::of_file(&path, "new text\n", &meta),
        );
        // The first text went out at the start (no call carried it), the new one with a call.
        let text = format!(
            "[Preloaded: {path} (updated)]\nnew text\n\n[Preloaded: /b]\nb\n\n[Preloaded: /c (updated)]\nc\n"
        );
        note_carried(&mut s, "toolu_1", &owned(&[&path, "/b"]), &text);
        assert_eq!(
            s.items(fields::CARRIERS)[0][fields::CALL_UPDATED],
            json!([path]),
            "only a file the call carried is noted as renewed"
        );
        assert_eq!(
            take_back(&mut s, &owned(&["toolu_1"])),
            owned(&[&path, "/b"])
        );
        let now = stamps::Stamp::of_file(&path, "new text\n", &meta);
        assert!(
            !stamps::get(&s, &path).unwrap().matches(&now, "new text\n"),
            "the window holds its first text: the next delivery says updated"
        );
        assert_eq!(s.path_list(QUEUED), owned(&[&path, "/b"]));
    }

    #[test]
    fn a_file_whose_every_text_was_rewound_goes_out_plain() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.md");
        std::fs::write(&file, "text\n").unwrap();
        let path = file.to_string_lossy().into_owned();
        let meta = std::fs::metadata(&file).unwrap();
        let mut s = State::parse(&format!(r#"{{"preloadedFiles": ["{path}"]}}"#)).unwrap();
        let stamp = stamps::Stamp::of_file(&path, "text\n", &meta);
        stamps::set(&mut s, &path, &stamp);
        note_carried(&mut s, "toolu_1", &owned(&[&path]), "");
        note_carried(
            &mut s,
            "toolu_2",
            &owned(&[&path]),
            &format!("[Preloaded: {path} (updated)]\ntext\n"),
        );
        assert_eq!(
            take_back(&mut s, &owned(&["toolu_1", "toolu_2"])),
            owned(&[&path])
        );
        assert_eq!(stamps::get(&s, &path), Some(stamp));
    }

    #[test]
    fn a_file_whose_later_parts_were_rewound_goes_on_from_the_first_of_them() {
        let mut s = state();
        // Parts 1 and 2 of /long went out at the start; a call carried parts 3 and 4 of 4, the
        // last, and the file is whole in the window.
        s.add_path(IN_CONTEXT, "/long");
        let text = "[Preloaded: /long (part 3/4)]\nc\n\n[Preloaded: /long (part 4/4)]\nd\n";
        note_carried(&mut s, "toolu_1", &owned(&["/long"]), text);
        assert_eq!(
            s.items(fields::CARRIERS)[0][fields::CALL_FILES],
            json!([]),
            "a file carried in parts is not carried whole"
        );
        assert_eq!(take_back(&mut s, &owned(&["toolu_1"])), owned(&["/long"]));
        assert!(!s.has_path(IN_CONTEXT, "/long"));
        assert_eq!(s.path_list(QUEUED), owned(&["/long"]));
        assert_eq!(s.get(fields::PRELOAD_PARTS).unwrap()["/long"], json!(2));
        assert_eq!(s.get(fields::PRELOAD_PARTS_CUT).unwrap()["/long"], json!(4));
    }

    #[test]
    fn parts_not_out_yet_are_nothing_to_take_back() {
        let mut s = state();
        s.object_mut(fields::PRELOAD_PARTS)
            .insert("/long".into(), json!(1));
        let text = "[Preloaded: /long (part 2/4)]\nb\n";
        note_carried(&mut s, "toolu_1", &[], text);
        // Its progress went back meanwhile (a compaction started it again).
        s.object_mut(fields::PRELOAD_PARTS)
            .insert("/long".into(), json!(1));
        assert!(take_back(&mut s, &owned(&["toolu_1"])).is_empty());
        assert_eq!(s.get(fields::PRELOAD_PARTS).unwrap()["/long"], json!(1));
    }

    #[test]
    fn the_branch_is_checked_once_per_prompt() {
        let mut s = state();
        assert!(check_branch_at(&mut s, "u1"));
        assert!(!check_branch_at(&mut s, "u1"));
        assert!(check_branch_at(&mut s, "u2"));
    }

    #[test]
    fn a_window_keeps_the_latest_calls_records() {
        let mut s = state();
        for i in 0..(CARRIER_RECORDS + 5) {
            note_carried(&mut s, &format!("toolu_{i}"), &owned(&["/a"]), "");
        }
        let records = s.call_records(Records::Carriers);
        assert_eq!(records.len(), CARRIER_RECORDS);
        assert_eq!(records[0].tool_use_id, "toolu_5");
    }
}
