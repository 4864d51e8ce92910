//! The model of the Claude Code client: how it turns hook answers into what the model receives,
//! one context window per conversation (and one per sub-agent), and what a compaction, a resume
//! or a `/clear` keeps of it.
//!
//! Each rule names the real-client scenario of `tests/e2e` that confirms it, or says that none
//! does yet.

use std::collections::BTreeSet;

/// The client's cap on one hook output string (longer ones become a file path and a preview).
pub const CLIENT_CAP: usize = 10_000;
/// How much of a skill the client puts back after a compaction (5,000 tokens).
pub const SKILL_REINJECT_CAP: usize = 20_000;
/// What the client writes before a skill's text when it expands the skill itself.
pub const EXPANSION: &str = "Base directory for this skill: ";

/// What put an entry into a window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A SessionStart registration's context (with its source).
    Start(String),
    /// A UserPromptSubmit context.
    Prompt,
    /// A PreToolUse / PostToolUse context or deny reason of a tool call. Both contexts reach
    /// the model next to the tool's result (Claude Code since 2.1.9), a denied call's too.
    /// Confirmed by the real-client scenarios under `--dispatch`, which meet the per-binary
    /// windows only with the files PreToolUse answers carry
    /// (`e2e::scenarios::calls::parallel_tool_calls_deliver_each_file_once`,
    /// `e2e::scenarios::calls::subagent_calls_get_their_blocks_in_their_own_conversation`).
    Call,
    /// The client's own expansion of a skill (a `/skill` prompt, a `Skill` call, or its
    /// re-injection after a compaction): the skill's directory.
    Expansion(String),
    /// The compaction summary (no blocks).
    Summary,
}

/// One text the model received.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The exchange it came with (a prompt, one tool call or one batch of parallel calls, a
    /// SessionStart).
    pub exchange: usize,
    /// What put it there.
    pub kind: Kind,
    /// The hook or client label (`PostToolUse:Read preload-injections`, …).
    pub label: String,
    /// The text.
    pub text: String,
}

/// One `[Preloaded: …]` block (or a skill expansion) received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reception {
    /// The path (or pack key).
    pub path: String,
    /// `(i, n)` of a labelled part.
    pub part: Option<(usize, usize)>,
    /// Marked `(updated)`.
    pub updated: bool,
    /// The client's own expansion, not a hook's block.
    pub by_client: bool,
    /// Index of the entry.
    pub entry: usize,
}

/// One context window.
#[derive(Debug, Clone, Default)]
pub struct Window {
    /// What the model received, in order.
    pub entries: Vec<Entry>,
    /// The number of the current exchange.
    pub exchange: usize,
    /// Ordinary tool-call rounds that ran in this window (a parallel batch is one round).
    pub rounds: usize,
    /// Per round, the most characters one of its answers carried (`usize::MAX` for a round
    /// whose hook was killed, its answer discarded, or that streamed a long file's part: the
    /// round gave the hooks no chance for what was queued behind).
    pub round_largest: Vec<usize>,
    /// The last exchange that was a tool call, or a resume's SessionStart (what a compaction
    /// keeps).
    pub kept_exchange: Option<usize>,
    /// The window's prompts, as the transcript holds them: (exchange, `uuid`, `parentUuid`).
    pub prompts: Vec<(usize, String, Option<String>)>,
}

impl Window {
    /// Count an ordinary round of exchange `exchange` (`killed`: one of its hooks was).
    pub fn count_round(&mut self, exchange: usize, killed: bool) {
        let largest = self
            .entries
            .iter()
            .filter(|e| e.exchange == exchange)
            .map(|e| e.text.chars().count())
            .max()
            .unwrap_or(0);
        // A round that carried a part of a long file was busy streaming it: files queued behind
        // it wait their turn (the queue is handed out in order).
        let streaming = self
            .entries
            .iter()
            .any(|e| e.exchange == exchange && e.text.contains(" (part "));
        self.rounds += 1;
        self.round_largest.push(if killed || streaming {
            usize::MAX
        } else {
            largest
        });
    }

    /// Whether no round from round `since` on had room for `chars` more characters in one
    /// answer of `budget`: the hooks were handing out what was queued before.
    pub fn full_since(&self, since: usize, chars: usize, budget: usize) -> bool {
        self.round_largest
            .iter()
            .skip(since)
            .all(|largest| largest.saturating_add(chars) > budget)
    }

