//! What a delivery of one path sends: a context pack rendered, a growing log's last lines, or
//! the file itself; with the note its block header carries and the stamp it is recorded with.

use std::path::Path;

use crate::mechanisms::context::Context;
use crate::mechanisms::packs;
use crate::primitives::delivery::{self, FileBody};
use crate::state::stamps::Stamp;

/// What goes out for one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Source {
    /// The text, or why there is none.
    pub(super) body: FileBody,
    /// Notes for the block header (`last 100 of 532 lines`).
    pub(super) labels: Vec<String>,
    /// What the delivery is recorded as, for change detection; `None` for what is not followed
    /// (a log, a file of a session, a file too large to inline).
    pub(super) stamp: Option<Stamp>,
}

impl Source {
    fn unavailable() -> Self {
        Self {
            body: FileBody::Unavailable,
            labels: Vec::new(),
            stamp: None,
        }
    }
}

/// What a delivery of `path` (normalised) sends.
pub(super) fn read(ctx: &Context, path: &str, max_bytes: u64) -> Source {
    if packs::is_key(path) {
        let loaded = ctx.packs();
        let Some(pack) = loaded.by_key(path) else {
            return Source::unavailable();
        };
        let rendered = loaded.rendered(pack, max_bytes);
        let stamp = Stamp::of_sources(&rendered.sources, &rendered.text);
        return Source {
            body: FileBody::Text(rendered.text),
            labels: Vec::new(),
            stamp: Some(stamp),
        };
    }
    let file = Path::new(path);
    if let Some(lines) = ctx.packs().tail_lines(file) {
        return tail(file, lines, max_bytes);
    }
    let (body, read) = ctx.read_for_delivery(file, max_bytes);
    let stamp = match (&body, read) {
        (FileBody::Text(text), Some(read)) if !in_a_session(ctx, file) => {
            Some(Stamp::of_file(path, text, &read))
        }
        _ => None,
    };
    Source {
        body,
        labels: Vec::new(),
        stamp,
    }
}

/// True for a file under a sessions directory: the session's own documents, which the agent
/// writes itself and which change all the time.
fn in_a_session(ctx: &Context, file: &Path) -> bool {
    ctx.sessions_dirs().iter().any(|dir| file.starts_with(dir))
}

/// The last `lines` lines of a log, read from its end (at most `max_bytes`).
fn tail(file: &Path, lines: usize, max_bytes: u64) -> Source {
    let Ok((bytes, size)) = crate::primitives::file::read_tail(file, max_bytes) else {
        return Source::unavailable();
    };
    let whole = bytes.len() as u64 == size;
    let text = crate::primitives::file::lossy_text(bytes);
    let text = delivery::trim_trailing_newlines(&text);
    if text.trim().is_empty() {
        return Source {
            body: FileBody::Empty,
            labels: Vec::new(),
            stamp: None,
        };
    }
    // A tail read from the middle of the file starts inside a line: that line is not counted.
    let all: Vec<&str> = text.lines().skip(usize::from(!whole)).collect();
    let (kept, labels) = if whole && all.len() <= lines {
        (all, Vec::new())
    } else {
        let kept = all[all.len().saturating_sub(lines)..].to_vec();
        let label = if whole {
            format!(
                "{}{} of {} lines",
                delivery::LABEL_TAIL,
                kept.len(),
                all.len()
            )
        } else {
            format!("{}{} lines", delivery::LABEL_TAIL, kept.len())
        };
        (kept, vec![label])
    };
    Source {
        body: FileBody::Text(kept.join("\n")),
        labels,
        stamp: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write as _;

    #[test]
    fn a_log_goes_out_as_its_last_lines_with_a_note() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("DIALOGUE.md");
        let text = (1..=250).fold(String::new(), |mut out, i| {
            let _ = writeln!(out, "line {i}");
            out
        });
        std::fs::write(&log, &text).unwrap();
        let got = tail(&log, 100, 1 << 20);
        assert_eq!(got.labels, ["last 100 of 250 lines"]);
        let FileBody::Text(body) = got.body else {
            panic!("{got:?}")
        };
        assert!(body.starts_with("line 151\n") && body.ends_with("line 250"));
        assert_eq!(got.stamp, None, "a log is not followed for changes");
        // Read from the middle: the cut line is dropped and the total unknown.
        let got = tail(&log, 3, 30);
        assert_eq!(got.labels, ["last 3 lines"]);
        assert_eq!(
            got.body,
            FileBody::Text("line 248\nline 249\nline 250".into())
        );
        // A short log goes out whole, without a note.
        let short = tmp.path().join("short.md");
        std::fs::write(&short, "a\nb\n").unwrap();
        let got = tail(&short, 100, 1 << 20);
        assert!(got.labels.is_empty());
        assert_eq!(got.body, FileBody::Text("a\nb".into()));
    }
}
