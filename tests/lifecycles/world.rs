//! The simulated world: the sandbox, up to two client processes with their windows, the
//! conversations they left behind, and what each op does to them.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::client::{self, Entry, Kind, Process, Transcript, Window};
use crate::common::{Answer, Sandbox};
use crate::hooks;
use crate::invariants::{self, Due};
use crate::ops::{Big, Op, Sk, Tool};
use crate::pipeline_steps::{cli_output, phase_command, proof_stdin};

/// Files a tool call may target (relative to the project).
pub const TARGETS: [&str; 6] = [
    "packages/estimate/src/parser.ts",
    "packages/estimate/src/total.ts",
    "packages/estimate/tests/parser.test.ts",
    "packages/ledger/src/book.ts",
    "docs/CONVENTIONS.md",
    "packages/ledger/notes/deep/log.md",
];

/// The client a lifecycle plays (`PRELOAD_CLIENT=codex`: the Codex CLI; else Claude Code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// Claude Code.
    ClaudeCode,
    /// The Codex CLI, as `preload install --agent codex` wires it (docs/agents.md): its shell
    /// reads and patches instead of the file tools, no skills and no `/clear`, and a compaction
    /// that keeps no call. Confirmed by `e2e::codex` (the compaction by
    /// `codex_compaction_reseeds_the_new_window_once`).
    Codex,
}

impl Client {
    /// The client this test run plays.
    pub fn of_run() -> Self {
        match std::env::var("PRELOAD_CLIENT").as_deref() {
            Ok("codex") => Self::Codex,
            _ => Self::ClaudeCode,
        }
    }
}

/// Who owns the sessions of a lifecycle: each client process (its PID), or one supervisor PID
/// that every client runs under (`CLAUDE_SUPERVISOR_PID`, as the engine's `run.sh` exports it),
/// with one client at a time as `run.sh` starts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ownership {
    /// Each client process owns its session.
    Client,
    /// One supervisor PID across clients.
    Supervisor,
}

impl Ownership {
    /// `PRELOAD_OWNERSHIP` (`client` or `supervisor`) when set, else `fallback`.
    pub fn of_run(fallback: Self) -> Self {
        match std::env::var("PRELOAD_OWNERSHIP").as_deref() {
            Ok("supervisor") => Self::Supervisor,
            Ok("client") => Self::Client,
            _ => fallback,
        }
    }

    /// The value `PRELOAD_OWNERSHIP` names it by.
    pub fn name(self) -> &'static str {
        match self {
            Self::Client => "client",
            Self::Supervisor => "supervisor",
        }
    }
}

/// The world of one generated case.
pub struct World {
    /// The sandbox.
    pub sb: Sandbox,
    /// The client played.
    pub client: Client,
    /// The client processes of slots 0 and 1 (slot 0 only under a supervisor).
    pub procs: [Option<Process>; 2],
    /// The supervisor every client runs under ([`Ownership::Supervisor`]).
    supervisor: Option<std::process::Child>,
    /// Conversations left behind (the latest transcript of each).
    pub ended: Vec<Transcript>,
    /// What each step did.
    pub steps: Vec<String>,
    /// Problems found while running this step (answers out of contract, over the cap).
    pub problems: Vec<String>,
    /// Files due in a window, with their deadline.
    pub due: Vec<Due>,
    /// Times each file (canonical path) changed on disk.
    pub edits: BTreeMap<String, usize>,
    /// Delivery-log lines already judged.
    pub log_seen: usize,
    /// State and seed files given the foreign field.
    pub planted: Vec<PathBuf>,
    /// A hook was killed in this case (a lock may be left for the next writer to reclaim).
    pub killed: bool,
    /// A hook was killed in the current step.
    pub kill_step: bool,
    /// Before the current step: the owners' records (state or seed), by slot.
    pub record_before: [Value; 2],
    /// Files (slot, canonical path) recorded in a window while a hook carrying them was killed
    /// after its commit: docs/reliability.md's "one window", where the client discards the
    /// killed process's answer. Each is reported in the step list, and not again.
    pub lost: BTreeSet<(usize, String)>,
    /// The slot the current step acted on.
    pub acting: Option<usize>,
    /// Invariant tags not reported (besides `PRELOAD_LIFECYCLE_IGNORE`).
    pub ignore: Vec<String>,
    counter: usize,
    originals: BTreeMap<String, String>,
    /// The seconds (Unix time) in which each conversation's `SessionStart` events ran.
    start_seconds: BTreeMap<String, BTreeSet<u64>>,
    /// Each conversation's newest transcript entry (`uuid`), which the next one hangs off.
    leaf: BTreeMap<String, String>,
    /// Files (slot, canonical path) a rewind took out of the slot's window that its record may
    /// still hold until its next tool call takes them back.
    pub rewound: BTreeSet<(usize, String)>,
}

/// The canonical form of a path or pack key (for comparing spellings).
pub fn canon(path: &str) -> String {
    let (file, tail) = match path.split_once('#') {
        Some((f, t)) => (f, format!("#{t}")),
        None => (path, String::new()),
    };
    fs::canonicalize(file).map_or_else(
        |_| path.to_owned(),
        |p| format!("{}{tail}", p.to_string_lossy()),
    )
}

impl World {
    /// A sandbox with the example, a second package with directives, and a suffixed command
    /// in `/implement`'s phase 4.
    pub fn new() -> Self {
        Self::for_client(Client::of_run())
    }

    /// [`World::new`] for `client`.
    pub fn for_client(client: Client) -> Self {
        let mut sb = Sandbox::new();
        if client == Client::Codex {
            sb.extra_env.push((hooks::AGENT_ENV.into(), "codex".into()));
        }
        sb.project_file(
            "packages/ledger/.directives/INVARIANTS.md",
            "# Ledger invariants\n\nEvery entry balances.\n",
        );
        sb.project_file(
            "packages/ledger/.directives/AGENTS.md",
            "# Ledger agents\n\nKeep the book append-only.\n",
        );
        sb.project_file("packages/ledger/src/book.ts", "export const book = [];\n");
        sb.project_file("packages/ledger/notes/deep/log.md", "# Notes\n");
        let skill = sb.home.join(".claude/skills/implement/SKILL.md");
        let text = fs::read_to_string(&skill).unwrap().replace(
            "\"commands\": [\"§CMD_WALK_THROUGH_RESULTS\"]",
            "\"commands\": [\"§CMD_WALK_THROUGH_RESULTS\", \"§CMD_GENERATE_DEBRIEF_file\"]",
        );
        fs::write(&skill, text).unwrap();
        Self {
            sb,
            client,
            procs: [None, None],
            supervisor: None,
            ended: Vec::new(),
            steps: Vec::new(),
            problems: Vec::new(),
            due: Vec::new(),
            edits: BTreeMap::new(),
            log_seen: 0,
            planted: Vec::new(),
            killed: false,
            kill_step: false,
            record_before: [Value::Null, Value::Null],
            lost: BTreeSet::new(),
            acting: None,
            ignore: Vec::new(),
            counter: 0,
            originals: BTreeMap::new(),
            start_seconds: BTreeMap::new(),
            leaf: BTreeMap::new(),
            rewound: BTreeSet::new(),
        }
    }

