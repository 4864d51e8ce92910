//! Generated `HOME` + project trees for the benchmark: the bundled example engine, a 12-rule
//! `guards.json`, one active session owned by the benchmark process, and, for the large
//! scenario, many other sessions, preloaded files, directive files and a long SKILL.md.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The transcript file name the hooks see (its basename keys the heartbeat counter).
pub const TRANSCRIPT: &str = "bench-transcript.jsonl";
/// The conversation (`session_id`) of every call that does not start one, which the active
/// session already serves: a call measures an ordinary call of a running conversation.
pub const CONVERSATION: &str = "bench-session";

/// Names of directive files, core first (`AGENTS`, `INVARIANTS`, `COMMANDS` pass discovery on
/// every tool; the others only for Edit/Write of skills that list them).
const DIRECTIVE_NAMES: [&str; 9] = [
    "AGENTS.md",
    "INVARIANTS.md",
    "COMMANDS.md",
    "TESTING.md",
    "PITFALLS.md",
    "CONTRIBUTING.md",
    "ARCHITECTURE.md",
    "CHECKLIST.md",
    "TEMPLATE.md",
];

/// The command files of the bundled example engine.
pub const EXAMPLE_COMMANDS: [&str; 20] = [
    "CMD_APPEND_LOG",
    "CMD_ASK_ROUND",
    "CMD_CLOSE_SESSION",
    "CMD_DECISION_TREE",
    "CMD_DEHYDRATE",
    "CMD_GENERATE_DEBRIEF",
    "CMD_GENERATE_PLAN",
    "CMD_HANDOFF_TO_AGENT",
    "CMD_INGEST_CONTEXT_BEFORE_WORK",
    "CMD_INTERROGATE",
    "CMD_LOG_INTERACTION",
    "CMD_PARSE_PARAMETERS",
    "CMD_REPORT_INTENT",
    "CMD_REQUIRE_ACTIVE_SESSION",
    "CMD_RESUME_SESSION",
    "CMD_RUN_SYNTHESIS_PIPELINE",
    "CMD_RUN_TESTS",
    "CMD_SELECT_EXECUTION_PATH",
    "CMD_SELECT_MODE",
    "CMD_WALK_THROUGH_RESULTS",
];

use preload_core::mechanisms::session::CORE_STANDARDS;

/// How big a generated sandbox is.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// Session directories, the active one included.
    pub sessions: usize,
    /// Entries of the active session's `preloadedFiles` (the six core standards included).
    pub preloaded: usize,
    /// Generated directive files, spread over 8 directory levels (0: only the example's).
    pub directives: usize,
    /// Lines of the `implement` SKILL.md (0: the example's).
    pub skill_lines: usize,
    /// Bytes of every engine command file and core standard (0: the example's), so that
    /// `SessionStart` has a lot of text to deliver.
    pub command_bytes: usize,
    /// Bytes of the client's transcript (0: one empty line): a long conversation, as Claude
    /// Code writes it (see [`transcript`]).
    pub transcript_bytes: usize,
}

impl Sizes {
    /// One active session, 50 preloaded files, the example's directives and skill.
    pub const TYPICAL: Self = Self {
        sessions: 1,
        preloaded: 50,
        directives: 0,
        skill_lines: 0,
        command_bytes: 0,
        transcript_bytes: 0,
    };

    /// The large scenario divided by `divisor`.
    pub fn large(divisor: usize) -> Self {
        Self {
            sessions: (1_000 / divisor).max(1),
            preloaded: (5_000 / divisor).max(6),
            directives: 300 / divisor,
            skill_lines: (2_000 / divisor).max(20),
            command_bytes: 0,
            transcript_bytes: 0,
        }
    }
}

/// A generated sandbox (removed on drop unless `BENCH_KEEP` is set).
pub struct Sandbox {
    tmp: Option<tempfile::TempDir>,
    /// The sandbox root (also the session cache and temp directory of the hooks).
    pub root: PathBuf,
    /// The temporary `HOME`.
    pub home: PathBuf,
    /// The project root (has `.claude/`).
    pub project: PathBuf,
    /// `project/sessions`.
    pub sessions: PathBuf,
    /// The active session directory.
    pub active: PathBuf,
    /// The active session's `.state.json`.
    pub state_file: PathBuf,
    /// The active session's state as generated.
    pub base_state: Value,
    /// A source file in the deepest directory with directives (a Read there runs discovery).
    pub deep_file: PathBuf,
    /// The transcript path the hooks see.
    pub transcript: PathBuf,
    /// Total bytes of generated files.
    pub bytes: u64,
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if std::env::var_os("BENCH_KEEP").is_some() {
            if let Some(tmp) = self.tmp.take() {
                let _ = tmp.keep();
            }
        }
    }
}

