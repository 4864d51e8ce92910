//! Phase proof: what the agent pipes into `phase` (a JSON object, or the deprecated
//! `key: value` lines), the schema it must meet to leave a phase (the `## PROOF FOR` schemas of
//! the phase's command files, merged, plus the phase's declared `proof` fields as strings), and
//! the checks `session.sh phase` makes before it lets a phase be left.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value, json};

use super::schema;
pub use preload_core::state::deep_merge;

/// The notice for proof given as `key: value` lines.
pub const DEPRECATION: &str =
    "⚠️  DEPRECATED: Proof piped as key:value lines. Use JSON objects instead.";

/// A proof value the agent left as the template's blank.
pub const BLANK: &str = "________";

/// The proof piped to `phase`.
#[derive(Debug, Clone, PartialEq)]
pub struct Proof {
    /// The proof as JSON text: the input itself when it was JSON, else the object built from
    /// its lines (what `Proof provided:` shows).
    pub text: String,
    /// The proof value.
    pub value: Value,
    /// True when it came as `key: value` lines.
    pub key_value_lines: bool,
}

impl Proof {
    /// Whether the proof goes into `phaseHistory` (anything but the bare `{}`).
    pub fn is_recorded(&self) -> bool {
        self.text != "{}"
    }
}

/// `key: value` lines: a key of letters, digits, `_` and `§` not starting with a digit.
static KEY_VALUE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^([§a-zA-Z_][§a-zA-Z0-9_]*): ").ok());

/// Parse what arrived on stdin; `None` when nothing did. Trailing newlines are not part of it.
pub fn parse(input: &str) -> Option<Proof> {
    let text = input.trim_end_matches('\n');
    if text.trim().is_empty() {
        return None;
    }
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return Some(Proof {
            text: text.to_owned(),
            value,
            key_value_lines: false,
        });
    }
    let mut object = Map::new();
    if let Some(re) = KEY_VALUE.as_ref() {
        for line in text.lines() {
            if let Some(found) = re.captures(line).and_then(|c| c.get(1)) {
                let value = &line[found.end() + 2..];
                object.insert(found.as_str().to_owned(), json!(value));
            }
        }
    }
    let value = Value::Object(object);
    let text = if value.as_object().is_some_and(Map::is_empty) {
        "{}".to_owned()
    } else {
        serde_json::to_string_pretty(&value).unwrap_or_default()
    };
    Some(Proof {
        text,
        value,
        key_value_lines: true,
    })
}

/// A proof field as the engine reads it (`jq -r '.[$f] // ""'`): empty when absent, `null`,
/// `false` or an empty string.
fn field_text(proof: &Value, field: &str) -> String {
    match proof.get(field) {
        None | Some(Value::Null | Value::Bool(false)) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

/// The keys of a proof, sorted (`Provided:`).
fn provided_keys(proof: &Value) -> String {
    let mut keys: Vec<&String> = proof
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    keys.sort();
    keys.iter()
        .map(|k| k.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The command files named by a phase's `steps` or `commands` entries that exist in `dir`:
/// each word with its `§CMD_` prefix taken off names `CMD_<word>.md`.
pub fn command_files(dir: &Path, entries: Option<&Value>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for entry in entries
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        for word in entry.split_whitespace() {
            let name = word.strip_prefix("§CMD_").unwrap_or(word);
            if name.contains('/') || name.is_empty() {
                continue;
            }
            let file = dir.join(format!("CMD_{name}.md"));
            if file.is_file() {
                out.push(file);
            }
        }
    }
    out
}

/// The text of the ```` ```json ```` blocks from the first `## PROOF FOR` line to the end.
pub fn proof_block(text: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in text.lines().skip_while(|l| !l.contains("## PROOF FOR")) {
        if line.contains("```json") {
            inside = true;
        } else if line.contains("```") {
            inside = false;
        } else if inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The text of the first ```` ```json ```` block of a file.
pub fn first_json_block(text: &str) -> String {
    let mut lines = text.lines().skip_while(|l| !l.contains("```json"));
    lines.next();
    let mut out = String::new();
    for line in lines.take_while(|l| !l.contains("```")) {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Every JSON value of a text, `None` when any part is not JSON.
fn json_values(text: &str) -> Option<Vec<Value>> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .collect::<Result<Vec<_>, _>>()
        .ok()
}

/// The proof schema of a phase: the merged `properties` and `required` of its command files'
/// `## PROOF FOR` schemas, then its declared fields.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProofSchema {
    /// Merged `properties`.
    pub properties: Map<String, Value>,
    /// Merged `required`: the command files' sorted and without duplicates, then the declared
    /// fields in their order.
    pub required: Vec<String>,
}

impl ProofSchema {
    /// Merge the proof schema of one command file (nothing when it has none or it is not JSON).
    pub fn merge_file(&mut self, file: &Path) {
        let Ok(text) = fs::read_to_string(file) else {
            return;
        };
        let Some(values) = json_values(&proof_block(&text)) else {
            return;
        };
        let present = |v: &&Value| !matches!(v, Value::Null | Value::Bool(false));
        let first = |key: &str| {
            values
                .iter()
                .filter_map(|v| v.as_object()?.get(key))
                .find(present)
        };
        if let Some(Value::Object(props)) = first("properties") {
            deep_merge(&mut self.properties, props);
        }
        if let Some(Value::Array(required)) = first("required") {
            self.required
                .extend(required.iter().filter_map(Value::as_str).map(str::to_owned));
            self.required.sort();
            self.required.dedup();
        }
    }

    /// Add the phase's declared proof fields: a string each unless a command file typed it,
    /// and required.
    pub fn add_declared(&mut self, fields: &[String]) {
        for field in fields.iter().filter(|f| !f.is_empty()) {
            if !self.properties.contains_key(field) {
                self.properties
                    .insert(field.clone(), json!({"type": "string"}));
            }
            if !self.required.contains(field) {
                self.required.push(field.clone());
            }
        }
    }

    /// The schema of one phase: its `steps` then its `commands` command files, then `declared`.
    pub fn of_phase(cmd_dir: &Path, phase: &Map<String, Value>, declared: &[String]) -> Self {
        let mut schema = Self::default();
        for key in ["steps", "commands"] {
            for file in command_files(cmd_dir, phase.get(key)) {
                schema.merge_file(&file);
            }
        }
        schema.add_declared(declared);
        schema
    }

    /// The JSON Schema document.
    pub fn document(&self) -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": self.properties,
            "required": self.required,
        })
    }

    /// The `  - field` / `  - field: description` lines shown on entering a phase.
    pub fn field_lines(&self) -> Vec<String> {
        self.required
            .iter()
            .map(|field| {
                let description = match self
                    .properties
                    .get(field)
                    .and_then(|p| p.get("description"))
                {
                    None | Some(Value::Null | Value::Bool(false)) => String::new(),
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                };
                if description.is_empty() {
                    format!("  - {field}")
                } else {
                    format!("  - {field}: {description}")
                }
            })
            .collect()
    }
}

/// The phase being left and what leaving it asks for.
#[derive(Debug, Clone)]
pub struct Leaving<'a> {
    /// `currentPhase` as stored.
    pub phase: &'a str,
    /// Its definition in `phases`.
    pub definition: &'a Map<String, Value>,
    /// Its declared `proof` fields (not empty).
    pub declared: Vec<String>,
}

