//! Cutting a long text into labelled parts that each fit an output.

use super::{chars, trim_trailing_newlines};

/// Cut `content` into parts of at most `limit` characters, each `header(i, n)` on its own line,
/// the piece, and a newline; cut at a line end where one falls in the last fifth of a part.
/// Deterministic for the same input.
pub fn labelled_parts(
    content: &str,
    limit: usize,
    header: impl Fn(usize, usize) -> String,
) -> Vec<String> {
    let body = trim_trailing_newlines(content);
    let mut n = 2usize;
    loop {
        // The header's line end and the part's final newline.
        let room = limit.saturating_sub(chars(&header(n, n)) + 2).max(64);
        let parts = split_at_lines(body, room);
        if parts.len() <= n {
            let total = parts.len();
            return parts
                .into_iter()
                .enumerate()
                .map(|(i, part)| {
                    format!(
                        "{}\n{}\n",
                        header(i + 1, total),
                        trim_trailing_newlines(part)
                    )
                })
                .collect();
        }
        n = parts.len();
    }
}

/// `body` cut into pieces of at most `room` characters, each cut after the last line end in
/// its last fifth when there is one.
pub(super) fn split_at_lines(body: &str, room: usize) -> Vec<&str> {
    // The byte offset of the character `count` characters into `text`, or its end; found
    // without walking the characters when the bytes before it are all ASCII.
    let offset = |text: &str, count: usize| match text.as_bytes().get(..count) {
        None => text.len(),
        Some(head) if head.is_ascii() => count,
        Some(_) => text
            .char_indices()
            .nth(count)
            .map_or(text.len(), |(i, _)| i),
    };
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let mut end = offset(rest, room);
        if end < rest.len() {
            let floor = offset(rest, room * 4 / 5);
            if let Some(line_end) = rest[floor..end].rfind('\n') {
                end = floor + line_end + 1;
            }
        }
        let (part, after) = rest.split_at(end);
        out.push(part);
        rest = after;
    }
    out
}
