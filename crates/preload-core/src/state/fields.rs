//! The keys of `.state.json`, of a seed and of its carry: every key the product reads or
//! writes is named here once (the format is the engine's, plus the fields marked ours in
//! `docs/state-format.md`). A [`crate::state::State`] keeps every other key, in its order,
//! untouched.

// The session's identity and owner.

/// The owning Claude process.
pub const PID: &str = "pid";
/// The owner before the session went idle (or was taken over).
pub const LAST_KNOWN_PID: &str = "lastKnownPid";
/// Ours: the owner's start time, recognising a reused PID.
pub const PID_START_TIME: &str = "pidStartTime";
/// `active`, `idle`, `completed`, `dehydrating`, `resuming`, `restarting`, `seeding`.
pub const LIFECYCLE: &str = "lifecycle";
/// The active skill.
pub const SKILL: &str = "skill";
/// When the session was created.
pub const STARTED_AT: &str = "startedAt";
/// When a writer last touched the session.
pub const LAST_HEARTBEAT: &str = "lastHeartbeat";
/// The Claude Code conversation the context window belongs to.
pub const SESSION_ID: &str = "sessionId";
/// Ours: the conversation the context window's own records (part progress, stamps, sub-agent
/// records, call records) were written for. `sessionId` names the same one, but the engine's
/// `restart` and `dehydrate` remove it while the window may go on (without tmux the engine only
/// prints the line to restart with); only the hooks write this one.
pub const WINDOW_CONVERSATION: &str = "preloadConversation";
/// The fleet pane that owns the session.
pub const FLEET_PANE_ID: &str = "fleetPaneId";
/// Skills finished in the session.
pub const COMPLETED_SKILLS: &str = "completedSkills";
/// Set by `--fast-track`.
pub const FAST_TRACK: &str = "fastTrack";

// Phases.

/// `"<label>: <name>"` (read and written as [`crate::state::Phase`]).
pub(crate) const CURRENT_PHASE: &str = "currentPhase";
/// The skill's phases.
pub(crate) const PHASES: &str = "phases";
/// Past transitions.
pub const PHASE_HISTORY: &str = "phaseHistory";
/// True from activation until the first phase change.
pub const LOADING: &str = "loading";

// The skill's static fields (copied from its SKILL.md).

/// The skill's kind of task.
pub const TASK_TYPE: &str = "taskType";
/// Skills suggested next.
pub const NEXT_SKILLS: &str = "nextSkills";
/// Directive names the skill accepts beyond the core ones.
pub const DIRECTIVES: &str = "directives";
/// The skill's modes, each with its `file`.
pub const MODES: &str = "modes";
/// Template of the session log.
pub const LOG_TEMPLATE: &str = "logTemplate";
/// Template of the debrief.
pub const DEBRIEF_TEMPLATE: &str = "debriefTemplate";
/// Template of the plan.
pub const PLAN_TEMPLATE: &str = "planTemplate";
/// Template of a request to a sub-agent.
pub const REQUEST_TEMPLATE: &str = "requestTemplate";
/// Template of a sub-agent's response.
pub const RESPONSE_TEMPLATE: &str = "responseTemplate";
/// The key a mode's template is named by.
pub const MODE_FILE: &str = "file";
/// A mode's display name.
pub const MODE_LABEL: &str = "label";
/// The mode chosen (a proof field of the phase that selects it, or a session parameter).
pub const MODE: &str = "mode";
/// The proof a transition carried, in a `phaseHistory` entry.
pub const PROOF: &str = "proof";

// Overflow, restart and recovery.

/// Context fill ratio, 0 to 1.
pub const CONTEXT_USAGE: &str = "contextUsage";
/// The context overflowed.
pub const OVERFLOWED: &str = "overflowed";
/// A restart was requested.
pub const KILL_REQUESTED: &str = "killRequested";
/// What a dehydrated session hands to the next context window.
pub const DEHYDRATED_CONTEXT: &str = "dehydratedContext";

// In a dehydrated context ([`DEHYDRATED_CONTEXT`]).

/// Where the work stood.
pub const SUMMARY: &str = "summary";
/// The last thing done.
pub const LAST_ACTION: &str = "lastAction";
/// What to do next (an array).
pub const NEXT_STEPS: &str = "nextSteps";
/// How to take the work over.
pub const HANDOVER_INSTRUCTIONS: &str = "handoverInstructions";
/// What the user said and chose.
pub const USER_HISTORY: &str = "userHistory";
/// The files the next context window needs (an array of paths).
pub const REQUIRED_FILES: &str = "requiredFiles";

// What is in the context window, and what waits.

/// Normalised paths in the context window (read and written as [`crate::state::Paths`]).
pub(crate) const PRELOADED_FILES: &str = "preloadedFiles";
/// Paths queued for delivery (read and written as [`crate::state::Paths`]).
pub(crate) const PENDING_PRELOADS: &str = "pendingPreloads";
/// Ours: `{path: parts out}` of files delivered in parts.
pub const PRELOAD_PARTS: &str = "preloadParts";
/// Ours: `{path: [a, b, n]}`, parts `a` to `b` of a file's `n` labelled parts that the context
/// window already holds without its earlier ones (a compaction kept the call that carried them):
/// the file goes on with the others and skips these (see `crate::mechanisms::ledger::KeptCall`).
pub const PRELOAD_PARTS_HELD: &str = "preloadPartsHeld";

