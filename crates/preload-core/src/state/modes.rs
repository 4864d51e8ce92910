//! A skill's modes, typed: the `modes` object of a state and of a SKILL.md's JSON block (each
//! mode by id: its instructions' `file`, its `label`), and the mode a session chose (the latest
//! `proof.mode` of `phaseHistory`, else `mode`).

use serde_json::{Map, Value};

use super::{State, fields};

/// One of a skill's `modes`.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillMode {
    /// `file`, when text: the mode's instructions (relative to the skill folder, or absolute).
    pub file: Option<String>,
    /// `label`, when text: the name a session chooses it by, as well as its id.
    pub label: Option<String>,
    /// The mode as written, every member in order (as an activation copies it, its `file` made
    /// absolute).
    pub written: Value,
}

impl SkillMode {
    /// The mode `written` reads as.
    pub fn of(written: Value) -> Self {
        let text = |key: &str| written.get(key)?.as_str().map(str::to_owned);
        Self {
            file: text(fields::MODE_FILE),
            label: text(fields::MODE_LABEL),
            written,
        }
    }
}

/// The modes of a `modes` object, in order.
pub fn modes_of(modes: &Map<String, Value>) -> Vec<(String, SkillMode)> {
    modes
        .iter()
        .map(|(id, mode)| (id.clone(), SkillMode::of(mode.clone())))
        .collect()
}

impl State {
    /// The modes the state holds, in order: `None` when it holds no `modes`, none when they
    /// are not an object.
    pub fn modes(&self) -> Option<Vec<(String, SkillMode)>> {
        let modes = self.get(fields::MODES)?;
        Some(modes.as_object().map(modes_of).unwrap_or_default())
    }

    /// The mode the session chose: the latest `proof.mode` in `phaseHistory` (the engine's
    /// skills prove the mode when they leave the phase that selects it), else the state's own
    /// `mode`; trimmed, and none when empty.
    pub fn chosen_mode(&self) -> Option<&str> {
        let proven = self
            .items(fields::PHASE_HISTORY)
            .iter()
            .rev()
            .find_map(|entry| entry.get(fields::PROOF)?.get(fields::MODE)?.as_str());
        proven
            .or_else(|| self.str(fields::MODE))
            .map(str::trim)
            .filter(|m| !m.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::state::testing::state;

    #[test]
    fn the_chosen_mode_is_the_latest_proven_else_the_states() {
        let proven = state(json!({"mode": "general", "phaseHistory": [
            "0: Setup",
            {"phase": "1: Interrogation", "proof": {"mode": "tdd"}},
            {"phase": "2: Planning", "proof": {"planWritten": "yes"}}
        ]}));
        assert_eq!(proven.chosen_mode(), Some("tdd"));
        let own = state(json!({"mode": " general ", "phaseHistory": ["0: Setup"]}));
        assert_eq!(own.chosen_mode(), Some("general"));
        assert_eq!(state(json!({"mode": ""})).chosen_mode(), None);
        assert_eq!(state(json!({})).chosen_mode(), None);
    }

    #[test]
    fn the_modes_a_state_holds_are_none_when_absent_and_empty_in_another_shape() {
        assert_eq!(state(json!({})).modes(), None);
        assert_eq!(state(json!({"modes": ["tdd"]})).modes(), Some(Vec::new()));
        let modes = state(json!({"modes": {"tdd": {"label": "Test-first", "file": 3}}}))
            .modes()
            .unwrap();
        assert_eq!(modes.len(), 1);
        assert_eq!(modes[0].0, "tdd");
        assert_eq!(modes[0].1.label.as_deref(), Some("Test-first"));
        assert_eq!(modes[0].1.file, None, "a file that is not text is none");
    }
}
