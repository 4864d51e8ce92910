//! The end of a transcript: its newest prompt, what the rewinds there abandoned, and its newest
//! entry, read from the file's last 256 KiB (the rest only to find a rewind's entry).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::{Line, lines_of, main_line, prompt_of};

/// The newest prompt of a transcript, and the tool calls the rewinds before it left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// The prompt's `uuid`.
    pub prompt: String,
    /// The `tool_use` ids of the main conversation's calls a rewind abandoned: for each prompt
    /// in the part read that hangs off an entry other than the one written before it, those
    /// written after that entry and before the prompt (empty when every prompt follows on).
    pub abandoned: Vec<String>,
    /// The `promptId`s of the prompts written there: the abandoned prompts.
    pub abandoned_prompts: Vec<String>,
    /// The entries the SessionStart texts written there hang off (their `parentUuid`): the
    /// abandoned texts of a resume.
    pub abandoned_starts: Vec<String>,
}

/// How much of a transcript's end [`latest_turn`] reads: the first tool call after a prompt
/// lies within it.
const TURN_TAIL: u64 = 256 << 10;

/// The newest prompt in the last 256 KiB of the transcript at `path`, and what the rewinds in
/// that part abandoned. A rewind (the TUI's rewind, an edited message, `--resume-session-at`)
/// hangs the new prompt off an earlier entry: everything written between that entry and the
/// prompt is off the active branch (nothing written after an entry is its ancestor). Every
/// prompt of the part is looked at, not the newest alone: a rewind followed by a second prompt
/// before any tool call is seen at the next call. Only when a prompt was hung off an earlier
/// entry is the rest of the file read, to find that entry. `None` when the file cannot be read
/// or its tail holds no prompt.
pub fn latest_turn(path: &Path) -> Option<Turn> {
    let (mut file, start, tail) = read_tail(path)?;
    let lines = lines_of(&tail, start > 0);
    let prompts: Vec<(usize, Line)> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, (_, line))| prompt_of(line).map(|p| (i, p)))
        .collect();
    let (newest_at, newest) = prompts.last()?;
    let mut turn = Turn {
        prompt: newest.uuid.clone()?,
        abandoned: Vec::new(),
        abandoned_prompts: Vec::new(),
        abandoned_starts: Vec::new(),
    };
    // The prompts hung off an entry other than the main line written before them: rewinds. An
    // older prompt with no line before it in the part read is taken to follow on.
    let rewinds: Vec<(usize, &str)> = prompts
        .iter()
        .filter_map(|(at, prompt)| {
            let previous = lines[..*at]
                .iter()
                .rev()
                .find_map(|(_, line)| main_line(line).and_then(|l| l.uuid));
            if previous.is_none() && at != newest_at {
                return None;
            }
            let parent = prompt.parent_uuid.as_deref()?;
            (previous.as_deref() != Some(parent)).then_some((*at, parent))
        })
        .collect();
    let Some((last, _)) = rewinds.last() else {
        return Some(turn);
    };
    // Each rewind's entry is found from the start of the file: read once, up to the last.
    let offset = |at: usize| usize::try_from(start).ok().map(|s| s + lines[at].0);
    let mut head = vec![0; offset(*last)?];
    file.seek(SeekFrom::Start(0)).ok()?;
    file.read_exact(&mut head).ok()?;
    let marks = |line: &[u8]| {
        memchr::memmem::find(line, b"\"tool_use\"").is_some()
            || memchr::memmem::find(line, b"\"promptId\"").is_some()
            || memchr::memmem::find(line, b"\"SessionStart\"").is_some()
    };
    for (at, parent) in &rewinds {
        let before = &head[..offset(*at)?];
        let needle = format!("\"uuid\":\"{parent}\"");
        let Some(found) = memchr::memmem::rfind(before, needle.as_bytes()) else {
            continue;
        };
        let from = memchr::memchr(b'\n', &before[found..]).map_or(before.len(), |n| found + n);
        for (_, line) in lines_of(&before[from..], false) {
            let Some(line) = Some(line).filter(|l| marks(l)).and_then(main_line) else {
                continue;
            };
            match line.kind.as_deref() {
                Some("assistant") => {
                    for id in line.message_of("assistant").tool_uses {
                        if !turn.abandoned.contains(&id) {
                            turn.abandoned.push(id);
                        }
                    }
                }
                Some("user") => {
                    if let Some(id) = line
                        .prompt_id
                        .filter(|id| !turn.abandoned_prompts.contains(id))
                    {
                        turn.abandoned_prompts.push(id);
                    }
                }
                Some("attachment") if line.attachment["hookEvent"] == "SessionStart" => {
                    if let Some(at) = line
                        .parent_uuid
                        .filter(|at| !turn.abandoned_starts.contains(at))
                    {
                        turn.abandoned_starts.push(at);
                    }
                }
                _ => {}
            }
        }
    }
    Some(turn)
}

/// The `uuid` of the newest main-conversation entry in the last 256 KiB of the transcript at
/// `path`: the entry a SessionStart text of a resume hangs off. `None` when the file cannot be
/// read or its tail holds none.
pub fn newest_entry(path: &Path) -> Option<String> {
    let (_, start, tail) = read_tail(path)?;
    lines_of(&tail, start > 0)
        .iter()
        .rev()
        .find_map(|(_, line)| main_line(line).and_then(|l| l.uuid))
}

/// The file at `path`, the offset its last [`TURN_TAIL`] bytes start at, and those bytes.
fn read_tail(path: &Path) -> Option<(File, u64, Vec<u8>)> {
    let mut file = File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let start = len.saturating_sub(TURN_TAIL);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut tail = Vec::with_capacity(usize::try_from(len - start).ok()?);
    (&mut file).take(TURN_TAIL).read_to_end(&mut tail).ok()?;
    Some((file, start, tail))
}
