//! How `guards.json` is read: in one pass, straight into the rules' own types; a value in a
//! shape its member does not take reads as that member's default.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};

use super::{Mode, Payload, Rule, RulesError, Threshold, Trigger, Urgency, number_in};

/// Parse `guards.json`: an array of rules (or the older `{"rules": [...]}`). Rules with an
/// unknown trigger type are skipped; an empty file has no rules.
pub fn parse(text: &str) -> Result<Vec<Rule>, RulesError> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let Read(RulesFile(Rules(items))) =
        serde_json::from_str(text).map_err(|e| RulesError::NotJson(e.to_string()))?;
    Ok(items
        .ok_or(RulesError::NotRules)?
        .into_iter()
        .enumerate()
        .filter_map(|(i, written)| written.rule(i))
        .collect())
}

/// How a JSON value of `guards.json` reads where a rule expects a `Self`: an object member by
/// member (the last of a member written twice wins), anything else as `Self`'s default. Every
/// value is read through, so a file reads as JSON exactly when it is JSON.
pub(super) trait Lenient: Default {
    /// What a string reads as.
    fn text(_text: &str) -> Self {
        Self::default()
    }

    /// What a number reads as.
    fn number(_number: f64) -> Self {
        Self::default()
    }

    /// What `true` or `false` reads as.
    fn flag(_flag: bool) -> Self {
        Self::default()
    }

    /// What an array reads as.
    fn list<'de, A: SeqAccess<'de>>(mut items: A) -> Result<Self, A::Error> {
        while items.next_element::<Read<Skipped>>()?.is_some() {}
        Ok(Self::default())
    }

    /// Read the member `key` of an object, its value next in `map`.
    fn member<'de, A: MapAccess<'de>>(&mut self, _key: &str, map: &mut A) -> Result<(), A::Error> {
        skip(map)
    }
}

/// A `T` read from any JSON value ([`Lenient`]).
struct Read<T>(T);

impl<'de, T: Lenient> Deserialize<'de> for Read<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Any<T>(PhantomData<T>);
        #[allow(clippy::cast_precision_loss)] // as a JSON number reads as an `f64`
        impl<'de, T: Lenient> Visitor<'de> for Any<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_bool<E>(self, flag: bool) -> Result<T, E> {
                Ok(T::flag(flag))
            }
            fn visit_i64<E>(self, number: i64) -> Result<T, E> {
                Ok(T::number(number as f64))
            }
            fn visit_u64<E>(self, number: u64) -> Result<T, E> {
                Ok(T::number(number as f64))
            }
            fn visit_f64<E>(self, number: f64) -> Result<T, E> {
                Ok(T::number(number))
            }
            fn visit_str<E>(self, text: &str) -> Result<T, E> {
                Ok(T::text(text))
            }
            fn visit_unit<E>(self) -> Result<T, E> {
                Ok(T::default())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, items: A) -> Result<T, A::Error> {
                T::list(items)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
                let mut read = T::default();
                while let Some(key) = map.next_key::<String>()? {
                    read.member(&key, &mut map)?;
                }
                Ok(read)
            }
        }
        deserializer.deserialize_any(Any(PhantomData)).map(Read)
    }
}

/// The value next in `map`, read as a `T`.
pub(super) fn next<'de, T: Lenient, A: MapAccess<'de>>(map: &mut A) -> Result<T, A::Error> {
    map.next_value::<Read<T>>().map(|read| read.0)
}

/// Read past the value next in `map`.
pub(super) fn skip<'de, A: MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
    next::<Skipped, A>(map).map(drop)
}

/// A value read through (as JSON) and not kept.
#[derive(Default)]
struct Skipped;

impl Lenient for Skipped {}

/// A value where a rule reads text, a number, a flag or a list of texts (an array's strings,
/// its other entries left out).
#[derive(Debug, Default)]
pub(super) enum Loose {
    Text(String),
    Number(f64),
    Flag(bool),
    List(Vec<String>),
    #[default]
    Other,
}

impl Lenient for Loose {
    fn text(text: &str) -> Self {
        Self::Text(text.to_owned())
    }

    fn number(number: f64) -> Self {
        Self::Number(number)
    }

    fn flag(flag: bool) -> Self {
        Self::Flag(flag)
    }

    fn list<'de, A: SeqAccess<'de>>(mut items: A) -> Result<Self, A::Error> {
        let mut texts = Vec::new();
        while let Some(Read(item)) = items.next_element::<Read<Self>>()? {
            if let Self::Text(text) = item {
                texts.push(text);
            }
        }
        Ok(Self::List(texts))
    }
}

impl Loose {
    fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(text) => Some(text),
            _ => None,
        }
    }

    fn into_text(self) -> Option<String> {
        match self {
            Self::Text(text) => Some(text),
            _ => None,
        }
    }

    /// A number, or a string of one.
    fn number(&self) -> Option<f64> {
        match self {
            Self::Number(number) => Some(*number),
            Self::Text(text) => number_in(text),
            _ => None,
        }
    }

    fn is_true(&self) -> bool {
        matches!(self, Self::Flag(true))
    }

    /// The strings of an array; none for anything else.
    fn into_strings(self) -> Vec<String> {
        match self {
            Self::List(texts) => texts,
            _ => Vec::new(),
        }
    }
}

