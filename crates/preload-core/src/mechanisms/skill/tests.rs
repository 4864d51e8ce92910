//! Unit tests of `skill`.

use super::*;
use serde_json::json;

const SKILL: &str = r#"# Implement
Intro §CMD_PROSE.
```json
{"note": "first block without phases"}
```
```json
{
  "taskType": "IMPLEMENTATION",
  "logTemplate": "assets/TEMPLATE_IMPLEMENTATION_LOG.md",
  "phases": [
    {"label": "0", "name": "Setup", "steps": ["§CMD_REPORT_INTENT", "§CMD_PARSE_PARAMETERS"], "commands": [], "proof": ["mode"]},
    {"label": "1", "name": "Interrogation", "steps": ["§CMD_INTERROGATE"], "commands": ["§CMD_ASK_ROUND", "§CMD_LOG_INTERACTION"], "proof": ["§CMD_NOT_A_COMMAND"]},
    {"label": "3.A", "name": "Build Loop", "steps": ["§CMD_GENERATE_DEBRIEF_file", "depthChosen", "§CMD_REPORT_INTENT"]}
  ]
}
```
```json
not json at all
```
"#;

#[test]
fn the_block_with_phases_is_chosen() {
    let def = definition(SKILL).unwrap();
    assert_eq!(def.rest["taskType"], "IMPLEMENTATION");
    assert_eq!(
        def.template("logTemplate"),
        Some("assets/TEMPLATE_IMPLEMENTATION_LOG.md")
    );
    assert_eq!(def.phases.as_ref().map(Vec::len), Some(3));
    assert_eq!(json_blocks(SKILL).len(), 2);
}

#[test]
fn letter_branch_phases_resolve() {
    let def = definition(SKILL).unwrap();
    let phases = Phases::of(def.phases.as_deref().unwrap());
    let p = phases.find("3.A").unwrap();
    assert_eq!(p.command_names(), ["GENERATE_DEBRIEF", "REPORT_INTENT"]);
    assert_eq!(
        phases.find("1").unwrap().command_names(),
        ["INTERROGATE", "ASK_ROUND", "LOG_INTERACTION"]
    );
    assert!(phases.find("9").is_none());
}

/// An engine in `root` with a command file `CMD_<name>.md` of `text` for each of `commands`;
/// its paths and its commands' directory.
fn engine_with_commands(root: &Path, commands: &[(&str, &str)]) -> (EnginePaths, PathBuf) {
    let paths = EnginePaths::new(root);
    let cmds = paths.engine_directives.join("commands");
    std::fs::create_dir_all(&cmds).unwrap();
    for (name, text) in commands {
        std::fs::write(cmds.join(format!("CMD_{name}.md")), text).unwrap();
    }
    (paths, cmds)
}

#[test]
fn resolver_keeps_existing_files_and_templates() {
    let tmp = tempfile::tempdir().unwrap();
    let (paths, cmds) = engine_with_commands(tmp.path(), &[("REPORT_INTENT", "r")]);
    let skill_dir = paths.skills.join("implement");
    std::fs::create_dir_all(skill_dir.join("assets")).unwrap();
    std::fs::write(skill_dir.join("assets/TEMPLATE_IMPLEMENTATION_LOG.md"), "t").unwrap();
    let def = definition(SKILL).unwrap();
    let phases = def.phases.as_deref().unwrap();
    let template = |f: &str| def.template(f);
    let got = resolve_phase_cmds(&paths, Phases::of(phases), "0", template, &skill_dir);
    assert_eq!(
        got,
        vec![
            cmds.join("CMD_REPORT_INTENT.md"),
            skill_dir.join("assets/TEMPLATE_IMPLEMENTATION_LOG.md")
        ]
    );
}

/// The command files of phase `0` for a session whose state is `state`.
fn session_phase_cmds_of(paths: &EnginePaths, state: &serde_json::Value) -> Vec<PathBuf> {
    session_phase_cmds(
        paths,
        &Skills::default(),
        &State::from_map(state.as_object().unwrap().clone()),
        "0",
    )
}

#[test]
fn session_phases_win_over_the_skill_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (paths, cmds) =
        engine_with_commands(tmp.path(), &[("FROM_STATE", "s"), ("REPORT_INTENT", "r")]);
    std::fs::create_dir_all(paths.skills.join("implement")).unwrap();
    std::fs::write(paths.skill_file("implement"), SKILL).unwrap();
    let phase_cmds = |state| session_phase_cmds_of(&paths, &state);
    assert_eq!(
        phase_cmds(
            json!({"skill": "implement", "phases": [{"label": "0", "steps": ["§CMD_FROM_STATE"]}]})
        ),
        vec![cmds.join("CMD_FROM_STATE.md")]
    );
    assert_eq!(
        phase_cmds(json!({"skill": "implement"})),
        vec![cmds.join("CMD_REPORT_INTENT.md")]
    );
    assert!(phase_cmds(json!({"skill": "../etc"})).is_empty());
}

