//! Unit tests of `refs`.

use super::*;

fn names(text: &str) -> Vec<String> {
    scan(text)
        .into_iter()
        .map(|r| format!("{}{}", r.kind.prefix(), r.name))
        .collect()
}

#[test]
fn bare_references_are_found_in_order_once() {
    let text = "Run §CMD_ASK_ROUND then §FMT_LOG and §INV_X1; again §CMD_ASK_ROUND.";
    assert_eq!(names(text), ["CMD_ASK_ROUND", "FMT_LOG", "INV_X1"]);
}

#[test]
fn fenced_and_backticked_references_are_inert() {
    let text = "Execute §CMD_REAL_REF.\nSee `§CMD_MENTION_ONLY` here.\n```json\n{\"steps\": [\"§CMD_IN_FENCE\"]}\n```\nAfter §INV_AFTER.\n  ```\n§CMD_INDENTED_FENCE\n  ```\n";
    assert_eq!(names(text), ["CMD_REAL_REF", "INV_AFTER"]);
}

#[test]
fn lowercase_suffixes_are_dropped_with_their_underscore() {
    assert_eq!(
        names("§CMD_GENERATE_DEBRIEF_file and §CMD_X_"),
        ["CMD_GENERATE_DEBRIEF", "CMD_X"]
    );
    assert!(names("§CMD_lower §CMD_ §XYZ_A ¶INV_DEF").is_empty());
}

#[test]
fn unmatched_backtick_keeps_the_rest() {
    assert_eq!(names("a ` b §CMD_KEPT"), ["CMD_KEPT"]);
}

fn reference(kind: Kind, name: &str) -> Reference {
    Reference {
        kind,
        name: name.into(),
    }
}

/// A resolver of a call in `project_root`, with the user's `claude_dir` and engine `engine`.
fn resolver(project_root: Option<PathBuf>, claude_dir: PathBuf, engine: &Path) -> Resolver {
    Resolver {
        project_root,
        claude_dir,
        engine_directives: engine.to_path_buf(),
        seen: crate::primitives::paths::PhysicalDirs::default(),
    }
}

fn touch(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, "x").unwrap();
}

#[test]
fn walk_up_prefers_the_nearest_directives() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("proj");
    let home_claude = tmp.path().join("home/.claude");
    let engine = home_claude.join("engine/.directives");
    touch(&engine.join("commands/CMD_A.md"));
    touch(&engine.join("commands/CMD_ONLY_GLOBAL.md"));
    touch(&root.join(".directives/commands/CMD_A.md"));
    touch(&root.join("pkg/.directives/commands/CMD_A.md"));
    let resolver = resolver(Some(root.clone()), home_claude, &engine);
    let a = reference(Kind::Cmd, "A");
    assert_eq!(
        resolver.resolve(&a, &root.join("pkg/src")),
        Some(root.join("pkg/.directives/commands/CMD_A.md"))
    );
    assert_eq!(
        resolver.resolve(&a, &root.join("other")),
        Some(root.join(".directives/commands/CMD_A.md"))
    );
    let g = reference(Kind::Cmd, "ONLY_GLOBAL");
    assert_eq!(
        resolver.resolve(&g, &root.join("pkg")),
        Some(engine.join("commands/CMD_ONLY_GLOBAL.md"))
    );
    let missing = reference(Kind::Fmt, "NOPE");
    assert_eq!(resolver.resolve(&missing, &root), None);
    // Outside both caps: the file's own directory, then the engine.
    assert_eq!(
        resolver.resolve(&a, Path::new("/")),
        Some(engine.join("commands/CMD_A.md"))
    );
}

#[test]
fn skill_files_contribute_no_command_references() {
    let tmp = tempfile::tempdir().unwrap();
    let engine = tmp.path().join("e");
    touch(&engine.join("commands/CMD_A.md"));
    touch(&engine.join("formats/FMT_B.md"));
    let resolver = resolver(None, tmp.path().join("c"), &engine);
    let text = "§CMD_A and §FMT_B";
    assert_eq!(
        resolver.references_of(&tmp.path().join("s/SKILL.md"), text),
        vec![engine.join("formats/FMT_B.md")]
    );
    assert_eq!(
        resolver
            .references_of(&tmp.path().join("s/OTHER.md"), text)
            .len(),
        2
    );
}

proptest::proptest! {
    #[test]
    fn scanner_never_panics_and_names_are_safe(text in "\\PC{0,400}") {
        for r in scan(&text) {
            proptest::prop_assert!(r.name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'));
            proptest::prop_assert!(!r.name.ends_with('_'));
        }
    }

    #[test]
    fn references_inside_backticks_never_count(name in "[A-Z][A-Z0-9_]{0,10}[A-Z0-9]") {
        let text = format!("`§CMD_{name}`\n```\n§CMD_{name}\n```\n");
        proptest::prop_assert!(scan(&text).is_empty());
    }
}

/// The scanner's definition, line by line: fence lines toggle, other lines outside fences have
/// their backtick spans removed and are scanned.
fn scan_by_lines(text: &str) -> Vec<Reference> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        } else if !in_fence {
            scan_line(&strip_backticks(line), &mut out);
        }
    }
    out
}

proptest::proptest! {
    /// Searching for the next `§` or fence finds what walking every line finds.
    #[test]
    fn the_scan_finds_what_a_walk_over_every_line_finds(
        text in "(§CMD_A|§FMT_B1|§INV_C_x|§|```|`|\n|\r\n| |\u{2003}|x|é|ç|¨){0,80}"
    ) {
        proptest::prop_assert_eq!(scan(&text), scan_by_lines(&text));
    }
}

proptest::proptest! {
    /// The byte search finds every `§` the standard library's character search finds, among
    /// characters that share its bytes (`ç` is 0xC3 0xA7, `¨` is 0xC2 0xA8).
    #[test]
    fn sigils_and_backtick_spans_are_found_as_str_finds_them(
        text in "(§|ç|¨|§§|`|x|\u{A7A7}){0,40}"
    ) {
        let by_str: Vec<usize> = text.match_indices('§').map(|(at, _)| at).collect();
        proptest::prop_assert_eq!(sigils(&text).collect::<Vec<_>>(), by_str);
        let mut plain = String::new();
        let mut rest = text.as_str();
        while let Some(open) = rest.find('`') {
            let Some(close) = rest[open + 1..].find('`') else { break };
            plain.push_str(&rest[..open]);
            rest = &rest[open + 1 + close + 1..];
        }
        plain.push_str(rest);
        let stripped = strip_backticks(&text);
        proptest::prop_assert_eq!(stripped.as_ref(), plain.as_str());
    }
}
