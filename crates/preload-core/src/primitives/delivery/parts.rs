//! Cutting a long text into labelled parts that each fit an output.

use super::{assemble, chars, trim_trailing_newlines};

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
                    assemble(&[
                        &header(i + 1, total),
                        "\n",
                        trim_trailing_newlines(part),
                        "\n",
                    ])
                })
                .collect();
        }
        n = parts.len();
    }
}

/// `body` cut into pieces of at most `room` characters, each cut after the last line end in
/// its last fifth when there is one.
pub(super) fn split_at_lines(body: &str, room: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let floor = char_offset(rest, room * 4 / 5);
        let mut end = floor + char_offset(&rest[floor..], room - room * 4 / 5);
        if end < rest.len() {
            if let Some(line_end) =
                crate::primitives::bytes::rfind(b'\n', &rest.as_bytes()[floor..end])
            {
                end = floor + line_end + 1;
            }
        }
        let (part, after) = rest.split_at(end);
        out.push(part);
        rest = after;
    }
    out
}

/// The byte offset of the character `count` characters into `text`, or `text.len()` when it
/// has no more. Counts character starts (bytes that are not UTF-8 continuations, `10xxxxxx`)
/// 64 bytes at a time, in a loop the compiler turns into vector compares and adds, and walks
/// bytes only in the last 64.
fn char_offset(text: &str, count: usize) -> usize {
    const BLOCK: usize = 64;
    let bytes = text.as_bytes();
    let mut seen = 0;
    let mut at = 0;
    for block in bytes.chunks_exact(BLOCK) {
        let mut starts = 0_u8;
        for &byte in block {
            starts += u8::from(byte & 0xC0 != 0x80);
        }
        let starts = usize::from(starts);
        if seen + starts > count {
            break;
        }
        seen += starts;
        at += BLOCK;
    }
    // Character `count` starts in the block at `at`, in the bytes after it, or nowhere.
    for i in at..bytes.len() {
        if text.is_char_boundary(i) {
            if seen == count {
                return i;
            }
            seen += 1;
        }
    }
    bytes.len()
}
