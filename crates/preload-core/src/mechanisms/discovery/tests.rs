//! Unit tests of `discovery`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::state::fields;
use serde_json::json;
use std::fs;

struct Tree {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    scope: Scope,
}

fn tree() -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let project = root.join("tmp/project");
    for (rel, body) in [
        (".directives/AGENTS.md", "a"),
        (".directives/INVARIANTS.md", "i"),
        ("packages/estimate/.directives/INVARIANTS.md", "pi"),
        ("packages/estimate/.directives/PITFALLS.md", "pp"),
        ("packages/estimate/.directives/CONTRIBUTING.md", "pc"),
        ("packages/estimate/src/x.ts", ""),
        ("packages/estimate/tests/y.ts", ""),
        ("src/utils/CHECKLIST.md", "c"),
        ("node_modules/pkg/INVARIANTS.md", "n"),
        ("tmp/out/INVARIANTS.md", "t"),
    ] {
        let p = project.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, body).unwrap();
    }
    let home = root.join("home");
    fs::create_dir_all(home.join(".claude/.directives")).unwrap();
    fs::create_dir_all(home.join(".claude/skills/s")).unwrap();
    fs::write(home.join(".claude/.directives/INVARIANTS.md"), "e").unwrap();
    fs::write(home.join("AGENTS.md"), "above the cap").unwrap();
    let scope = Scope {
        claude_dir: home.join(".claude"),
        project_root: Some(project.clone()),
        home,
        cwd: project,
        physical_dirs: PhysicalDirs::default(),
    };
    Tree {
        _tmp: tmp,
        root,
        scope,
    }
}

fn names(found: &Found) -> Vec<String> {
    found
        .files
        .iter()
        .map(|f| {
            let p = Path::new(f);
            let parent = p.parent().unwrap().parent().unwrap();
            format!(
                "{}/{}",
                parent.file_name().unwrap().to_string_lossy(),
                p.file_name().unwrap().to_string_lossy()
            )
        })
        .collect()
}

/// What a read of `path` discovers: the core names only.
fn read(s: &mut State, t: &Tree, path: &str) -> Option<Found> {
    discover(s, &t.scope, path, &Accept::default())
}

/// The names the first read of `path` in a new state discovers.
fn first_read_names(t: &Tree, path: &str) -> Vec<String> {
    names(&read(&mut State::default(), t, path).unwrap())
}

fn edit() -> Accept {
    Accept {
        declared: vec!["TESTING.md".into(), "PITFALLS.md".into()],
    }
}

#[test]
fn walk_up_finds_every_level_under_a_tmp_sandbox() {
    let t = tree();
    let mut s = State::default();
    let found = discover(&mut s, &t.scope, "packages/estimate/src/x.ts", &edit()).unwrap();
    assert_eq!(
        names(&found),
        vec![
            "project/AGENTS.md",
            "project/INVARIANTS.md",
            "estimate/INVARIANTS.md",
            "estimate/PITFALLS.md"
        ],
        "core at both levels plus the declared PITFALLS, not CONTRIBUTING"
    );
    assert!(found.dir.ends_with("packages/estimate/src"));
    let touched = s.get(fields::TOUCHED_DIRS).unwrap().as_object().unwrap();
    assert_eq!(touched.len(), 4, "src, estimate, packages, project");
    assert_eq!(s.get(fields::DIRECTIVE_READS), Some(&json!(0)));
}

#[test]
fn read_accepts_only_core_names() {
    assert_eq!(
        first_read_names(&tree(), "packages/estimate/src/x.ts"),
        vec![
            "project/AGENTS.md",
            "project/INVARIANTS.md",
            "estimate/INVARIANTS.md"
        ]
    );
}

