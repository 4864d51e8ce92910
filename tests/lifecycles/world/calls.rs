//! What an agent does in its window: prompts, skills, tool calls, the engine's commands, phases,
//! sub-agents and changed files.

use super::*;

impl World {
    pub(super) fn prompt(&mut self, slot: usize, text: &str, skill: Option<Sk>) -> bool {
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
    pub(super) fn expand(&mut self, slot: usize, agent: Option<&str>, exchange: usize, k: Sk) {
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

    pub(super) fn skill_call(&mut self, slot: usize, agent: Option<String>, k: Sk) -> bool {
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
    pub(super) fn one_call(
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
        let (pre, post) = run_call(&self.sb, agent, tool, tool_input, &id, kill, None);
        let ran = self.finish_call(
            slot,
            agent,
            exchange,
            tool,
            tool_input,
            &pre,
            post.as_deref(),
            expand,
        );
        (exchange, ran)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn finish_call(
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
    pub(super) fn calls(
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
    pub(super) fn answer_heartbeat(&mut self, slot: usize, agent: Option<&str>, exchange: usize) {
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

    pub(super) fn tool_input(&self, t: Tool, n: usize) -> (String, Value) {
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
    pub(super) fn bash_cli(
        &mut self,
        slot: usize,
        command: &str,
        args: &[&str],
        stdin: &str,
    ) -> (bool, bool) {
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
    pub(super) fn bash_call(
        &mut self,
        slot: usize,
        command: &str,
        run: impl FnOnce(&preload_test_support::sandbox::Sandbox) -> (String, Option<String>),
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

    pub(super) fn activate(&mut self, slot: usize, k: Sk) -> bool {
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
    pub(super) fn restart(&mut self, slot: usize, hand_over: Option<usize>) -> bool {
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
            let engine = preload_test_support::engine_model::Engine::new(sb);
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
    pub(super) fn continue_session(&mut self, slot: usize) -> bool {
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
            preload_test_support::engine_model::Engine::new(sb).continue_session(&name, pid);
            ("Session continued.\n".to_owned(), None)
        });
        true
    }

    /// `engine session idle` on the slot owner's active session.
    pub(super) fn idle(&mut self, slot: usize) -> bool {
        let Some((name, _)) = self.active_in(slot) else {
            return false;
        };
        self.use_slot(slot);
        let command = format!("engine session idle sessions/{name} <<'EOF' …");
        self.bash_call(slot, &command, |sb| {
            preload_test_support::engine_model::Engine::new(sb).idle(&name);
            ("Session idle.\n".to_owned(), None)
        });
        true
    }

    /// The statusline's update of the session the owner holds.
    pub(super) fn statusline(&mut self, slot: usize) -> bool {
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
        preload_test_support::engine_model::Engine::new(&self.sb).statusline(
            &name,
            pid,
            &conversation,
            0.25,
        );
        true
    }

    pub(super) fn phase(&mut self, slot: usize, n: usize) -> bool {
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

    pub(super) fn subagent(&mut self, slot: usize, a: u8) -> bool {
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

    pub(super) fn followed(&self, n: usize) -> PathBuf {
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

    pub(super) fn touch(&mut self, n: usize) -> bool {
        let path = self.followed(n);
        let k = self.next();
        let mut text = fs::read_to_string(&path).unwrap_or_default();
        text.push_str(&format!("\nChanged on disk ({k}).\n"));
        self.write_changed(&path, &text);
        true
    }

    pub(super) fn write_changed(&mut self, path: &PathBuf, text: &str) {
        fs::write(path, text).unwrap();
        *self
            .edits
            .entry(canon(&path.to_string_lossy()))
            .or_default() += 1;
    }

    pub(super) fn grow(&mut self, b: Big, slices: usize) -> bool {
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
