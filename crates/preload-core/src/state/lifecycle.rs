//! A session's lifecycle (`lifecycle` in its state), typed: the values the engine and the hooks
//! write, any other kept by its name, and the three questions the hooks ask of it.

use serde_json::Value;

use super::State;
use crate::state::fields;

/// A state's `lifecycle`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lifecycle {
    /// At work.
    Active,
    /// Between tasks: the session is still the owner's, nothing is counted.
    Idle,
    /// Done.
    Completed,
    /// Handing its context over (`engine session dehydrate`).
    Dehydrating,
    /// Coming back after a restart of the client.
    Resuming,
    /// Being restarted.
    Restarting,
    /// A seed: the process's record before a session is activated.
    Seeding,
    /// The stand-in the guard engine gives rules when there is no session at all.
    None,
    /// A value this product does not know, kept as it was written.
    Unknown(String),
}

impl Lifecycle {
    /// The lifecycle written as `name`.
    pub fn parse(name: &str) -> Self {
        match name {
            "active" => Self::Active,
            "idle" => Self::Idle,
            "completed" => Self::Completed,
            "dehydrating" => Self::Dehydrating,
            "resuming" => Self::Resuming,
            "restarting" => Self::Restarting,
            "seeding" => Self::Seeding,
            "none" => Self::None,
            other => Self::Unknown(other.to_owned()),
        }
    }

    /// How the state spells it.
    pub fn name(&self) -> &str {
        match self {
            Self::Active => "active",
            Self::Idle => "idle",
            Self::Completed => "completed",
            Self::Dehydrating => "dehydrating",
            Self::Resuming => "resuming",
            Self::Restarting => "restarting",
            Self::Seeding => "seeding",
            Self::None => "none",
            Self::Unknown(name) => name,
        }
    }

    /// The session's skill is in use: the prompt gate lets the prompt through, SessionStart
    /// loads the skill.
    pub fn is_live(&self) -> bool {
        matches!(
            self,
            Self::Active | Self::Dehydrating | Self::Resuming | Self::Restarting
        )
    }

    /// Nothing is counted and nothing discovered.
    pub fn is_quiet(&self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Idle | Self::Restarting | Self::Resuming
        )
    }

    /// The session is one the owner holds, for the rules' `noActiveSession`.
    pub fn holds_session(&self) -> bool {
        matches!(
            self,
            Self::Active | Self::Idle | Self::Resuming | Self::Restarting
        )
    }
}

impl std::fmt::Display for Lifecycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl State {
    /// The state's lifecycle, when it names one (a string).
    pub fn lifecycle(&self) -> Option<Lifecycle> {
        self.typed.lifecycle.clone()
    }

    /// The state's lifecycle; a state without one is at work, as the engine takes it.
    pub fn lifecycle_or_active(&self) -> Lifecycle {
        self.lifecycle().unwrap_or(Lifecycle::Active)
    }

    /// Set the lifecycle.
    pub fn set_lifecycle(&mut self, lifecycle: &Lifecycle) {
        if self.typed.lifecycle.as_ref() != Some(lifecycle) {
            self.set(fields::LIFECYCLE, Value::from(lifecycle.name()));
        }
    }

    /// Whether the session's context window is `owner`'s: it holds the session, or left it idle
    /// (`engine session idle` keeps the owner as `lastKnownPid` and removes `pid`) and may take
    /// it up again with its next skill.
    pub fn is_window_of(&self, owner: u32) -> bool {
        match self.pid(fields::PID) {
            Some(pid) => pid == owner,
            None => {
                self.lifecycle() == Some(Lifecycle::Idle)
                    && self.pid(fields::LAST_KNOWN_PID) == Some(owner)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Lifecycle;

    /// Every name the hooks know, and one they do not.
    const NAMES: [&str; 9] = [
        "active",
        "idle",
        "completed",
        "dehydrating",
        "resuming",
        "restarting",
        "seeding",
        "none",
        "paused",
    ];

    #[test]
    fn an_idle_session_stays_the_window_of_the_owner_that_left_it() {
        use crate::state::{State, fields};
        use serde_json::json;
        let mut s = State::default();
        s.set(fields::PID, json!(7));
        assert!(s.is_window_of(7) && !s.is_window_of(8));
        // `session.sh idle`.
        s.remove(fields::PID);
        s.set(fields::LAST_KNOWN_PID, json!(7));
        s.set(fields::LIFECYCLE, json!("idle"));
        assert!(s.is_window_of(7) && !s.is_window_of(8));
        // Completed, or never idle: no one's.
        s.set(fields::LIFECYCLE, json!("completed"));
        assert!(!s.is_window_of(7));
    }

    #[test]
    fn every_name_reads_back_as_itself() {
        for name in NAMES {
            assert_eq!(Lifecycle::parse(name).name(), name);
        }
        assert_eq!(
            Lifecycle::parse("paused"),
            Lifecycle::Unknown("paused".into())
        );
    }

    #[test]
    fn the_three_questions_as_the_engine_answers_them() {
        let which = |ask: fn(&Lifecycle) -> bool| -> Vec<&'static str> {
            NAMES
                .into_iter()
                .filter(|name| ask(&Lifecycle::parse(name)))
                .collect()
        };
        assert_eq!(
            which(Lifecycle::is_live),
            ["active", "dehydrating", "resuming", "restarting"]
        );
        assert_eq!(
            which(Lifecycle::is_quiet),
            ["idle", "completed", "resuming", "restarting"]
        );
        assert_eq!(
            which(Lifecycle::holds_session),
            ["active", "idle", "resuming", "restarting"]
        );
    }
}
