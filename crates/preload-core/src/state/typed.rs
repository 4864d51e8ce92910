//! The fields of a state this product reads and writes, typed: read into their types when the
//! document is read, written back in their places.
//!
//! - `lifecycle` is a [`Lifecycle`] (a value this product does not know is kept by its name);
//! - `currentPhase` is its text, read as a [`super::Phase`];
//! - `phases` is the list of the engine's phase objects, read as [`super::Phases`];
//! - every list of paths (`preloadedFiles`, `pendingPreloads` and each sub-agent's own, see
//!   [`super::Paths`]) is a list of its entries: paths, and entries of another type kept as
//!   written, which never count as paths.
//!
//! A field written in a shape its type does not take (a `lifecycle` that is a number, a
//! `preloadedFiles` that is a string) stays the JSON it was, untyped: it reads as absent, as
//! the engine's hooks read it, and is written back as it was until this product sets it.
//!
//! Every other field is kept as it was, in its place. This is what `#[serde(flatten)]` over a
//! map of the others would keep, except the order: a derived struct writes its typed members
//! first, and an unchanged state would no longer render the text it was read from (the
//! writers compare that text, so that a call that changed nothing leaves the file, and its
//! inode, alone). So the document keeps every key in its order, a typed field's place held by
//! `null` there, and the typed values live beside it here.

use serde_json::Value;

use super::compare::{same_items, same_value};
use super::{Lifecycle, fields};
use crate::primitives::bytes;

/// The typed fields of a state (see the module's documentation).
#[derive(Debug, Clone, Default)]
pub(super) struct Typed {
    /// `lifecycle`.
    pub(super) lifecycle: Option<Lifecycle>,
    /// `currentPhase`.
    pub(super) current_phase: Option<String>,
    /// `phases`: the engine's phase objects, as written.
    pub(super) phases: Option<Vec<Value>>,
    /// The lists of paths, by field (the main agent's and each sub-agent's), in the order they
    /// were read or made.
    pub(super) lists: Vec<(String, Vec<Value>)>,
}

/// Which typed field a key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Lifecycle,
    CurrentPhase,
    Phases,
    Paths,
}

impl Kind {
    /// The typed field `key` names, if any.
    pub(super) fn of(key: &str) -> Option<Self> {
        match key {
            fields::LIFECYCLE => Some(Self::Lifecycle),
            fields::CURRENT_PHASE => Some(Self::CurrentPhase),
            fields::PHASES => Some(Self::Phases),
            fields::PRELOADED_FILES | fields::PENDING_PRELOADS => Some(Self::Paths),
            _ if fields::is_sub_agent_key(key, fields::PRELOADED_FILES)
                || fields::is_sub_agent_key(key, fields::PENDING_PRELOADS) =>
            {
                Some(Self::Paths)
            }
            _ => None,
        }
    }

    /// Whether the field is an array when typed.
    pub(super) fn is_array(self) -> bool {
        matches!(self, Self::Phases | Self::Paths)
    }
}

/// A field's value as a state holds it: JSON, or a typed field's text or list. What a record
/// made of a state's fields is written from, and what a copy of a field is made of
/// ([`Self::to_value`]).
#[derive(Debug, Clone, Copy)]
pub enum Field<'a> {
    /// An untyped field (or a typed one written in a shape its type does not take).
    Json(&'a Value),
    /// A typed field that is text (`lifecycle`, `currentPhase`).
    Text(&'a str),
    /// A typed field that is a list (`phases`, a list of paths).
    List(&'a [Value]),
}

impl<'a> Field<'a> {
    /// The value as JSON (a copy).
    pub fn to_value(self) -> Value {
        match self {
            Self::Json(value) => value.clone(),
            Self::Text(text) => Value::from(text),
            Self::List(items) => Value::Array(items.to_vec()),
        }
    }

    /// The text, when it is a string.
    pub fn as_str(self) -> Option<&'a str> {
        match self {
            Self::Json(value) => value.as_str(),
            Self::Text(text) => Some(text),
            Self::List(_) => None,
        }
    }

    /// The items, when it is an array.
    pub fn as_array(self) -> Option<&'a [Value]> {
        match self {
            Self::Json(value) => value.as_array().map(Vec::as_slice),
            Self::Text(_) => None,
            Self::List(items) => Some(items),
        }
    }

    /// How many entries it holds, as a discovery trigger counts them: an array's items, an
    /// object's members, 1 for a string that is not empty; 0 for anything else.
    pub fn entries(self) -> usize {
        match self {
            Self::Json(Value::Object(map)) => map.len(),
            Self::Json(Value::Array(items)) => items.len(),
            Self::List(items) => items.len(),
            other => other.as_str().map_or(0, |s| usize::from(!s.is_empty())),
        }
    }

    /// Whether it is `value`, as JSON.
    pub fn is(self, value: &Value) -> bool {
        match (self, value) {
            (Self::Json(own), _) => same_value(own, value),
            (Self::Text(text), Value::String(other)) => {
                bytes::same(text.as_bytes(), other.as_bytes())
            }
            (Self::List(items), Value::Array(other)) => same_items(items, other),
            _ => false,
        }
    }
}

