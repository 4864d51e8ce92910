//! Unit tests of `delivery`.

use super::*;

#[test]
fn block_paths_are_read_from_headers() {
    assert_eq!(block_paths("[Preloaded: /a/b.md]\nx\n"), ["/a/b.md"]);
    assert_eq!(
        block_paths("[Override: shadows /g]\n[Preloaded: /a/CMD_X.md]\nx"),
        ["/a/CMD_X.md"]
    );
    assert_eq!(
        block_paths("[Preloaded: /a/big.md (part 2/3)]\nx\n\n[Preloaded: /c.md]\ny"),
        ["/a/big.md", "/c.md"]
    );
    assert!(block_paths("nothing").is_empty());
    assert_eq!(
        block_paths(
            "[Preloaded: /a/X.md (updated)]\nx\n\n[Preloaded: /s/DIALOGUE.md (last 100 of 532 lines)]\ny\n\n\
             [Preloaded: /b (1).md (updated) (part 2/3)]\nz\n\n[Preloaded: /c (copy).md]\nw"
        ),
        ["/a/X.md", "/s/DIALOGUE.md", "/b (1).md", "/c (copy).md"]
    );
    assert_eq!(labelled("/a", &[]), "/a");
    assert_eq!(labelled("/a", &["updated".to_owned()]), "/a (updated)");
}
use std::fmt::Write as _;

#[test]
fn blocks_use_real_newlines_and_one_blank_line() {
    let text = join_blocks(&[block("/a.md", "alpha\n\n"), block("/b.md", "bravo")]);
    assert_eq!(
        text,
        "[Preloaded: /a.md]\nalpha\n\n[Preloaded: /b.md]\nbravo\n"
    );
    assert!(!text.contains("\\n"));
}

#[test]
fn packer_carries_over_what_does_not_fit() {
    let mut p = Packer::new(300);
    assert!(p.try_add("x".repeat(150)));
    assert!(!p.try_add("y".repeat(150)), "150 + separator + 150 > 300");
    assert!(p.try_add("z".repeat(149)));
    assert_eq!(chars(&p.finish()), 300);
}

#[test]
fn slots_keep_block_order_and_their_own_budgets() {
    let mut p = Packer::slots(&[300, 300, 250]);
    assert!(p.try_add("a".repeat(200)));
    assert!(p.try_add("b".repeat(200)), "opens slot 2");
    assert!(p.try_add("c".repeat(90)), "still fits slot 2");
    assert!(!p.try_add("d".repeat(260)), "larger than the last slot");
    assert!(p.try_add("e".repeat(250)));
    assert!(!p.try_add("f"), "every slot is full");
    let slots = p.into_slot_blocks();
    assert_eq!(slots.len(), 3);
    assert_eq!(slots[1].len(), 2);
    assert_eq!(slots[2], vec!["e".repeat(250)]);
    assert_eq!(Packer::slots(&[300, 300]).into_slot_blocks().len(), 2);
}

#[test]
fn large_files_go_out_in_labelled_parts_within_budget() {
    let content = (0..400).fold(String::new(), |mut acc, i| {
        let _ = writeln!(acc, "line {i} of the big file");
        acc
    });
    let parts = file_parts("/big.md", &content, 1000);
    assert!(parts.len() > 1);
    let n = parts.len();
    for (i, p) in parts.iter().enumerate() {
        assert!(chars(p) <= 1000, "part {i} has {} chars", chars(p));
        assert!(p.starts_with(&format!("[Preloaded: /big.md (part {}/{n})]\n", i + 1)));
    }
    let rebuilt: String = parts
        .iter()
        .map(|p| {
            p.split_once('\n')
                .unwrap()
                .1
                .strip_suffix('\n')
                .unwrap()
                .to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(rebuilt, trim_trailing_newlines(&content));
}

#[test]
fn multibyte_content_is_split_on_char_boundaries() {
    let content = "§é😀".repeat(500);
    for p in file_parts("/u.md", &content, 300) {
        assert!(chars(&p) <= 300);
    }
}

#[test]
fn event_log_appends_json_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("log.jsonl");
    let log = EventLog::new(Some(path.clone()), "templates", 3);
    log.record(Event::DirectDeliver, "/a.md", "templates(x)", true, "new");
    log.record(Event::SkipDedup, "/a.md", "templates(x)", true, "skip-path");
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["event"], "direct-deliver");
    assert_eq!(lines[0]["toolCall"], 3);
    assert_eq!(lines[1]["dedupResult"], "skip-path");
}

proptest::proptest! {
    /// Parts are cut where cutting the text as a list of characters cuts it: `room` characters
    /// at most, after the last line end in a part's last fifth when there is one.
    #[test]
    fn parts_are_cut_by_characters(body in "(a|é|😀|\n){0,600}", room in 1usize..200) {
        let chars: Vec<char> = body.chars().collect();
        let mut expected = Vec::new();
        let mut start = 0;
        while start < chars.len() {
            let mut end = (start + room).min(chars.len());
            if end < chars.len() {
                if let Some(nl) = (start + room * 4 / 5..end).rev().find(|&i| chars[i] == '\n') {
                    end = nl + 1;
                }
            }
            expected.push(chars[start..end].iter().collect::<String>());
            start = end;
        }
        proptest::prop_assert_eq!(split_at_lines(&body, room), expected);
    }
}

#[test]
fn a_header_is_read_into_its_path_note_and_part() {
    let read = |inner| {
        let h = parse_header(inner);
        (h.path, h.renewed, h.part)
    };
    assert_eq!(read("/a/b.md"), ("/a/b.md", false, None));
    assert_eq!(read("/a/b.md (part 2/3)"), ("/a/b.md", false, Some((2, 3))));
    assert_eq!(read("/a/b.md (updated)"), ("/a/b.md", true, None));
    assert_eq!(
        read("/a/b.md (updated) (part 1/4)"),
        ("/a/b.md", true, Some((1, 4)))
    );
    assert_eq!(
        read("/s/DIALOGUE.md (last 100 of 532 lines)"),
        ("/s/DIALOGUE.md", true, None)
    );
    // A note this product does not write is part of the path, as `header_path` reads it.
    assert_eq!(read("/a (b).md"), ("/a (b).md", false, None));
    assert_eq!(read("/a.md (part x/3)"), ("/a.md", false, None));
}
