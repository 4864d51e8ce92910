//! What happens to the client processes and their conversations: start-up, exit, crash,
//! resume, rewind, fork, `/clear` and compaction.

use super::*;

impl World {
    pub(super) fn session_start(&mut self, slot: usize, source: &str) {
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

    pub(super) fn startup(&mut self, slot: usize) -> bool {
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
    pub(super) fn event_outside_windows(
        &mut self,
        event: &str,
        input: Value,
    ) -> Vec<(String, Answer)> {
        let answers = hooks::event(&self.sb, event, input, None);
        for (label, answer) in &answers {
            for problem in invariants::answer_problems(answer) {
                self.problems.push(format!("{label}: {problem}"));
            }
        }
        answers
    }

    pub(super) fn exit(&mut self, slot: usize) -> bool {
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
    pub(super) fn crash(&mut self, slot: usize) -> bool {
        self.procs[slot].is_some() && self.end(slot)
    }

    /// The process in `slot` is gone; its conversation may be resumed.
    pub(super) fn end(&mut self, slot: usize) -> bool {
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
    pub(super) fn lost_in(&self, slot: usize) -> BTreeSet<String> {
        self.lost
            .iter()
            .filter(|(s, _)| *s == slot)
            .map(|(_, path)| path.clone())
            .collect()
    }

    pub(super) fn leave(&mut self, t: Transcript) {
        self.ended.retain(|e| e.conversation != t.conversation);
        self.ended.push(t);
    }

    pub(super) fn resume(&mut self, slot: usize, n: usize) -> bool {
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
    pub(super) fn take_up(&mut self, slot: usize, mut p: Process, t: &Transcript, source: &str) {
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
    pub(super) fn rewind(&mut self, slot: usize, k: usize) -> bool {
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
    pub(super) fn ended_for(&mut self, slot: usize, n: usize) -> Option<Transcript> {
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
    pub(super) fn fork(&mut self, slot: usize, n: usize) -> bool {
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

    pub(super) fn clear(&mut self, slot: usize) -> bool {
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

    pub(super) fn compact(&mut self, slot: usize) -> bool {
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
}
