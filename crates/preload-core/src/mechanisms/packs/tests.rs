use std::fs;
use std::path::Path;

use super::*;

struct Project {
    _tmp: tempfile::TempDir,
    root: std::path::PathBuf,
    claude: std::path::PathBuf,
    home: std::path::PathBuf,
}

impl Project {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let home = base.join("home");
        let claude = home.join(".claude");
        let root = base.join("project");
        fs::create_dir_all(claude.join("engine")).unwrap();
        fs::create_dir_all(root.join(".claude")).unwrap();
        Self {
            _tmp: tmp,
            root,
            claude,
            home,
        }
    }

    fn config(&self, text: &str) {
        fs::write(self.root.join(PROJECT_FILE), text).unwrap();
    }

    fn global(&self, text: &str) {
        fs::write(self.claude.join(GLOBAL_FILE), text).unwrap();
    }

    fn file(&self, rel: &str, text: &str) {
        let path = self.root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    fn load(&self) -> Loaded {
        load(&self.root, &self.claude, &self.home)
    }
}

fn render_only(p: &Project) -> Rendered {
    let loaded = p.load();
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    render(&loaded, &loaded.packs[0], 1 << 20)
}

const SEED_PACK: &str = r#"{"packs": [{"name": "project", "on": "SessionStart", "files": [
  {"path": "CONSTITUTION.md"},
  {"path": "TASKS.md", "strategy": "mention", "note": "read it when discussing priorities"},
  {"path": "DECISIONS.md", "strategy": "index"},
  {"path": "LEARNINGS.md", "strategy": "index"},
  {"path": "GLOSSARY.md", "strategy": "skip"},
  {"path": "MISSING.md"},
  {"path": "EMPTY.md"}
]}]}"#;

fn seed_project() -> Project {
    let p = Project::new();
    p.config(SEED_PACK);
    p.file("CONSTITUTION.md", "# Constitution\nNever push to main.\n");
    p.file("TASKS.md", "# Tasks\n- secret task list\n");
    p.file(
        "DECISIONS.md",
        "# Decisions\n<!-- INDEX:START -->\n| 2026-01-01 | Use Rust |\n<!-- INDEX:END -->\n\n## 2026-01-01 Use Rust\nThe long body.\n",
    );
    p.file("LEARNINGS.md", "# Learnings\nNo markers here.\n");
    p.file("GLOSSARY.md", "# Glossary\nglossary-term\n");
    p.file("EMPTY.md", "\n\n");
    p
}

#[test]
fn a_pack_renders_in_the_seed_order_with_its_notes() {
    let p = seed_project();
    let r = render_only(&p);
    let t = &r.text;
    assert!(t.starts_with("PROJECT CONTEXT: project"), "{t}");
    assert!(t.contains(
        "Read order: CONSTITUTION.md, TASKS.md, DECISIONS.md, LEARNINGS.md, MISSING.md, EMPTY.md"
    ));
    // Verbatim first, then indexes, then mentions, then the footer.
    let at = |needle: &str| t.find(needle).unwrap_or_else(|| panic!("{needle} in {t}"));
    assert!(at("--- CONSTITUTION.md ---\n# Constitution") < at("--- DECISIONS.md (index"));
    assert!(at("--- EMPTY.md ---\n(empty)") < at("--- DECISIONS.md (index"));
    assert!(at("--- DECISIONS.md (index") < at("--- LEARNINGS.md (no index markers"));
    assert!(at("--- LEARNINGS.md (no index markers") < at("- TASKS.md: read it when"));
    assert!(at("- TASKS.md: read it when") < at("Context: "));
    assert!(t.contains("| 2026-01-01 | Use Rust |"));
    assert!(
        !t.contains("The long body."),
        "only the index of DECISIONS.md"
    );
    assert!(
        t.contains("No markers here."),
        "the whole file without markers"
    );
    assert!(t.contains("--- MISSING.md (missing: no file at "));
    assert!(
        !t.contains("secret task list"),
        "a mention sends no content"
    );
    assert!(
        !t.contains("glossary") && !t.contains("GLOSSARY"),
        "skip sends nothing"
    );
    // CONSTITUTION, DECISIONS (index), LEARNINGS (whole), EMPTY: four files loaded.
    assert_eq!(r.files_loaded, 4);
    let body = &t[..t.rfind(&"=".repeat(80)).unwrap()];
    assert_eq!(r.tokens, body.chars().count().div_ceil(4));
    assert!(t.ends_with(&format!(
        "Context: 4 files loaded (~{} tokens).\n",
        r.tokens
    )));
    assert!(r.reductions.is_empty());
}

