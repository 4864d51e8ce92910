//! Unit tests of `paths`.

use super::*;

#[test]
fn tilde_expands_only_at_the_start() {
    let home = Path::new("/h");
    assert_eq!(expand_tilde("~/a/b", home), PathBuf::from("/h/a/b"));
    assert_eq!(expand_tilde("~", home), PathBuf::from("/h"));
    assert_eq!(expand_tilde("/x/~/y", home), PathBuf::from("/x/~/y"));
}

/// The directory `real` under `home` with a file `<name>.md` for each of `names`, and the link
/// `link` to it; the directory's path.
fn linked_dir(home: &Path, real: &str, link: &str, names: &[&str]) -> PathBuf {
    let real = home.join(real);
    std::fs::create_dir_all(&real).unwrap();
    for name in names {
        std::fs::write(real.join(format!("{name}.md")), name.to_lowercase()).unwrap();
    }
    std::os::unix::fs::symlink(&real, home.join(link)).unwrap();
    real
}

#[test]
fn normalisation_meets_through_a_directory_symlink() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let real = linked_dir(
        home,
        ".claude/engine/.directives",
        ".claude/.directives",
        &["X"],
    );
    let a = normalize("~/.claude/.directives/X.md", home);
    let b = normalize(&real.join("X.md").to_string_lossy(), home);
    assert_eq!(a, b);
    assert!(a.ends_with(".claude/engine/.directives/X.md"));
}

#[test]
fn a_call_resolves_each_directory_once_and_clones_share_it() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let real = linked_dir(home, "real", "link", &["X", "Y"]);
    let dirs = PhysicalDirs::default();
    let shared = dirs.clone();
    let x = normalize_with("~/link/X.md", home, &dirs);
    assert_eq!(x, normalize("~/link/X.md", home));
    // Pointed elsewhere mid-call, the link still resolves as it did: what the call saw.
    std::fs::remove_file(home.join("link")).unwrap();
    std::fs::create_dir_all(home.join("other")).unwrap();
    std::fs::write(home.join("other/Y.md"), "y").unwrap();
    std::os::unix::fs::symlink(home.join("other"), home.join("link")).unwrap();
    let y = normalize_with("~/link/Y.md", home, &shared);
    assert_eq!(
        y,
        real.canonicalize().unwrap().join("Y.md").to_string_lossy()
    );
    // A fresh call sees the new target.
    assert!(normalize("~/link/Y.md", home).ends_with("/other/Y.md"));
    // A file's physical path: its directory's, or its own target when it is a link.
    std::os::unix::fs::symlink(real.join("X.md"), home.join("other/L.md")).unwrap();
    assert_eq!(
        dirs.of_file(&home.join("other/L.md")),
        Some(real.canonicalize().unwrap().join("X.md"))
    );
    assert_eq!(
        dirs.of_file(&home.join("other/Y.md")),
        Some(home.join("other").canonicalize().unwrap().join("Y.md"))
    );
    assert_eq!(dirs.of_file(&home.join("other/none.md")), None);
    // A file found is remembered for the call; a path that is no file is looked at again.
    std::fs::remove_file(real.join("X.md")).unwrap();
    assert_eq!(normalize_with("~/link/X.md", home, &shared), x);
    assert_eq!(
        normalize_with("~/other/Z.md", home, &dirs),
        home.join("other/Z.md").to_string_lossy()
    );
    std::fs::write(home.join("other/Z.md"), "z").unwrap();
    assert_eq!(
        normalize_with("~/other/Z.md", home, &dirs),
        home.join("other")
            .canonicalize()
            .unwrap()
            .join("Z.md")
            .to_string_lossy()
    );
    // A directory that cannot be resolved is not remembered as such.
    assert_eq!(dirs.of(&home.join("later")), None);
    std::fs::create_dir_all(home.join("later")).unwrap();
    assert!(dirs.of(&home.join("later")).is_some());
}

