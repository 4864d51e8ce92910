//! The state's text: the bytes `serde_json::to_string_pretty` writes (2-space indentation), from
//! a writer that copies the plain runs of a string eight bytes at a time.
//!
//! Every writing call renders its whole state; on a large one (346 KB, most of it file paths)
//! `serde_json`'s byte-by-byte escaping was a fifth of the call's instructions. A property test
//! holds this writer to `serde_json`'s output.
//!
//! Kept because `make bench` shows it: on the large state (`BENCH_ONLY=large`), three
//! interleaved runs each of this writer and of `serde_json::to_string_pretty` over the same
//! fields, the writing rows cost 0.5 to 0.9 times the no-op floor more with the library
//! (PostToolUse with 2 stashed 3.40-3.76x against 4.25-4.59x, the 3-file claim 4.83-5.33x
//! against 5.45-5.94x, a phase command 3.63-4.27x against 4.73-5.08x), while a row that
//! writes nothing moved by at most 0.13x (PostToolUse with nothing stashed, 2.09-2.17x against
//! 2.15-2.22x); with the library, two or three more rows missed the large state's 5x target.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::typed::Field;

/// `map` as `serde_json::to_string_pretty` writes it, and `extra` bytes of room after it.
#[cfg(test)]
pub fn to_string_map(map: &Map<String, Value>, extra: usize) -> String {
    to_string_fields(entries_of(map), extra)
}

/// The object of `fields`, in order, as `serde_json::to_string_pretty` writes the object they
/// are, and `extra` bytes of room after it: a state's fields, typed or not, or a record made of
/// another document's fields, written without copying them.
///
/// The text is written into a buffer of its size, found first: grown by doubling instead, the
/// render of a large state touched three times its size in fresh pages, each a page fault.
pub fn to_string_fields<'a>(
    fields: impl ExactSizeIterator<Item = (&'a str, Field<'a>)> + Clone,
    extra: usize,
) -> String {
    let mut out = String::with_capacity(entries_len(fields.clone(), 0) + extra);
    write_entries(&mut out, fields, 0);
    out
}

fn entries_of(
    map: &Map<String, Value>,
) -> impl ExactSizeIterator<Item = (&str, Field<'_>)> + Clone {
    map.iter()
        .map(|(key, value)| (key.as_str(), Field::Json(value)))
}

/// Longest text of a number ([`write_value`] writes `Number`'s own): `-`, 17 digits, `.`,
/// `e-308`.
const NUMBER_LEN: usize = 25;

/// The length of `value`'s text at `depth`, escapes aside (a string that has some takes one
/// more growth of the buffer).
fn value_len(value: &Value, depth: usize) -> usize {
    match value {
        Value::Null | Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(_) => NUMBER_LEN,
        Value::String(s) => s.len() + 2,
        // `[`, the items on lines of their own with commas between, `]` on a line of its own.
        Value::Array(items) => array_len(items, depth),
        Value::Object(map) => object_len(map, depth),
    }
}

/// [`value_len`] of a field, typed or not.
fn field_len(field: Field<'_>, depth: usize) -> usize {
    match field {
        Field::Json(value) => value_len(value, depth),
        Field::Text(text) => text.len() + 2,
        Field::List(items) => array_len(items, depth),
    }
}

fn array_len(items: &[Value], depth: usize) -> usize {
    if items.is_empty() {
        return 2;
    }
    // `[`, the items on lines of their own with commas between, `]` on a line of its own.
    let lines: usize = items.iter().map(|item| value_len(item, depth + 1)).sum();
    2 + lines + items.len() * (2 + 2 * (depth + 1)) + 2 * depth
}

fn object_len(map: &Map<String, Value>, depth: usize) -> usize {
    entries_len(entries_of(map), depth)
}

fn entries_len<'a>(
    entries: impl ExactSizeIterator<Item = (&'a str, Field<'a>)>,
    depth: usize,
) -> usize {
    let n = entries.len();
    if n == 0 {
        return 2;
    }
    let lines: usize = entries
        .map(|(key, item)| key.len() + 4 + field_len(item, depth + 1))
        .sum();
    2 + lines + n * (2 + 2 * (depth + 1)) + 2 * depth
}

fn newline(out: &mut String, depth: usize) {
    out.push('\n');
    for _ in 0..depth {
        out.push_str("  ");
    }
}

fn write_value(out: &mut String, value: &Value, depth: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        // `Number`'s text is the one its serialisation writes (itoa, ryu).
        Value::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Value::String(s) => write_str(out, s),
        Value::Array(items) => write_array(out, items, depth),
        Value::Object(map) => write_object(out, map, depth),
    }
}

fn write_field(out: &mut String, field: Field<'_>, depth: usize) {
    match field {
        Field::Json(value) => write_value(out, value, depth),
        Field::Text(text) => write_str(out, text),
        Field::List(items) => write_array(out, items, depth),
    }
}

fn write_array(out: &mut String, items: &[Value], depth: usize) {
    if items.is_empty() {
        out.push_str("[]");
        return;
    }
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        newline(out, depth + 1);
        write_value(out, item, depth + 1);
    }
    newline(out, depth);
    out.push(']');
}

fn write_object(out: &mut String, map: &Map<String, Value>, depth: usize) {
    write_entries(out, entries_of(map), depth);
}