use preload_test_support::example::repo;

/// Filler prose of about `bytes` bytes that mentions `refs` (`§CMD_X` style names).
fn prose(title: &str, bytes: usize, refs: &[&str]) -> String {
    let mut text = format!("# {title}\n\n");
    let mut i = 0;
    while text.len() < bytes {
        let r = refs
            .get(i % refs.len().max(1))
            .copied()
            .unwrap_or("CMD_APPEND_LOG");
        let _ = writeln!(
            text,
            "{i}. Keep the change small, run the checks, then record the result with §{r}."
        );
        i += 1;
    }
    text
}

fn write(path: &Path, body: &str, bytes: &mut u64) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    fs::write(path, body)?;
    *bytes += body.len() as u64;
    Ok(())
}

/// `value` as pretty-printed JSON at `path`, as [`write`] writes text.
fn write_json(path: &Path, value: &Value, bytes: &mut u64) -> io::Result<()> {
    write(
        path,
        &serde_json::to_string_pretty(value).unwrap_or_default(),
        bytes,
    )
}

/// A Claude Code transcript of about `bytes` bytes, in the shape the pinned client writes it:
/// turns of a prompt and tool calls, each call with its hooks' answers (`hook_success`) and
/// contexts (`hook_additional_context`) hung off it, linked by `uuid` / `parentUuid`; it ends
/// with a prompt and its first call, so the first call of a prompt has its branch to check.
pub fn transcript_text(bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 4096);
    let mut parent = "root".to_owned();
    let mut n = 0usize;
    let mut next = |kind: &str| {
        n += 1;
        format!("{kind}-{n:08}")
    };
    let padding = "x".repeat(1_500);
    let line = |out: &mut String, value: Value| {
        out.push_str(&value.to_string());
        out.push('\n');
    };
    while out.len() < bytes {
        let prompt = next("prompt");
        line(
            &mut out,
            json!({"type": "user", "uuid": prompt, "parentUuid": parent,
            "sessionId": "bench", "isSidechain": false,
            "message": {"role": "user", "content": "Carry on."}}),
        );
        parent = prompt;
        for _ in 0..8 {
            let call = next("call");
            let tool = format!("toolu_{call}");
            line(
                &mut out,
                json!({"type": "assistant", "uuid": call, "parentUuid": parent,
                "sessionId": "bench", "isSidechain": false, "message": {"role": "assistant",
                "content": [{"type": "tool_use", "id": tool, "name": "Read", "input": {}}]}}),
            );
            let success = next("hook");
            line(
                &mut out,
                json!({"type": "attachment", "uuid": success, "parentUuid": call,
                "sessionId": "bench", "attachment": {"type": "hook_success",
                "hookEvent": "PreToolUse", "toolUseID": tool, "stdout": padding}}),
            );
            let result = next("result");
            line(
                &mut out,
                json!({"type": "user", "uuid": result, "parentUuid": call,
                "sessionId": "bench", "message": {"role": "user", "content": [{"type":
                "tool_result", "tool_use_id": tool, "content": padding}]}}),
            );
            let context = next("context");
            line(
                &mut out,
                json!({"type": "attachment", "uuid": context, "parentUuid": result,
                "sessionId": "bench", "attachment": {"type": "hook_additional_context",
                "hookEvent": "PostToolUse", "toolUseID": tool,
                "content": [format!("[Preloaded: /bench/{call}.md]\n{padding}")]}}),
            );
            parent = context;
        }
    }
    let prompt = next("prompt");
    line(
        &mut out,
        json!({"type": "user", "uuid": prompt, "parentUuid": parent,
        "sessionId": "bench", "message": {"role": "user", "content": "One more thing."}}),
    );
    let call = next("call");
    line(
        &mut out,
        json!({"type": "assistant", "uuid": call, "parentUuid": prompt,
        "sessionId": "bench", "message": {"role": "assistant",
        "content": [{"type": "tool_use", "id": format!("toolu_{call}"), "name": "Read"}]}}),
    );
    out
}

