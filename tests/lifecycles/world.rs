//! The simulated world: the sandbox, up to two client processes with their windows, the
//! conversations they left behind, and what each op does to them.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::client::{self, Entry, Kind, Process, Transcript, Window};
use crate::hooks;
use crate::invariants::{self, Due};
use crate::ops::{Big, Op, Sk, Tool};
use preload_test_support::pipeline_steps::{cli_output, phase_command, proof_stdin};
use preload_test_support::sandbox::{Answer, Sandbox};

mod calls;
mod lifecycle;

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