fn budget_project(budget: u64) -> Project {
    let p = Project::new();
    let big = "word ".repeat(400);
    p.config(&format!(
        r#"{{"packs": [{{"name": "b", "on": "SessionStart", "budgetTokens": {budget}, "files": [
          {{"path": "KEEP.md", "priority": 10}},
          {{"path": "LOW.md", "priority": 1}},
          {{"path": "MID.md", "priority": 5}}
        ]}}]}}"#
    ));
    p.file("KEEP.md", &format!("keep {big}"));
    p.file(
        "LOW.md",
        &format!("<!-- INDEX:START -->\nlow index\n<!-- INDEX:END -->\nlow {big}"),
    );
    p.file("MID.md", &format!("mid {big}"));
    p
}

#[test]
fn over_its_budget_the_lowest_priority_file_is_reduced_first() {
    // Each file is ~500 tokens. At 1,100 the index of the lowest one is enough.
    let r = render_only(&budget_project(1_100));
    assert_eq!(
        r.reductions,
        vec![Reduction {
            path: "LOW.md".into(),
            to: Strategy::Index
        }]
    );
    assert!(r.text.contains("keep word") && r.text.contains("mid word"));
    assert!(r.text.contains("low index") && !r.text.contains("low word"));
    assert!(r.tokens <= 1_100, "{}", r.tokens);
    assert!(
        r.text
            .contains("Over the 1100-token budget: LOW.md as its index (")
    );
}

#[test]
fn a_file_goes_down_to_a_mention_before_a_higher_priority_one_is_touched() {
    // At 700: LOW goes to its index, then to a mention, then MID (no markers, so its index
    // would be no smaller) to a mention; KEEP stays whole.
    let r = render_only(&budget_project(700));
    assert_eq!(
        r.reductions,
        vec![
            Reduction {
                path: "LOW.md".into(),
                to: Strategy::Mention
            },
            Reduction {
                path: "MID.md".into(),
                to: Strategy::Mention
            },
        ]
    );
    assert!(r.text.contains("keep word"));
    assert!(!r.text.contains("low index") && !r.text.contains("mid word"));
    assert!(r.text.contains("- LOW.md: read it when you need it"));
    assert!(r.text.contains("- MID.md: read it when you need it"));
    assert!(r.tokens <= 700, "{}", r.tokens);
    assert!(
        r.text
            .contains("Over the 700-token budget: LOW.md as a mention, MID.md as a mention")
    );
    assert!(!r.text.contains("Still over"));
}

#[test]
fn a_budget_that_cannot_be_met_is_said() {
    let p = Project::new();
    p.config(
        r#"{"packs": [{"name": "b", "on": "SessionStart", "budgetTokens": 10, "files": [
          {"path": "A.md"}]}]}"#,
    );
    p.file("A.md", &"a".repeat(400));
    let r = render_only(&p);
    assert!(r.text.contains("- A.md: read it when you need it"));
    assert!(
        r.text
            .contains("Still over the 10-token budget with every file reduced")
    );
}

#[test]
fn broken_configurations_name_the_file_line_and_column() {
    let p = Project::new();
    for (text, line, says) in [
        (
            "{\"packs\": [\n  {\"name\": \"a\", \"on\": \"SessionStart\",\n",
            3,
            "EOF",
        ),
        (
            "{\"packs\": [{\"name\": \"a\", \"on\": \"SessionStart\",\n \"files\": [{\"path\": \"x\", \"strategy\": \"verbose\"}]}]}",
            2,
            "unknown variant `verbose`",
        ),
        (
            "{\"packs\": [{\"name\": \"a\",\n  \"on\": \"sometimes\"}]}",
            2,
            "unknown trigger \"sometimes\"",
        ),
        (
            "{\"packs\": [{\"name\": \"a\", \"on\": \"path:src/[\"}]}",
            1,
            "bad glob",
        ),
        (
            "{\"packs\": [{\"name\": \"a\", \"on\": \"SessionStart\"},\n {\"name\": \"a\", \"on\": \"SessionStart\"}]}",
            2,
            "a second pack named \"a\"",
        ),
        (
            "{\"packs\": [{\"name\": \"a b\", \"on\": \"SessionStart\"}]}",
            1,
            "pack name \"a b\"",
        ),
        ("{\"pack\": []}", 1, "unknown field `pack`"),
    ] {
        p.config(text);
        let loaded = p.load();
        assert!(loaded.packs.is_empty(), "{text}");
        let [err] = loaded.errors.as_slice() else {
            panic!("one error for {text}: {:?}", loaded.errors)
        };
        let said = err.to_string();
        assert!(
            said.starts_with(&format!(
                "{}: line {line} column ",
                p.root.join(PROJECT_FILE).display()
            )),
            "{said}"
        );
        assert!(said.contains(says), "{said} should say {says}");
    }
}