    /// [`World::for_client`] with its sessions owned as `ownership` says.
    pub fn owned(client: Client, ownership: Ownership) -> Self {
        let mut world = Self::for_client(client);
        if ownership == Ownership::Supervisor {
            let child = std::process::Command::new("sleep")
                .arg("3600")
                .spawn()
                .expect("spawn the supervisor");
            world.supervisor = Some(child);
        }
        world
    }

    /// How this world's sessions are owned.
    pub fn ownership(&self) -> Ownership {
        if self.supervisor.is_some() {
            Ownership::Supervisor
        } else {
            Ownership::Client
        }
    }

    /// The PID the hooks of the client in `slot` take for its owner (0: no client there).
    pub fn owner(&self, slot: usize) -> u32 {
        match (&self.supervisor, &self.procs[slot]) {
            (Some(s), Some(_)) => s.id(),
            (None, Some(p)) => p.pid,
            (_, None) => 0,
        }
    }

    /// The slot an op names: under a supervisor, one client at a time, in slot 0.
    fn key(&self, slot: u8) -> usize {
        if self.supervisor.is_some() {
            0
        } else {
            usize::from(slot) % 2
        }
    }

    fn next(&mut self) -> usize {
        self.counter += 1;
        self.counter
    }

    /// The main agent's response making calls `ids`, written to the current conversation's
    /// transcript after its newest entry.
    fn respond(&mut self, ids: &[&str]) {
        let uuids: Vec<String> = ids
            .iter()
            .map(|_| format!("entry-{}", self.next()))
            .collect();
        let conversation = self.sb.conversation.clone();
        let parent = self.leaf.get(&conversation).cloned();
        hooks::respond(&self.sb, ids, parent.as_deref(), &uuids);
        // This call is the one that takes back what a rewind took out.
        if let Some(slot) = self.acting {
            self.rewound.retain(|(s, _)| *s != slot);
        }
        if let Some(last) = uuids.last() {
            self.leaf.insert(conversation, last.clone());
        }
    }

    /// A user prompt (its text and `promptId`; or a hook's SessionStart context, `prompt: None`)
    /// written to the current
    /// conversation's transcript after `parent` (its newest entry when `None`): its `uuid` and
    /// the entry it hangs off. Claude Code's transcript only: the Codex CLI's rollout has no
    /// such links.
    fn link(
        &mut self,
        prompt: Option<(&str, &str)>,
        parent: Option<String>,
    ) -> Option<(String, Option<String>)> {
        if self.client == Client::Codex {
            return None;
        }
        let uuid = format!("entry-{}", self.next());
        let conversation = self.sb.conversation.clone();
        let parent = parent.or_else(|| self.leaf.get(&conversation).cloned());
        let row = match prompt {
            Some((text, id)) => json!({"type": "user", "uuid": uuid, "parentUuid": parent,
                "promptId": id, "sessionId": conversation,
                "message": {"role": "user", "content": text}}),
            None => json!({"type": "attachment", "uuid": uuid, "parentUuid": parent,
                "sessionId": conversation, "attachment": {"type": "hook_additional_context",
                "hookEvent": "SessionStart", "content": []}}),
        };
        hooks::append(&self.sb, &[row]);
        self.leaf.insert(conversation, uuid.clone());
        Some((uuid, parent))
    }

    fn use_slot(&mut self, slot: usize) {
        let owner = self.owner(slot);
        if let Some(p) = &self.procs[slot] {
            self.sb.pid = owner;
            self.sb.conversation.clone_from(&p.conversation);
            // The client's own PID, which it gives its hooks (they read a fork's command line).
            let claude_pid = preload_core::primitives::env::CLAUDE_PID;
            self.sb.extra_env.retain(|(k, _)| k != claude_pid);
            self.sb
                .extra_env
                .push((claude_pid.to_owned(), p.pid.to_string()));
        }
        self.acting = Some(slot);
    }

    /// The owner's active session: (name, state).
    pub fn active_of(&self, pid: u32) -> Option<(String, Value)> {
        self.session_where(|state| {
            state["pid"].as_u64() == Some(u64::from(pid)) && state["lifecycle"] == "active"
        })
    }

    /// The active session of the client process in `slot`: (name, state).
    fn active_in(&self, slot: usize) -> Option<(String, Value)> {
        self.procs[slot].as_ref()?;
        self.active_of(self.owner(slot))
    }

    /// The session the owner left idle (`engine session idle` keeps it as `lastKnownPid`):
    /// (name, state).
    pub fn left_idle_by(&self, pid: u32) -> Option<(String, Value)> {
        self.session_where(|state| {
            state["lifecycle"] == "idle"
                && state.get("pid").is_none()
                && state["lastKnownPid"].as_u64() == Some(u64::from(pid))
        })
    }

