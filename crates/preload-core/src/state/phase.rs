//! The current phase (`currentPhase`): `"<label>: <name>"`, as the engine writes it. Every read
//! and change of it goes through [`Phase`] and the methods of [`State`] below.

use serde_json::Value;

use super::{State, fields};

/// A phase as `currentPhase` names it: `"3.A: Build Loop"`, `"Phase 1: Setup"`, `"0"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Phase<'a>(&'a str);

impl<'a> Phase<'a> {
    /// The phase `text` names.
    pub fn new(text: &'a str) -> Self {
        Self(text)
    }

    /// The text as written.
    pub fn as_str(self) -> &'a str {
        self.0
    }

    /// Its label: `"3.A: Build Loop"` → `"3.A"`, `"Phase 1: Setup"` → `"1"`, `"0"` → `"0"`.
    pub fn label(self) -> &'a str {
        let text = self.0.trim();
        let text = text.strip_prefix("Phase ").unwrap_or(text);
        text.split_once(':').map_or(text, |(label, _)| label).trim()
    }

    /// Its name: `"3.A: Build Loop"` → `"Build Loop"` (`""` without one).
    pub fn name(self) -> &'a str {
        self.0.split_once(':').map_or("", |(_, name)| name.trim())
    }
}

impl State {
    /// The current phase, when the state names one.
    pub fn current_phase(&self) -> Option<Phase<'_>> {
        self.typed.current_phase.as_deref().map(Phase)
    }

    /// Make `phase` the current phase.
    pub fn set_current_phase(&mut self, phase: &str) {
        self.set(fields::CURRENT_PHASE, Value::from(phase));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_names_come_from_the_phase_text() {
        for (text, label, name) in [
            ("3.A: Build Loop", "3.A", "Build Loop"),
            ("Phase 1: Setup", "1", "Setup"),
            ("4.2: Agent Handoff", "4.2", "Agent Handoff"),
            ("0", "0", ""),
        ] {
            assert_eq!(Phase::new(text).label(), label, "{text}");
            assert_eq!(Phase::new(text).name(), name, "{text}");
        }
        let mut s = State::parse(r#"{"currentPhase": "2: Plan", "x": 1}"#).unwrap();
        assert_eq!(s.current_phase().map(Phase::label), Some("2"));
        s.set_current_phase("3: Build");
        assert_eq!(
            s.to_pretty(),
            "{\n  \"currentPhase\": \"3: Build\",\n  \"x\": 1\n}\n"
        );
        assert_eq!(State::default().current_phase(), None);
    }
}