/// The 12 rules: the eight of the engine's `guards.json` and four more of the same kinds.
pub fn guards() -> Value {
    let session_wl = json!([
        "AskUserQuestion",
        "Skill",
        "Bash(engine session *)",
        "Bash(engine session-search *)",
        "Bash(engine tag *)",
        "Bash(engine find-sessions *)",
        "Bash(engine doc-search *)",
        "Bash(engine discover-directives *)",
        "Read(*/.claude/*)",
        "Read(*/CLAUDE.md)",
        "Read(*/memory/*)",
        "Read(*/MEMORY.md)",
        "Read(*/sessions/*.md)",
        "Read(*/.state.json)"
    ]);
    let heartbeat_wl = json!([
        "Bash(engine log *)",
        "Bash(engine session *)",
        "Read(*/.claude/*)",
        "Read(*/TEMPLATE_*_LOG.md)",
        "Task",
        "TaskOutput",
        "Write",
        "AskUserQuestion"
    ]);
    json!([
        {"id": "overflow-dehydration", "description": "Context overflow: dehydrate before restart",
         "trigger": {"type": "contextThreshold", "condition": {"gte": "OVERFLOW_THRESHOLD"}},
         "payload": {"text": "[block: overflow] §CMD_DEHYDRATE — context is nearly full. Run the dehydrate protocol and pipe its JSON to `engine session dehydrate`. This is your LAST action before restart."},
         "mode": "inline", "urgency": "block", "priority": 1, "inject": "always",
         "whitelist": ["Bash(engine session *)", "Bash(engine log *)", "Bash(ls *)"]},
        {"id": "session-gate", "description": "No active session",
         "trigger": {"type": "lifecycle", "condition": {"noActiveSession": true}},
         "payload": {"text": "[block: session] §CMD_REQUIRE_ACTIVE_SESSION — no active session (lifecycle: $lifecycle). Activate a skill first."},
         "mode": "inline", "urgency": "block", "priority": 2, "inject": "always",
         "whitelist": session_wl},
        {"id": "idle-gate", "description": "Session idle",
         "trigger": {"type": "lifecycle", "condition": {"eq": "idle"}},
         "payload": {"text": "[block: idle] §CMD_REQUIRE_ACTIVE_SESSION — session idle. Continue it or start a new skill."},
         "mode": "inline", "urgency": "block", "priority": 3, "inject": "always",
         "whitelist": ["AskUserQuestion", "Skill", "Bash(engine session *)", "Bash(engine log *)"]},
        {"id": "read-throttle", "description": "Context at 90%+: no full reads",
         "trigger": {"type": "contextThreshold", "condition": {"gte": 0.90}},
         "toolFilter": {"include": ["Read"]},
         "payload": {"text": "[block: read-throttle] Context is at 90%+. Use head/tail/sed, Grep or Glob, or dehydrate."},
         "mode": "inline", "urgency": "block", "priority": 4, "inject": "always",
         "whitelist": ["Bash(engine log *)", "Bash(engine session *)", "AskUserQuestion", "Skill"]},
        {"id": "heartbeat-warn", "description": "Log soon",
         "trigger": {"type": "perTranscriptToolCount", "condition": {"eq": 3}},
         "payload": {"text": "[warn: heartbeat] §CMD_APPEND_LOG"},
         "mode": "inline", "urgency": "allow", "priority": 50, "inject": "always",
         "whitelist": heartbeat_wl},
        {"id": "heartbeat-block", "description": "Log now",
         "trigger": {"type": "perTranscriptToolCount", "condition": {"gte": 10}},
         "payload": {"text": "[block: heartbeat] §CMD_APPEND_LOG"},
         "mode": "inline", "urgency": "block", "priority": 5, "inject": "always",
         "whitelist": heartbeat_wl},
        {"id": "preload", "description": "Deliver queued files",
         "trigger": {"type": "discovery", "condition": {"field": "pendingPreloads", "nonEmpty": true}},
         "payload": {"preload": "$pendingPreloads"},
         "mode": "preload", "urgency": "allow", "priority": 20, "inject": "always"},
        {"id": "synthesis-commands", "description": "Synthesis reminder",
         "trigger": {"type": "phase", "condition": {"matches": "Synthesis"}},
         "payload": {"text": "[warn: synthesis] §CMD_RUN_SYNTHESIS_PIPELINE — run the synthesis pipeline before the debrief."},
         "mode": "inline", "urgency": "allow", "priority": 30, "inject": "once"},
        {"id": "planning-reminder", "description": "Planning reminder",
         "trigger": {"type": "phase", "condition": {"matches": "Planning"}},
         "payload": {"text": "[warn: planning] §CMD_GENERATE_PLAN — write the plan before any code."},
         "mode": "inline", "urgency": "allow", "priority": 31, "inject": "once"},
        {"id": "build-loop-commands", "description": "Build loop reminder",
         "trigger": {"type": "phase", "condition": {"matches": "Build Loop"}},
         "payload": {"files": ["~/.claude/.directives/commands/CMD_HANDOFF_TO_AGENT.md"]},
         "mode": "read", "urgency": "allow", "priority": 32, "inject": "once"},
        {"id": "checklist-discovery", "description": "Checklists found",
         "trigger": {"type": "discovery", "condition": {"field": "discoveredChecklists", "nonEmpty": true}},
         "payload": {"text": "[warn: checklist] A CHECKLIST.md applies here; walk it before closing."},
         "mode": "inline", "urgency": "allow", "priority": 40, "inject": "once"},
        {"id": "context-warn", "description": "Context past 60%",
         "trigger": {"type": "contextThreshold", "condition": {"gte": 0.60}},
         "payload": {"text": "[warn: context] Context is past 60%; log progress so a restart loses nothing."},
         "mode": "inline", "urgency": "allow", "priority": 60, "inject": "once"}
    ])
}

