//! A skill's declared phases, as the engine writes them in a state's `phases` and a SKILL.md's
//! JSON block: objects with a `label` (`"0"`, `"3.A"`; or the legacy `major`/`minor`), a `name`,
//! and `steps`/`commands` naming the phase's commands. Read where they are: the entries stay the
//! engine's JSON (every field kept), typed by what the product asks of them.

use serde_json::{Map, Value};

use super::State;
use super::fields;
use super::refs::{self, Kind};

/// The declared phases, in their written order.
#[derive(Debug, Clone, Copy, Default)]
pub struct Phases<'a>(&'a [Value]);

/// One declared phase.
#[derive(Debug, Clone, Copy)]
pub struct PhaseDef<'a>(&'a Map<String, Value>);

impl<'a> Phases<'a> {
    /// The phases of a `phases` array.
    pub fn of(items: &'a [Value]) -> Self {
        Self(items)
    }

    /// The phases a document declares in its `phases` (none when absent or not an array): a
    /// state's, or a skill's definition.
    pub fn declared_in(document: &'a Map<String, Value>) -> Self {
        Self::of(
            document
                .get(fields::PHASES)
                .and_then(Value::as_array)
                .map_or(&[], Vec::as_slice),
        )
    }

    /// The entries as written, for a writer that adds one.
    pub fn items(self) -> &'a [Value] {
        self.0
    }

    /// True when none is declared.
    pub fn is_empty(self) -> bool {
        self.0.is_empty()
    }

    /// The entries that are objects, in order.
    pub fn iter(self) -> impl Iterator<Item = PhaseDef<'a>> {
        self.0.iter().filter_map(PhaseDef::of)
    }

    /// The phase labelled `label`, as the engine's hooks find it: the first whose `label` is
    /// it, else the first whose legacy `major`/`minor` form is.
    pub fn find(self, label: &str) -> Option<PhaseDef<'a>> {
        self.iter()
            .find(|p| p.own_label().as_deref() == Some(label))
            .or_else(|| {
                self.iter()
                    .find(|p| p.legacy_label().as_deref() == Some(label))
            })
    }

    /// The first phase by label order ([`label_sort_key`]).
    pub fn first(self) -> Option<PhaseDef<'a>> {
        self.iter()
            .filter_map(|p| Some((label_sort_key(&p.label()?), p)))
            .min_by(|a, b| a.0.cmp(&b.0))
            .map(|(_, p)| p)
    }
}

impl<'a> PhaseDef<'a> {
    /// The phase an entry of `phases` declares (`None` unless it is an object).
    pub fn of(entry: &'a Value) -> Option<Self> {
        entry.as_object().map(Self)
    }

    /// The phase of a definition's fields.
    pub fn new(fields: &'a Map<String, Value>) -> Self {
        Self(fields)
    }

    /// Its fields as written.
    pub fn fields(self) -> &'a Map<String, Value> {
        self.0
    }

    /// Its label: `label` (a string or a number), else the legacy `major`/`minor` (`"M"` when
    /// `minor` is 0, else `"M.m"`).
    pub fn label(self) -> Option<String> {
        self.own_label().or_else(|| self.legacy_label())
    }

    fn own_label(self) -> Option<String> {
        match self.0.get("label")? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    }

    fn legacy_label(self) -> Option<String> {
        let major = self.0.get("major")?.as_i64()?;
        match self.0.get("minor").and_then(Value::as_i64).unwrap_or(0) {
            0 => Some(major.to_string()),
            minor => Some(format!("{major}.{minor}")),
        }
    }

    /// Its name (`""` when it has none).
    pub fn name(self) -> &'a str {
        self.0.get("name").and_then(Value::as_str).unwrap_or("")
    }

    /// `"<label>: <name>"`, the form of `currentPhase`.
    pub fn to_phase_string(self) -> Option<String> {
        Some(
            format!("{}: {}", self.label()?, self.name())
                .trim_end()
                .to_owned(),
        )
    }

    /// The names of its commands: `steps` then `commands`, the entries starting with `§CMD_`,
    /// suffix-stripped, without duplicates. `proof` is never read.
    pub fn command_names(self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let entries = ["steps", "commands"]
            .into_iter()
            .filter_map(|field| self.0.get(field).and_then(Value::as_array))
            .flatten()
            .filter_map(Value::as_str)
            .filter(|s| s.starts_with("§CMD_"));
        for entry in entries {
            let first = refs::scan(entry).into_iter().find(|r| r.kind == Kind::Cmd);
            if let Some(reference) = first.filter(|r| !out.contains(&r.name)) {
                out.push(reference.name);
            }
        }
        out
    }
}

/// The sort key of a phase label: numeric segments zero-padded to 3 (`"3.A"` → `"003.A"`), so
/// `"10"` sorts after `"9"` as `session.sh` sorts them.
pub fn label_sort_key(label: &str) -> String {
    label
        .split('.')
        .map(|seg| {
            if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
                format!("{seg:0>3}")
            } else {
                seg.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(".")
}

impl State {
    /// The phases the state declares (none when `phases` is absent or not an array).
    pub fn phases(&self) -> Phases<'_> {
        Phases::of(self.typed.phases.as_deref().unwrap_or(&[]))
    }

    /// Declare `phases` (the entries as written).
    pub fn set_phases(&mut self, phases: Vec<Value>) {
        self.set(fields::PHASES, Value::Array(phases));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_label_is_found_before_a_legacy_form() {
        let items = vec![
            json!({"major": 4, "minor": 2, "steps": ["§CMD_X"]}),
            json!({"major": 2, "minor": 0, "name": "Legacy"}),
            json!({"label": 2, "name": "Numbered"}),
            json!("not a phase"),
        ];
        let phases = Phases::of(&items);
        assert_eq!(phases.iter().count(), 3);
        assert_eq!(
            phases.find("4.2").map(PhaseDef::command_names),
            Some(vec!["X".into()])
        );
        assert_eq!(phases.find("2").map(PhaseDef::name), Some("Numbered"));
        assert!(phases.find("3").is_none());
        assert_eq!(
            phases.iter().nth(1).and_then(PhaseDef::label).as_deref(),
            Some("2")
        );
    }

    #[test]
    fn the_first_phase_sorts_labels_numerically() {
        let items = vec![
            json!({"label": "10", "name": "Late"}),
            json!({"label": "3.A", "name": "Build Loop"}),
            json!({"label": "2", "name": "Planning"}),
        ];
        let first = Phases::of(&items)
            .first()
            .and_then(PhaseDef::to_phase_string);
        assert_eq!(first.as_deref(), Some("2: Planning"));
        assert_eq!(label_sort_key("3.A"), "003.A");
        assert!(label_sort_key("10") > label_sort_key("9"));
        assert!(Phases::default().first().is_none());
        let unnamed = vec![json!({"label": "0"})];
        let first = Phases::of(&unnamed)
            .first()
            .and_then(PhaseDef::to_phase_string);
        assert_eq!(first.as_deref(), Some("0:"));
    }

    #[test]
    fn a_state_declares_its_phases() {
        let mut s = State::default();
        assert!(s.phases().is_empty());
        s.set(fields::PHASES, json!("not a list"));
        assert!(s.phases().is_empty());
        s.set_phases(vec![json!({"label": "1", "name": "Plan"})]);
        assert_eq!(s.phases().find("1").map(PhaseDef::name), Some("Plan"));
        assert_eq!(s.phases().items().len(), 1);
    }
}