/// The whole file: the array of rules, or the array of its `rules` member.
#[derive(Default)]
struct RulesFile(Rules);

impl Lenient for RulesFile {
    fn list<'de, A: SeqAccess<'de>>(items: A) -> Result<Self, A::Error> {
        Rules::list(items).map(Self)
    }

    fn member<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "rules" => self.0 = next(map)?,
            _ => skip(map)?,
        }
        Ok(())
    }
}

/// An array of rules as written; `None` for anything else.
#[derive(Default)]
struct Rules(Option<Vec<Written>>);

impl Lenient for Rules {
    fn list<'de, A: SeqAccess<'de>>(mut items: A) -> Result<Self, A::Error> {
        let mut rules = Vec::new();
        while let Some(Read(rule)) = items.next_element::<Read<Written>>()? {
            rules.push(rule);
        }
        Ok(Self(Some(rules)))
    }
}

/// One rule as `guards.json` writes it (an entry that is not an object has no trigger).
#[derive(Default)]
struct Written {
    id: Loose,
    trigger: WrittenTrigger,
    payload: Payload,
    mode: Loose,
    urgency: Loose,
    priority: Loose,
    inject: Loose,
    whitelist: Loose,
    tool_filter: ToolFilter,
}

impl Lenient for Written {
    fn member<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "id" => self.id = next(map)?,
            "trigger" => self.trigger = next(map)?,
            "payload" => self.payload = next(map)?,
            "mode" => self.mode = next(map)?,
            "urgency" => self.urgency = next(map)?,
            "priority" => self.priority = next(map)?,
            "inject" => self.inject = next(map)?,
            "whitelist" => self.whitelist = next(map)?,
            "toolFilter" => self.tool_filter = next(map)?,
            _ => skip(map)?,
        }
        Ok(())
    }
}

/// A rule's `trigger` as written.
#[derive(Default)]
struct WrittenTrigger {
    kind: Loose,
    condition: Condition,
}

impl Lenient for WrittenTrigger {
    fn member<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "type" => self.kind = next(map)?,
            "condition" => self.condition = next(map)?,
            _ => skip(map)?,
        }
        Ok(())
    }
}

/// A trigger's `condition` as written: the members of every trigger type.
#[derive(Default)]
struct Condition {
    gte: Loose,
    eq: Loose,
    no_active_session: Loose,
    matches: Loose,
    field: Loose,
    non_empty: Loose,
}

impl Lenient for Condition {
    fn member<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        let slot = match key {
            "gte" => &mut self.gte,
            "eq" => &mut self.eq,
            "noActiveSession" => &mut self.no_active_session,
            "matches" => &mut self.matches,
            "field" => &mut self.field,
            "nonEmpty" => &mut self.non_empty,
            _ => return skip(map),
        };
        *slot = next(map)?;
        Ok(())
    }
}

/// A rule's `toolFilter` as written.
#[derive(Default)]
struct ToolFilter {
    include: Option<Loose>,
    exclude: Loose,
}

impl Lenient for ToolFilter {
    fn member<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "include" => self.include = Some(next(map)?),
            "exclude" => self.exclude = next(map)?,
            _ => skip(map)?,
        }
        Ok(())
    }
}

impl WrittenTrigger {
    /// The trigger; `None` for an unknown type or a condition its type cannot use.
    fn trigger(self) -> Option<Trigger> {
        let condition = self.condition;
        Some(match self.kind.as_text()? {
            "contextThreshold" => {
                let gte = condition.gte;
                if gte.as_text() == Some("OVERFLOW_THRESHOLD") {
                    Trigger::ContextThreshold(Threshold::Overflow)
                } else {
                    Trigger::ContextThreshold(Threshold::Value(gte.number()?))
                }
            }
            "lifecycle" => Trigger::Lifecycle {
                no_active_session: condition.no_active_session.is_true(),
                eq: condition.eq.into_text(),
            },
            "phase" => Trigger::Phase(condition.matches.into_text()?),
            "toolCount" => Trigger::ToolCount {
                field: condition.field.into_text()?,
                gte_field: condition.gte.into_text().unwrap_or_default(),
            },
            "discovery" if condition.non_empty.is_true() => {
                Trigger::Discovery(condition.field.into_text()?)
            }
            "perTranscriptToolCount" => Trigger::PerTranscriptToolCount {
                gte: condition.gte.number(),
                eq: condition.eq.number(),
            },
            _ => return None,
        })
    }
}

impl Written {
    /// The rule at `index` of the file; `None` for an unknown trigger type (or none). Missing
    /// members take defaults: mode `inline`, urgency `allow`, priority 999.
    fn rule(self, index: usize) -> Option<Rule> {
        Some(Rule {
            trigger: self.trigger.trigger()?,
            id: self
                .id
                .into_text()
                .unwrap_or_else(|| format!("rule-{index}")),
            payload: self.payload,
            mode: Mode::parse(self.mode.as_text()),
            urgency: Urgency::parse(self.urgency.as_text()),
            priority: self.priority.number().unwrap_or(999.0),
            once: self.inject.as_text() == Some("once"),
            whitelist: self.whitelist.into_strings(),
            include: self.tool_filter.include.map(Loose::into_strings),
            exclude: self.tool_filter.exclude.into_strings(),
        })
    }
}
