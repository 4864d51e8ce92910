//! A block header's inside, read into its parts.

use super::header_path;

/// A block header's inside, read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<'a> {
    /// The file's path.
    pub path: &'a str,
    /// A note says this is a new text of a file delivered before: it changed on disk
    /// (`updated`), or a growing log's last lines (`last …`).
    pub renewed: bool,
    /// Its part label, `(i, n)` of `(part i/n)`.
    pub part: Option<(usize, usize)>,
}

/// Read a header's inside (`<path>[ (<note>)][ (part i/n)]`).
pub fn parse_header(inner: &str) -> Header<'_> {
    let part = inner.rsplit_once(" (part ").and_then(|(_, label)| {
        let (i, n) = label.strip_suffix(')')?.split_once('/')?;
        Some((i.parse().ok()?, n.parse().ok()?))
    });
    let path = header_path(inner);
    Header {
        path,
        renewed: inner.len() > path.len()
            && inner[path.len()..].starts_with(" (")
            && !inner[path.len()..].starts_with(" (part "),
        part,
    }
}