impl Typed {
    /// Keep `value` as the typed field `key` (of `kind`); the value back when its shape is not
    /// the type's (the field is then left as it was).
    pub(super) fn take(&mut self, key: &str, kind: Kind, value: Value) -> Result<(), Value> {
        match (kind, value) {
            (Kind::Lifecycle, Value::String(name)) => {
                self.lifecycle = Some(Lifecycle::parse(&name));
            }
            (Kind::CurrentPhase, Value::String(text)) => self.current_phase = Some(text),
            (Kind::Phases, Value::Array(items)) => self.phases = Some(items),
            (Kind::Paths, Value::Array(items)) => match self.list_mut(key) {
                Some(list) => *list = items,
                None => self.lists.push((key.to_owned(), items)),
            },
            (_, other) => return Err(other),
        }
        Ok(())
    }

    /// The typed field `key`, when it holds one.
    pub(super) fn get(&self, key: &str, kind: Kind) -> Option<Field<'_>> {
        match kind {
            Kind::Lifecycle => self.lifecycle.as_ref().map(|l| Field::Text(l.name())),
            Kind::CurrentPhase => self.current_phase.as_deref().map(Field::Text),
            Kind::Phases => self.phases.as_deref().map(Field::List),
            Kind::Paths => self.list(key).map(|items| Field::List(items)),
        }
    }

    /// The typed array `key`, to change, when it holds one.
    pub(super) fn array_mut(&mut self, key: &str, kind: Kind) -> Option<&mut Vec<Value>> {
        match kind {
            Kind::Phases => self.phases.as_mut(),
            Kind::Paths => self.list_mut(key),
            Kind::Lifecycle | Kind::CurrentPhase => None,
        }
    }

    /// Take the typed field `key` out, as JSON; `None` when it holds none.
    pub(super) fn remove(&mut self, key: &str, kind: Kind) -> Option<Value> {
        match kind {
            Kind::Lifecycle => self.lifecycle.take().map(|l| Value::from(l.name())),
            Kind::CurrentPhase => self.current_phase.take().map(Value::from),
            Kind::Phases => self.phases.take().map(Value::Array),
            Kind::Paths => {
                let at = self.lists.iter().position(|(k, _)| k == key)?;
                Some(Value::Array(self.lists.remove(at).1))
            }
        }
    }

    /// The list of paths `key`.
    pub(super) fn list(&self, key: &str) -> Option<&Vec<Value>> {
        self.lists
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, items)| items)
    }

    fn list_mut(&mut self, key: &str) -> Option<&mut Vec<Value>> {
        self.lists
            .iter_mut()
            .find(|(k, _)| k == key)
            .map(|(_, items)| items)
    }
}

/// Equal as the JSON they are (the lists in any order of their fields).
impl PartialEq for Typed {
    fn eq(&self, other: &Self) -> bool {
        let texts = |a: Option<&str>, b: Option<&str>| match (a, b) {
            (Some(a), Some(b)) => bytes::same(a.as_bytes(), b.as_bytes()),
            (a, b) => a.is_none() && b.is_none(),
        };
        let lists = |a: Option<&Vec<Value>>, b: Option<&Vec<Value>>| match (a, b) {
            (Some(a), Some(b)) => same_items(a, b),
            (a, b) => a.is_none() && b.is_none(),
        };
        self.lifecycle == other.lifecycle
            && texts(
                self.current_phase.as_deref(),
                other.current_phase.as_deref(),
            )
            && lists(self.phases.as_ref(), other.phases.as_ref())
            && self.lists.len() == other.lists.len()
            && self
                .lists
                .iter()
                .all(|(key, items)| lists(Some(items), other.list(key)))
    }
}
