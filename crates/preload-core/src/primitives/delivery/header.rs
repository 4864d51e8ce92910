//! A block header's inside, read into its parts.

use super::{header_path, headers};

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

/// The paths a text carries (whole or in parts) as a new text of a file delivered before (its note:
/// `[Preloaded: <path> (updated)]`), in order, each once.
pub fn renewed_paths(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for header in headers(text).map(parse_header) {
        if header.renewed && !out.iter().any(|p| p == header.path) {
            out.push(header.path.to_owned());
        }
    }
    out
}

/// Of a file a text holds some labelled parts of, but not every one of the `n`: the run of
/// parts it holds from its lowest on without a gap (the rest went out, or goes out, with other
/// answers).
pub struct Cut {
    /// The file's path.
    pub path: String,
    /// How many parts its cut has.
    pub n: usize,
    /// The lowest part it holds (1-based).
    pub first: usize,
    /// The last part of the run from `first` on.
    pub last: usize,
}

/// The files of which `text` holds some labelled parts (`(part i/n)`) but not every one.
pub fn cut_files(text: &str) -> Vec<Cut> {
    let mut parts: Vec<(String, usize, Vec<usize>)> = Vec::new();
    for inner in super::headers(text) {
        let Some((_, label)) = inner.rsplit_once(" (part ") else {
            continue;
        };
        let Some((i, n)) = label
            .strip_suffix(')')
            .and_then(|l| l.split_once('/'))
            .and_then(|(i, n)| Some((i.parse::<usize>().ok()?, n.parse::<usize>().ok()?)))
        else {
            continue;
        };
        let path = super::header_path(inner);
        match parts.iter_mut().find(|(p, ..)| p == path) {
            Some((_, _, seen)) => seen.push(i),
            None => parts.push((path.to_owned(), n, vec![i])),
        }
    }
    parts
        .into_iter()
        .filter(|(_, n, seen)| !(1..=*n).all(|i| seen.contains(&i)))
        .filter_map(|(path, n, seen)| {
            let first = seen.iter().copied().filter(|i| *i >= 1).min()?;
            let last = (first..=n).take_while(|i| seen.contains(i)).last()?;
            Some(Cut {
                path,
                n,
                first,
                last,
            })
        })
        .collect()
}
