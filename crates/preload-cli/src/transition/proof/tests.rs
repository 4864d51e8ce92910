//! Unit tests of phase proof: parsing, the merged schema, the checks for leaving a phase.

use super::*;

fn cmd(dir: &Path, name: &str, body: &str) {
    fs::write(dir.join(format!("CMD_{name}.md")), body).unwrap();
}

fn phase(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

#[test]
fn json_proof_is_kept_as_written() {
    let proof = parse("{\"a\": 1,\n \"b\": \"x\"}\n\n").unwrap();
    assert_eq!(proof.text, "{\"a\": 1,\n \"b\": \"x\"}");
    assert_eq!(proof.value, json!({"a": 1, "b": "x"}));
    assert!(!proof.key_value_lines);
    assert!(parse("").is_none() && parse(" \n\n").is_none());
    assert!(!parse("{}\n").unwrap().is_recorded());
    assert!(parse("{ }").unwrap().is_recorded());
}

#[test]
fn key_value_lines_become_an_object() {
    let proof = parse("depth: Short: really\n\n§CMD_X_Y: done\nnot a field\n9x: no\ndepth: Long\n")
        .unwrap();
    assert!(proof.key_value_lines);
    assert_eq!(proof.value, json!({"depth": "Long", "§CMD_X_Y": "done"}));
    assert_eq!(
        proof.text,
        "{\n  \"depth\": \"Long\",\n  \"§CMD_X_Y\": \"done\"\n}"
    );
    let nothing = parse("just words").unwrap();
    assert_eq!(nothing.text, "{}");
    assert!(!nothing.is_recorded());
}

#[test]
fn the_schema_merges_command_files_then_declared_fields() {
    let tmp = tempfile::tempdir().unwrap();
    cmd(
        tmp.path(),
        "B",
        "# B\n## PROOF FOR §CMD_B\n```json\n{\"properties\": {\"n\": {\"type\": \"number\", \"description\": \"how many\"}}, \"required\": [\"z\", \"n\"]}\n```\n",
    );
    cmd(
        tmp.path(),
        "A",
        "# A\n## PROOF FOR §CMD_A\n```json\n{\"required\": [\"m\", \"n\"]}\n```\n",
    );
    cmd(tmp.path(), "BROKEN", "## PROOF FOR\n```json\n{nope\n```\n");
    let def =
        phase(json!({"steps": ["§CMD_B", "§CMD_MISSING", "§CMD_BROKEN"], "commands": ["§CMD_A"]}));
    let schema = ProofSchema::of_phase(tmp.path(), &def, &["n".into(), "depth".into()]);
    assert_eq!(schema.required, vec!["m", "n", "z", "depth"]);
    assert_eq!(
        schema.properties,
        *json!({"n": {"type": "number", "description": "how many"}, "depth": {"type": "string"}})
            .as_object()
            .unwrap()
    );
    assert_eq!(
        schema.field_lines(),
        vec!["  - m", "  - n: how many", "  - z", "  - depth"]
    );
}

fn leaving(def: &Map<String, Value>) -> Leaving<'_> {
    Leaving {
        phase: "1: Interrogation",
        definition: def,
        declared: vec!["depth".into(), "rounds".into()],
    }
}

#[test]
fn leaving_needs_every_declared_field_filled() {
    let tmp = tempfile::tempdir().unwrap();
    let def = phase(json!({"proof": ["depth", "rounds"]}));
    let dir = Path::new("/s/x");
    let check = |input: Option<&str>| {
        let proof = input.and_then(parse);
        check_leaving(
            &leaving(&def),
            proof.as_ref(),
            tmp.path(),
            dir,
            "2: Planning",
        )
    };
    assert_eq!(
        check(None).unwrap_err().to_string(),
        "§CMD_UPDATE_PHASE: Proof required to leave phase '1: Interrogation' but no STDIN provided.\n  Required proof fields: depth, rounds\n\n  Usage: echo 'field: value' | session.sh phase /s/x \"2: Planning\""
    );
    assert_eq!(
        check(Some(r#"{"zeta": 1, "depth": "deep", "rounds": false}"#))
            .unwrap_err()
            .to_string(),
        "§CMD_UPDATE_PHASE: Missing proof to leave phase '1: Interrogation': rounds\n  Required: depth, rounds\n  Provided: depth, rounds, zeta"
    );
    assert_eq!(
        check(Some(r#"{"rounds": "________"}"#))
            .unwrap_err()
            .to_string(),
        "§CMD_UPDATE_PHASE: Proof field 'rounds' has unfilled blank (________). Complete the work before transitioning.",
        "a blank stops the check where it is found"
    );
    assert!(
        check(Some(r#"{"depth": "deep", "rounds": 3}"#)).is_ok(),
        "no steps: no schema"
    );
    assert!(check(Some("depth: deep\nrounds: 3\n")).is_ok());
}

#[test]
fn leaving_a_phase_with_steps_checks_the_merged_schema() {
    let tmp = tempfile::tempdir().unwrap();
    cmd(
        tmp.path(),
        "ASK",
        "## PROOF FOR §CMD_ASK\n```json\n{\"type\": \"object\", \"required\": [\"askDone\"]}\n```\n",
    );
    let def = phase(json!({"steps": ["§CMD_ASK"], "proof": ["depth", "rounds"]}));
    let proof = parse(r#"{"depth": "deep", "rounds": 3}"#);
    let err = check_leaving(
        &leaving(&def),
        proof.as_ref(),
        tmp.path(),
        Path::new("/s"),
        "2: P",
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        err,
        "§CMD_UPDATE_PHASE: Proof validation failed against CMD schemas:\n/askDone: missing required property 'askDone' [required]\n/rounds: expected type string but got number [type]\n\n  Schema required: askDone, depth, rounds\n  Proof provided: {\"depth\": \"deep\", \"rounds\": 3}"
    );
    let proof = parse(r#"{"depth": "deep", "rounds": "3", "askDone": true}"#);
    assert!(
        check_leaving(
            &leaving(&def),
            proof.as_ref(),
            tmp.path(),
            Path::new("/s"),
            "2: P"
        )
        .is_ok()
    );
}

#[test]
fn deep_merge_is_jq_star() {
    let mut a = json!({"x": {"y": 1, "z": [1]}, "k": 1})
        .as_object()
        .unwrap()
        .clone();
    let b = json!({"x": {"z": [2], "w": {}}, "k": {"n": 1}});
    deep_merge(&mut a, b.as_object().unwrap());
    assert_eq!(
        Value::Object(a),
        json!({"x": {"y": 1, "z": [2], "w": {}}, "k": {"n": 1}})
    );
}
