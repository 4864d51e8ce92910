//! The session parameters `preload activate` reads on stdin, checked as `session.sh` checks them.
//!
//! They must be JSON, valid against the first JSON block of `CMD_PARSE_PARAMETERS.md` when it
//! has one, else holding the fields the engine requires.

use std::fs;

use preload_core::pipeline::activation::Failure;
use preload_core::primitives::paths::EnginePaths;
use serde_json::{Map, Value};

use crate::schema::{self, first_json_block};

/// The session parameters required when `CMD_PARSE_PARAMETERS.md` has no usable schema.
pub const REQUIRED_PARAMETERS: [&str; 6] = [
    "taskSummary",
    "scope",
    "directoriesOfInterest",
    "contextPaths",
    "requestFiles",
    "extraInfo",
];

/// Check the session parameters piped to `activate`: JSON, valid against the first JSON block of
/// `CMD_PARSE_PARAMETERS.md` when it has one, else holding the [`REQUIRED_PARAMETERS`].
/// `None` when nothing was piped; the object to merge otherwise.
pub fn check(paths: &EnginePaths, text: &str) -> Result<Option<Map<String, Value>>, Failure> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let params: Value = serde_json::from_str(text).map_err(|_| {
        Failure::Rejected("§CMD_PARSE_PARAMETERS: Invalid JSON on stdin".to_owned())
    })?;
    let definition = paths
        .engine_directives
        .join("commands/CMD_PARSE_PARAMETERS.md");
    let schema_doc = fs::read_to_string(definition)
        .ok()
        .map(|t| first_json_block(&t))
        .and_then(|block| serde_json::from_str::<Value>(&block).ok());
    if let Some(schema_doc) = schema_doc {
        let errors = schema::validate(&schema_doc, &params);
        if !errors.is_empty() {
            return Err(Failure::Rejected(format!(
                "§CMD_PARSE_PARAMETERS: Session parameters validation failed:\n{}",
                errors.join("\n")
            )));
        }
    } else {
        let missing: Vec<&str> = REQUIRED_PARAMETERS
            .into_iter()
            .filter(|f| params.get(f).is_none() || !params.is_object())
            .collect();
        if !missing.is_empty() {
            return Err(Failure::Rejected(format!(
                "§CMD_PARSE_PARAMETERS: Missing required field(s) in JSON: {}\n  \
                 See §CMD_PARSE_PARAMETERS schema for required fields.",
                missing.join(", ")
            )));
        }
    }
    Ok(params.as_object().cloned())
}
