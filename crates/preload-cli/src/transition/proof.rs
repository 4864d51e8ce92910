//! Phase proof: what the agent pipes into `phase`, and what it takes to leave a phase.
//!
//! The proof is a JSON object, or the deprecated `key: value` lines. The schema it must meet to
//! leave a phase is the `## PROOF FOR` schemas of the phase's command files, merged, plus the
//! phase's declared `proof` fields as strings; [`check_leaving`] makes the checks
//! `session.sh phase` makes before it lets a phase be left.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value, json};

use crate::schema::{self, proof_block};
use preload_core::state::PhaseDef;
use preload_core::state::deep_merge;

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

/// The command files of a phase that exist in `dir`: its `steps` then its `commands`, named as
/// the hooks name them ([`PhaseDef::command_names`]: `§CMD_` entries, a lowercase suffix such
/// as `_file` dropped).
pub fn command_files(dir: &Path, phase: &Map<String, Value>) -> Vec<PathBuf> {
    PhaseDef::new(phase)
        .command_names()
        .into_iter()
        .map(|name| dir.join(format!("CMD_{name}.md")))
        .filter(|file| file.is_file())
        .collect()
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
        for file in command_files(cmd_dir, phase) {
            schema.merge_file(&file);
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

/// Why the proof does not let a phase be left. Each message is the engine's, word for word:
/// the agent reads it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    /// Nothing arrived on stdin.
    #[error(
        "§CMD_UPDATE_PHASE: Proof required to leave phase '{phase}' but no STDIN provided.\n  Required proof fields: {required}\n\n  Usage: echo 'field: value' | session.sh phase {dir} \"{requested}\""
    )]
    NoProof {
        /// The phase being left.
        phase: String,
        /// Its declared fields, joined.
        required: String,
        /// The session directory.
        dir: PathBuf,
        /// The requested phase.
        requested: String,
    },
    /// A declared field still holds the template's blank.
    #[error(
        "§CMD_UPDATE_PHASE: Proof field '{field}' has unfilled blank ({blank}). Complete the work before transitioning.",
        blank = BLANK
    )]
    Blank {
        /// The field.
        field: String,
    },
    /// Declared fields are absent or empty.
    #[error(
        "§CMD_UPDATE_PHASE: Missing proof to leave phase '{phase}': {missing}\n  Required: {required}\n  Provided: {provided}"
    )]
    Missing {
        /// The phase being left.
        phase: String,
        /// The fields missing, joined.
        missing: String,
        /// Its declared fields, joined.
        required: String,
        /// The fields given, sorted and joined.
        provided: String,
    },
    /// The proof does not meet the merged schema of the phase's command files.
    #[error(
        "§CMD_UPDATE_PHASE: Proof validation failed against CMD schemas:\n{errors}\n\n  Schema required: {required}\n  Proof provided: {proof}"
    )]
    Schema {
        /// The schema failures, one a line.
        errors: String,
        /// The schema's required fields, joined.
        required: String,
        /// The proof as given.
        proof: String,
    },
}

/// Check the proof for leaving a phase that declares proof fields, as `session.sh phase` does:
/// proof given, every declared field filled (and not the blank), then, for a phase with steps,
/// the proof against the merged schema.
pub fn check_leaving(
    leaving: &Leaving<'_>,
    proof: Option<&Proof>,
    cmd_dir: &Path,
    dir: &Path,
    requested: &str,
) -> Result<(), ProofError> {
    let required = leaving.declared.join(", ");
    let Some(proof) = proof else {
        return Err(ProofError::NoProof {
            phase: leaving.phase.to_owned(),
            required,
            dir: dir.to_path_buf(),
            requested: requested.to_owned(),
        });
    };
    let mut missing = Vec::new();
    for field in &leaving.declared {
        let value = field_text(&proof.value, field);
        if value.is_empty() {
            missing.push(field.as_str());
        } else if value == BLANK {
            return Err(ProofError::Blank {
                field: field.clone(),
            });
        }
    }
    if !missing.is_empty() {
        return Err(ProofError::Missing {
            phase: leaving.phase.to_owned(),
            missing: missing.join(", "),
            required,
            provided: provided_keys(&proof.value),
        });
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
    Err(ProofError::Schema {
        errors: errors.join("\n"),
        required: combined.required.join(", "),
        proof: proof.text.clone(),
    })
}

#[cfg(test)]
mod tests;