#[test]
fn a_broken_file_leaves_the_other_ones_packs() {
    let p = Project::new();
    p.global(r#"{"packs": [{"name": "g", "on": "SessionStart"}]}"#);
    p.config("{not json");
    let loaded = p.load();
    assert_eq!(loaded.errors.len(), 1);
    assert_eq!(loaded.packs.len(), 1);
    assert_eq!(loaded.packs[0].pack.name.0, "g");
}

#[test]
fn the_projects_pack_wins_by_name() {
    let p = Project::new();
    p.global(
        r#"{"packs": [{"name": "shared", "on": "SessionStart"}, {"name": "g", "on": "skill:do"}],
           "indexMarkers": ["<<", ">>"]}"#,
    );
    p.config(
        r#"{"packs": [{"name": "mine", "on": "phase:2"}, {"name": "shared", "on": "skill:implement"}]}"#,
    );
    let loaded = p.load();
    let names: Vec<&str> = loaded
        .packs
        .iter()
        .map(|l| l.pack.name.0.as_str())
        .collect();
    assert_eq!(names, ["shared", "g", "mine"]);
    assert!(matches!(&loaded.packs[0].pack.on, Trigger::Skill(s) if s == "implement"));
    assert!(
        loaded.packs[0]
            .key
            .ends_with("project/.claude/context-packs.json#shared")
    );
    assert!(loaded.packs[1].key.ends_with("engine/context-packs.json#g"));
    assert_eq!(loaded.markers, ["<<".to_owned(), ">>".to_owned()]);
    assert!(is_key(&loaded.packs[0].key));
    assert_eq!(name_of_key(&loaded.packs[1].key), Some("g"));
    assert!(!is_key("/p/docs/A.md"));
    assert!(!is_key("/p/notes.md#x"));
    // The file's name is `context-packs.json` itself, and the pack's a safe name.
    assert!(is_key("/p/.claude/context-packs.json#x"));
    assert!(!is_key("/p/.claude/my-context-packs.json#x"));
    assert!(!is_key("context-packs.json#x"));
    assert!(!is_key("/p/.claude/context-packs.json#../x"));
    assert!(!is_key("/p/.claude/context-packs.json#"));
    assert!(!is_key("/p/.claude/context-packs.json#a#b"));
    // A `#` before the last `/` is part of a directory's name.
    assert!(!is_key("/p/a#b/.claude/context-packs.json"));
    assert!(is_key("/p/a#b/.claude/context-packs.json#x"));
}

#[test]
fn triggers_select_their_packs() {
    let p = Project::new();
    p.config(
        r#"{"packs": [
          {"name": "start", "on": "SessionStart"},
          {"name": "impl", "on": "skill:/implement"},
          {"name": "plan", "on": "phase:2"},
          {"name": "build", "on": "phase:build loop"},
          {"name": "ts", "on": "path:packages/**/*.ts"},
          {"name": "review", "on": "agent:code-reviewer"},
          {"name": "any", "on": "agent:*"}
        ]}"#,
    );
    let loaded = p.load();
    let due = |m: Moment<'_>| -> Vec<String> {
        loaded
            .due(m)
            .iter()
            .map(|l| l.pack.name.0.clone())
            .collect()
    };
    assert_eq!(due(Moment::SessionStart), ["start"]);
    assert_eq!(due(Moment::Skill("implement")), ["impl"]);
    assert_eq!(due(Moment::Skill("do")), Vec::<String>::new());
    assert_eq!(
        due(Moment::Phase {
            label: "2",
            name: "Planning"
        }),
        ["plan"]
    );
    assert_eq!(
        due(Moment::Phase {
            label: "3.A",
            name: "Build Loop"
        }),
        ["build"]
    );
    let ts = p.root.join("packages/estimate/src/total.ts");
    assert_eq!(due(Moment::Path(&ts)), ["ts"]);
    assert!(due(Moment::Path(&p.root.join("packages/x.md"))).is_empty());
    assert!(due(Moment::Path(Path::new("/elsewhere/packages/a/b.ts"))).is_empty());
    assert_eq!(
        due(Moment::SubAgent("code-reviewer")),
        ["start", "review", "any"]
    );
    assert_eq!(due(Moment::SubAgent("Explore")), ["start", "any"]);
}

