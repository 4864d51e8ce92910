//! A model of the engine's own `session.sh` writers, written for these tests: what
//! idealic-ai/engine at d716b97 keeps, drops and overwrites when it writes a session beside our
//! hooks. Each function names the lines of `scripts/session.sh` or `scripts/lib.sh` whose
//! behaviour it models; none of the engine's code is here.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::sandbox::{Sandbox, read_json};

/// The six core standards, relative to `~/.claude/.directives` (lib.sh `get_session_start_seeds`,
/// lines 142-160; session.sh activate repeats the list at line 515).
pub const CORE: [&str; 6] = [
    "COMMANDS.md",
    "INVARIANTS.md",
    "SIGILS.md",
    "commands/CMD_DEHYDRATE.md",
    "commands/CMD_RESUME_SESSION.md",
    "commands/CMD_PARSE_PARAMETERS.md",
];

/// The engine, acting on a sandbox's project.
pub struct Engine<'a> {
    sb: &'a Sandbox,
}

impl<'a> Engine<'a> {
    /// The engine beside `sb`'s hooks.
    pub fn new(sb: &'a Sandbox) -> Self {
        Self { sb }
    }

    fn state_file(&self, name: &str) -> PathBuf {
        self.sb.sessions.join(name).join(".state.json")
    }

    fn seed_file(&self, pid: u32) -> PathBuf {
        self.sb.sessions.join(".seeds").join(format!("{pid}.json"))
    }

    /// The core standards as the engine spells them: under the physical path of
    /// `~/.claude/.directives` (session.sh line 514, `pwd -P`).
    pub fn core_paths(&self) -> Vec<String> {
        let dir = fs::canonicalize(self.sb.home.join(".claude/.directives")).unwrap();
        CORE.iter()
            .map(|rel| dir.join(rel).to_string_lossy().into_owned())
            .collect()
    }