#[test]
fn a_directory_resolves_from_its_parent_as_realpath_does() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("a/b/c")).unwrap();
    std::fs::create_dir_all(root.join("x/y")).unwrap();
    let link = |target: &str, at: &str| std::os::unix::fs::symlink(target, root.join(at));
    link("a/b", "to_b").unwrap(); // relative target
    link(&root.join("x").to_string_lossy(), "a/b/c/to_x").unwrap(); // absolute target
    link("../..", "a/b/c/up").unwrap(); // up the tree
    link("to_b", "chain").unwrap(); // a link to a link
    link("loop_b", "loop_a").unwrap(); // a loop
    link("loop_a", "loop_b").unwrap();
    link("nowhere", "dangling").unwrap();
    link(".", "a/b/here").unwrap(); // itself
    let dirs = PhysicalDirs::default();
    for rel in [
        "a/b/c",
        "to_b",
        "to_b/c",
        "to_b/c/to_x/y",
        "a/b/c/up",
        "a/b/c/up/b/c/up",
        "chain/c",
        "to_b/../x/y",
        "a/b/c/to_x/../a",
        "a/./b/c/",
        "missing",
        "to_b/missing",
        "loop_a",
        "loop_a/c",
        "dangling",
        "a/b/here/here/here/c",
    ] {
        let dir = root.join(rel);
        assert_eq!(dirs.of(&dir), std::fs::canonicalize(&dir).ok(), "{rel}");
    }
}

#[test]
fn a_probe_is_answered_once_per_call_either_way() {
    let tmp = tempfile::tempdir().unwrap();
    let (here, later) = (tmp.path().join("here.md"), tmp.path().join("later.md"));
    std::fs::write(&here, "x").unwrap();
    let dirs = PhysicalDirs::default();
    assert!(dirs.probe_file(&here) && !dirs.probe_file(&later));
    std::fs::remove_file(&here).unwrap();
    std::fs::write(&later, "y").unwrap();
    assert!(
        dirs.probe_file(&here) && !dirs.probe_file(&later),
        "what the call saw"
    );
    let next_call = PhysicalDirs::default();
    assert!(!next_call.probe_file(&here) && next_call.probe_file(&later));
}

#[test]
fn missing_files_stay_expanded_and_clean() {
    let home = Path::new("/nowhere-home");
    assert_eq!(normalize("~/a/../b/./c.md", home), "/nowhere-home/b/c.md");
}

#[test]
fn project_root_is_nearest_dot_claude() {
    let tmp = tempfile::tempdir().unwrap();
    let outer = tmp.path().join("p");
    let inner = outer.join("pkg/sub");
    std::fs::create_dir_all(outer.join(".claude")).unwrap();
    std::fs::create_dir_all(inner.join("deep")).unwrap();
    assert_eq!(find_project_root(&inner.join("deep")), Some(outer.clone()));
    std::fs::create_dir_all(inner.join(".claude")).unwrap();
    assert_eq!(find_project_root(&inner.join("deep")), Some(inner));
}

#[test]
fn workspace_nests_sessions_with_global_fallback() {
    let dirs = sessions_dirs(Path::new("/p"), Some("apps/web"));
    assert_eq!(
        dirs,
        vec![
            PathBuf::from("/p/apps/web/sessions"),
            PathBuf::from("/p/sessions")
        ]
    );
    assert_eq!(
        sessions_dirs(Path::new("/p"), None),
        vec![PathBuf::from("/p/sessions")]
    );
}

#[test]
fn owner_pid_prefers_supervisor_then_claude_pid() {
    let vars = Env::from_pairs([(env::CLAUDE_SUPERVISOR_PID, "42"), (env::CLAUDE_PID, "7")]);
    assert_eq!(owner_pid(&vars), 42);
    let vars = Env::from_pairs([(env::CLAUDE_PID, "7")]);
    assert_eq!(owner_pid(&vars), 7);
    let vars = Env::from_pairs([(env::CLAUDE_PID, "junk")]);
    assert!(owner_pid(&vars) > 0);
}

#[test]
fn safe_names_reject_traversal() {
    assert!(is_safe_name("abc-123_x.y"));
    assert!(!is_safe_name("../../etc/x"));
    assert!(!is_safe_name(".."));
    assert!(!is_safe_name(""));
    assert!(!is_safe_name("a/b"));
}

proptest::proptest! {
    /// A path judged clean is one the walk over its components gives back unchanged.
    #[test]
    fn a_path_judged_clean_is_what_cleaning_gives(
        path in "/?((a|bc|\\.|\\.\\.|\\.a|a\\.\\.|)(/|//)){0,6}(a|\\.|\\.\\.|)"
    ) {
        let path = Path::new(&path);
        proptest::prop_assert_eq!(lexical_clean(path), clean_components(path));
        proptest::prop_assert_eq!(into_clean(path.to_path_buf()), clean_components(path));
    }
}
