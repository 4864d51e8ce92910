//! Text laid out within a character budget: bullet lists that count what did not fit, fair
//! shares of a budget, files' content under a heading with a final line naming the files left
//! out or unreadable, and a text too large for one output cut into labelled pieces.

use std::path::PathBuf;

use crate::primitives::delivery::{self, FileBody, chars, shorten};

/// Room kept for the final line that names what did not fit.
const TRAILER_RESERVE: usize = 400;

/// `items` as `- item` lines within `room` characters; what does not fit is counted in a
/// last line made by `more`.
pub fn bullet_list(items: &[String], room: usize, more: impl Fn(usize) -> String) -> String {
    let mut out = String::new();
    for (i, item) in items.iter().enumerate() {
        let line = format!("- {item}\n");
        let rest = items.len() - i - 1;
        let tail = if rest > 0 { chars(&more(rest)) + 3 } else { 0 };
        if chars(&out) + chars(&line) + tail > room {
            out.push_str("- ");
            out.push_str(&more(items.len() - i));
            out.push('\n');
            return out;
        }
        out.push_str(&line);
    }
    out
}

/// Caps that share `total` characters fairly among strings of `lengths`: short ones keep their
/// length, the long ones split what is left equally (water-filling).
pub fn fair_caps(lengths: &[usize], total: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&i| lengths[i]);
    let mut caps = vec![0; lengths.len()];
    let mut left = total;
    for (done, &i) in order.iter().enumerate() {
        let share = left / (order.len() - done);
        caps[i] = lengths[i].min(share);
        left -= caps[i];
    }
    caps
}

/// One piece of the text: a block, the file it belongs to and which part it is.
struct Piece {
    text: String,
    path: String,
    part: usize,
    parts: usize,
}

/// `head`, then the content of `files` (each the file on disk and the name it is shown by) as
/// `[Preloaded: …]` blocks, a large one in parts, within `budget` characters: the blocks that
/// fit, in order, and a final line naming what did not fit or could not be read. Files larger
/// than `max_bytes` go out as a pointer block.
pub fn files_within(
    head: &str,
    files: &[(PathBuf, String)],
    budget: usize,
    max_bytes: u64,
) -> String {
    let part_limit = budget
        .saturating_sub(chars(head) + 1 + TRAILER_RESERVE)
        .max(delivery::MIN_BUDGET);
    let mut pieces = Vec::new();
    let mut unread = Vec::new();
    for (file, path) in files {
        let blocks = match delivery::read_for_delivery(file, max_bytes) {
            FileBody::Text(text) => delivery::file_parts(path, &text, part_limit),
            FileBody::Empty => vec![delivery::block(path, "(empty)")],
            FileBody::TooLarge(size) => vec![delivery::pointer_block(path, size, max_bytes)],
            FileBody::Unavailable => {
                unread.push(path.clone());
                continue;
            }
        };
        let parts = blocks.len();
        pieces.extend(blocks.into_iter().enumerate().map(|(i, text)| Piece {
            text,
            path: path.clone(),
            part: i + 1,
            parts,
        }));
    }
    for taken in (0..=pieces.len()).rev() {
        let body: Vec<&str> = std::iter::once(head)
            .chain(pieces[..taken].iter().map(|p| p.text.as_str()))
            .collect();
        let used = chars(&delivery::join_blocks(&body));
        if used > budget {
            continue;
        }
        let trailer = trailer(&pieces[taken..], &unread, budget.saturating_sub(used + 1));
        if chars(&trailer) + usize::from(!trailer.is_empty()) + used <= budget {
            let mut text = delivery::join_blocks(&body);
            if !trailer.is_empty() {
                text.push('\n');
                text.push_str(&trailer);
            }
            return text;
        }
    }
    shorten(head, budget)
}

/// The final line: files left out for lack of room and files that could not be read.
fn trailer(left: &[Piece], unread: &[String], room: usize) -> String {
    let mut names: Vec<String> = Vec::new();
    let mut last: Option<&str> = None;
    for piece in left {
        if last == Some(piece.path.as_str()) {
            continue;
        }
        last = Some(piece.path.as_str());
        names.push(if piece.part > 1 {
            format!("{} (from part {}/{})", piece.path, piece.part, piece.parts)
        } else {
            piece.path.clone()
        });
    }
    let mut sentences = Vec::new();
    if !names.is_empty() {
        sentences.push((
            "Not included above for lack of room; read with the Read tool: ",
            names,
        ));
    }
    if !unread.is_empty() {
        sentences.push(("Could not be read by the hook: ", unread.to_vec()));
    }
    if sentences.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    for (lead, names) in sentences {
        let mut line = lead.to_owned();
        for (i, name) in names.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            let rest = names.len() - i;
            let more = format!("{sep}and {rest} more");
            if chars(&out) + chars(&line) + chars(sep) + chars(name) + 12 + chars(&more) > room
                && rest > 1
            {
                line.push_str(&more);
                break;
            }
            line.push_str(sep);
            line.push_str(name);
        }
        line.push_str(".\n");
        out.push_str(&line);
    }
    out
}