/// Ours: `{path: n}`, how many parts the main agent's file was cut into when its parts began
/// to go out: a file cut another way now changed meanwhile, and starts again.
pub const PRELOAD_PARTS_CUT: &str = "preloadPartsCut";
/// `{dir: [paths]}` already searched for directives.
pub const TOUCHED_DIRS: &str = "touchedDirs";
/// `CHECKLIST.md` files found by discovery.
pub const DISCOVERED_CHECKLISTS: &str = "discoveredChecklists";
/// Reset by discovery.
pub const DIRECTIVE_READS: &str = "directiveReadsWithoutClearing";
/// Stashed allow-rule content: an array of [`crate::state::StashEntry`].
pub const STASH: &str = "pendingAllowInjections";
/// Rules delivered (`{id: true}`).
pub const INJECTED_RULES: &str = "injectedRules";
/// Ours: skills the client loaded itself in this conversation.
pub const INVOKED_SKILLS: &str = "invokedSkills";
/// Ours: skills the client put back after a compaction of this conversation (a client that
/// resumes the conversation recalls those, and no others).
pub const RELOADED_SKILLS: &str = "reloadedSkills";
/// Ours: what the main agent's latest tool calls carried, one record per call, the latest last
/// (`[{toolUseId, files, parts?, stashed?, superseded?}]`): a compaction keeps the calls of the
/// client's latest response (see `crate::mechanisms::ledger::KeptCall`).
pub const CALL_DELIVERIES: &str = "callDeliveries";
/// Ours: what each of the main agent's tool calls in this context window carried whole
/// (`[{toolUseId, files}]`, the latest last, at most 256): the transcript entries that carried
/// them, so a rewind that leaves a call off the active branch takes its files out of the
/// window (see `crate::mechanisms::ledger::take_back`). Unlike [`CALL_DELIVERIES`], a resume
/// keeps them.
pub const CARRIERS: &str = "preloadCarriers";
/// Ours: the newest prompt (its transcript `uuid`) whose branch this window was checked at.
pub const BRANCH_AT: &str = "preloadBranchAt";
/// Ours, on a seed: the conversation this window was forked from while another live client
/// held its session. The fork's window starts as that one's, and the session gate does not
/// block it: the conversation it goes on from has a session.
pub const FORK_OF: &str = "preloadForkOf";
/// A record's tool call (`tool_use_id`, or `session-start(resume)` for a resume's texts).
pub const CALL_ID: &str = "toolUseId";
/// Its files.
pub const CALL_FILES: &str = "files";
/// Of a carrier's files (see [`CARRIERS`]), those it carried as a new text of a file the window
/// held before (`updated`): a rewind that drops it leaves the older text on the branch.
pub const CALL_UPDATED: &str = "updated";
/// Its files of which it carried the first parts only: how many, and of how many parts
/// (`{path: [parts, n]}`; `{path: parts}` in a record written before it said).
pub const CALL_PARTS: &str = "parts";
/// Its files of which it carried the first parts of a cut whose other parts wait in the stash.
pub const CALL_STASHED: &str = "stashed";
/// Its files of which it carried later parts only (`{path: [a, b, n]}`, parts `a` to `b` of
/// `n`): a compaction keeps those, and the file goes on with the others.
pub const CALL_HELD: &str = "held";
/// The later call that started after the record's and carried nothing (without the client's
/// transcript, the record is no longer the latest call's).
pub const CALL_SUPERSEDED: &str = "superseded";
/// Ours, in a carry: the files still owed to the context window.
pub const OWED: &str = "owed";
/// Ours: `{path: stamp}`, what each delivered file (or pack) was when it went out, so a
/// change on disk is delivered once more (see `crate::state::stamps`).
pub const PRELOADED_STAMPS: &str = "preloadedStamps";
/// In a pack's stamp: the hash of the text sent.
pub const STAMP_HASH: &str = "hash";
/// In a pack's stamp: the characters sent.
pub const STAMP_CHARS: &str = "chars";
/// In a pack's stamp: `{path: metadata}` of the files it was made from.
pub const STAMP_SOURCES: &str = "sources";

/// The key of a sub-agent's own copy of `base` (`preloadedFiles_sub:<agent_id>`).
pub fn sub_agent_key(base: &str, agent: &str) -> String {
    format!("{base}_sub:{agent}")
}

/// True for a key of a sub-agent's own context window.
pub fn is_sub_agent_key(key: &str, base: &str) -> bool {
    key.strip_prefix(base)
        .is_some_and(|rest| rest.starts_with("_sub:"))
}

// The heartbeat.

/// `{transcript key or "sub:<agent_id>": calls}`.
pub const TOOL_CALLS_BY_TRANSCRIPT: &str = "toolCallsByTranscript";
/// The main agent's count, displayed by the engine.
pub const TOOL_CALLS_SINCE_LAST_LOG: &str = "toolCallsSinceLastLog";
/// The main agent's first counter key.
pub const PRIMARY_TRANSCRIPT_KEY: &str = "primaryTranscriptKey";
/// Prefix of the per-agent last edited file.
pub const LAST_EDIT_FILE_PREFIX: &str = "lastEditFile_";
/// Ours: the sequence number the counters in the state were written at.
pub const COUNTERS_SEQ: &str = "preloadCountersSeq";
/// Calls before the heartbeat warns (displayed).
pub const WARN_AFTER: &str = "toolUseWithoutLogsWarnAfter";
/// Calls before the heartbeat blocks (displayed).
pub const BLOCK_AFTER: &str = "toolUseWithoutLogsBlockAfter";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_agent_keys() {
        let key = sub_agent_key(PRELOADED_FILES, "a1");
        assert_eq!(key, "preloadedFiles_sub:a1");
        assert!(is_sub_agent_key(&key, PRELOADED_FILES));
        assert!(!is_sub_agent_key(PRELOADED_FILES, PRELOADED_FILES));
    }
}