    /// Start a new exchange; its number.
    pub fn next_exchange(&mut self) -> usize {
        self.exchange += 1;
        self.exchange
    }

    /// Receive `text` (already through the cap).
    pub fn receive(&mut self, exchange: usize, kind: Kind, label: &str, text: &str) {
        if text.is_empty() {
            return;
        }
        self.entries.push(Entry {
            exchange,
            kind,
            label: label.to_owned(),
            text: text.to_owned(),
        });
    }

    /// A hook's output string as the client passes it on.
    ///
    /// Rule: an output over 10,000 characters is replaced by a file path and a ~2 KB preview,
    /// so no block of it is received. Confirmed by `e2e::harness` (`context()` there: "The client
    /// replaces an output over 10,000 characters with a file path and a preview").
    pub fn capped(text: &str) -> String {
        if text.chars().count() <= CLIENT_CAP {
            return text.to_owned();
        }
        let preview: String = text.chars().take(2_000).collect();
        format!(
            "Output too large ({} characters), saved to /tmp/hook-output.txt. Preview:\n{}",
            text.chars().count(),
            preview.replace("[Preloaded: ", "[preview of: ")
        )
    }

    /// Every block and expansion received, in order.
    pub fn receptions(&self) -> Vec<Reception> {
        let mut out = Vec::new();
        for (index, entry) in self.entries.iter().enumerate() {
            if let Kind::Expansion(dir) = &entry.kind {
                out.push(Reception {
                    path: format!("{dir}/SKILL.md"),
                    part: None,
                    updated: false,
                    by_client: true,
                    entry: index,
                });
                continue;
            }
            for line in entry.text.lines() {
                if let Some(r) = parse_header(line) {
                    out.push(Reception { entry: index, ..r });
                }
            }
        }
        out
    }

    /// Whether `path` is in this window whole: a whole block, an expansion, or every part of
    /// one cut.
    pub fn holds_whole(&self, receptions: &[Reception], path: &str) -> bool {
        let of: Vec<&Reception> = receptions.iter().filter(|r| r.path == path).collect();
        if of.iter().any(|r| r.part.is_none()) {
            return true;
        }
        let cuts: BTreeSet<usize> = of.iter().filter_map(|r| r.part).map(|(_, n)| n).collect();
        cuts.iter().any(|&n| {
            (1..=n).all(|i| {
                of.iter()
                    .any(|r| r.part.is_some_and(|(j, m)| j == i && m == n))
            })
        })
    }

    /// The entries the compaction keeps: those of the last tool call, or of a resume's
    /// SessionStart when nothing was called since.
    ///
    /// Rule: the new window keeps the summary and the call in flight with what the hooks added
    /// to it. Confirmed by `e2e::scenarios::compaction_reseeds_the_new_context_once_and_rereads_the_dispatch`
    /// (`Received::kept_across_compaction`). That a resume's SessionStart contexts are kept
    /// when the client compacts before its next request: not yet confirmed by a real-client
    /// scenario (the product assumes it, `ledger::window::note_start_deliveries`).
    pub fn kept_by_compaction(&self) -> Vec<Entry> {
        let Some(kept) = self.kept_exchange else {
            return Vec::new();
        };
        self.entries
            .iter()
            .filter(|e| e.exchange == kept && !matches!(e.kind, Kind::Expansion(_)))
            .cloned()
            .collect()
    }
}

/// A `[Preloaded: <path>[ (updated)][ (part i/n)]]` header line.
pub fn parse_header(line: &str) -> Option<Reception> {
    let inner = line.strip_prefix("[Preloaded: ")?.strip_suffix(']')?;
    let (rest, part) = match inner.rsplit_once(" (part ") {
        Some((head, tail)) => {
            let (i, n) = tail.strip_suffix(')')?.split_once('/')?;
            (head, Some((i.parse().ok()?, n.parse().ok()?)))
        }
        None => (inner, None),
    };
    let path = preload_core::primitives::delivery::header_path(rest);
    if !path.starts_with('/') {
        return None;
    }
    Some(Reception {
        path: path.to_owned(),
        part,
        updated: rest.len() > path.len() && rest[path.len()..].contains("updated"),
        by_client: false,
        entry: 0,
    })
}

