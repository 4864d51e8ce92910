//! The session's own fields an activation writes, typed: its owner, its skill, the flags it
//! clears, the defaults of the engine's counters and thresholds, its start and its heartbeat,
//! in the order the engine's `session.sh activate` writes them; and what a phase transition
//! writes, as `session.sh phase` does.

use serde_json::{Map, Value};

use super::{Lifecycle, State, fields};

/// Calls without a log entry before the heartbeat warns, unless the session says otherwise.
const WARN_AFTER: u64 = 3;
/// Calls without a log entry before the heartbeat blocks, unless the session says otherwise.
const BLOCK_AFTER: u64 = 10;

impl State {
    /// The session (or seed) is owned by the Claude process `pid`.
    pub fn set_pid(&mut self, pid: u32) {
        self.set(fields::PID, Value::from(pid));
    }

    /// `owner` activates `skill` at `now` (ISO 8601, UTC): the owner and the skill, the session
    /// active and loading, neither overflowed nor asked to restart; the context fill, the call
    /// count, the heartbeat's thresholds and the start time, when the session has none; the
    /// heartbeat.
    pub fn activate(&mut self, owner: u32, skill: &str, now: &str) {
        self.set_pid(owner);
        self.set(fields::SKILL, Value::from(skill));
        self.set_lifecycle(&Lifecycle::Active);
        self.set(fields::LOADING, Value::Bool(true));
        self.set(fields::OVERFLOWED, Value::Bool(false));
        self.set(fields::KILL_REQUESTED, Value::Bool(false));
        let defaults = [
            (fields::CONTEXT_USAGE, Value::from(0)),
            (fields::TOOL_CALLS_SINCE_LAST_LOG, Value::from(0)),
            (fields::WARN_AFTER, Value::from(WARN_AFTER)),
            (fields::BLOCK_AFTER, Value::from(BLOCK_AFTER)),
            (fields::STARTED_AT, Value::from(now)),
        ];
        for (key, value) in defaults {
            if self.field(key).is_none() {
                self.set(key, value);
            }
        }
        self.set_heartbeat(now);
    }

    /// A writer touched the session at `now` (ISO 8601, UTC).
    pub fn set_heartbeat(&mut self, now: &str) {
        self.set(fields::LAST_HEARTBEAT, Value::from(now));
    }

    /// Another skill: its phases are not known yet and none has been passed.
    pub fn restart_phases(&mut self) {
        self.remove(fields::PHASES);
        self.set(fields::PHASE_HISTORY, Value::Array(Vec::new()));
    }

    /// The session enters `phase` at `now` (ISO 8601, UTC): the current phase, the heartbeat,
    /// no longer loading, the tool calls counted from none again (without a primary key), and
    /// the phase appended to `phaseHistory`, as an object with its `proof` when one is recorded.
    pub fn enter_phase(&mut self, phase: &str, now: &str, proof: Option<&Value>) {
        self.set_current_phase(phase);
        self.set_heartbeat(now);
        self.remove(fields::LOADING);
        self.set(fields::TOOL_CALLS_BY_TRANSCRIPT, Value::Object(Map::new()));
        self.remove(fields::PRIMARY_TRANSCRIPT_KEY);
        let entry = match proof {
            Some(proof) => {
                let mut entry = Map::new();
                entry.insert("phase".to_owned(), Value::from(phase));
                entry.insert("ts".to_owned(), Value::from(now));
                entry.insert(fields::PROOF.to_owned(), proof.clone());
                Value::Object(entry)
            }
            None => Value::from(phase),
        };
        self.array_mut(fields::PHASE_HISTORY).push(entry);
    }

    /// `--fast-track`: no completed-skill check.
    pub fn set_fast_track(&mut self) {
        self.set(fields::FAST_TRACK, Value::Bool(true));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_session_is_written_in_the_engines_order() {
        let mut s = State::default();
        s.activate(42, "implement", "2026-01-02T03:04:05Z");
        s.restart_phases();
        s.set_fast_track();
        assert_eq!(
            s.to_pretty(),
            "{\n  \"pid\": 42,\n  \"skill\": \"implement\",\n  \"lifecycle\": \"active\",\n  \"loading\": true,\n  \"overflowed\": false,\n  \"killRequested\": false,\n  \"contextUsage\": 0,\n  \"toolCallsSinceLastLog\": 0,\n  \"toolUseWithoutLogsWarnAfter\": 3,\n  \"toolUseWithoutLogsBlockAfter\": 10,\n  \"startedAt\": \"2026-01-02T03:04:05Z\",\n  \"lastHeartbeat\": \"2026-01-02T03:04:05Z\",\n  \"phaseHistory\": [],\n  \"fastTrack\": true\n}\n"
        );
    }

    #[test]
    fn an_activation_keeps_what_the_session_says_and_an_unchanged_state_its_text() {
        let text = "{\n  \"toolUseWithoutLogsWarnAfter\": 5,\n  \"lastHeartbeat\": \"T\",\n  \"startedAt\": \"S\",\n  \"contextUsage\": 0.5,\n  \"killRequested\": false,\n  \"overflowed\": false,\n  \"loading\": true,\n  \"lifecycle\": \"active\",\n  \"skill\": \"do\",\n  \"pid\": 7,\n  \"toolCallsSinceLastLog\": 2,\n  \"toolUseWithoutLogsBlockAfter\": 10\n}\n";
        let mut s = State::parse(text).unwrap();
        s.activate(7, "do", "T");
        assert!(!s.changed());
        assert_eq!(s.to_pretty(), text);
        s.activate(8, "do", "U");
        assert_eq!(s.pid(fields::PID), Some(8));
        assert_eq!(s.str(fields::STARTED_AT), Some("S"));
        assert_eq!(s.number(fields::WARN_AFTER), Some(5.0));
        assert_eq!(s.str(fields::LAST_HEARTBEAT), Some("U"));
    }

    #[test]
    fn a_phase_is_entered_as_the_engine_writes_it() {
        let text = r#"{"loading": true, "currentPhase": "0: Setup", "phaseHistory": ["0: Setup"],
            "toolCallsByTranscript": {"t": 4}, "primaryTranscriptKey": "t", "pid": 7}"#;
        let mut s = State::parse(text).unwrap();
        s.enter_phase("1: Interrogation", "T1", None);
        s.enter_phase("2: Plan", "T2", Some(&Value::from("done")));
        assert_eq!(
            s.to_pretty(),
            "{\n  \"currentPhase\": \"2: Plan\",\n  \"phaseHistory\": [\n    \"0: Setup\",\n    \"1: Interrogation\",\n    {\n      \"phase\": \"2: Plan\",\n      \"ts\": \"T2\",\n      \"proof\": \"done\"\n    }\n  ],\n  \"toolCallsByTranscript\": {},\n  \"pid\": 7,\n  \"lastHeartbeat\": \"T2\"\n}\n"
        );
    }
}