fn write_entries<'a>(
    out: &mut String,
    entries: impl ExactSizeIterator<Item = (&'a str, Field<'a>)>,
    depth: usize,
) {
    if entries.len() == 0 {
        out.push_str("{}");
        return;
    }
    out.push('{');
    for (i, (key, item)) in entries.enumerate() {
        if i > 0 {
            out.push(',');
        }
        newline(out, depth + 1);
        write_str(out, key);
        out.push_str(": ");
        write_field(out, item, depth + 1);
    }
    newline(out, depth);
    out.push('}');
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// True when one of the eight bytes of `word` is a control character, `"` or `\` (the bytes
/// JSON escapes). May answer true for a word that has none after one that does; never false
/// for one that has one.
fn needs_escape(word: u64) -> bool {
    let below_space = word.wrapping_sub(ONES * 0x20) & !word;
    let quote =
        (word ^ (ONES * u64::from(b'"'))).wrapping_sub(ONES) & !(word ^ (ONES * u64::from(b'"')));
    let backslash =
        (word ^ (ONES * u64::from(b'\\'))).wrapping_sub(ONES) & !(word ^ (ONES * u64::from(b'\\')));
    (below_space | quote | backslash) & HIGHS != 0
}

/// True for a byte JSON escapes.
fn is_escaped(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

/// `s` as a JSON string, escaped as `serde_json` escapes it: the runs between escapes are
/// found eight bytes at a time and copied whole.
fn write_str(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push('"');
    let mut start = 0;
    let mut i = 0;
    loop {
        while let Some(word) = bytes[i..].first_chunk::<8>() {
            if needs_escape(u64::from_le_bytes(*word)) {
                break;
            }
            i += 8;
        }
        // At most the rest of a word that holds an escape, or the last few bytes.
        while i < bytes.len() && !is_escaped(bytes[i]) {
            i += 1;
        }
        let Some(&byte) = bytes.get(i) else {
            break;
        };
        out.push_str(&s[start..i]);
        match byte {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            _ => {
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(byte >> 4)]));
                out.push(char::from(HEX[usize::from(byte & 0xf)]));
            }
        }
        i += 1;
        start = i;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Map, Value, json};

    use super::to_string_map;
    use crate::state::typed::Field;

    fn to_string(value: &Value) -> String {
        let mut map = Map::new();
        map.insert("v".into(), value.clone());
        to_string_map(&map, 0)
    }

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            // Every kind of character, control characters and escapes dense among them.
            proptest::collection::vec(
                prop_oneof![
                    3 => proptest::char::range('\0', '\u{7f}'),
                    1 => any::<char>(),
                    1 => Just('"'),
                    1 => Just('\\'),
                ],
                0..40
            )
            .prop_map(|chars| Value::String(chars.into_iter().collect())),
            // Paths: plain runs of any length with at most one escape between them, so the
            // escape falls in and out of the last eight bytes.
            (
                "[a-z/._]{0,24}",
                proptest::option::of(prop_oneof![
                    Just('"'),
                    Just('\\'),
                    Just('\n'),
                    Just('\u{1}')
                ]),
                "[a-z/._]{0,24}",
            )
                .prop_map(|(head, escape, tail)| {
                    Value::String(format!(
                        "{head}{}{tail}",
                        escape.map(String::from).unwrap_or_default()
                    ))
                }),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                proptest::collection::vec((".{0,12}", inner), 0..8)
                    .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
            ]
        })
    }

    proptest! {
        #[test]
        fn writes_what_serde_json_writes(value in value()) {
            let expected = serde_json::to_string_pretty(&json!({"v": value})).unwrap_or_default();
            prop_assert_eq!(to_string(&value), expected);
        }

        /// A record of borrowed fields, typed or not, is written as the map of their values.
        #[test]
        fn writes_borrowed_fields_as_their_map(value in value(), other in value(), text in ".{0,12}") {
            let items: Vec<Value> = match &other {
                Value::Array(items) => items.clone(),
                other => vec![other.clone()],
            };
            let fields = [
                ("v", Field::Json(&value)),
                ("w", Field::List(&items)),
                ("t", Field::Text(&text)),
            ];
            let map: Map<String, Value> =
                fields.iter().map(|(k, f)| ((*k).to_owned(), f.to_value())).collect();
            prop_assert_eq!(
                super::to_string_fields(fields.iter().copied(), 0),
                to_string_map(&map, 0)
            );
        }

        /// The buffer is sized from the text's length: exactly without escapes and numbers,
        /// short by at most the escapes' bytes, long by at most a number's room per number.
        #[test]
        fn sizes_the_text_it_writes(value in value()) {
            fn numbers(value: &Value) -> usize {
                match value {
                    Value::Number(_) => 1,
                    Value::Array(items) => items.iter().map(numbers).sum(),
                    Value::Object(map) => map.values().map(numbers).sum(),
                    _ => 0,
                }
            }
            let mut map = Map::new();
            map.insert("v".into(), value.clone());
            let text = to_string_map(&map, 0);
            let size = super::object_len(&map, 0);
            let escapes = text.matches('\\').count() * 5;
            prop_assert!(size + escapes >= text.len(), "{size} for {} bytes", text.len());
            prop_assert!(size <= text.len() + numbers(&value) * super::NUMBER_LEN);
            if escapes == 0 && numbers(&value) == 0 {
                prop_assert_eq!(size, text.len());
            }
        }
    }

    #[test]
    fn escapes_at_every_offset_of_a_word() {
        for offset in 0..17 {
            for special in ['"', '\\', '\n', '\u{1}', '\u{1f}', '\u{7f}', '§'] {
                let s = format!("{}{special}{}", "a".repeat(offset), "b".repeat(9));
                let value = json!([s]);
                assert_eq!(
                    to_string(&value),
                    serde_json::to_string_pretty(&json!({"v": value})).unwrap_or_default(),
                    "{s:?}"
                );
            }
        }
    }
}
