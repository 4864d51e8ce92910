//! One top-level member of a JSON object, read without parsing the rest (the hot path's peek),
//! and a parse of some members only.

use serde_json::{Map, Value};

use super::ParseError;

/// The raw text of the value of top-level member `key` of a JSON object, found by skipping the
/// members before it without building them, and without reading past it.
///
/// A quick look for the hot path (whose `pid` does a state name?): the document after the
/// member is not checked. `None` when the text is not an object or has no such member.
pub fn peek_member<'t>(text: &'t str, key: &str) -> Option<&'t str> {
    let bytes = text.as_bytes();
    let mut at = skip_space(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    loop {
        at = skip_space(bytes, at);
        // The end of the object (`}`) or anything but a key: no such member.
        if *bytes.get(at)? != b'"' {
            return None;
        }
        let key_end = skip_string(bytes, at)?;
        let found = text.get(at + 1..key_end - 1)? == key;
        at = skip_space(bytes, key_end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        at = skip_space(bytes, at + 1);
        let value_end = skip_value(bytes, at)?;
        if found {
            return text.get(at..value_end);
        }
        at = skip_space(bytes, value_end);
        match bytes.get(at)? {
            b',' => at += 1,
            _ => return None,
        }
    }
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

/// The index just past the string starting at `at` (which is `"`).
fn skip_string(bytes: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    loop {
        match bytes.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// The index just past the value starting at `at`.
fn skip_value(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => skip_string(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            loop {
                match bytes.get(i)? {
                    b'"' => {
                        i = skip_string(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let mut i = at;
            while bytes
                .get(i)
                .is_some_and(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace())
            {
                i += 1;
            }
            (i > at).then_some(i)
        }
    }
}

/// A process ID held by top-level member `key` ([`peek_member`]): a positive whole number, or
/// a string of one.
pub fn peek_pid(text: &str, key: &str) -> Option<u32> {
    let raw = peek_member(text, key)?;
    raw.trim_matches('"').parse().ok().filter(|pid| *pid > 0)
}

/// The top-level `fields` of the JSON object `text`, the rest checked and skipped without being
/// built (see [`super::State::parse_fields`]).
pub(super) fn parse_only(text: &str, fields: &[&str]) -> Result<Map<String, Value>, ParseError> {
    parse_where(text, |key| fields.contains(&key))
}

/// [`parse_only`] of the top-level fields `keep` takes.
pub(super) fn parse_where(
    text: &str,
    keep: impl Fn(&str) -> bool,
) -> Result<Map<String, Value>, ParseError> {
    struct Only<F>(F);
    impl<'de, F: Fn(&str) -> bool> serde::de::Visitor<'de> for Only<F> {
        type Value = Map<String, Value>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut kept = Map::new();
            while let Some(key) = map.next_key::<String>()? {
                if (self.0)(&key) {
                    kept.insert(key, map.next_value::<Value>()?);
                } else {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
            Ok(kept)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let kept = serde::Deserializer::deserialize_map(&mut de, Only(keep))
        .and_then(|kept| de.end().map(|()| kept))?;
    Ok(kept)
}
