//! The JSON-Schema subset the engine checks session parameters and phase proof against.
//!
//! It is the subset of the engine's `json-schema-validate` tool: `type` (a name or a list of
//! names), `enum`, `required`, `properties`, `additionalProperties`, `items`, to any depth.
//! Every failure is one line `<path>: <what> [<keyword>]`, in the order the tool reports them.
//! The schemas come from command files, found as the engine finds them: the first JSON block
//! of `CMD_PARSE_PARAMETERS.md` ([`first_json_block`]) and the `## PROOF FOR` blocks of a
//! phase's commands ([`proof_block`]).

use serde_json::{Map, Value};

/// The failures of `data` against `schema`; empty when it conforms.
pub fn validate(schema: &Value, data: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    check(schema, data, "", &mut errors);
    errors
}

/// `path`, or `/` for the document itself.
fn shown(path: &str) -> &str {
    if path.is_empty() { "/" } else { path }
}

fn check(schema: &Value, data: &Value, path: &str, errors: &mut Vec<String>) {
    let schema = match schema {
        Value::Bool(false) => {
            errors.push(format!("{}: value not allowed [false]", shown(path)));
            return;
        }
        Value::Object(schema) => schema,
        // `true`, `null` and anything that is not a schema object constrain nothing.
        _ => return,
    };
    if let Some(types) = schema.get("type") {
        let names: Vec<&Value> = match types {
            Value::Array(list) => list.iter().collect(),
            one => vec![one],
        };
        if !names.iter().any(|t| matches_type(data, t)) {
            let expected: Vec<String> = names.iter().map(|t| js_text(t)).collect();
            errors.push(format!(
                "{}: expected type {} but got {} [type]",
                shown(path),
                expected.join("|"),
                type_name(data)
            ));
            // Nothing below is meaningful once the type is wrong.
            return;
        }
    }
    if let Some(Value::Array(allowed)) = schema.get("enum") {
        let target = js_stringify(data);
        if !allowed.iter().any(|v| js_stringify(v) == target) {
            let listed: Vec<String> = allowed.iter().map(js_text).collect();
            errors.push(format!(
                "{}: value not in enum [{}] [enum]",
                shown(path),
                listed.join(", ")
            ));
        }
    }
    if let Value::Object(object) = data {
        check_object(schema, object, path, errors);
    }
    if let (Value::Array(items), Some(item_schema @ Value::Object(_))) = (data, schema.get("items"))
    {
        for (i, item) in items.iter().enumerate() {
            check(item_schema, item, &format!("{path}/{i}"), errors);
        }
    }
}

fn check_object(
    schema: &Map<String, Value>,
    object: &Map<String, Value>,
    path: &str,
    errors: &mut Vec<String>,
) {
    let additional = schema.get("additionalProperties");
    let applies = schema.get("properties").is_some_and(is_truthy)
        || schema.get("required").is_some_and(is_truthy)
        || additional.is_some();
    if !applies {
        return;
    }
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    if let Some(Value::Array(required)) = schema.get("required") {
        for key in required.iter().map(js_text) {
            if !object.contains_key(&key) {
                errors.push(format!(
                    "{path}/{key}: missing required property '{key}' [required]"
                ));
            }
        }
    }
    for key in js_key_order(object) {
        let value = &object[key];
        if let Some(sub) = properties.get(key) {
            check(sub, value, &format!("{path}/{key}"), errors);
        } else if additional == Some(&Value::Bool(false)) {
            errors.push(format!(
                "{path}/{key}: additional property '{key}' not allowed [additionalProperties]"
            ));
        } else if let Some(sub @ Value::Object(_)) = additional {
            check(sub, value, &format!("{path}/{key}"), errors);
        }
    }
}

/// Whether `data` is of the named type; a name the subset does not know matches anything.
fn matches_type(data: &Value, name: &Value) -> bool {
    match name.as_str() {
        Some("object") => data.is_object(),
        Some("array") => data.is_array(),
        Some("string") => data.is_string(),
        Some("number") => data.is_number(),
        Some("integer") => data
            .as_f64()
            .is_some_and(|n| n.is_finite() && n.fract() == 0.0),
        Some("boolean") => data.is_boolean(),
        Some("null") => data.is_null(),
        _ => true,
    }
}

/// The type name of a JSON value as the tool reports it.
pub fn type_name(data: &Value) -> &'static str {
    match data {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Truthiness of a JSON value as JavaScript sees it.
fn is_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// A number written as JavaScript writes it (`1.0` is `1`).
fn js_number(n: &serde_json::Number) -> String {
    match n.as_f64() {
        Some(f) if n.is_f64() && f.is_finite() && f.fract() == 0.0 && f.abs() < 1e21 => {
            format!("{f:.0}")
        }
        _ => n.to_string(),
    }
}

/// A value as JavaScript turns it into text when joining a list.
fn js_text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => js_number(n),
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(js_text).collect::<Vec<_>>().join(","),
        Value::Object(_) => "[object Object]".to_owned(),
    }
}