    /// The last session (in directory order) whose state is `wanted`: (name, state).
    pub fn session_where(&self, wanted: impl Fn(&Value) -> bool) -> Option<(String, Value)> {
        let entries = fs::read_dir(&self.sb.sessions).ok()?;
        let mut found = None;
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path().join(".state.json");
            let Ok(text) = fs::read_to_string(&path) else {
                continue;
            };
            let Ok(state) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            if wanted(&state) {
                found = Some((entry.file_name().to_string_lossy().into_owned(), state));
            }
        }
        found
    }

    /// Apply one op; false when it was skipped.
    pub fn apply(&mut self, op: &Op) -> bool {
        self.problems.clear();
        self.acting = None;
        self.kill_step = false;
        for slot in 0..2 {
            let pid = self.owner(slot);
            self.record_before[slot] = self.record_of(pid).map_or(Value::Null, |(_, r)| r);
        }
        let codex_lacks = matches!(
            op,
            Op::Clear(_)
                | Op::Rewind(..)
                | Op::SlashSkill(..)
                | Op::SkillCall(..)
                | Op::SubSkill(..)
                | Op::Failed(..)
        );
        let done = match op {
            // Codex has no skills to call or expand, no `/clear` and (in exec mode) no rewind
            // (its backtrack is the TUI's); what
            // its hooks see of a failed call is not documented, so failures are played for
            // Claude Code only.
            _ if self.client == Client::Codex && codex_lacks => false,
            Op::Startup(s) => self.startup(self.key(*s)),
            Op::Resume(s, n) => self.resume(self.key(*s), usize::from(*n)),
            Op::Fork(s, n) => self.fork(self.key(*s), usize::from(*n)),
            Op::Rewind(s, k) => self.rewind(self.key(*s), usize::from(*k)),
            Op::Clear(s) => self.clear(self.key(*s)),
            Op::Compact(s) => self.compact(self.key(*s)),
            Op::Exit(s) => self.exit(self.key(*s)),
            Op::Crash(s) => self.crash(self.key(*s)),
            Op::Prompt(s) => self.prompt(self.key(*s), "Carry on with the work.", None),
            Op::SlashSkill(s, k) => {
                let text = format!("/{} add a total to the estimate", k.name());
                self.prompt(self.key(*s), &text, Some(*k))
            }
            Op::SkillCall(s, k) => self.skill_call(self.key(*s), None, *k),
            Op::Activate(s, k) => self.activate(self.key(*s), *k),
            Op::Phase(s, n) => self.phase(self.key(*s), usize::from(*n)),
            Op::Call(s, t, n) => self.calls(self.key(*s), None, &[(*t, *n)], Outcome::Done),
            Op::Parallel(s, v) => self.calls(self.key(*s), None, v, Outcome::Done),
            Op::Touch(n) => self.touch(usize::from(*n)),
            Op::Grow(b, n) => self.grow(*b, usize::from(*n)),
            Op::Subagent(s, a) => self.subagent(self.key(*s), *a),
            Op::SubCall(s, a, t, n) => {
                let agent = self.agent_id(self.key(*s), *a);
                self.calls(self.key(*s), Some(agent), &[(*t, *n)], Outcome::Done)
            }
            Op::SubSkill(s, a, k) => {
                let agent = self.agent_id(self.key(*s), *a);
                self.skill_call(self.key(*s), Some(agent), *k)
            }
            Op::Killed(s, t, n, k, ms) => {
                let kill = (usize::from(*k), Duration::from_millis(u64::from(*ms)));
                self.calls(self.key(*s), None, &[(*t, *n)], Outcome::Killed(kill))
            }
            Op::Failed(s, t, n) => self.calls(self.key(*s), None, &[(*t, *n)], Outcome::Fails),
            Op::Restart(s) => self.restart(self.key(*s), None),
            Op::Dehydrate(s, n) => self.restart(self.key(*s), Some(usize::from(*n))),
            Op::Continue(s) => self.continue_session(self.key(*s)),
            Op::Idle(s) => self.idle(self.key(*s)),
            Op::Statusline(s) => self.statusline(self.key(*s)),
        };
        let note = if done { "" } else { "   (skipped)" };
        self.steps.push(format!("{op:?}{note}"));
        done
    }

    /// The id of sub-agent `a` of `slot`'s conversation (the client gives every sub-agent an id
    /// of its own: a new conversation's are new).
    fn agent_id(&self, slot: usize, a: u8) -> String {
        let (pid, conversation, generation) = self.procs[slot].as_ref().map_or((0, "", 0), |p| {
            (p.pid, p.conversation.as_str(), p.sub_generation)
        });
        format!("agent-{pid}-{conversation}-{generation}-{a}")
    }

    /// The window of `slot`'s main agent or of its sub-agent.
    pub fn window(&mut self, slot: usize, agent: Option<&str>) -> Option<&mut Window> {
        let p = self.procs[slot].as_mut()?;
        match agent {
            None => Some(&mut p.window),
            Some(a) => p.subs.iter_mut().find(|(id, _)| id == a).map(|(_, w)| w),
        }
    }

    /// Pass the answers of one event to the window as the client does; whether the call was
    /// denied.
    fn deliver(
        &mut self,
        slot: usize,
        agent: Option<&str>,
        exchange: usize,
        kind: &Kind,
        answers: &[(String, Answer)],
    ) -> bool {
        let mut denied = false;
        for (label, answer) in answers {
            for problem in invariants::answer_problems(answer) {
                self.problems.push(format!("{label}: {problem}"));
            }
            let Some(window) = self.window(slot, agent) else {
                continue;
            };
            let context = answer.context();
            window.receive(exchange, kind.clone(), label, &Window::capped(&context));
            if answer.decision() == "deny" {
                denied = true;
                let reason = answer.reason();
                if agent.is_none()
                    && reason.contains("[block: session-gate]")
                    && self.procs[slot]
                        .as_ref()
                        .is_some_and(|p| p.forked_from_session)
                {
                    self.problems.push(format!(
                        "(gate) slot {slot}: a fork of a conversation with an active session was blocked by the session gate"
                    ));
                }
                let Some(window) = self.window(slot, agent) else {
                    continue;
                };
                window.receive(exchange, kind.clone(), label, &Window::capped(&reason));
            }
        }
        denied
    }

    fn spawn_process(&mut self, conversation: String, window: Window) -> Process {
        self.spawn_client(conversation, window, None)
    }

    /// A client process; `forked_from`: one started as `claude --resume <id> --fork-session`,
    /// the command line the hooks read a fork's parent from.
    fn spawn_client(
        &mut self,
        conversation: String,
        window: Window,
        forked_from: Option<&str>,
    ) -> Process {
        let mut command = if let Some(parent) = forked_from {
            let mut c = std::process::Command::new("perl");
            c.args(["-e", "sleep 3600", "--", "claude", "--resume", parent])
                .arg("--fork-session");
            c
        } else {
            let mut c = std::process::Command::new("sleep");
            c.arg("3600");
            c
        };
        let child = command.spawn().expect("spawn the owner");
        Process {
            pid: child.id(),
            child,
            conversation,
            window,
            invoked: Vec::new(),
            held_at_resume: Vec::new(),
            reloaded: Vec::new(),
            subs: Vec::new(),
            sub_generation: 0,
            forked_from_session: false,
        }
    }

    fn session_start(&mut self, slot: usize, source: &str) {
        self.use_slot(slot);
        // The generated events follow each other in milliseconds; a client's come seconds or
        // minutes apart, past the SessionStart cache's freshness (`start_text::FRESH`, 10 s),
        // within which a second event of the same conversation, source and process (two
        // compactions) would be served the first one's text. Each event gets its own cache,
        // as if that time had passed; the freshness rule has tests of its own (start_text).
        let n = self.next();
        let cache = self.sb.root().join(format!("start-cache-{n}"));
        self.sb
            .extra_env
            .retain(|(k, _)| k != preload_core::primitives::env::PRELOAD_CACHE_DIR);
        self.sb.extra_env.push((
            preload_core::primitives::env::PRELOAD_CACHE_DIR.to_owned(),
            cache.to_string_lossy().into_owned(),
        ));
        // The text names the time to the second, and the client drops a resume's text that the
        // conversation holds already: a resume comes at least a second after every start of its
        // conversation, as a user's does, so that a text sent again is seen as such.
        let conversation = self.procs[slot]
            .as_ref()
            .map(|p| p.conversation.clone())
            .unwrap_or_default();
        let seconds = self.start_seconds.entry(conversation).or_default();
        if source == "resume" {
            while seconds.contains(&unix_second()) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        seconds.insert(unix_second());
        let answers = hooks::event(
            &self.sb,
            "SessionStart",
            json!({"hook_event_name": "SessionStart", "source": source}),
            None,
        );
        if let Some(p) = self.procs[slot].as_ref() {
            let conversation = p.conversation.clone();
            self.start_seconds
                .entry(conversation)
                .or_default()
                .insert(unix_second());
        }
        // A new context window writes the owner's seed fresh (only a session's state is
        // re-seeded in place): the field planted in the old seed goes with it; plant anew.
        let seed = self.sb.seed_path();
        let carry = preload_core::mechanisms::ledger::carry_path(&seed);
        self.planted.retain(|f| *f != seed && *f != carry);
        // A loss in the one window stays the same loss when a compaction keeps the killed
        // call (its record names what the killed hook committed); a new conversation ends it.
        if !matches!(source, "resume" | "compact" | "fork") {
            self.lost.retain(|(s, _)| *s != slot);
        }
        // Its context hangs off the conversation's newest entry (a compaction's off nothing:
        // the summary is the new window's root).
        if source == "compact" {
            let conversation = self.sb.conversation.clone();
            self.leaf.remove(&conversation);
        }
        let _ = self.link(None, None);
        let claude_code = self.client == Client::ClaudeCode;
        let Some(window) = self.window(slot, None) else {
            return;
        };
        let exchange = window.next_exchange();
        let kind = Kind::Start(source.to_owned());
        let mut kept = Vec::new();
        for (label, answer) in &answers {
            let text = Window::capped(&answer.context());
            if source == "resume" && client::resume_drops(window, &text) {
                continue;
            }
            // Claude Code's fork keeps the first registration's context only.
            if source == "fork" && claude_code && client::fork_drops(kept.len()) {
                continue;
            }
            kept.push((label.clone(), answer.clone()));
        }
        if matches!(source, "resume" | "fork") {
            window.kept_exchange = Some(exchange);
        }
        self.deliver(slot, None, exchange, &kind, &kept);
        // Answers dropped by the client still had to be in contract.
        for (label, answer) in &answers {
            if !kept.iter().any(|(l, _)| l == label) {
                for problem in invariants::answer_problems(answer) {
                    self.problems.push(format!("{label}: {problem}"));
                }
            }
        }
        self.due_at_start(slot, source);
    }

    fn startup(&mut self, slot: usize) -> bool {
        if self.procs[slot].is_some() {
            self.exit(slot);
        }
        let n = self.next();
        let p = self.spawn_process(format!("conversation-{n}"), Window::default());
        self.procs[slot] = Some(p);
        self.session_start(slot, "startup");
        true
    }

    /// Run `event`, whose answers reach no window, checking each against the contract.
    fn event_outside_windows(&mut self, event: &str, input: Value) -> Vec<(String, Answer)> {
        let answers = hooks::event(&self.sb, event, input, None);
        for (label, answer) in &answers {
            for problem in invariants::answer_problems(answer) {
                self.problems.push(format!("{label}: {problem}"));
            }
        }
        answers
    }

    fn exit(&mut self, slot: usize) -> bool {
        if self.procs[slot].is_none() {
            return false;
        }
        self.use_slot(slot);
        self.event_outside_windows(
            "SessionEnd",
            json!({"hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}),
        );
        self.end(slot)
    }

    /// The process in `slot` dies with no hook run.
    fn crash(&mut self, slot: usize) -> bool {
        self.procs[slot].is_some() && self.end(slot)
    }

    /// The process in `slot` is gone; its conversation may be resumed.
    fn end(&mut self, slot: usize) -> bool {
        let mut p = self.procs[slot].take().unwrap();
        let _ = p.child.kill();
        let _ = p.child.wait();
        let lost = self.lost_in(slot);
        self.leave(Transcript {
            conversation: p.conversation.clone(),
            window: p.window,
            reloaded: p.reloaded,
            lost,
        });
        self.due.retain(|d| d.slot != slot);
        true
    }

    /// The files lost in the one window of the window in `slot`.
    fn lost_in(&self, slot: usize) -> BTreeSet<String> {
        self.lost
            .iter()
            .filter(|(s, _)| *s == slot)
            .map(|(_, path)| path.clone())
            .collect()
    }

    fn leave(&mut self, t: Transcript) {
        self.ended.retain(|e| e.conversation != t.conversation);
        self.ended.push(t);
    }

    fn resume(&mut self, slot: usize, n: usize) -> bool {
        let Some(t) = self.ended_for(slot, n) else {
            return false;
        };

        let p = self.spawn_process(t.conversation.clone(), t.window.clone());
        self.take_up(slot, p, &t, "resume");
        true
    }

    /// Process `p` in `slot` takes up the window of conversation `t` (a resume of it, or a fork
    /// over a copy of it), with the skills it holds and its losses (no other window's), and
    /// starts with `source`.
    fn take_up(&mut self, slot: usize, mut p: Process, t: &Transcript, source: &str) {
        p.held_at_resume = client::held_after_resume(t);
        p.reloaded.clone_from(&t.reloaded);
        self.procs[slot] = Some(p);
        self.lost.retain(|(s, _)| *s != slot);
        self.lost
            .extend(t.lost.iter().map(|path| (slot, path.clone())));
        self.session_start(slot, source);
    }

    /// A rewind of the slot's conversation to before its `k`th (wrapping) prompt in this window,
    /// followed by a new prompt (an edited message; the TUI's rewind, `--resume-session-at`):
    /// the client drops those turns from the context, and the new prompt hangs off the entry the
    /// old one did. What the dropped turns carried may stay in the record until the slot's next
    /// tool call, which takes it back.
    fn rewind(&mut self, slot: usize, k: usize) -> bool {
        let Some(p) = self.procs[slot].as_mut() else {
            return false;
        };
        let window = &mut p.window;
        if window.prompts.is_empty() {
            return false;
        }
        let (exchange, _, parent) = window.prompts[k % window.prompts.len()].clone();
        let (kept, dropped): (Vec<Entry>, Vec<Entry>) = std::mem::take(&mut window.entries)
            .into_iter()
            .partition(|e| e.exchange < exchange);
        window.entries = kept;
        window.prompts.retain(|(at, ..)| *at < exchange);
        window.kept_exchange = window.kept_exchange.filter(|at| *at < exchange);
        let dropped = Window {
            entries: dropped,
            ..Window::default()
        };
        for r in dropped.receptions() {
            self.rewound.insert((slot, canon(&r.path)));
        }
        self.use_slot(slot);
        let conversation = self.sb.conversation.clone();
        match parent {
            Some(parent) => self.leaf.insert(conversation, parent),
            None => self.leaf.remove(&conversation),
        };
        self.prompt(slot, "Let us go another way.", None)
    }

    /// The `n`th (wrapping) conversation left behind that the other slot's process does not
    /// run, for the process in `slot` to take up; the process in `slot` exits first.
    fn ended_for(&mut self, slot: usize, n: usize) -> Option<Transcript> {
        if self.procs[slot].is_some() {
            self.exit(slot);
        }
        let other = self.procs[1 - slot]
            .as_ref()
            .map(|p| p.conversation.clone());
        let candidates: Vec<&Transcript> = self
            .ended
            .iter()
            .filter(|t| Some(&t.conversation) != other.as_ref())
            .collect();
        (!candidates.is_empty()).then(|| candidates[n % candidates.len()].clone())
    }

    /// `claude --resume <id> --fork-session`: a new conversation over a copy of an ended one's
    /// window (with the skills it holds); the parent's record stays as it was.
    fn fork(&mut self, slot: usize, n: usize) -> bool {
        if self.procs[slot].is_some() {
            self.exit(slot);
        }
        // The conversations left behind, and the one the other slot's client runs now.
        let other = 1 - slot;
        let live = self.procs[other].as_ref().map(|p| Transcript {
            conversation: p.conversation.clone(),
            window: p.window.clone(),
            reloaded: p.reloaded.clone(),
            lost: self.lost_in(other),
        });
        let mut candidates: Vec<Transcript> = self
            .ended
            .iter()
            .filter(|t| {
                live.as_ref()
                    .is_none_or(|l| l.conversation != t.conversation)
            })
            .cloned()
            .collect();
        candidates.extend(live);
        if candidates.is_empty() {
            return false;
        }
        let t = candidates[n % candidates.len()].clone();
        let had_session = self
            .session_where(|st| {
                st["preloadConversation"] == t.conversation.as_str() && st["lifecycle"] == "active"
            })
            .is_some();
        self.counter += 1;
        let id = format!("conversation-{}", self.counter);
        let transcripts = self.sb.root().join("transcripts");
        let forked = transcripts.join(format!("{id}.jsonl"));
        let p = if self.client == Client::Codex {
            // `codex exec fork <id>`: the fork's rollout opens with its `session_meta`, which
            // names its parent; the parent's records are its history by reference.
            let meta = json!({"type": "session_meta", "payload": {"id": id,
                "cwd": self.sb.project, "forked_from_id": t.conversation}});
            let _ = fs::create_dir_all(&transcripts);
            let _ = fs::write(&forked, format!("{meta}\n"));
            self.spawn_process(id, t.window.clone())
        } else {
            // The fork's transcript starts as a copy of its parent's, its entries' `uuid`s kept.
            let _ = fs::copy(
                transcripts.join(format!("{}.jsonl", t.conversation)),
                &forked,
            );
            if let Some(leaf) = self.leaf.get(&t.conversation).cloned() {
                self.leaf.insert(id.clone(), leaf);
            }
            self.spawn_client(id, t.window.clone(), Some(&t.conversation))
        };
        let mut p = p;
        p.forked_from_session = had_session;
        self.take_up(slot, p, &t, "fork");
        true
    }

    fn clear(&mut self, slot: usize) -> bool {
        if self.procs[slot].is_none() {
            return false;
        }
        let lost = self.lost_in(slot);
        let p = self.procs[slot].as_mut().unwrap();
        let old = Transcript {
            conversation: p.conversation.clone(),
            window: std::mem::take(&mut p.window),
            reloaded: std::mem::take(&mut p.reloaded),
            lost,
        };
        p.invoked.clear();
        p.held_at_resume.clear();
        p.subs.clear();
        p.sub_generation += 1;
        self.counter += 1;
        let n = self.counter;
        if let Some(p) = self.procs[slot].as_mut() {
            p.conversation = format!("conversation-{n}");
        }
        self.leave(old);
        self.due.retain(|d| d.slot != slot);
        self.session_start(slot, "clear");
        true
    }

    fn compact(&mut self, slot: usize) -> bool {
        let Some(p) = self.procs[slot].as_ref() else {
            return false;
        };
        if p.window.kept_exchange.is_none() && p.window.rounds == 0 {
            return false;
        }
        self.use_slot(slot);
        let answers = self.event_outside_windows(
            "PreCompact",
            json!({"hook_event_name": "PreCompact", "trigger": "auto"}),
        );
        if answers.iter().any(|(_, a)| a.top_decision() == "block") {
            self.steps
                .push("  (PreCompact blocked the compaction)".into());
            return true;
        }
        let home = self.sb.home.clone();
        let p = self.procs[slot].as_mut().unwrap();
        let held = client::skills_the_conversation_holds(p);
        // Codex's summary replaces the whole history, the calls in flight included.
        let kept: Vec<Entry> = if self.client == Client::Codex {
            Vec::new()
        } else {
            p.window.kept_by_compaction()
        };
        let mut window = Window {
            entries: kept,
            exchange: p.window.exchange,
            rounds: p.window.rounds,
            round_largest: p.window.round_largest.clone(),
            kept_exchange: p.window.kept_exchange,
            // The summary is the window's root: no rewind goes back before it.
            prompts: Vec::new(),
        };
        let exchange = window.next_exchange();
        window.receive(exchange, Kind::Summary, "summary", "This session is being continued from a previous conversation. Summary: work in progress.");
        for skill in &held {
            let dir = home.join(".claude/skills").join(skill);
            let Ok(text) = fs::read_to_string(dir.join("SKILL.md")) else {
                continue;
            };
            let dir = dir.to_string_lossy().into_owned();
            let (shown, whole) = client::expansion(&dir, &text, Some(client::SKILL_REINJECT_CAP));
            let kind = if whole {
                Kind::Expansion(dir)
            } else {
                Kind::Summary
            };
            window.receive(exchange, kind, "skill re-injection", &shown);
        }
        for skill in held {
            if !p.reloaded.contains(&skill) {
                p.reloaded.push(skill);
            }
        }
        p.window = window;
        p.subs.clear();
        p.sub_generation += 1;
        self.due.retain(|d| d.slot != slot);
        self.session_start(slot, "compact");
        true
    }

    fn prompt(&mut self, slot: usize, text: &str, skill: Option<Sk>) -> bool {
        if self.procs[slot].is_none() {
            return false;
        }
        self.use_slot(slot);
        let prompt_id = format!("prompt-{}", self.next());
        let answers = hooks::event(
            &self.sb,
            "UserPromptSubmit",
            json!({"hook_event_name": "UserPromptSubmit", "prompt": text, "prompt_id": prompt_id}),
            None,
        );
        let exchange = self.window(slot, None).unwrap().next_exchange();
        self.deliver(slot, None, exchange, &Kind::Prompt, &answers);
        if let Some((uuid, parent)) = self.link(Some((text, &prompt_id)), None) {
            let window = self.window(slot, None).unwrap();
            window.prompts.push((exchange, uuid, parent));
        }
        if let Some(k) = skill {
            // The client expands a `/skill` prompt whatever the window holds (a copy after
            // another is the client's: the invariants judge the hooks').
            self.expand(slot, None, exchange, k);
            // The skill's templates and first phase are due at its `Skill` call or activation
            // (`preload-templates`, as the engine's hook), not at the prompt: the expansion
            // brings SKILL.md only.
        }
        true
    }

    /// The client expands skill `k` into the window and counts it as invoked.
    fn expand(&mut self, slot: usize, agent: Option<&str>, exchange: usize, k: Sk) {
        let dir = self.sb.home.join(".claude/skills").join(k.name());
        let text = fs::read_to_string(dir.join("SKILL.md")).unwrap_or_default();
        let dir = dir.to_string_lossy().into_owned();
        let (shown, _) = client::expansion(&dir, &text, None);
        if agent.is_none() {
            let p = self.procs[slot].as_mut().unwrap();
            if !p.invoked.iter().any(|s| s == k.name()) {
                p.invoked.push(k.name().to_owned());
            }
        }
        if let Some(w) = self.window(slot, agent) {
            w.receive(exchange, Kind::Expansion(dir), "skill expansion", &shown);
        }
    }

    fn skill_call(&mut self, slot: usize, agent: Option<String>, k: Sk) -> bool {
        if self.window(slot, agent.as_deref()).is_none() {
            return false;
        }
        self.use_slot(slot);
        let input = json!({"skill": k.name()});
        let (exchange, ran) = self.one_call(slot, agent.as_deref(), "Skill", &input, None, true);
        if ran {
            self.due_at_skill(slot, agent.as_deref(), k, None);
        }
        let _ = exchange;
        true
    }

    /// One whole tool call: PreToolUse, then (allowed) the client's part (a `Skill` call's
    /// expansion) and PostToolUse. (exchange, ran).
    fn one_call(
        &mut self,
        slot: usize,
        agent: Option<&str>,
        tool: &str,
        tool_input: &Value,
        kill: Option<(usize, Duration)>,
        expand: bool,
    ) -> (usize, bool) {
        let id = format!("toolu_{}", self.next());
        let exchange = self.window(slot, agent).unwrap().next_exchange();
        if agent.is_none() {
            self.respond(&[&id]);
        }
        let ran = self.call_in(slot, agent, exchange, tool, tool_input, &id, kill, expand);
        (exchange, ran)
    }

    #[allow(clippy::too_many_arguments)]
    fn call_in(
        &mut self,
        slot: usize,
        agent: Option<&str>,
        exchange: usize,
        tool: &str,
        tool_input: &Value,
        id: &str,
        kill: Option<(usize, Duration)>,
        expand: bool,
    ) -> bool {
        let (pre, post) = run_call(&self.sb, agent, tool, tool_input, id, kill, None);
        self.finish_call(
            slot,
            agent,
            exchange,
            tool,
            tool_input,
            &pre,
            post.as_deref(),
            expand,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn finish_call(
        &mut self,
        slot: usize,
        agent: Option<&str>,
        exchange: usize,
        tool: &str,
        tool_input: &Value,
        pre: &[(String, Answer)],
        post: Option<&[(String, Answer)]>,
        expand: bool,
    ) -> bool {
        let denied = self.deliver(slot, agent, exchange, &Kind::Call, pre);
        if agent.is_none() {
            // A denied call is a call of the conversation too (its tool use and the error
            // result): the latest one, which a compaction keeps.
            if let Some(w) = self.window(slot, None) {
                w.kept_exchange = Some(exchange);
            }
        }
        let Some(post) = post.filter(|_| !denied) else {
            return false;
        };
        if expand && tool == "Skill" {
            if let Some(k) = [Sk::Implement, Sk::Do, Sk::Test]
                .into_iter()
                .find(|k| tool_input["skill"] == k.name())
            {
                self.expand(slot, agent, exchange, k);
            }
        }
        self.deliver(slot, agent, exchange, &Kind::Call, post);
        true
    }

    /// Ordinary tool calls (one, or several at once); a heartbeat is answered with a log call.
    fn calls(
        &mut self,
        slot: usize,
        agent: Option<String>,
        calls: &[(Tool, u8)],
        outcome: Outcome,
    ) -> bool {
        let agent = agent.as_deref();
        if self.window(slot, agent).is_none() {
            return false;
        }
        let (kill, fails) = match outcome {
            Outcome::Done => (None, false),
            Outcome::Killed(kill) => (Some(kill), false),
            Outcome::Fails => (None, true),
        };
        if kill.is_some() {
            self.killed = true;
            self.kill_step = true;
        }
        self.use_slot(slot);
        let inputs: Vec<(String, Value, String)> = calls
            .iter()
            .map(|(t, n)| {
                let (tool, input) = self.tool_input(*t, usize::from(*n));
                (tool, input, format!("toolu_{}", self.next()))
            })
            .collect();
        let exchange = self.window(slot, agent).unwrap().next_exchange();
        if agent.is_none() {
            let ids: Vec<&str> = inputs.iter().map(|(.., id)| id.as_str()).collect();
            self.respond(&ids);
        }
        let sb = &self.sb;
        let results: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = inputs
                .iter()
                .map(|(tool, input, id)| {
                    scope.spawn(move || {
                        run_call(sb, agent, tool, input, id, kill, fails.then_some(()))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        // A failed call is a round too, with PreToolUse's room only.
        let mut any = fails;
        for ((tool, input, _), (pre, post)) in inputs.iter().zip(results) {
            any |= self.finish_call(
                slot,
                agent,
                exchange,
                tool,
                input,
                &pre,
                post.as_deref(),
                false,
            );
        }
        if any {
            if let Some(w) = self.window(slot, agent) {
                w.count_round(exchange, kill.is_some() || fails);
            }
        }
        self.answer_heartbeat(slot, agent, exchange);
        true
    }

    /// When the last exchange asked for a log entry (the heartbeat), the agent logs.
    fn answer_heartbeat(&mut self, slot: usize, agent: Option<&str>, exchange: usize) {
        let heard = self.window(slot, agent).is_some_and(|w| {
            w.entries
                .iter()
                .any(|e| e.exchange == exchange && e.text.contains("heartbeat"))
        });
        if !heard {
            return;
        }
        let name = self
            .active_of(self.owner(slot))
            .map_or_else(|| format!("work{slot}"), |(n, _)| n);
        let input = json!({"command": format!("engine log sessions/{name}/LOG.md")});
        self.one_call(slot, agent, "Bash", &input, None, false);
    }

    fn tool_input(&self, t: Tool, n: usize) -> (String, Value) {
        let file = self.sb.project.join(TARGETS[n % TARGETS.len()]);
        let dir = file.parent().unwrap().to_path_buf();
        if self.client == Client::Codex {
            // Codex reads through its shell and edits with apply_patch.
            let (file, dir) = (file.display(), dir.display());
            let command = match t {
                Tool::Read => format!("sed -n 1,200p {file}"),
                Tool::Edit | Tool::Write => {
                    let patch = format!(
                        "*** Begin Patch\n*** Update File: {file}\n@@\n-a\n+b\n*** End Patch\n"
                    );
                    return ("apply_patch".into(), json!({"command": patch}));
                }
                Tool::Grep => format!("rg -n total {dir}"),
                Tool::Glob | Tool::Ls => format!("ls {dir}"),
            };
            return ("Bash".into(), json!({"command": command}));
        }
        match t {
            Tool::Read => ("Read".into(), json!({"file_path": file})),
            Tool::Edit => (
                "Edit".into(),
                json!({"file_path": file, "old_string": "a", "new_string": "b"}),
            ),
            Tool::Write => (
                "Write".into(),
                json!({"file_path": file, "content": "export {};\n"}),
            ),
            Tool::Grep => ("Grep".into(), json!({"pattern": "total", "path": dir})),
            Tool::Glob => ("Glob".into(), json!({"pattern": "**/*.ts", "path": dir})),
            Tool::Ls => (
                "Bash".into(),
                json!({"command": format!("ls {}", dir.display())}),
            ),
        }
    }

    /// A command line run as a Bash tool call: PreToolUse, the CLI, PostToolUse with its
    /// output. (ran, the CLI's success).
    fn bash_cli(&mut self, slot: usize, command: &str, args: &[&str], stdin: &str) -> (bool, bool) {
        self.bash_call(slot, command, |sb| {
            let out = cli_output(sb, args, stdin);
            let failed = (!out.status.success()).then(|| {
                format!(
                    "preload {args:?} failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )
            });
            (String::from_utf8_lossy(&out.stdout).into_owned(), failed)
        })
    }

    /// A Bash tool call of `command`, which `run` carries out (its output, and why it failed
    /// when it did): PreToolUse, `run` unless denied, PostToolUse with the output. (ran, `run`'s
    /// success).
    fn bash_call(
        &mut self,
        slot: usize,
        command: &str,
        run: impl FnOnce(&crate::common::Sandbox) -> (String, Option<String>),
    ) -> (bool, bool) {
        let id = format!("toolu_{}", self.next());
        let exchange = self.window(slot, None).unwrap().next_exchange();
        self.respond(&[&id]);
        let input = json!({"command": command});
        let (pre, _) = run_call(&self.sb, None, "Bash", &input, &id, None, Some(()));
        let allowed = !pre.iter().any(|(_, a)| a.decision() == "deny");
        let mut ok = false;
        let post = if allowed {
            let (stdout, failed) = run(&self.sb);
            ok = failed.is_none();
            if let Some(why) = failed {
                self.steps.push(format!("  ({why})"));
            }
            let response = json!({"stdout": stdout});
            Some(post_call(
                &self.sb, None, "Bash", &input, &id, &response, None,
            ))
        } else {
            None
        };
        let ran = self.finish_call(
            slot,
            None,
            exchange,
            "Bash",
            &input,
            &pre,
            post.as_deref(),
            false,
        );
        (ran, ok)
    }

    fn activate(&mut self, slot: usize, k: Sk) -> bool {
        if self.procs[slot].is_none() {
            return false;
        }
        self.use_slot(slot);
        let dir = format!("sessions/work{slot}");
        let command = format!("engine session activate {dir} {}", k.name());
        let (ran, ok) = self.bash_cli(slot, &command, &["activate", &dir, "--skill", k.name()], "");
        if ran && ok {
            let phase = self
                .active_of(self.owner(slot))
                .and_then(|(_, st)| st["currentPhase"].as_str().map(str::to_owned));
            self.due_at_skill(slot, None, k, phase.as_deref());
        }
        true
    }

    /// `engine session restart`, or `dehydrate` with a hand-over naming targets `n` and
    /// `n + 1`, on the slot owner's active session, as a Bash tool call.
    fn restart(&mut self, slot: usize, hand_over: Option<usize>) -> bool {
        let Some((name, _)) = self.active_in(slot) else {
            return false;
        };
        self.use_slot(slot);
        let dir = format!("sessions/{name}");
        let command = match hand_over {
            None => format!("engine session restart {dir}"),
            Some(_) => format!("engine session dehydrate {dir} <<'EOF' …"),
        };
        let project = self.sb.project.clone();
        self.bash_call(slot, &command, |sb| {
            let engine = crate::engine_model::Engine::new(sb);
            match hand_over {
                None => engine.restart(&name),
                Some(n) => {
                    let required: Vec<String> = [n, n + 1]
                        .iter()
                        .map(|i| project.join(TARGETS[i % TARGETS.len()]))
                        .map(|p| p.to_string_lossy().into_owned())
                        .collect();
                    let hand_over = json!({
                        "summary": "Adding a total to the estimate.",
                        "lastAction": "Wrote the parser.",
                        "nextSteps": ["Test the total."],
                        "requiredFiles": required,
                    });
                    engine.dehydrate(&name, &hand_over);
                }
            }
            ("Restart requested.\n".to_owned(), None)
        });
        true
    }

    /// `engine session continue` on a session whose restart is requested and whose owner is no
    /// live process of the world.
    fn continue_session(&mut self, slot: usize) -> bool {
        if self.procs[slot].is_none() {
            return false;
        }
        let pid = self.owner(slot);
        let live: Vec<u32> = (0..2).map(|s| self.owner(s)).filter(|p| *p != 0).collect();
        let restarting = self.session_where(|state| {
            let owner = state["pid"].as_u64().and_then(|p| u32::try_from(p).ok());
            state["killRequested"] == json!(true) && owner.is_none_or(|p| !live.contains(&p))
        });
        let Some((name, _)) = restarting else {
            return false;
        };
        self.use_slot(slot);
        let command = format!("engine session continue sessions/{name}");
        self.bash_call(slot, &command, |sb| {
            crate::engine_model::Engine::new(sb).continue_session(&name, pid);
            ("Session continued.\n".to_owned(), None)
        });
        true
    }

    /// `engine session idle` on the slot owner's active session.
    fn idle(&mut self, slot: usize) -> bool {
        let Some((name, _)) = self.active_in(slot) else {
            return false;
        };
        self.use_slot(slot);
        let command = format!("engine session idle sessions/{name} <<'EOF' …");
        self.bash_call(slot, &command, |sb| {
            crate::engine_model::Engine::new(sb).idle(&name);
            ("Session idle.\n".to_owned(), None)
        });
        true
    }

    /// The statusline's update of the session the owner holds.
    fn statusline(&mut self, slot: usize) -> bool {
        let Some(conversation) = self.procs[slot].as_ref().map(|p| p.conversation.clone()) else {
            return false;
        };
        let pid = self.owner(slot);
        // `session.sh find`: by the owner's PID, else the session it left idle (then claimed).
        let found = self
            .session_where(|state| state["pid"].as_u64() == Some(u64::from(pid)))
            .or_else(|| self.left_idle_by(pid));
        let Some((name, _)) = found else {
            return false;
        };
        crate::engine_model::Engine::new(&self.sb).statusline(&name, pid, &conversation, 0.25);
        true
    }

    fn phase(&mut self, slot: usize, n: usize) -> bool {
        let Some((name, state)) = self.active_in(slot) else {
            return false;
        };
        let current = state["currentPhase"].as_str().unwrap_or("").to_owned();
        let phases = state["phases"].as_array().cloned().unwrap_or_default();
        let labels: Vec<String> = phases
            .iter()
            .map(|p| {
                format!(
                    "{}: {}",
                    p["label"].as_str().unwrap_or(""),
                    p["name"].as_str().unwrap_or("")
                )
            })
            .collect();
        let at = labels.iter().position(|l| *l == current);
        let mut candidates: Vec<String> = Vec::new();
        if let Some(next) = labels.get(at.map_or(0, |i| i + 1)) {
            candidates.push(next.clone());
            if next.split(':').next().is_some_and(|l| l.contains('.')) {
                if let Some(after) = labels.get(at.map_or(0, |i| i + 2)) {
                    candidates.push(after.clone());
                }
            }
        }
        if candidates.is_empty() {
            return false;
        }
        let target = candidates[n % candidates.len()].clone();
        self.use_slot(slot);
        let proof = proof_stdin(&self.sb, &name);
        let command = phase_command(&name, &target, &proof);
        let dir = format!("sessions/{name}");
        let (ran, ok) = self.bash_cli(slot, &command, &["phase", &dir, &target], &proof);
        if ran && ok {
            let skill = state["skill"].as_str().unwrap_or("").to_owned();
            self.due_at_phase(slot, &skill, &target);
        }
        true
    }

    fn subagent(&mut self, slot: usize, a: u8) -> bool {
        if self.procs[slot].is_none() {
            return false;
        }
        let agent = self.agent_id(slot, a);
        let p = self.procs[slot].as_mut().unwrap();
        if p.subs.iter().any(|(id, _)| *id == agent) {
            return false;
        }
        p.subs.push((agent.clone(), Window::default()));
        self.use_slot(slot);
        let answers = hooks::event(
            &self.sb,
            "SubagentStart",
            json!({"hook_event_name": "SubagentStart", "agent_id": agent,
                "agent_type": "general-purpose"}),
            None,
        );
        let exchange = self.window(slot, Some(&agent)).unwrap().next_exchange();
        self.deliver(
            slot,
            Some(&agent),
            exchange,
            &Kind::Start("subagent".into()),
            &answers,
        );
        true
    }

    fn followed(&self, n: usize) -> PathBuf {
        let engine = self.sb.home.join(".claude/engine/.directives");
        match n % 6 {
            0 => self.sb.project.join(".directives/AGENTS.md"),
            1 => self
                .sb
                .project
                .join("packages/estimate/.directives/INVARIANTS.md"),
            2 => self.sb.project.join("docs/TOC.md"),
            3 => engine.join("commands/CMD_ASK_ROUND.md"),
            4 => self.sb.project.join("docs/CONVENTIONS.md"),
            _ => engine.join("COMMANDS.md"),
        }
    }

    fn touch(&mut self, n: usize) -> bool {
        let path = self.followed(n);
        let k = self.next();
        let mut text = fs::read_to_string(&path).unwrap_or_default();
        text.push_str(&format!("\nChanged on disk ({k}).\n"));
        self.write_changed(&path, &text);
        true
    }

    fn write_changed(&mut self, path: &PathBuf, text: &str) {
        fs::write(path, text).unwrap();
        *self
            .edits
            .entry(canon(&path.to_string_lossy()))
            .or_default() += 1;
    }

    fn grow(&mut self, b: Big, slices: usize) -> bool {
        let engine = self.sb.home.join(".claude/engine/.directives/commands");
        let path = match b {
            Big::Interrogate => engine.join("CMD_INTERROGATE.md"),
            Big::AskRound => engine.join("CMD_ASK_ROUND.md"),
            Big::ParseParameters => engine.join("CMD_PARSE_PARAMETERS.md"),
            Big::Debrief => engine.join("CMD_GENERATE_DEBRIEF.md"),
            Big::Toc => self.sb.project.join("docs/TOC.md"),
            Big::EstimateInvariants => self
                .sb
                .project
                .join("packages/estimate/.directives/INVARIANTS.md"),
        };
        let key = path.to_string_lossy().into_owned();
        let original = self
            .originals
            .entry(key)
            .or_insert_with(|| fs::read_to_string(&path).unwrap_or_default())
            .clone();
        let mut text = original;
        text.push_str("\n## Long notes\n\n");
        let mut line = 0;
        while text.len() < slices * 9_500 {
            line += 1;
            text.push_str(&format!("{line:05} a line of padding.\n"));
        }
        self.write_changed(&path, &text);
        true
    }
}

/// PreToolUse and, when allowed, PostToolUse of one call (`pre_only`: the caller runs the tool
/// and PostToolUse itself).
/// How a step's tool calls end.
#[derive(Debug, Clone, Copy)]
enum Outcome {
    /// The tool runs, then PostToolUse.
    Done,
    /// PostToolUse's hook number `k` is killed after the duration.
    Killed((usize, Duration)),
    /// The tool fails: no PostToolUse.
    Fails,
}

/// The current Unix time in whole seconds.
fn unix_second() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn run_call(
    sb: &Sandbox,
    agent: Option<&str>,
    tool: &str,
    tool_input: &Value,
    id: &str,
    kill: Option<(usize, Duration)>,
    pre_only: Option<()>,
) -> (Vec<(String, Answer)>, Option<Vec<(String, Answer)>>) {
    let mut pre_input = json!({"hook_event_name": "PreToolUse", "tool_name": tool,
        "tool_input": tool_input, "tool_use_id": id});
    if let Some(a) = agent {
        pre_input["agent_id"] = json!(a);
    }
    let pre = hooks::event(sb, "PreToolUse", pre_input, None);
    if pre_only.is_some() || pre.iter().any(|(_, a)| a.decision() == "deny") {
        return (pre, None);
    }
    let post = post_call(sb, agent, tool, tool_input, id, &json!({}), kill);
    (pre, Some(post))
}

fn post_call(
    sb: &Sandbox,
    agent: Option<&str>,
    tool: &str,
    tool_input: &Value,
    id: &str,
    response: &Value,
    kill: Option<(usize, Duration)>,
) -> Vec<(String, Answer)> {
    let mut input = json!({"hook_event_name": "PostToolUse", "tool_name": tool,
        "tool_input": tool_input, "tool_response": response, "tool_use_id": id});
    if let Some(a) = agent {
        input["agent_id"] = json!(a);
    }
    hooks::event(sb, "PostToolUse", input, kill)
}

impl Drop for World {
    fn drop(&mut self) {
        for child in self
            .procs
            .iter_mut()
            .flatten()
            .map(|p| &mut p.child)
            .chain(&mut self.supervisor)
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A state or seed file parsed, or why not.
pub fn parse_state(path: &std::path::Path) -> Result<Value, String> {
    let text = fs::read_to_string(path).map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}"))
}