/// Cut `text` into pieces of at most `limit` characters each, in order, so that nothing is cut
/// silently: `[Preloaded: …]` blocks stay whole where they fit and a larger one goes out in the
/// labelled parts of `part_limit` characters every delivery of the file cuts
/// ([`delivery::file_parts`]); a file's part stays as it is; other text larger than `limit`
/// goes out in parts headed `[<label> (part i/n)]`. A text within `limit` is one piece
/// (trailing newlines trimmed).
///
/// A file's part can exceed `limit` (it waits for an output with room for it); another piece
/// only when `limit` is smaller than a part's header plus a few dozen characters.
pub fn split_labelled(text: &str, label: &str, limit: usize, part_limit: usize) -> Vec<String> {
    let text = delivery::trim_trailing_newlines(text);
    if chars(text) <= limit {
        return vec![text.to_owned()];
    }
    let mut pieces = Vec::new();
    for segment in segments(text) {
        if chars(segment) <= limit || is_file_part(segment) {
            pieces.push(segment.to_owned());
            continue;
        }
        let parts = match whole_block(segment) {
            Some((path, body)) => delivery::file_parts(path, body, part_limit),
            None => {
                delivery::labelled_parts(segment, limit, |i, n| format!("[{label} (part {i}/{n})]"))
            }
        };
        pieces.extend(
            parts
                .iter()
                .map(|p| delivery::trim_trailing_newlines(p).to_owned()),
        );
    }
    pieces
}

/// The text before the first block, and each `[Preloaded: …]` block (a header at the start of
/// the text or after a blank line), trailing newlines trimmed; empty ones left out.
fn segments(text: &str) -> Vec<&str> {
    const SEPARATOR: &str = "\n\n[Preloaded: ";
    let mut starts = vec![0];
    let mut from = 0;
    while let Some(at) = text[from..].find(SEPARATOR) {
        let start = from + at + 2;
        starts.push(start);
        from = start;
    }
    starts.push(text.len());
    starts
        .windows(2)
        .map(|w| delivery::trim_trailing_newlines(&text[w[0]..w[1]]))
        .filter(|s| !s.is_empty())
        .collect()
}

/// Whether `segment` is one labelled part of a file's block (`[Preloaded: <path> (part i/n)]`).
pub fn is_file_part(segment: &str) -> bool {
    segment
        .lines()
        .next()
        .and_then(|head| head.strip_prefix(delivery::BLOCK_HEADER))
        .is_some_and(|inner| inner.contains(" (part "))
}

/// The path and body of a whole `[Preloaded: <path>]` block (not a part of one).
fn whole_block(segment: &str) -> Option<(&str, &str)> {
    let (head, body) = segment.split_once('\n')?;
    let path = head
        .strip_prefix(delivery::BLOCK_HEADER)?
        .strip_suffix(']')?;
    (!path.contains(" (part ")).then_some((path, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fair_caps_keep_short_strings_whole() {
        assert_eq!(fair_caps(&[10, 100, 100], 110), vec![10, 50, 50]);
        assert_eq!(fair_caps(&[5, 5], 100), vec![5, 5]);
        assert_eq!(fair_caps(&[9, 9, 9], 0), vec![0, 0, 0]);
    }

    #[test]
    fn split_labelled_leaves_what_fits_and_labels_every_cut() {
        assert_eq!(split_labelled("short\n\n", "r", 100, 100), vec!["short"]);
        let loose = (0..60)
            .map(|i| format!("- entry {i} → [Preloaded: /x/{i}]\n"))
            .collect::<Vec<_>>()
            .concat();
        let pieces = split_labelled(&loose, "session-start", 400, 400);
        assert!(pieces.len() > 1);
        for (i, piece) in pieces.iter().enumerate() {
            assert!(chars(piece) <= 400, "{piece}");
            let head = piece.lines().next().unwrap();
            assert_eq!(
                head,
                format!("[session-start (part {}/{})]", i + 1, pieces.len())
            );
        }
        let rebuilt: Vec<&str> = pieces
            .iter()
            .map(|p| p.split_once('\n').unwrap().1)
            .collect();
        assert_eq!(
            rebuilt.join("\n"),
            loose.trim_end(),
            "a mid-line `[Preloaded:` starts no block"
        );
    }

    #[test]
    fn a_bullet_list_counts_what_does_not_fit() {
        let items: Vec<String> = (0..10).map(|i| format!("item-{i}")).collect();
        let all = bullet_list(&items, 1_000, |n| format!("{n} more"));
        assert_eq!(all.lines().count(), 10);
        let some = bullet_list(&items, 40, |n| format!("{n} more"));
        assert!(chars(&some) <= 40, "{some}");
        assert!(some.ends_with(" more\n"), "{some}");
    }
}