fn skill_md(lines: usize) -> String {
    let mut text = String::from(
        "---\nname: implement\ndescription: Plan and build a change in phases.\n---\n# /implement\n\n\
         Executes the phases below. Every phase starts with §CMD_REPORT_INTENT; log entries follow\n\
         §FMT_LOG_ENTRY. The protocol respects §INV_READ_BEFORE_WRITE.\n\n",
    );
    // The example's JSON block, unchanged.
    let example =
        fs::read_to_string(repo().join("examples/skills/implement/SKILL.md")).unwrap_or_default();
    // From the opening fence to its closing one (the skill has other fenced blocks after it).
    if let Some(start) = example.find("```json") {
        if let Some(len) = example[start + 7..].find("\n```") {
            let end = start + 7 + len + 4;
            text.push_str(&example[start..end]);
            text.push_str("\n\n");
        }
    }
    let mut i = 0;
    while text.lines().count() < lines {
        let cmd = EXAMPLE_COMMANDS[i % EXAMPLE_COMMANDS.len()];
        if i % 40 == 0 {
            let _ = writeln!(text, "\n## Section {}\n", i / 40 + 1);
        }
        let _ = writeln!(
            text,
            "- Step {i}: before touching the code, re-read the plan and follow §{cmd}."
        );
        i += 1;
    }
    text
}

/// The active session's state.
fn active_state(pid: u32, home: &Path, preloaded: &[String], session: &Path) -> Value {
    let skill = home.join(".claude/skills/implement");
    let phases = json!([
        {"label": "0", "name": "Setup"}, {"label": "1", "name": "Interrogation"},
        {"label": "2", "name": "Planning"}, {"label": "3", "name": "Execution"},
        {"label": "3.A", "name": "Build Loop"}, {"label": "4", "name": "Synthesis"}]);
    json!({
        "pid": pid,
        "sessionId": CONVERSATION,
        "preloadConversation": CONVERSATION,
        "skill": "implement",
        "lifecycle": "active",
        "loading": false,
        "currentPhase": "1: Interrogation",
        "sessionDir": session,
        "taskSummary": "Add a tax line to the estimate total and cover it with tests",
        "scope": "packages/estimate",
        "directoriesOfInterest": ["packages/estimate/src"],
        "taskType": "IMPLEMENTATION",
        "phases": phases,
        "nextSkills": ["/test", "/document"],
        "directives": ["TESTING.md", "PITFALLS.md"],
        "logTemplate": skill.join("assets/TEMPLATE_IMPLEMENTATION_LOG.md"),
        "debriefTemplate": skill.join("assets/TEMPLATE_IMPLEMENTATION_DEBRIEF.md"),
        "planTemplate": skill.join("assets/TEMPLATE_IMPLEMENTATION_PLAN.md"),
        "phaseHistory": ["0: Setup", "1: Interrogation"],
        "contextUsage": 0.42,
        "toolCallsByTranscript": {TRANSCRIPT: 1},
        "primaryTranscriptKey": TRANSCRIPT,
        "toolCallsSinceLastLog": 1,
        "toolUseWithoutLogsWarnAfter": 3,
        "toolUseWithoutLogsBlockAfter": 10,
        "injectedRules": {},
        "preloadedFiles": preloaded,
        "pendingPreloads": [],
        "pendingAllowInjections": [],
        "touchedDirs": {},
        "discoveredChecklists": []
    })
}

