//! The two lists of paths a context window is tracked by: the files in it (`preloadedFiles`)
//! and the files queued for it (`pendingPreloads`), the main agent's and each sub-agent's own.
//!
//! Every read and change of these lists goes through [`Paths`] and the methods of [`State`]
//! below, so their JSON shape (an array of path strings, where an entry of another type is kept
//! but never counts as a path) is handled here once.

use std::borrow::Cow;

use serde_json::Value;

use super::{State, fields};

/// Whose context window.
///
/// The main agent's context is tracked in `preloadedFiles` and its queue is `pendingPreloads`:
/// a file leaves the queue only once it is in context. A sub-agent has a context window of its
/// own, tracked in `preloadedFiles_sub:<agent_id>` (like the engine's per-agent
/// `lastEditFile_<key>`), and a queue of its own, `pendingPreloads_sub:<agent_id>`: it gets its
/// own copy of what the main agent's queue holds, and never takes anything out of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience<'a> {
    /// The main agent.
    Main,
    /// A sub-agent, by `agent_id`.
    SubAgent(&'a str),
}

impl<'a> Audience<'a> {
    /// The `agentId` of this audience's stash entries (empty for the main agent).
    pub fn agent_id(self) -> &'a str {
        match self {
            Self::Main => "",
            Self::SubAgent(id) => id,
        }
    }

    /// This audience's own copy of the state field `base` (the main agent's is `base` itself).
    pub fn key(self, base: &'static str) -> Cow<'static, str> {
        match self {
            Self::Main => Cow::Borrowed(base),
            Self::SubAgent(id) => Cow::Owned(fields::sub_agent_key(base, id)),
        }
    }
}

/// One list of paths of one audience.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paths<'a> {
    /// The files in the audience's context window.
    InContext(Audience<'a>),
    /// The files queued for it.
    Queued(Audience<'a>),
}

impl Paths<'_> {
    /// The state field that holds the list.
    pub fn key(self) -> Cow<'static, str> {
        match self {
            Self::InContext(who) => who.key(fields::PRELOADED_FILES),
            Self::Queued(who) => who.key(fields::PENDING_PRELOADS),
        }
    }
}

/// The main agent's files in context.
pub const IN_CONTEXT: Paths<'static> = Paths::InContext(Audience::Main);
/// The main agent's queue.
pub const QUEUED: Paths<'static> = Paths::Queued(Audience::Main);

impl State {
    /// The paths of `list`, in order, read where they are.
    pub fn paths(&self, list: Paths<'_>) -> impl Iterator<Item = &str> {
        self.entries_of(&list.key())
    }

    /// The strings of the array field `key`, in order.
    pub(crate) fn entries_of(&self, key: &str) -> impl Iterator<Item = &str> + use<'_> {
        self.items(key).iter().filter_map(Value::as_str)
    }

    /// The paths of `list`, as owned strings.
    pub fn path_list(&self, list: Paths<'_>) -> Vec<String> {
        self.paths(list).map(str::to_owned).collect()
    }

    /// Whether `path` is in `list`.
    pub fn has_path(&self, list: Paths<'_>, path: &str) -> bool {
        self.holds_text(&list.key(), path)
    }

    /// Append `path` to `list` unless it is there; true when added. A list that is not an
    /// array is started afresh.
    pub fn add_path(&mut self, list: Paths<'_>, path: &str) -> bool {
        self.push_unique(&list.key(), path)
    }

    /// Take every occurrence of `path` out of `list`; true when any was there.
    pub fn remove_path(&mut self, list: Paths<'_>, path: &str) -> bool {
        self.remove_item(&list.key(), path)
    }

    /// Make `list` hold exactly `paths`.
    pub fn set_paths<I: IntoIterator<Item = S>, S: Into<String>>(
        &mut self,
        list: Paths<'_>,
        paths: I,
    ) {
        let items = paths.into_iter().map(|p| Value::String(p.into())).collect();
        self.set(&list.key(), Value::Array(items));
    }

    /// Empty `list`.
    pub fn clear_paths(&mut self, list: Paths<'_>) {
        self.set(&list.key(), Value::Array(Vec::new()));
    }

    /// `path` is owed to `who`'s context window: out of the files in it, back in its queue.
    pub fn owe(&mut self, who: Audience<'_>, path: &str) {
        self.remove_path(Paths::InContext(who), path);
        self.add_path(Paths::Queued(who), path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(text: &str) -> State {
        State::parse(text).unwrap()
    }

    #[test]
    fn each_audience_has_its_own_lists() {
        assert_eq!(QUEUED.key(), "pendingPreloads");
        assert_eq!(IN_CONTEXT.key(), "preloadedFiles");
        let sub = Audience::SubAgent("a1");
        assert_eq!(Paths::Queued(sub).key(), "pendingPreloads_sub:a1");
        assert_eq!(Paths::InContext(sub).key(), "preloadedFiles_sub:a1");
    }

    #[test]
    fn entries_of_another_type_are_kept_but_are_not_paths() {
        let mut s = state(r#"{"pendingPreloads": ["/a", 7, null, "/b"]}"#);
        assert_eq!(s.path_list(QUEUED), ["/a", "/b"]);
        assert!(s.has_path(QUEUED, "/b"));
        assert!(s.remove_path(QUEUED, "/a"));
        assert!(!s.remove_path(QUEUED, "/a"));
        assert!(s.add_path(QUEUED, "/c"));
        assert!(!s.add_path(QUEUED, "/c"));
        assert_eq!(
            s.field("pendingPreloads").unwrap().to_value(),
            serde_json::json!([7, null, "/b", "/c"])
        );
    }

    #[test]
    fn an_owed_file_leaves_the_context_and_is_queued_once() {
        let mut s = state(r#"{"preloadedFiles": ["/a", "/b"], "pendingPreloads": ["/a"]}"#);
        s.owe(Audience::Main, "/a");
        s.owe(Audience::Main, "/b");
        assert_eq!(s.path_list(IN_CONTEXT), Vec::<String>::new());
        assert_eq!(s.path_list(QUEUED), ["/a", "/b"]);
        let sub = Audience::SubAgent("x");
        s.owe(sub, "/c");
        assert_eq!(s.path_list(Paths::Queued(sub)), ["/c"]);
        assert_eq!(s.path_list(QUEUED), ["/a", "/b"]);
    }

    #[test]
    fn a_list_of_another_shape_is_no_paths_and_is_replaced_when_written() {
        let mut s = state(r#"{"preloadedFiles": "oops", "x": 1}"#);
        assert_eq!(s.paths(IN_CONTEXT).count(), 0);
        s.set_paths(IN_CONTEXT, ["/a"]);
        assert_eq!(
            s.to_pretty(),
            "{\n  \"preloadedFiles\": [\n    \"/a\"\n  ],\n  \"x\": 1\n}\n"
        );
    }
}