/// Check the proof for leaving a phase that declares proof fields, as `session.sh phase` does:
/// proof given, every declared field filled (and not the blank), then, for a phase with steps,
/// the proof against the merged schema. `Err` is the engine's message.
pub fn check_leaving(
    leaving: &Leaving<'_>,
    proof: Option<&Proof>,
    cmd_dir: &Path,
    dir: &Path,
    requested: &str,
) -> Result<(), String> {
    let required = leaving.declared.join(", ");
    let Some(proof) = proof else {
        return Err(format!(
            "§CMD_UPDATE_PHASE: Proof required to leave phase '{}' but no STDIN provided.\n  \
             Required proof fields: {required}\n\n  \
             Usage: echo 'field: value' | session.sh phase {} \"{requested}\"",
            leaving.phase,
            dir.display()
        ));
    };
    let mut missing = Vec::new();
    for field in &leaving.declared {
        let value = field_text(&proof.value, field);
        if value.is_empty() {
            missing.push(field.as_str());
        } else if value == BLANK {
            return Err(format!(
                "§CMD_UPDATE_PHASE: Proof field '{field}' has unfilled blank ({BLANK}). \
                 Complete the work before transitioning."
            ));
        }
    }
    if !missing.is_empty() {
        return Err(format!(
            "§CMD_UPDATE_PHASE: Missing proof to leave phase '{}': {}\n  Required: {required}\n  \
             Provided: {}",
            leaving.phase,
            missing.join(", "),
            provided_keys(&proof.value)
        ));
    }
    let has_steps = leaving
        .definition
        .get("steps")
        .and_then(Value::as_array)
        .is_some_and(|s| !s.is_empty());
    if !has_steps {
        return Ok(());
    }
    let combined = ProofSchema::of_phase(cmd_dir, leaving.definition, &leaving.declared);
    if combined.properties.is_empty() {
        return Ok(());
    }
    let errors = schema::validate(&combined.document(), &proof.value);
    if errors.is_empty() {
        return Ok(());
    }
    Err(format!(
        "§CMD_UPDATE_PHASE: Proof validation failed against CMD schemas:\n{}\n\n  \
         Schema required: {}\n  Proof provided: {}",
        errors.join("\n"),
        combined.required.join(", "),
        proof.text
    ))
}

#[cfg(test)]
mod tests {
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
        let proof =
            parse("depth: Short: really\n\n§CMD_X_Y: done\nnot a field\n9x: no\ndepth: Long\n")
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
    fn blocks_are_found_as_the_engine_finds_them() {
        let text = "```json\n{\"first\": 1}\n```\n## PROOF FOR §CMD_X\n```json\n{\"a\": 1}\n```\ntext\n```json\n{\"b\": 2}\n```\n";
        assert_eq!(first_json_block(text), "{\"first\": 1}\n");
        assert_eq!(proof_block(text), "{\"a\": 1}\n{\"b\": 2}\n");
        assert_eq!(proof_block("```json\n{}\n```\n"), "");
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
        let def = phase(
            json!({"steps": ["§CMD_B", "§CMD_MISSING", "§CMD_BROKEN"], "commands": ["§CMD_A"]}),
        );
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
            check(None).unwrap_err(),
            "§CMD_UPDATE_PHASE: Proof required to leave phase '1: Interrogation' but no STDIN provided.\n  Required proof fields: depth, rounds\n\n  Usage: echo 'field: value' | session.sh phase /s/x \"2: Planning\""
        );
        assert_eq!(
            check(Some(r#"{"zeta": 1, "depth": "deep", "rounds": false}"#)).unwrap_err(),
            "§CMD_UPDATE_PHASE: Missing proof to leave phase '1: Interrogation': rounds\n  Required: depth, rounds\n  Provided: depth, rounds, zeta"
        );
        assert_eq!(
            check(Some(r#"{"rounds": "________"}"#)).unwrap_err(),
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
        .unwrap_err();
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
}
