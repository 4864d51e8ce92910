//! The operations of a generated lifecycle and the proptest strategy that generates (and
//! shrinks) them. Slots `0` and `1` are two client processes of one project; an op on a slot
//! without a process, or one that makes no sense in the current state, is skipped
//! deterministically (the driver says so in the step list), so every shrunk sequence replays.

use proptest::prelude::*;

/// A skill of the example.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sk {
    /// `implement` (phases 0 to 4).
    Implement,
    /// `do` (no phases).
    Do,
    /// `test` (phases 0 to 2).
    Test,
}

impl Sk {
    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Implement => "implement",
            Self::Do => "do",
            Self::Test => "test",
        }
    }
}

/// A tool the agent calls on a project file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// Read.
    Read,
    /// Edit.
    Edit,
    /// Write.
    Write,
    /// Grep in the file's directory.
    Grep,
    /// Glob in the file's directory.
    Glob,
    /// `ls` (Bash).
    Ls,
}

/// A file to grow to a number of slices (9,500 characters each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Big {
    /// `commands/CMD_INTERROGATE.md` (a step of phase 1).
    Interrogate,
    /// `commands/CMD_ASK_ROUND.md` (a command of phase 1).
    AskRound,
    /// `commands/CMD_PARSE_PARAMETERS.md` (a core standard, a step of phase 0).
    ParseParameters,
    /// `commands/CMD_GENERATE_DEBRIEF.md` (the suffixed command of phase 4).
    Debrief,
    /// `docs/TOC.md` of the project.
    Toc,
    /// `packages/estimate/.directives/INVARIANTS.md`.
    EstimateInvariants,
}

/// One step of a lifecycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// A new client process (a new conversation) in the slot; the old one exits.
    Startup(u8),
    /// A new client process in the slot resuming an earlier conversation (`n`th, wrapping).
    Resume(u8, u8),
    /// A new client process in the slot forking an earlier conversation, or the one the other
    /// slot's client runs now (`n`th, wrapping):
    /// `claude --resume <id> --fork-session`, a new conversation over a copy of its window;
    /// the parent's stays as it was, to be resumed or forked again.
    Fork(u8, u8),
    /// The slot's conversation rewound to before its `k`th prompt of the window (wrapping), and
    /// a new prompt in its place: an edited message (the TUI's rewind, `--resume-session-at`).
    Rewind(u8, u8),
    /// `/clear`: a new conversation in the same process.
    Clear(u8),
    /// The client compacts the conversation.
    Compact(u8),
    /// The client process exits (SessionEnd).
    Exit(u8),
    /// The client process dies without a SessionEnd (the engine's watchdog kills it, the
    /// terminal is closed).
    Crash(u8),
    /// A plain prompt.
    Prompt(u8),
    /// A `/skill …` prompt (the client expands the skill).
    SlashSkill(u8, Sk),
    /// A `Skill` tool call (the client expands the skill).
    SkillCall(u8, Sk),
    /// `engine session activate` through `preload activate`, with a tool call.
    Activate(u8, Sk),
    /// `engine session phase` to a valid next phase (`n` picks among them) with its proof.
    Phase(u8, u8),
    /// One ordinary tool call on target file `n`.
    Call(u8, Tool, u8),
    /// Several whole tool calls at once (one response's calls).
    Parallel(u8, Vec<(Tool, u8)>),
    /// A file changed on disk (`n`th of the followed files).
    Touch(u8),
    /// A file rewritten to `n` slices.
    Grow(Big, u8),
    /// A sub-agent `n` of the slot starts.
    Subagent(u8, u8),
    /// A tool call of sub-agent `n` of the slot.
    SubCall(u8, u8, Tool, u8),
    /// A `Skill` call of sub-agent `n`.
    SubSkill(u8, u8, Sk),
    /// A tool call on target `n` whose hook number `k` is killed after `ms` milliseconds.
    Killed(u8, Tool, u8, u8, u8),
    /// A tool call on target `n` that fails: Claude Code runs no PostToolUse for it (only
    /// `PostToolUseFailure`, which the product does not register) and keeps what PreToolUse
    /// added, next to the error (since 2.1.110).
    Failed(u8, Tool, u8),
    /// `engine session restart` run as a Bash tool call on the slot's active session, by the
    /// engine's own writer. Without tmux the engine only prints the line to restart with, so
    /// the conversation goes on in the same window.
    Restart(u8),
    /// `engine session dehydrate` the same way, its hand-over naming targets `n` and `n + 1`.
    Dehydrate(u8, u8),
    /// `engine session continue` run as a Bash tool call on a session whose restart is
    /// requested and whose owner is gone: the slot's process takes it over (the engine's own
    /// restart flow, after a new process started).
    Continue(u8),
    /// `engine session idle` run as a Bash tool call on the slot's active session.
    Idle(u8),
    /// The engine's statusline updates the slot owner's session (context usage, the
    /// conversation unless a restart is under way).
    Statusline(u8),
}