impl Sandbox {
    /// Generate a sandbox of `sizes` whose active session is owned by `pid`.
    pub fn generate(sizes: Sizes, pid: u32) -> io::Result<Self> {
        let tmp = tempfile::Builder::new().prefix("preload-bench").tempdir()?;
        let root = tmp.path().canonicalize()?;
        let home = root.join("home");
        let project = root.join("project");
        let sessions = project.join("sessions");
        let claude = home.join(".claude");
        let mut bytes = 0;
        preload_test_support::example::lay_out(&home, &project)?;
        fs::create_dir_all(root.join("tmp"))?;
        let engine = claude.join("engine");
        write_json(&engine.join("guards.json"), &guards(), &mut bytes)?;
        write(
            &engine.join("config.sh"),
            "# engine settings\nOVERFLOW_THRESHOLD=0.76\n",
            &mut bytes,
        )?;

        let directives = engine.join(".directives");
        if sizes.command_bytes > 0 {
            for (i, cmd) in EXAMPLE_COMMANDS.iter().enumerate() {
                let next = EXAMPLE_COMMANDS[(i + 1) % EXAMPLE_COMMANDS.len()];
                let mut body = prose(&format!("¶{cmd}"), sizes.command_bytes, &[next, cmd]);
                let _ = write!(body, "\n## PROOF FOR §{cmd}\n");
                write(
                    &directives.join(format!("commands/{cmd}.md")),
                    &body,
                    &mut bytes,
                )?;
            }
            for std_file in ["COMMANDS.md", "INVARIANTS.md", "SIGILS.md"] {
                let body = prose(std_file, sizes.command_bytes, &["CMD_APPEND_LOG"]);
                write(&directives.join(std_file), &body, &mut bytes)?;
            }
        }
        if sizes.skill_lines > 0 {
            write(
                &claude.join("skills/implement/SKILL.md"),
                &skill_md(sizes.skill_lines),
                &mut bytes,
            )?;
        }

        // Directive files over 8 levels under project/src: level k holds a share of them in
        // the chain directory l1/…/lk and, when it has more than one directory's worth, in
        // siblings of it.
        let mut chain = project.join("src");
        let mut level_dirs = Vec::new();
        for level in 1..=8 {
            chain = chain.join(format!("l{level}"));
            level_dirs.push(chain.clone());
        }
        for i in 0..sizes.directives {
            let level = i % 8;
            let slot = i / 8;
            let name = DIRECTIVE_NAMES[slot % DIRECTIVE_NAMES.len()];
            let dir_index = slot / DIRECTIVE_NAMES.len();
            let dir = if dir_index == 0 {
                level_dirs[level].clone()
            } else {
                let parent = level_dirs[level].parent().unwrap_or(&project).to_path_buf();
                parent.join(format!("l{}_s{dir_index}", level + 1))
            };
            let body = prose(
                &format!("{name} for {}", dir.display()),
                600,
                &["CMD_APPEND_LOG", "INV_READ_BEFORE_WRITE"],
            );
            write(&dir.join(".directives").join(name), &body, &mut bytes)?;
        }
        let deep_file = if sizes.directives > 0 {
            level_dirs[7].join("module.ts")
        } else {
            project.join("packages/estimate/src/parser.ts")
        };
        if !deep_file.exists() {
            write(&deep_file, "export const answer = 42;\n", &mut bytes)?;
        }

        // preloadedFiles: the core standards, then generated notes.
        let mut preloaded: Vec<String> = CORE_STANDARDS
            .iter()
            .map(|rel| directives.join(rel).to_string_lossy().into_owned())
            .collect();
        let notes = project.join("docs/notes");
        let mut n = 0;
        while preloaded.len() < sizes.preloaded {
            let path = notes.join(format!("d{:02}/note-{n:05}.md", n / 100));
            write(
                &path,
                &format!("# Note {n}\n\nA decision recorded during the work.\n"),
                &mut bytes,
            )?;
            preloaded.push(path.to_string_lossy().into_owned());
            n += 1;
        }

        // Other sessions (completed, owned by PIDs that are not running), then the active one,
        // whose name sorts last as the newest session does.
        for i in 1..sizes.sessions {
            let dir = sessions.join(format!(
                "2026_{:02}_{:02}_TOPIC_{i:04}",
                i % 12 + 1,
                i % 28 + 1
            ));
            let files: Vec<String> = preloaded.iter().take(20).cloned().collect();
            let state = json!({
                "pid": 3_000_000 + i, "skill": "implement", "lifecycle": "completed",
                "currentPhase": "4: Synthesis", "sessionDir": dir,
                "taskSummary": format!("Earlier piece of work number {i}"),
                "contextUsage": 0.5, "toolCallsByTranscript": {format!("t{i}.jsonl"): 12},
                "preloadedFiles": files, "pendingPreloads": [], "touchedDirs": {},
            });
            write_json(&dir.join(".state.json"), &state, &mut bytes)?;
            write(
                &dir.join("IMPLEMENTATION_LOG.md"),
                "## Log\n\n- done\n",
                &mut bytes,
            )?;
        }
        let active = sessions.join("2026_12_31_BENCH_ACTIVE");
        let base_state = active_state(pid, &home, &preloaded, &active);
        let state_file = active.join(".state.json");
        write_json(&state_file, &base_state, &mut bytes)?;
        write(
            &active.join("IMPLEMENTATION_LOG.md"),
            &prose("Implementation log", 4_000, &["CMD_APPEND_LOG"]),
            &mut bytes,
        )?;
        let mut dialogue = String::from("# Dialogue\n");
        for i in 0..60 {
            let _ = write!(
                dialogue,
                "\n## Round {i}\n**U**: Which option?\n**A**: The first.\n"
            );
        }
        write(&active.join("DIALOGUE.md"), &dialogue, &mut bytes)?;
        let transcript = root.join("transcripts").join(TRANSCRIPT);
        let text = if sizes.transcript_bytes == 0 {
            "{}\n".to_owned()
        } else {
            transcript_text(sizes.transcript_bytes)
        };
        write(&transcript, &text, &mut bytes)?;
        // Everything generated is written back before anything is measured: otherwise the first
        // synced write of a call (the state's fdatasync) commits the generation's metadata with
        // it, and file creation waits on that writeback (measured: about 1 ms per created file
        // right after generation, 20-60 us after a sync).
        let _ = std::process::Command::new("sync").status();

        Ok(Self {
            tmp: Some(tmp),
            root,
            home,
            project,
            sessions,
            active,
            state_file,
            base_state,
            deep_file,
            transcript,
            bytes,
        })
    }