#[test]
fn same_directory_and_siblings_are_not_walked_again() {
    let t = tree();
    let mut s = State::default();
    read(&mut s, &t, "packages/estimate/src/x.ts").unwrap();
    assert_eq!(read(&mut s, &t, "packages/estimate/src/other.ts"), None);
    let before = s
        .get(fields::TOUCHED_DIRS)
        .unwrap()
        .as_object()
        .unwrap()
        .len();
    let sibling = read(&mut s, &t, "packages/estimate/tests/y.ts").unwrap();
    assert!(sibling.files.is_empty());
    assert_eq!(
        s.get(fields::TOUCHED_DIRS)
            .unwrap()
            .as_object()
            .unwrap()
            .len(),
        before + 1,
        "only the sibling itself is new"
    );
    // An Edit with declared names re-checks the ancestors for them, once.
    let wider = discover(&mut s, &t.scope, "packages/estimate/src2/z.ts", &edit());
    let wider = wider.unwrap();
    assert_eq!(names(&wider), vec!["estimate/PITFALLS.md"]);
    let again = discover(&mut s, &t.scope, "packages/new/other.ts", &edit()).unwrap();
    assert!(again.files.is_empty(), "{:?}", again.files);
}

#[test]
fn excluded_components_inside_the_project_are_skipped() {
    let t = tree();
    assert_eq!(
        first_read_names(&t, "node_modules/pkg/index.ts"),
        vec!["project/AGENTS.md", "project/INVARIANTS.md"]
    );
    let found = first_read_names(&t, "tmp/out/f.ts");
    assert!(!found.iter().any(|n| n.starts_with("out/")));
    assert!(
        t.root.join("tmp/project").starts_with(&t.root),
        "sandbox under a tmp dir"
    );
}

#[test]
fn the_claude_dir_caps_the_walk() {
    let t = tree();
    let mut s = State::default();
    let skill = t.scope.claude_dir.join("skills/s/SKILL.md");
    let found = read(&mut s, &t, &skill.to_string_lossy()).unwrap();
    assert_eq!(found.files.len(), 1);
    assert!(found.files[0].ends_with(".claude/.directives/INVARIANTS.md"));
    assert!(!found.files.iter().any(|f| f.ends_with("home/AGENTS.md")));
}

#[test]
fn outside_both_roots_nothing_happens() {
    let t = tree();
    let mut s = State::default();
    let outside = t.root.join("elsewhere/file.ts");
    assert_eq!(read(&mut s, &t, &outside.to_string_lossy()), None);
    assert_eq!(read(&mut s, &t, ""), None);
    assert!(s.map().is_empty(), "state untouched");
}

#[test]
fn checklists_and_recorded_names_dedup() {
    let t = tree();
    let accept = Accept {
        declared: vec!["CHECKLIST.md".into()],
    };
    let mut s = State::default();
    let utils = t.scope.cwd.join("src/utils");
    // The engine's activate records bare names under their directory.
    let dot = t.scope.cwd.join(".directives");
    s.object_mut(fields::TOUCHED_DIRS)
        .insert(dot.to_string_lossy().into_owned(), json!(["AGENTS.md"]));
    let found = discover(&mut s, &t.scope, "src/utils/a.ts", &accept).unwrap();
    assert_eq!(found.dir, utils.to_string_lossy());
    assert!(
        found
            .files
            .iter()
            .any(|f| f.ends_with("utils/CHECKLIST.md"))
    );
    assert!(!found.files.iter().any(|f| f.ends_with("AGENTS.md")));
    assert_eq!(s.strings(fields::DISCOVERED_CHECKLISTS).len(), 1);
    s.remove(fields::TOUCHED_DIRS);
    discover(&mut s, &t.scope, "src/utils/b.ts", &accept).unwrap();
    assert_eq!(
        s.strings(fields::DISCOVERED_CHECKLISTS).len(),
        1,
        "not duplicated on rediscovery"
    );
}

#[test]
fn directory_paths_are_used_directly() {
    let t = tree();
    assert_eq!(
        touched_dir("src/utils", &t.scope.cwd),
        Some(t.scope.cwd.join("src/utils"))
    );
    assert_eq!(
        touched_dir("src/utils/missing.ts", &t.scope.cwd),
        Some(t.scope.cwd.join("src/utils"))
    );
    assert_eq!(touched_dir("  ", &t.scope.cwd), None);
}