    /// `session.sh activate <dir> <skill>` for a new session or one whose owner is gone
    /// (lines 512-578): a fresh state that lists the six core standards as delivered, with
    /// empty queue, touched directories and stash and no `sessionId`; then the owner's seed
    /// (lines 581-606): `preloadedFiles` and `pendingPreloads` become the union of state and seed,
    /// `touchedDirs` the merge, and the seed is deleted, whatever else it held. The PID cache is
    /// written (line 608).
    pub fn activate(&self, name: &str, skill: &str, pid: u32) {
        let now = "2026-01-01T00:00:00Z";
        let mut state = json!({
            "pid": pid, "skill": skill, "lifecycle": "active", "loading": true,
            "overflowed": false, "killRequested": false, "contextUsage": 0,
            "currentPhase": "Phase 1: Setup", "toolCallsSinceLastLog": 0,
            "toolUseWithoutLogsWarnAfter": 3, "toolUseWithoutLogsBlockAfter": 10,
            "startedAt": format!("{now}#{}", unique()), "lastHeartbeat": now,
            "preloadedFiles": self.core_paths(), "touchedDirs": {}, "pendingPreloads": [],
            "pendingAllowInjections": []
        });
        // The SKILL.md static fields and the first phase (lines 560-576).
        if let Some(def) = skill_definition(&self.sb.home, skill) {
            for key in [
                "phases",
                "logTemplate",
                "debriefTemplate",
                "planTemplate",
                "directives",
            ] {
                if let Some(v) = def.get(key) {
                    state[key] = v.clone();
                }
            }
            if let Some(first) = def
                .get("phases")
                .and_then(Value::as_array)
                .and_then(|p| p.first())
            {
                state["currentPhase"] = json!(format!(
                    "{}: {}",
                    first["label"].as_str().unwrap_or("0"),
                    first["name"].as_str().unwrap_or("")
                ));
            }
        }
        let path = self.state_file(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        Self::write_locked(&path, &state);
        self.merge_seed(&path, pid, SeedMerge::Union);
        self.write_cache(name, pid);
    }

    /// `session.sh continue` (lines 1669-1760): the owner, `lifecycle: active`, `loading`,
    /// `primaryTranscriptKey` gone, counters and context usage reset; then the seed REPLACES
    /// `preloadedFiles` and `pendingPreloads` (lines 1738-1756) and is deleted. Everything else
    /// of the old context window stays.
    pub fn continue_session(&self, name: &str, pid: u32) {
        let path = self.state_file(name);
        let mut state = read_json(&path);
        let obj = state.as_object_mut().unwrap();
        obj.insert("pid".into(), json!(pid));
        obj.insert("lifecycle".into(), json!("active"));
        obj.remove("loading");
        obj.insert("toolCallsByTranscript".into(), json!({}));
        obj.remove("primaryTranscriptKey");
        obj.insert("contextUsage".into(), json!(0));
        obj.insert("overflowed".into(), json!(false));
        obj.insert("killRequested".into(), json!(false));
        Self::write_locked(&path, &state);
        self.write_cache(name, pid);
        self.merge_seed(&path, pid, SeedMerge::Replace);
    }

    /// `session.sh restart`, as `dehydrate` runs it (lines 2425-2460): `killRequested`, a
    /// restart prompt, context usage reset, and `sessionId` deleted.
    pub fn restart(&self, name: &str) {
        let path = self.state_file(name);
        let mut state = read_json(&path);
        let obj = state.as_object_mut().unwrap();
        obj.insert("killRequested".into(), json!(true));
        obj.insert("restartPrompt".into(), json!("/session continue"));
        obj.insert("contextUsage".into(), json!(0));
        obj.remove("sessionId");
        Self::write_locked(&path, &state);
    }

    /// `session.sh dehydrate` (lines 2341-2383): the hand-over on stdin stored as
    /// `dehydratedContext` (`requiredFiles` capped at 8), then the restart's fields, in two
    /// writes as the engine makes them. Without tmux (print mode, a plain terminal) it only
    /// prints the `claude` line to run: the conversation goes on in the same window.
    pub fn dehydrate(&self, name: &str, hand_over: &Value) {
        let path = self.state_file(name);
        let mut state = read_json(&path);
        let mut hand_over = hand_over.clone();
        if let Some(files) = hand_over["requiredFiles"].as_array_mut() {
            files.truncate(8);
        }
        state["dehydratedContext"] = hand_over;
        Self::write_locked(&path, &state);
        let mut state = read_json(&path);
        let prompt = format!(
            "/session continue --session {} --skill {} --phase \"{}\"",
            self.sb.sessions.join(name).display(),
            state["skill"].as_str().unwrap_or(""),
            state["currentPhase"].as_str().unwrap_or("Phase 1: Setup")
        );
        let obj = state.as_object_mut().unwrap();
        obj.insert("killRequested".into(), json!(true));
        obj.insert("lastHeartbeat".into(), json!("2026-01-01T00:00:02Z"));
        obj.insert("restartPrompt".into(), json!(prompt));
        obj.insert("restartMode".into(), json!("hook"));
        obj.insert("contextUsage".into(), json!(0));
        obj.remove("sessionId");
        Self::write_locked(&path, &state);
    }

    /// `session.sh idle <dir> <<DESCRIPTION` (lines 2248-2312): the owner's PID cache removed;
    /// `lifecycle: idle`, the owner kept
    /// as `lastKnownPid` and `pid` removed, a description; then the skill appended to
    /// `completedSkills`, in a second write.
    pub fn idle(&self, name: &str) {
        let path = self.state_file(name);
        let mut state = read_json(&path);
        let obj = state.as_object_mut().unwrap();
        let pid = obj.remove("pid").unwrap_or(Value::Null);
        // The PID cache goes first (line 2289).
        if let Some(pid) = pid.as_u64() {
            let _ = fs::remove_file(self.sb.root().join(format!("claude-session-cache-{pid}")));
        }
        obj.insert("lifecycle".into(), json!("idle"));
        obj.insert("lastKnownPid".into(), pid);
        obj.insert("lastHeartbeat".into(), json!("2026-01-01T00:00:03Z"));
        obj.insert("sessionDescription".into(), json!("Added a total."));
        Self::write_locked(&path, &state);
        let mut state = read_json(&path);
        if let Some(skill) = state["skill"].as_str().map(str::to_owned) {
            let done = state["completedSkills"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if !done.iter().any(|s| *s == json!(skill)) {
                let mut done = done;
                done.push(json!(skill));
                state["completedSkills"] = Value::Array(done);
                Self::write_locked(&path, &state);
            }
        }
    }

    /// `tools/statusline.sh` `update_session` (lines 98-145) for the session `session.sh find`
    /// names: the client's `pid` claimed when it differs; `contextUsage` and `lastHeartbeat`,
    /// and `sessionId` bound to the client's conversation unless a restart is under way
    /// (`killRequested`, `overflowed`, `lifecycle: dehydrating`).
    pub fn statusline(&self, name: &str, pid: u32, conversation: &str, usage: f64) {
        let path = self.state_file(name);
        let mut state = read_json(&path);
        if state["pid"] != json!(pid) {
            state["pid"] = json!(pid);
            Self::write_locked(&path, &state);
            state = read_json(&path);
        }
        let restarting = state["killRequested"] == json!(true)
            || state["overflowed"] == json!(true)
            || state["lifecycle"] == "dehydrating";
        state["contextUsage"] = json!(usage);
        state["lastHeartbeat"] = json!("2026-01-01T00:00:04Z");
        if !restarting {
            state["sessionId"] = json!(conversation);
        }
        Self::write_locked(&path, &state);
    }

    /// `session.sh update <dir> <field> <value>` (lines 1006-1027): `jq … state |
    /// safe_json_write state`. The state is read OUTSIDE the lock; `between` runs after that
    /// read, before the lock is taken for the write (lib.sh `safe_json_write`, lines 324-360).
    pub fn update(&self, name: &str, field: &str, value: Value, between: impl FnOnce()) {
        let path = self.state_file(name);
        let mut state = read_json(&path);
        between();
        state[field] = value;
        state["lastHeartbeat"] = json!("2026-01-01T00:00:01Z");
        Self::write_locked(&path, &state);
    }

    /// The seed merge of `activate` (union) and of `continue` (replace).
    fn merge_seed(&self, path: &Path, pid: u32, how: SeedMerge) {
        let seed_file = self.seed_file(pid);
        let Ok(text) = fs::read_to_string(&seed_file) else {
            return;
        };
        let seed: Value = serde_json::from_str(&text).unwrap();
        if seed["lifecycle"] != "seeding" {
            return;
        }
        let mut state = read_json(path);
        for key in ["preloadedFiles", "pendingPreloads"] {
            let from_seed = strings_of(&seed[key]);
            let merged = match how {
                SeedMerge::Union => {
                    let mut all = strings_of(&state[key]);
                    all.extend(from_seed);
                    all.sort();
                    all.dedup();
                    all
                }
                SeedMerge::Replace => from_seed,
            };
            state[key] = json!(merged);
        }
        if how == SeedMerge::Union {
            let mut dirs = state["touchedDirs"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            if let Some(more) = seed["touchedDirs"].as_object() {
                dirs.extend(more.clone());
            }
            state["touchedDirs"] = Value::Object(dirs);
        }
        Self::write_locked(path, &state);
        fs::remove_file(&seed_file).unwrap();
    }

    fn write_cache(&self, name: &str, pid: u32) {
        let cache = self.sb.root().join(format!("claude-session-cache-{pid}"));
        fs::write(
            cache,
            format!("{}\n", self.sb.sessions.join(name).display()),
        )
        .unwrap();
    }

    /// lib.sh `safe_json_write` (lines 324-360) under `_acquire_lock` / `_release_lock`
    /// (lines 275-318): `mkdir <file>.lock`, this process's PID in `pid`, a temporary beside
    /// the file renamed over it, `pid` and the directory removed.
    fn write_locked(path: &Path, state: &Value) {
        let lock = PathBuf::from(format!("{}.lock", path.display()));
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            if fs::create_dir(&lock).is_ok() {
                break;
            }
            let holder = fs::read_to_string(lock.join("pid")).unwrap_or_default();
            if let Ok(pid) = holder.trim().parse::<i32>() {
                if nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_err() {
                    let _ = fs::remove_file(lock.join("pid"));
                    let _ = fs::remove_dir(&lock);
                    continue;
                }
            }
            assert!(
                Instant::now() < until,
                "engine model: lock {} never freed",
                lock.display()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        fs::write(lock.join("pid"), format!("{}\n", std::process::id())).unwrap();
        let tmp = PathBuf::from(format!("{}.tmp.{}", path.display(), std::process::id()));
        let mut text = serde_json::to_string_pretty(state).unwrap();
        text.push('\n');
        fs::write(&tmp, text).unwrap();
        fs::rename(&tmp, path).unwrap();
        fs::remove_file(lock.join("pid")).unwrap();
        fs::remove_dir(&lock).unwrap();
    }
}

/// How a seed is folded into the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SeedMerge {
    Union,
    Replace,
}

fn strings_of(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// The first JSON block of a skill's SKILL.md that has `phases` (session.sh
/// `extract_skill_json`).
fn skill_definition(home: &Path, skill: &str) -> Option<Map<String, Value>> {
    let text = fs::read_to_string(home.join(".claude/skills").join(skill).join("SKILL.md")).ok()?;
    let mut rest = text.as_str();
    while let Some(start) = rest.find("```json") {
        let after = &rest[start + 7..];
        let end = after.find("```")?;
        if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(&after[..end]) {
            if map.contains_key("phases") {
                return Some(map);
            }
        }
        rest = &after[end + 3..];
    }
    None
}