#[test]
fn a_mode_brings_its_file_and_custom_brings_every_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("modes")).unwrap();
    for m in ["general", "tdd", "custom"] {
        std::fs::write(dir.join(format!("modes/{m}.md")), m).unwrap();
    }
    let modes = json!({
        "general": {"label": "General", "file": "modes/general.md"},
        "tdd": {"label": "Test-first", "file": "modes/tdd.md"},
        "gone": {"label": "Gone", "file": "modes/gone.md"},
        "custom": {"label": "Custom", "file": dir.join("modes/custom.md")}
    });
    let modes = &crate::state::modes_of(modes.as_object().unwrap());
    assert_eq!(mode_files(modes, "tdd", dir), [dir.join("modes/tdd.md")]);
    assert_eq!(
        mode_files(modes, "test-FIRST", dir),
        [dir.join("modes/tdd.md")],
        "by label, in any case"
    );
    assert_eq!(
        mode_files(modes, "Custom", dir),
        [
            dir.join("modes/general.md"),
            dir.join("modes/tdd.md"),
            dir.join("modes/custom.md")
        ],
        "the named modes first, a missing file left out"
    );
    assert!(mode_files(modes, "default", dir).is_empty());
}

/// `json_blocks` as a walk over every line: the definition the search is held to.
fn json_blocks_by_lines(text: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match current.as_mut() {
            None if line.trim_end() == "```json" => current = Some(String::new()),
            None => {}
            Some(_) if line.trim_end() == "```" => {
                if let Some(body) = current.take() {
                    if let Ok(value) = serde_json::from_str::<Value>(&body) {
                        out.push(value);
                    }
                }
            }
            Some(body) => {
                body.push_str(line);
                body.push('\n');
            }
        }
    }
    out
}

proptest::proptest! {
    #[test]
    fn json_blocks_finds_what_a_walk_over_every_line_finds(
        lines in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::strategy::Just("```json".to_owned()),
                proptest::strategy::Just("```json \r".to_owned()),
                proptest::strategy::Just(" ```json".to_owned()),
                proptest::strategy::Just("```jsonx".to_owned()),
                proptest::strategy::Just("```".to_owned()),
                proptest::strategy::Just("```\t".to_owned()),
                proptest::strategy::Just("{\"phases\": [1]}".to_owned()),
                proptest::strategy::Just("[1,".to_owned()),
                proptest::strategy::Just("2]".to_owned()),
                proptest::strategy::Just("text ```json".to_owned()),
                "[a-z {}\\[\\]\":,0-9`\r]{0,12}",
            ],
            0..24,
        ),
        crlf in proptest::bool::ANY,
        last_newline in proptest::bool::ANY,
    ) {
        let mut text = lines.join(if crlf { "\r\n" } else { "\n" });
        if last_newline {
            text.push('\n');
        }
        proptest::prop_assert_eq!(json_blocks(&text), json_blocks_by_lines(&text));
    }
}

#[test]
fn a_skill_without_its_state_brings_its_own_templates_and_mode_files() {
    let tmp = tempfile::tempdir().unwrap();
    let paths = EnginePaths::new(tmp.path());
    let dir = paths.skills.join("odd");
    std::fs::create_dir_all(dir.join("m")).unwrap();
    for f in ["log.md", "plan.md", "m/a.md", "m/b.md", "m/c.md"] {
        std::fs::write(dir.join(f), f).unwrap();
    }
    let abs = dir.join("plan.md");
    let text = format!(
        "```json\n{{\"logTemplate\": \"log.md\", \"debriefTemplate\": 5, \"planTemplate\": {abs:?},
        \"requestTemplate\": \"log.md\", \"phases\": \"none\",
        \"modes\": {{\"b\": {{\"file\": \"m/b.md\", \"label\": \"Bee\"}}, \"x\": \"str\",
        \"a\": {{\"file\": \"m/a.md\", \"label\": 1}}, \"n\": {{\"file\": 2}},
        \"custom\": {{\"file\": \"m/c.md\"}}}}}}\n```\n"
    );
    std::fs::write(paths.skill_file("odd"), &text).unwrap();
    let skill = Skill::load(&paths, "odd").unwrap();
    assert!(skill.phases().is_empty(), "phases that are not an array");
    assert_eq!(skill.templates(), [dir.join("log.md"), abs.clone()]);
    let cmds = |state| session_phase_cmds_of(&paths, &state);
    assert_eq!(
        cmds(json!({"skill": "odd", "mode": "BEE"})),
        [dir.join("log.md"), abs.clone(), dir.join("m/b.md")]
    );
    assert_eq!(
        cmds(json!({"skill": "odd", "mode": "custom"})),
        [
            dir.join("log.md"),
            abs.clone(),
            dir.join("m/b.md"),
            dir.join("m/a.md"),
            dir.join("m/c.md")
        ]
    );
    assert_eq!(
        cmds(json!({"skill": "odd", "mode": "1"})),
        [dir.join("log.md"), abs.clone()],
        "a label that is not text names no mode"
    );
    assert_eq!(
        cmds(json!({"skill": "odd", "mode": "a", "planTemplate": "log.md", "modes": {}})),
        [dir.join("log.md")],
        "the state's templates and modes, when it has them"
    );
    assert_eq!(
        cmds(json!({"skill": "odd", "mode": "a", "modes": "none"})),
        [dir.join("log.md"), abs],
        "modes in the state that are not an object"
    );
}
