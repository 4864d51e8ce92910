//! The conversation a context window serves: `sessionId`, which the engine's statusline also
//! writes and its `restart` removes, and the hooks' own copy beside it
//! ([`fields::WINDOW_CONVERSATION`]), which says whose the window's records are when the engine
//! has removed or rewritten the other.

use serde_json::Value;

use super::{State, fields};

impl State {
    /// The conversation the window's own records belong to: the hooks' copy, else (a state an
    /// earlier release wrote) `sessionId`.
    pub fn window_conversation(&self) -> Option<&str> {
        self.str(fields::WINDOW_CONVERSATION)
            .or_else(|| self.str(fields::SESSION_ID))
    }

    /// Whether the state names `conversation` in both fields.
    pub fn serves(&self, conversation: &str) -> bool {
        self.str(fields::SESSION_ID) == Some(conversation)
            && self.str(fields::WINDOW_CONVERSATION) == Some(conversation)
    }

    /// Record that the window serves `conversation`.
    pub fn set_conversation(&mut self, conversation: &str) {
        self.set(fields::SESSION_ID, Value::from(conversation));
        self.set(fields::WINDOW_CONVERSATION, Value::from(conversation));
    }

    /// Let the window's conversation go (another window starts in the session).
    pub fn forget_conversation(&mut self) {
        self.remove(fields::SESSION_ID);
        self.remove(fields::WINDOW_CONVERSATION);
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
        // `session.sh restart`: `del(sessionId)`.
        s.remove(fields::SESSION_ID);
        assert!(!s.serves("c1"));
        assert_eq!(s.window_conversation(), Some("c1"));
        s.forget_conversation();
        assert_eq!(s.window_conversation(), None);
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
