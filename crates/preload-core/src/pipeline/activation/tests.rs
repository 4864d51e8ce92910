//! Unit tests of `activation`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use super::*;
use crate::mechanisms::skill::definition;

fn skill(text: &str) -> Skill {
    Skill {
        name: "odd".into(),
        dir: PathBuf::from("/skills/odd"),
        file: PathBuf::from("/skills/odd/SKILL.md"),
        definition: definition(text).unwrap_or_default(),
    }
}

/// The static fields of `text`'s definition as the state is written with them.
fn written(text: &str) -> String {
    let fields: Map<String, Value> = static_fields(&skill(text)).into_iter().collect();
    serde_json::to_string(&fields).unwrap()
}

#[test]
fn static_fields_copy_the_definition_as_written_paths_made_absolute() {
    let text = r#"
```json
{"other": 1, "responseTemplate": null, "planTemplate": 7, "requestTemplate": "",
 "modes": {"b": {"label": "B", "x": 1, "file": "m/b.md", "y": [2]}, "a": "str", "c": {"file": 3},
   "d": {"file": "/abs.md", "label": 4}, "e": {}, "f": {"file": ""}},
 "directives": {"z": [1], "a": null}, "nextSkills": "x", "debriefTemplate": "/abs/d.md",
 "phases": [{"label": "1", "name": "A", "extra": {"k": true}}, 5], "logTemplate": "rel.md",
 "taskType": 5.0}
```
"#;
    assert_eq!(
        written(text),
        concat!(
            r#"{"taskType":5.0,"phases":[{"label":"1","name":"A","extra":{"k":true}},5],"#,
            r#""nextSkills":"x","directives":{"z":[1],"a":null},"#,
            r#""modes":{"b":{"label":"B","x":1,"file":"/skills/odd/m/b.md","y":[2]},"a":"str","#,
            r#""c":{"file":3},"d":{"file":"/abs.md","label":4},"e":{},"f":{"file":"/skills/odd/"}},"#,
            r#""logTemplate":"/skills/odd/rel.md","debriefTemplate":"/abs/d.md","planTemplate":7,"#,
            r#""requestTemplate":"/skills/odd/","responseTemplate":null}"#
        )
    );
}

#[test]
fn static_fields_of_odd_definitions() {
    // `modes` that is not an object, `phases` that is not an array: copied as written.
    assert_eq!(
        written(
            "```json\n{\"modes\": [\"a\"], \"phases\": \"x\", \"logTemplate\": {\"a\": 1}}\n```\n"
        ),
        r#"{"phases":"x","modes":["a"],"logTemplate":{"a":1}}"#
    );
    // The block with `phases` is the definition; without one, the first object.
    assert_eq!(
        written(
            "```json\n[1]\n```\n```json\n{\"taskType\": \"A\", \"phases\": {}}\n```\n```json\n{\"taskType\": \"B\", \"phases\": []}\n```\n"
        ),
        r#"{"taskType":"B","phases":[]}"#
    );
    assert_eq!(
        written(
            "```json\n{\"taskType\": \"A\", \"phases\": {}}\n```\n```json\n{\"taskType\": \"B\"}\n```\n"
        ),
        r#"{"taskType":"A","phases":{}}"#
    );
    assert_eq!(written("no block\n"), "{}");
    assert_eq!(written("```json\n\"text\"\n```\n"), "{}");
    // A member written twice is its last.
    assert_eq!(
        written(
            "```json\n{\"nextSkills\": [\"a\"], \"taskType\": 1, \"nextSkills\": [\"b\"]}\n```\n"
        ),
        r#"{"taskType":1,"nextSkills":["b"]}"#
    );
}