#[test]
fn logs_default_to_dialogue_and_follow_the_configuration() {
    let p = Project::new();
    let loaded = p.load();
    assert!(loaded.errors.is_empty());
    let dialogue = p.root.join("sessions/s/DIALOGUE.md");
    assert_eq!(loaded.tail_lines(&dialogue), Some(DEFAULT_TAIL_LINES));
    assert_eq!(loaded.tail_lines(&p.root.join("sessions/s/LOG.md")), None);
    p.config(r#"{"logs": [{"glob": "sessions/*/*_LOG.md", "tailLines": 5}]}"#);
    let loaded = p.load();
    assert_eq!(
        loaded.tail_lines(&p.root.join("sessions/s/IMPL_LOG.md")),
        Some(5)
    );
    assert_eq!(
        loaded.tail_lines(&dialogue),
        None,
        "the list replaces the default"
    );
    p.config(r#"{"logs": []}"#);
    assert_eq!(p.load().tail_lines(&dialogue), None);
}

#[test]
fn the_index_is_the_text_between_the_first_markers() {
    let markers = DEFAULT_INDEX_MARKERS.map(str::to_owned);
    let text = "a\n<!-- INDEX:START -->\n x \n<!-- INDEX:END -->\nb <!-- INDEX:END -->";
    assert_eq!(render::index_of(text, &markers), Some("x"));
    assert_eq!(render::index_of("<!-- INDEX:END --> only", &markers), None);
    assert_eq!(
        render::index_of("<!-- INDEX:END --><!-- INDEX:START -->", &markers),
        None
    );
}

#[test]
fn an_index_without_entries_says_so_and_paths_resolve_from_the_project() {
    let p = Project::new();
    p.config(
        r#"{"packs": [{"name": "i", "on": "SessionStart", "files": [
          {"path": "D.md", "strategy": "index"}, {"path": "~/notes.md"}]}]}"#,
    );
    p.file("D.md", "<!-- INDEX:START -->\n\n<!-- INDEX:END -->\nbody");
    fs::write(p.home.join("notes.md"), "home notes").unwrap();
    let r = render_only(&p);
    assert!(r.text.contains("--- D.md (index) ---\n(no entries)"));
    assert!(r.text.contains("--- ~/notes.md ---\nhome notes"));
    assert_eq!(r.sources.len(), 3, "the configuration and both files");
}

/// A pack's stamp holds its files as they were read for the text: one replaced before the
/// stamp is made is a change, not the text's source.
#[test]
fn a_pack_stamp_holds_the_files_that_were_read() {
    let p = Project::new();
    p.config(r#"{"packs": [{"name": "r", "on": "SessionStart", "files": [{"path": "R.md"}]}]}"#);
    p.file("R.md", "one");
    let r = render_only(&p);
    assert!(r.text.contains("--- R.md ---\none"), "{}", r.text);
    let replaced = r.sources[1].0.clone();
    let new = replaced.with_file_name("R.md.new");
    fs::write(&new, "two").unwrap();
    fs::rename(&new, &replaced).unwrap();
    let stamp = crate::state::stamps::Stamp::of_sources(&r.sources, &r.text);
    assert!(!stamp.unmoved(), "the file at the path is not the one read");
    assert!(r.sources.iter().all(|(_, meta)| meta.is_some()));
}

proptest::proptest! {
    /// `**/NAME` matched by name answers as the compiled glob does.
    #[test]
    fn an_any_directory_name_glob_matches_as_compiled(
        path in "(/?([a-z.]{0,3}/){0,3})(DIALOGUE\\.md|xDIALOGUE\\.md|DIALOGUE\\.mdx|[a-z]{1,3})",
        name in "(DIALOGUE\\.md|a|[a-z.]{1,3})",
    ) {
        let pattern = format!("**/{name}");
        let fast = config::PathGlob::new(&pattern).unwrap();
        let compiled = globset::GlobBuilder::new(&pattern)
            .literal_separator(true)
            .build()
            .unwrap()
            .compile_matcher();
        proptest::prop_assert_eq!(fast.is_match(&path), compiled.is_match(&path), "{} on {}", pattern, path);
    }

    /// A key read from its end is the key split at its last `#`.
    #[test]
    fn a_key_is_told_as_split_at_its_last_hash(
        path in "(/?[a-z#./]{0,6}/)?(context-packs\\.json|x\\.md|[a-z#]{0,3})(#[a-z.#/_-]{0,4}){0,2}",
    ) {
        let split = path.rsplit_once('#').is_some_and(|(file, name)| {
            file.strip_suffix("context-packs.json").is_some_and(|dir| dir.ends_with('/'))
                && crate::primitives::paths::is_safe_name(name)
        });
        proptest::prop_assert_eq!(is_key(&path), split, "{}", path);
    }
}