fn slot() -> impl Strategy<Value = u8> {
    prop_oneof![4 => Just(0u8), 1 => Just(1u8)]
}

fn skill() -> impl Strategy<Value = Sk> {
    prop_oneof![4 => Just(Sk::Implement), 1 => Just(Sk::Do), 2 => Just(Sk::Test)]
}

fn tool() -> impl Strategy<Value = Tool> {
    prop_oneof![
        4 => Just(Tool::Read),
        2 => Just(Tool::Edit),
        1 => Just(Tool::Write),
        1 => Just(Tool::Grep),
        1 => Just(Tool::Glob),
        2 => Just(Tool::Ls),
    ]
}

fn big() -> impl Strategy<Value = Big> {
    prop_oneof![
        Just(Big::Interrogate),
        Just(Big::AskRound),
        Just(Big::ParseParameters),
        Just(Big::Debrief),
        Just(Big::Toc),
        Just(Big::EstimateInvariants),
    ]
}

fn slices() -> impl Strategy<Value = u8> {
    prop_oneof![6 => 1u8..=3, 1 => 4u8..=20]
}

/// One op.
pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => slot().prop_map(Op::Startup),
        2 => (slot(), 0u8..4).prop_map(|(s, n)| Op::Resume(s, n)),
        1 => (slot(), 0u8..4).prop_map(|(s, n)| Op::Fork(s, n)),
        1 => (slot(), 0u8..4).prop_map(|(s, k)| Op::Rewind(s, k)),
        1 => slot().prop_map(Op::Clear),
        3 => slot().prop_map(Op::Compact),
        1 => slot().prop_map(Op::Exit),
        1 => slot().prop_map(Op::Crash),
        1 => slot().prop_map(Op::Prompt),
        3 => (slot(), skill()).prop_map(|(s, k)| Op::SlashSkill(s, k)),
        1 => (slot(), skill()).prop_map(|(s, k)| Op::SkillCall(s, k)),
        4 => (slot(), skill()).prop_map(|(s, k)| Op::Activate(s, k)),
        6 => (slot(), 0u8..2).prop_map(|(s, n)| Op::Phase(s, n)),
        10 => (slot(), tool(), 0u8..6).prop_map(|(s, t, n)| Op::Call(s, t, n)),
        2 => (slot(), prop::collection::vec((tool(), 0u8..6), 2..5))
            .prop_map(|(s, v)| Op::Parallel(s, v)),
        2 => (0u8..6).prop_map(Op::Touch),
        2 => (big(), slices()).prop_map(|(b, n)| Op::Grow(b, n)),
        1 => (slot(), 0u8..2).prop_map(|(s, n)| Op::Subagent(s, n)),
        2 => (slot(), 0u8..2, tool(), 0u8..6).prop_map(|(s, a, t, n)| Op::SubCall(s, a, t, n)),
        1 => (slot(), 0u8..2, skill()).prop_map(|(s, a, k)| Op::SubSkill(s, a, k)),
        1 => (slot(), tool(), 0u8..6, 0u8..8, 0u8..40)
            .prop_map(|(s, t, n, k, ms)| Op::Killed(s, t, n, k, ms)),
        1 => (slot(), tool(), 0u8..6).prop_map(|(s, t, n)| Op::Failed(s, t, n)),
        1 => slot().prop_map(Op::Restart),
        1 => (slot(), 0u8..6).prop_map(|(s, n)| Op::Dehydrate(s, n)),
        1 => slot().prop_map(Op::Continue),
        1 => slot().prop_map(Op::Idle),
        1 => slot().prop_map(Op::Statusline),
    ]
}

/// A lifecycle: up to `max` ops (the driver starts slot 0 first).
pub fn lifecycle(max: usize) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 1..=max)
}

/// The ops as Rust code for `regressions.rs`.
pub fn as_rust(ops: &[Op]) -> String {
    let body: Vec<String> = ops
        .iter()
        .map(|o| match o {
            // Debug prints a Vec as a slice; the sequence must compile as it is printed.
            Op::Parallel(slot, calls) => format!("        Parallel({slot}, vec!{calls:?}),"),
            Op::Grow(big, slices) => format!("        Grow(crate::ops::Big::{big:?}, {slices}),"),
            other => format!("        {other:?},"),
        })
        .collect();
    format!("    let ops = vec![\n{}\n    ];", body.join("\n"))
}
