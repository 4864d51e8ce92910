//! The bytes of a cache file (the layout is in the module's documentation): written whole by
//! the registration that generates, read one slot at a time by the others.

use std::borrow::Cow;
use std::fs;
use std::ops::Range;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use super::{Chunk, FRESH, Slots, reslice};
use crate::primitives::clock;
use crate::state;

/// The first line of a cache file.
const MAGIC: &str = "preload-start-cache 2";
/// What a reader reads at once from the start of the file: the index, and often its slot.
const HEAD: usize = 16 * 1024;

/// The bytes of a cache file for `slots`, one slot per registration.
pub(super) fn encode(slots: &Slots) -> Vec<u8> {
    let line = |n: usize| n.checked_ilog10().map_or(1, |d| d as usize + 1) + 1;
    let mut ends = Vec::with_capacity(slots.len());
    let mut end = 0;
    for slot in slots {
        end += line(slot.len())
            + slot
                .iter()
                .map(|b| line(b.len()) + b.len() + 1)
                .sum::<usize>();
        ends.push(end.to_string());
    }
    let head = format!("{MAGIC}\n{}\n{}\n", slots.len(), ends.join(" "));
    let mut out = Vec::with_capacity(head.len() + end);
    out.extend_from_slice(head.as_bytes());
    for slot in slots {
        out.extend_from_slice(format!("{}\n", slot.len()).as_bytes());
        for block in slot {
            out.extend_from_slice(format!("{}\n", block.len()).as_bytes());
            out.extend_from_slice(block.as_bytes());
            out.push(b'\n');
        }
    }
    out
}

/// Bytes read front to back.
struct Decoder<'a> {
    rest: &'a [u8],
}

impl<'a> Decoder<'a> {
    /// The next line, without its line end.
    fn line(&mut self) -> Option<&'a [u8]> {
        let end = crate::primitives::bytes::find(b'\n', self.rest)?;
        let (line, rest) = self.rest.split_at(end);
        self.rest = rest.get(1..)?;
        Some(line)
    }

    /// The next line as a count.
    fn count(&mut self) -> Option<usize> {
        std::str::from_utf8(self.line()?).ok()?.parse().ok()
    }

    /// The next block's bytes, unchecked.
    fn block(&mut self) -> Option<&'a [u8]> {
        let len = self.count()?;
        let block = self.rest.get(..len)?;
        if self.rest.get(len) != Some(&b'\n') {
            return None;
        }
        self.rest = self.rest.get(len + 1..)?;
        Some(block)
    }

    /// The blocks of a slot that `bytes` hold exactly, each checked as UTF-8.
    fn slot(bytes: &[u8]) -> Option<Vec<String>> {
        let mut decoder = Decoder { rest: bytes };
        let blocks = decoder.count()?;
        let slot: Option<Vec<String>> = (0..blocks)
            .map(|_| Some(std::str::from_utf8(decoder.block()?).ok()?.to_owned()))
            .collect();
        decoder.rest.is_empty().then_some(slot?)
    }
}

/// Where the slots of a cache file of `len` bytes are, from its first bytes.
struct Index {
    /// Where the body starts.
    body: usize,
    /// Where each slot ends in the body.
    ends: Vec<usize>,
}

impl Index {
    /// The index at the start of `head`; `None` unless it is whole and agrees with `len`.
    fn parse(head: &[u8], len: usize) -> Option<Self> {
        let mut decoder = Decoder { rest: head };
        if decoder.line()? != MAGIC.as_bytes() {
            return None;
        }
        let n = decoder.count()?;
        let ends_line = std::str::from_utf8(decoder.line()?).ok()?;
        let ends: Vec<usize> = ends_line
            .split(' ')
            .filter(|_| n > 0)
            .map(|e| e.parse().ok())
            .collect::<Option<_>>()?;
        let body = head.len() - decoder.rest.len();
        let in_order = ends.windows(2).all(|w| w[0] <= w[1]);
        let whole = body.checked_add(ends.last().copied().unwrap_or(0)) == Some(len);
        (ends.len() == n && in_order && whole).then_some(Self { body, ends })
    }

    /// The bytes of slot `i` in the file.
    fn slot(&self, i: usize) -> Option<Range<usize>> {
        let start = if i == 0 { 0 } else { *self.ends.get(i - 1)? };
        Some(self.body + start..self.body + *self.ends.get(i)?)
    }
}

/// Slot `chunk.index` of a cache file of `len` bytes whose first bytes are `head`, with `range`
/// reading any other bytes of it; cut again for `chunk.total` when it was cut for another
/// number. `None` when the file is not a whole cache file or the slot is not whole.
pub(super) fn decode_with(
    head: &[u8],
    len: usize,
    range: impl Fn(Range<usize>) -> Option<Vec<u8>>,
    chunk: Chunk,
    budget: usize,
) -> Option<Vec<String>> {
    let index = match Index::parse(head, len) {
        Some(index) => index,
        // An index longer than the first read (a thousand registrations).
        None if head.len() < len => return decode(&range(0..len)?, chunk, budget),
        None => return None,
    };
    let bytes = |r: Range<usize>| match head.get(r.clone()) {
        Some(b) => Some(Cow::Borrowed(b)),
        None => range(r).map(Cow::Owned),
    };
    let n = index.ends.len();
    if n == chunk.total {
        return Decoder::slot(&bytes(index.slot(chunk.index)?)?);
    }
    let body = bytes(index.body..len)?;
    let all: Slots = (0..n)
        .map(|i| {
            let r = index.slot(i)?;
            Decoder::slot(body.get(r.start - index.body..r.end - index.body)?)
        })
        .collect::<Option<_>>()?;
    reslice(n, all, chunk.total, budget)
        .into_iter()
        .nth(chunk.index)
}

/// [`decode_with`] on a whole cache file's `bytes`.
pub(super) fn decode(bytes: &[u8], chunk: Chunk, budget: usize) -> Option<Vec<String>> {
    decode_with(
        bytes,
        bytes.len(),
        |r| bytes.get(r).map(<[u8]>::to_vec),
        chunk,
        budget,
    )
}

/// Slot `chunk.index` from the cache file at `path`, read without following symlinks: its first
/// bytes, then the slot's when they lie further; `None` when absent, stale, foreign or bad.
pub(super) fn read(path: &Path, chunk: Chunk, budget: usize) -> Option<Vec<String>> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(crate::primitives::file::NO_FOLLOW_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.uid() != nix::unistd::geteuid().as_raw() {
        return None;
    }
    if clock::age(meta.modified().ok()?) > FRESH || meta.len() > state::MAX_STATE_BYTES {
        return None;
    }
    let len = usize::try_from(meta.len()).ok()?;
    let at = |r: Range<usize>| {
        let mut buf = vec![0; r.len()];
        file.read_exact_at(&mut buf, r.start as u64).ok()?;
        Some(buf)
    };
    let head = at(0..len.min(HEAD))?;
    decode_with(&head, len, at, chunk, budget)
}
