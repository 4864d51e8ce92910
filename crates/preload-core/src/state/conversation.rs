//! The conversation a context window serves: `sessionId`, which the engine's statusline also
//! writes and its `restart` removes, and the hooks' own copy beside it
//! ([`fields::WINDOW_CONVERSATION`]), which says whose the window's records are when the engine
//! has removed or rewritten the other.

use serde_json::Value;

use super::{Lifecycle, State, fields};

impl State {
    /// The conversation the window's own records belong to: the hooks' copy, else (a state an
    /// earlier release wrote) `sessionId`.
    pub fn window_conversation(&self) -> Option<&str> {
        self.str(fields::WINDOW_CONVERSATION)
            .or_else(|| self.str(fields::SESSION_ID))
    }

    /// Whether the state records `conversation` as far as the hooks write it
    /// ([`Self::set_conversation`]).
    pub fn serves(&self, conversation: &str) -> bool {
        self.str(fields::WINDOW_CONVERSATION) == Some(conversation)
            && (!self.binds_session_id() || self.str(fields::SESSION_ID) == Some(conversation))
    }

    /// Record that the window serves `conversation`: the hooks' copy, and `sessionId` unless a
    /// restart is under way.
    pub fn set_conversation(&mut self, conversation: &str) {
        if self.binds_session_id() {
            self.set(fields::SESSION_ID, Value::from(conversation));
        }
        self.set(fields::WINDOW_CONVERSATION, Value::from(conversation));
    }

    /// Let the window's conversation go (another window starts in the session).
    pub fn forget_conversation(&mut self) {
        self.remove(fields::SESSION_ID);
        self.remove(fields::WINDOW_CONVERSATION);
    }

    /// Whether a restart of the session is under way: requested (`killRequested`), overflowed,
    /// or handing over (`lifecycle: dehydrating`). Its window is about to end, and the next
    /// process's `continue` takes the session over.
    pub fn restart_under_way(&self) -> bool {
        self.flag(fields::KILL_REQUESTED)
            || self.flag(fields::OVERFLOWED)
            || self.lifecycle() == Some(Lifecycle::Dehydrating)
    }

    /// False while a restart is under way: the engine's `restart` removed `sessionId` so that
    /// its `run.sh` starts the next client on a fresh conversation instead of resuming this
    /// one, and its statusline leaves it unwritten then.
    fn binds_session_id(&self) -> bool {
        !self.restart_under_way()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::state::{State, fields};

    #[test]
    fn the_hooks_copy_outlives_the_engines_restart() {
        let mut s = State::default();
        s.set_conversation("c1");
        assert!(s.serves("c1"));
        // `session.sh restart`.
        s.remove(fields::SESSION_ID);
        s.set(fields::KILL_REQUESTED, json!(true));
        assert_eq!(s.window_conversation(), Some("c1"));
        assert!(
            s.serves("c1"),
            "nothing to write while the restart is under way"
        );
        s.forget_conversation();
        assert_eq!(s.window_conversation(), None);
    }

    #[test]
    fn session_id_stays_unwritten_while_a_restart_is_under_way() {
        for (field, value) in [
            (fields::KILL_REQUESTED, json!(true)),
            (fields::OVERFLOWED, json!(true)),
            (fields::LIFECYCLE, json!("dehydrating")),
        ] {
            let mut s = State::default();
            s.set(field, value);
            s.set_conversation("c1");
            assert!(s.get(fields::SESSION_ID).is_none(), "{field}");
            assert_eq!(s.window_conversation(), Some("c1"));
            assert!(s.serves("c1"));
            // The restart is carried out (an activation clears the flags): bound again.
            s.remove(field);
            assert!(!s.serves("c1"));
            s.set_conversation("c1");
            assert_eq!(s.str(fields::SESSION_ID), Some("c1"));
        }
    }

    #[test]
    fn a_state_of_an_earlier_release_is_read_by_its_session_id() {
        let mut s = State::default();
        s.set(fields::SESSION_ID, json!("c1"));
        assert_eq!(s.window_conversation(), Some("c1"));
        assert!(!s.serves("c1"), "the hooks' copy is still to be written");
    }

    #[test]
    fn the_statusline_rewriting_session_id_does_not_make_the_window_its_own() {
        let mut s = State::default();
        s.set_conversation("c1");
        s.set(fields::SESSION_ID, json!("c2"));
        assert_eq!(s.window_conversation(), Some("c1"));
        assert!(!s.serves("c2"));
    }
}