    /// Put the active session's state back to `state` and remove any lock left behind, the
    /// counters a call kept beside the state (the state's own counts stand again, so every call
    /// counts the same tool call and the heartbeat never drifts into a deny), and the seed a
    /// SessionStart left for the owner (the tool call after a SessionStart adopts it, once per
    /// session; left in place, every call after a SessionStart case would measure that).
    pub fn restore(&self, state: &Value) -> io::Result<()> {
        self.restore_with(state, None)
    }

    /// [`Sandbox::restore`], with the counters file put back to `counters` when given (what
    /// the case's first call left: a running conversation has one, and a counted call replaces
    /// it) instead of removed.
    pub fn restore_with(&self, state: &Value, counters: Option<&[u8]>) -> io::Result<()> {
        let lock = self.state_file.with_extension("json.lock");
        if lock.exists() {
            let _ = fs::remove_dir_all(&lock);
        }
        let seed = preload_core::mechanisms::session::seed_path(&self.sessions, std::process::id());
        let counters_file = preload_core::mechanisms::counters::file_of(&self.state_file);
        if let Some(text) = counters {
            fs::write(&counters_file, text)?;
        }
        let gone = counters.is_none().then_some(counters_file);
        for kept in gone.into_iter().chain([
            preload_core::mechanisms::counters::journal_of(&self.state_file),
            preload_core::mechanisms::ledger::carry_path(&seed),
            seed,
        ]) {
            match fs::remove_file(&kept) {
                Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err),
                _ => {}
            }
        }
        let text = serde_json::to_string_pretty(state).unwrap_or_default();
        // Left alone when the last call did not change it, as between real tool calls.
        if fs::read_to_string(&self.state_file).is_ok_and(|now| now == text) {
            return Ok(());
        }
        fs::write(&self.state_file, text)
    }

    /// The engine path of a command file, as the hooks record it.
    pub fn command(&self, name: &str) -> String {
        self.home
            .join(".claude/engine/.directives/commands")
            .join(format!("{name}.md"))
            .to_string_lossy()
            .into_owned()
    }
}