/// One simulated client process.
pub struct Process {
    /// Its `sleep` child, the live owner PID the hooks see.
    pub child: std::process::Child,
    /// The owner PID.
    pub pid: u32,
    /// The conversation (`session_id`).
    pub conversation: String,
    /// The main window.
    pub window: Window,
    /// Skills invoked in this process since its start or last `/clear`.
    pub invoked: Vec<String>,
    /// Skills the conversation held when this process resumed it.
    pub held_at_resume: Vec<String>,
    /// Skills a compaction of this conversation put back (the transcript records them).
    pub reloaded: Vec<String>,
    /// Sub-agents' windows by `agent_id`.
    pub subs: Vec<(String, Window)>,
    /// How many times the sub-agents ended with their window (a compaction or `/clear` of the
    /// main conversation): a sub-agent started after that is a new one, with an id of its own.
    pub sub_generation: usize,
    /// A fork of a conversation that had an active session: the session gate never blocks it.
    pub forked_from_session: bool,
}

/// A conversation a client process left behind, for `--resume`.
#[derive(Debug, Clone)]
pub struct Transcript {
    /// The conversation id.
    pub conversation: String,
    /// Its window as it was.
    pub window: Window,
    /// Skills a compaction of it put back.
    pub reloaded: Vec<String>,
    /// Files lost in its window's one window (a hook killed after its commit): still recorded
    /// in it, and reported when they were lost, not again when it is resumed.
    pub lost: BTreeSet<String>,
}

/// Whether the client drops a fork's SessionStart context that `kept` others came before: the
/// pinned client keeps the first registration's only (`e2e::branches`: the fork's transcript
/// and request hold one of the 32; public reports say a fork's may be dropped altogether).
pub fn fork_drops(kept: usize) -> bool {
    kept > 0
}

/// THE rule of which skills a compaction puts back (the single place to change it): the skills
/// invoked in this client process (a `/skill` prompt or a `Skill` call) since its start or
/// `/clear`, plus, after a resume, the skills an earlier compaction of the resumed conversation
/// put back (the transcript records that re-injection), not those the earlier process merely
/// expanded.
///
/// Confirmed by `e2e::harness::the_client_puts_a_skill_back_after_a_compaction_only_in_the_process_that_loaded_it`
/// (client 2.1.330 and 2.1.332).
pub fn skills_the_conversation_holds(p: &Process) -> Vec<String> {
    let mut held = p.held_at_resume.clone();
    for skill in &p.invoked {
        if !held.contains(skill) {
            held.push(skill.clone());
        }
    }
    held
}

/// The skills a resuming process holds from the transcript (see
/// [`skills_the_conversation_holds`]).
pub fn held_after_resume(t: &Transcript) -> Vec<String> {
    t.reloaded.clone()
}

/// A SessionStart context on `--resume` whose text the window already holds is dropped.
///
/// Confirmed by `e2e::harness::the_client_keeps_every_session_start_context_of_a_resume_but_drops_repeated_texts`.
pub fn resume_drops(window: &Window, text: &str) -> bool {
    window.entries.iter().any(|e| e.text == text)
}

/// The client's expansion of a skill: `Base directory …` and the SKILL.md text, cut at `cap`
/// characters (a re-injection); whole when the text fits.
///
/// Rule: a `/skill` prompt and a `Skill` tool call put the skill's SKILL.md into the window.
/// Confirmed by `e2e::subagents::a_sub_agents_skill_reaches_its_own_conversation_once_and_not_the_main_one`
/// (the `Skill` call) and `e2e::harness::harness_counts_parts_and_the_clients_own_skill_expansion`
/// (the prompt). Re-injection after a compaction, up to 5,000 tokens: confirmed by
/// `e2e::harness::the_client_puts_a_skill_back_after_a_compaction_only_in_the_process_that_loaded_it`
/// (the 5,000-token cap itself: not yet confirmed by a real-client scenario).
pub fn expansion(dir: &str, text: &str, cap: Option<usize>) -> (String, bool) {
    let whole = cap.is_none_or(|c| text.chars().count() <= c);
    let body: String = match cap {
        Some(c) if !whole => text.chars().take(c).collect(),
        _ => text.to_owned(),
    };
    (format!("{EXPANSION}{dir}\n\n{body}"), whole)
}