/// `JSON.stringify`: keys in JavaScript's order, numbers as JavaScript writes them.
fn js_stringify(value: &Value) -> String {
    match value {
        Value::Number(n) => js_number(n),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(js_stringify).collect::<Vec<_>>().join(",")
        ),
        Value::Object(map) => {
            let members: Vec<String> = js_key_order(map)
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), js_stringify(&map[k])))
                .collect();
            format!("{{{}}}", members.join(","))
        }
        other => other.to_string(),
    }
}

/// The keys of an object in JavaScript's order: array-index keys ascending, then the rest as
/// written.
fn js_key_order(map: &Map<String, Value>) -> Vec<&String> {
    let index = |k: &str| -> Option<u32> {
        let n: u32 = k.parse().ok()?;
        (n < u32::MAX && n.to_string() == k).then_some(n)
    };
    let mut indexed: Vec<(u32, &String)> = map
        .keys()
        .filter_map(|k| index(k).map(|n| (n, k)))
        .collect();
    indexed.sort_by_key(|(n, _)| *n);
    let mut keys: Vec<&String> = indexed.into_iter().map(|(_, k)| k).collect();
    keys.extend(map.keys().filter(|k| index(k).is_none()));
    keys
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_conforming_document_has_no_errors() {
        let schema = json!({"type": "object", "required": ["a"],
            "properties": {"a": {"type": ["string", "null"]}, "n": {"type": "integer"}}});
        assert!(validate(&schema, &json!({"a": null, "n": 3.0, "x": [1]})).is_empty());
        assert!(validate(&json!(true), &json!(5)).is_empty());
        assert!(validate(&json!({"type": "mystery"}), &json!(5)).is_empty());
    }

    #[test]
    fn a_wrong_type_stops_the_checks_below_it() {
        let schema = json!({"type": "object", "required": ["a"]});
        assert_eq!(
            validate(&schema, &json!([1])),
            vec!["/: expected type object but got array [type]"]
        );
        let schema = json!({"type": ["string", "null"]});
        assert_eq!(
            validate(&schema, &json!(1.5)),
            vec!["/: expected type string|null but got number [type]"]
        );
        assert_eq!(
            validate(&json!({"type": "integer"}), &json!(1.5)),
            vec!["/: expected type integer but got number [type]"]
        );
    }

    #[test]
    fn required_then_properties_in_order_with_paths() {
        let schema = json!({"type": "object", "required": ["b", "a", "c"],
            "properties": {"a": {"type": "string"}, "x": {"type": "object",
                "properties": {"y": {"enum": ["high", 1, null]}}, "additionalProperties": false}},
            "additionalProperties": {"type": "boolean"}});
        let data = json!({"a": 5, "x": {"y": "low", "z": 1}, "extra": "no", "c": true});
        assert_eq!(
            validate(&schema, &data),
            vec![
                "/b: missing required property 'b' [required]",
                "/a: expected type string but got number [type]",
                "/x/y: value not in enum [high, 1, ] [enum]",
                "/x/z: additional property 'z' not allowed [additionalProperties]",
                "/extra: expected type boolean but got string [type]",
            ]
        );
    }

    #[test]
    fn items_and_false_schemas() {
        let schema = json!({"type": "array", "items": {"type": "object", "required": ["path"]}});
        assert_eq!(
            validate(&schema, &json!([{"path": "a"}, {}])),
            vec!["/1/path: missing required property 'path' [required]"]
        );
        assert_eq!(
            validate(&json!({"properties": {"no": false}}), &json!({"no": 1})),
            vec!["/no: value not allowed [false]"]
        );
        assert_eq!(
            validate(&json!(false), &json!(1)),
            vec!["/: value not allowed [false]"]
        );
    }

    #[test]
    fn enum_compares_as_json_text() {
        let schema = json!({"enum": [{"a": 1, "b": [1, 2]}, 2]});
        assert!(validate(&schema, &json!({"a": 1.0, "b": [1, 2]})).is_empty());
        assert!(validate(&schema, &json!(2.0)).is_empty());
        assert_eq!(
            validate(&schema, &json!({"b": [1, 2], "a": 1})),
            vec!["/: value not in enum [[object Object], 2] [enum]"],
            "member order matters, as in JSON.stringify"
        );
    }

    #[test]
    fn keys_are_visited_in_javascript_order() {
        let schema = json!({"additionalProperties": false});
        let data: Value = serde_json::from_str(r#"{"b": 1, "10": 1, "2": 1, "a": 1}"#).unwrap();
        let keys: Vec<String> = validate(&schema, &data)
            .into_iter()
            .map(|e| e.split(':').next().unwrap().to_owned())
            .collect();
        assert_eq!(keys, vec!["/2", "/10", "/b", "/a"]);
    }

    #[test]
    fn blocks_are_found_as_the_engine_finds_them() {
        let text = "```json\n{\"first\": 1}\n```\n## PROOF FOR §CMD_X\n```json\n{\"a\": 1}\n```\ntext\n```json\n{\"b\": 2}\n```\n";
        assert_eq!(first_json_block(text), "{\"first\": 1}\n");
        assert_eq!(proof_block(text), "{\"a\": 1}\n{\"b\": 2}\n");
        assert_eq!(proof_block("```json\n{}\n```\n"), "");
    }
}
