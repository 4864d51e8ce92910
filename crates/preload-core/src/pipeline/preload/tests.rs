//! Unit tests of `preload`.

use super::*;
use crate::primitives::env::{self, Env};
use crate::primitives::input::HookInput;
use crate::state;
use crate::state::QUEUED;
use crate::state::fields;
use serde_json::json;
use std::fmt::Write as _;
use std::fs;
use std::path::PathBuf;
use std::time::Duration;

struct Fixture {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
    state: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().join("proj");
    fs::create_dir_all(home.join(".claude/engine/.directives/commands")).unwrap();
    fs::create_dir_all(project.join(".claude")).unwrap();
    fs::create_dir_all(project.join("sessions/s")).unwrap();
    let state = project.join("sessions/s/.state.json");
    fs::write(
        &state,
        "{\"pid\": 1, \"preloadedFiles\": [], \"pendingPreloads\": []}",
    )
    .unwrap();
    Fixture {
        _tmp: tmp,
        home,
        project,
        state,
    }
}

impl Fixture {
    fn cmd(&self, name: &str, body: &str) -> String {
        let p = self
            .home
            .join(".claude/engine/.directives/commands")
            .join(format!("CMD_{name}.md"));
        fs::write(&p, body).unwrap();
        p.to_string_lossy().into_owned()
    }
    fn ctx(&self) -> Context {
        let env = Env::from_pairs([
            (env::HOME, self.home.to_string_lossy().into_owned()),
            (
                env::CLAUDE_SESSION_CACHE_DIR,
                self.home.to_string_lossy().into_owned(),
            ),
        ]);
        let input = HookInput::from_value(json!({"cwd": self.project}));
        Context::new(env, "test", &input, Duration::from_secs(5))
    }
    /// A call's context whose outputs hold `budget` characters.
    fn ctx_with_output_budget(&self, budget: usize) -> Context {
        let env = Env::from_pairs([
            (env::HOME, self.home.to_string_lossy().into_owned()),
            (env::PRELOAD_OUTPUT_BUDGET, budget.to_string()),
        ]);
        let input = HookInput::from_value(json!({"cwd": self.project}));
        Context::new(env, "test", &input, Duration::from_secs(5))
    }
    /// [`ensure`] on the fixture's session.
    fn ensure(
        &self,
        ctx: &Context,
        requests: &[Request],
        mode: Mode,
        packer: &mut Packer,
    ) -> Batch {
        ensure(ctx, &self.target(), requests, mode, packer).unwrap()
    }
    fn target(&self) -> PreloadState {
        PreloadState {
            path: self.state.clone(),
            is_session: true,
        }
    }
    fn load(&self) -> State {
        state::load(&self.state).unwrap()
    }
}

/// The text of a command file of `n` lines.
fn long_command(n: usize) -> String {
    (0..n).fold(String::new(), |mut acc, i| {
        let _ = writeln!(acc, "line {i} of a long command file");
        acc
    })
}

/// The first line of each block of `batch`: its `[Preloaded: …]` banner.
fn headers(batch: &Batch) -> impl Iterator<Item = String> + '_ {
    batch
        .blocks
        .iter()
        .map(|b| b.lines().next().unwrap().to_owned())
}

#[test]
fn queued_files_go_out_most_urgent_first() {
    let f = fixture();
    let cmd = f.cmd("CURRENT", "# current");
    let past = f.cmd("PAST", "# past");
    std::os::unix::fs::symlink(
        f.home.join(".claude/engine/.directives"),
        f.home.join(".claude/.directives"),
    )
    .unwrap();
    let standard = f.home.join(".claude/engine/.directives/COMMANDS.md");
    fs::write(&standard, "# commands").unwrap();
    let directive = f.project.join(".directives/AGENTS.md");
    fs::create_dir_all(directive.parent().unwrap()).unwrap();
    fs::write(&directive, "# agents").unwrap();
    let ctx = f.ctx();
    let d = ctx.normalize(&directive.to_string_lossy());
    let state = State::parse(
        &json!({
            "skill": "x", "currentPhase": "2: Now",
            "phases": [
                {"label": "1", "name": "Before", "steps": ["§CMD_PAST"]},
                {"label": "2", "name": "Now", "steps": ["§CMD_CURRENT"]}
            ],
            "touchedDirs": {f.project.to_string_lossy(): [d]},
            "preloadParts": {"/big.md": 1}
        })
        .to_string(),
    )
    .unwrap();
    let order = [
        "/ref.md".to_owned(),
        past.clone(),
        d.clone(),
        cmd.clone(),
        standard.to_string_lossy().into_owned(),
        "/big.md".to_owned(),
    ];
    let requests = order
        .iter()
        .map(|p| Request::new(p.as_str(), "t"))
        .collect();
    let ranked: Vec<String> = by_priority(&ctx, &state, requests)
        .into_iter()
        .map(|r| r.path)
        .collect();
    // A begun reference goes first among the references, never ahead of the current phase.
    let expected = [
        standard.to_string_lossy().into_owned(),
        cmd,
        d,
        "/big.md".to_owned(),
        "/ref.md".to_owned(),
        past,
    ];
    assert_eq!(ranked, expected);
}

#[test]
fn direct_delivery_tracks_and_queues_references() {
    let f = fixture();
    let a = f.cmd("A", "# A\nUses §CMD_B.\n## PROOF FOR §CMD_A\n");
    let b = f.cmd("B", "# B\n");
    let ctx = f.ctx();
    let mut packer = Packer::new(9_500);
    let batch = f.ensure(&ctx, &[Request::new(&a, "t")], Mode::Direct, &mut packer);
    assert_eq!(
        batch.text(),
        format!("[Preloaded: {a}]\n# A\nUses §CMD_B.\n## PROOF FOR §CMD_A\n")
    );
    let s = f.load();
    assert_eq!(s.path_list(IN_CONTEXT), vec![a.clone()]);
    assert_eq!(
        s.path_list(QUEUED),
        vec![b.clone()],
        "self-reference not queued, B queued"
    );
    // Second pass: A skipped, B claimed from the queue.
    let mut packer = Packer::new(9_500);
    let again = f.ensure(
        &ctx,
        &pending_requests(&ctx, &f.load(), "rule"),
        Mode::Claim,
        &mut packer,
    );
    assert_eq!(again.delivered().collect::<Vec<_>>(), vec![b.as_str()]);
    assert!(f.load().path_list(QUEUED).is_empty());
}

#[test]
fn recorded_files_count_as_in_context_and_queue_their_references() {
    let f = fixture();
    let b = f.cmd("B", "# B\n");
    let a = f.cmd("A", "# A uses §CMD_B\n");
    let ctx = f.ctx();
    let batch = state::update(&f.state, state::Write::per_call(ctx.lock_deadline()), |s| {
        record(
            &ctx,
            s,
            &[Request::new(&a, "expansion"), Request::new(&a, "again")],
        )
    })
    .unwrap();
    assert_eq!(batch.delivered().collect::<Vec<_>>(), vec![a.as_str()]);
    assert_eq!(batch.events.last().unwrap().event, Event::SkipDedup);
    let s = f.load();
    assert_eq!(s.path_list(IN_CONTEXT), vec![a]);
    assert_eq!(s.path_list(QUEUED), vec![b]);
    assert!(batch.blocks.is_empty(), "recording prints nothing");
}

#[test]
fn a_sub_agent_gets_its_own_copy_and_leaves_the_queue() {
    let f = fixture();
    let a = f.cmd("A", "# A");
    fs::write(&f.state, format!("{{\"pendingPreloads\": [\"{a}\"]}}")).unwrap();
    let ctx = f.ctx();
    let claim = |audience| {
        let mut packer = Packer::new(9_500);
        let requests = pending_requests(&ctx, &f.load(), "rule");
        state::update(&f.state, state::Write::per_call(ctx.lock_deadline()), |s| {
            apply_for(&ctx, s, &requests, Mode::Claim, &mut packer, audience)
        })
        .unwrap()
    };
    let sub = claim(Audience::SubAgent("a1"));
    assert_eq!(sub.delivered().collect::<Vec<_>>(), vec![a.as_str()]);
    assert_eq!(
        delivery::sub_agent_of_source(&sub.events[0].source),
        Some("a1")
    );
    let s = f.load();
    assert_eq!(s.strings("preloadedFiles_sub:a1"), vec![a.clone()]);
    assert_eq!(
        s.path_list(QUEUED),
        vec![a.clone()],
        "the queue stays for the main agent"
    );
    assert!(s.path_list(IN_CONTEXT).is_empty());
    assert_eq!(claim(Audience::SubAgent("a1")).delivered().count(), 0);
    assert_eq!(claim(Audience::SubAgent("a2")).delivered().count(), 1);
    let main = claim(Audience::Main);
    assert_eq!(main.delivered().collect::<Vec<_>>(), vec![a.as_str()]);
    assert_eq!(delivery::sub_agent_of_source(&main.events[0].source), None);
    assert!(f.load().path_list(QUEUED).is_empty());
}

#[test]
fn a_cycle_terminates_with_each_file_queued_once() {
    let f = fixture();
    let a = f.cmd("A", "§CMD_B §CMD_A");
    let b = f.cmd("B", "§CMD_A §CMD_B");
    let ctx = f.ctx();
    let mut delivered = Vec::new();
    let mut queued = 0;
    let mut requests = vec![Request::new(&a, "start")];
    for _ in 0..10 {
        let mut packer = Packer::new(9_500);
        let batch = f.ensure(&ctx, &requests, Mode::Claim, &mut packer);
        queued += batch
            .events
            .iter()
            .filter(|e| e.event == Event::QueuePending)
            .count();
        delivered.extend(batch.delivered().map(str::to_owned));
        requests = pending_requests(&ctx, &f.load(), "rule");
        if requests.is_empty() {
            break;
        }
    }
    assert_eq!(delivered, vec![a, b]);
    assert_eq!(queued, 1, "only B is ever queued");
    assert!(f.load().path_list(QUEUED).is_empty());
}

#[test]
fn queue_mode_skips_files_in_context_and_duplicates() {
    let f = fixture();
    let a = f.cmd("A", "a");
    let ctx = f.ctx();
    let mut packer = Packer::new(9_500);
    let reqs = [Request::new(&a, "p1"), Request::new(&a, "p1")];
    let batch = f.ensure(&ctx, &reqs, Mode::Queue, &mut packer);
    assert_eq!(batch.outcomes[0].1, Outcome::Queued);
    assert_eq!(batch.outcomes[1].1, Outcome::AlreadyQueued);
    f.ensure(
        &ctx,
        &pending_requests(&ctx, &f.load(), "r"),
        Mode::Claim,
        &mut packer,
    );
    let batch = f.ensure(&ctx, &[Request::new(&a, "p2")], Mode::Queue, &mut packer);
    assert_eq!(batch.outcomes[0].1, Outcome::InContext(Hit::Path));
    assert!(f.load().path_list(QUEUED).is_empty());
}

#[test]
fn budget_carries_over_and_large_files_go_in_parts() {
    let f = fixture();
    let big = long_command(300);
    let a = f.cmd("BIG", &big);
    let small = f.cmd("SMALL", "small");
    // Outputs of 2,000 characters: parts of 1,000 (room for a banner or a rule beside one).
    let ctx = f.ctx_with_output_budget(2_000);
    let mut calls = 0;
    let mut parts_seen = Vec::new();
    let mut requests = vec![Request::new(&a, "t"), Request::new(&small, "t")];
    while !requests.is_empty() && calls < 20 {
        calls += 1;
        let mut packer = Packer::new(2_000);
        let batch = f.ensure(&ctx, &requests, Mode::Claim, &mut packer);
        assert!(delivery::chars(&batch.text()) <= 2_000);
        parts_seen.extend(headers(&batch));
        requests = pending_requests(&ctx, &f.load(), "rule");
    }
    let s = f.load();
    assert!(s.path_list(IN_CONTEXT).contains(&a) && s.path_list(IN_CONTEXT).contains(&small));
    assert!(
        s.get(fields::PRELOAD_PARTS).is_none(),
        "progress removed once complete"
    );
    let n = parts_seen
        .iter()
        .filter(|h| h.contains("CMD_BIG.md (part"))
        .count();
    assert!(n > 2);
    assert!(
        parts_seen
            .iter()
            .any(|h| h.ends_with(&format!("(part {n}/{n})]")))
    );
}

#[test]
fn missing_files_leave_the_queue_and_oversized_go_as_pointer() {
    let f = fixture();
    let ctx = f.ctx();
    fs::write(
        &f.state,
        format!(
            "{{\"pendingPreloads\": [\"{}/nope.md\"]}}",
            f.project.display()
        ),
    )
    .unwrap();
    let mut packer = Packer::new(9_500);
    f.ensure(
        &ctx,
        &pending_requests(&ctx, &f.load(), "r"),
        Mode::Claim,
        &mut packer,
    );
    assert!(f.load().path_list(QUEUED).is_empty());
    assert!(f.load().path_list(IN_CONTEXT).is_empty());
    let huge = f.cmd("HUGE", &"x".repeat(300 * 1024));
    let batch = f.ensure(&ctx, &[Request::new(&huge, "t")], Mode::Direct, &mut packer);
    assert!(batch.text().contains("not inlined"));
    assert!(batch.text().len() < 1_000);
}

#[test]
fn local_command_shadowing_a_global_one_is_labelled() {
    let f = fixture();
    let global = f.cmd("X", "global");
    let local_dir = f.project.join(".directives/commands");
    fs::create_dir_all(&local_dir).unwrap();
    fs::write(local_dir.join("CMD_X.md"), "local").unwrap();
    let local = ctx_norm(&f, &local_dir.join("CMD_X.md"));
    fs::write(&f.state, format!("{{\"preloadedFiles\": [\"{global}\"]}}")).unwrap();
    let mut packer = Packer::new(9_500);
    let batch = f.ensure(
        &f.ctx(),
        &[Request::new(&local, "t")],
        Mode::Direct,
        &mut packer,
    );
    assert!(batch.text().starts_with(&format!(
        "[Override: shadows {global}]\n[Preloaded: {local}]\nlocal"
    )));
}

fn ctx_norm(f: &Fixture, p: &Path) -> String {
    f.ctx().normalize(&p.to_string_lossy())
}

#[test]
fn parts_the_window_already_holds_are_passed_over_and_the_file_is_whole_after_the_others() {
    let f = fixture();
    let big = long_command(300);
    let a = f.cmd("BIG", &big);
    let ctx = f.ctx_with_output_budget(2_000);
    let total = delivery::file_parts(&a, &big, delivery::part_size(ctx.part_budget)).len();
    assert!(total > 4, "{total} parts");
    // A compaction kept parts 2 and 3: the window needs part 1 and parts 4 on.
    let mut s = f.load();
    s.object_mut(fields::PRELOAD_PARTS_HELD)
        .insert(a.clone(), json!([2, 3, total]));
    state::save(&f.state, &s, state::Durability::PerCall).unwrap();
    let mut seen = Vec::new();
    let mut requests = vec![Request::new(&a, "t")];
    for _ in 0..20 {
        if requests.is_empty() {
            break;
        }
        let mut packer = Packer::new(2_000);
        let batch = f.ensure(&ctx, &requests, Mode::Claim, &mut packer);
        seen.extend(headers(&batch));
        requests = pending_requests(&ctx, &f.load(), "rule");
    }
    let expected: Vec<String> = (1..=total)
        .filter(|i| !(2..=3).contains(i))
        .map(|i| format!("[Preloaded: {a} (part {i}/{total})]"))
        .collect();
    assert_eq!(seen, expected);
    let s = f.load();
    assert!(s.path_list(IN_CONTEXT).contains(&a));
    assert!(
        s.get(fields::PRELOAD_PARTS_HELD).is_none(),
        "forgotten once whole"
    );
}

#[test]
fn a_file_that_changes_while_its_parts_go_out_starts_again_marked_updated() {
    let f = fixture();
    let a = f.cmd("BIG", &long_command(150));
    // Each call its own context, as each hook process has.
    let ctx = || f.ctx_with_output_budget(2_000);
    let one_call = || {
        let mut packer = Packer::new(2_000);
        let requests = vec![Request::new(&a, "t")];
        let batch = f.ensure(&ctx(), &requests, Mode::Claim, &mut packer);
        headers(&batch).collect::<Vec<_>>()
    };
    let total = |h: &str| -> usize {
        h.rsplit('/')
            .next()
            .unwrap()
            .trim_end_matches(")]")
            .parse()
            .unwrap()
    };
    let first = one_call();
    assert!(first[0].contains(" (part 1/"), "{first:?}");
    assert!(
        first.len() < total(&first[0]),
        "not all of it at once: {first:?}"
    );
    // The file grows before its next part: cut another way, it starts again, even when the
    // first call after has no room for it.
    fs::write(&a, long_command(400)).unwrap();
    let mut full = Packer::new(10);
    let none = f.ensure(&ctx(), &[Request::new(&a, "t")], Mode::Claim, &mut full);
    assert!(none.blocks.is_empty());
    let again = one_call();
    assert!(again[0].contains(" (updated) (part 1/"), "{again:?}");
    assert!(
        total(&again[0]) > total(&first[0]),
        "{first:?} then {again:?}"
    );
    // Its later parts are marked the same way.
    let rest = one_call();
    assert!(
        !rest.is_empty() && rest.iter().all(|h| h.contains(" (updated) (part ")),
        "{rest:?}"
    );
}

/// The writes a tool call makes (a delivery, a claim from the queue) are not synced; an
/// activation's are (docs/reliability.md, "Writes").
#[test]
fn a_tool_calls_writes_skip_the_sync_an_activation_makes() {
    let f = fixture();
    let a = f.cmd("A", "# A\nUses §CMD_B.\n");
    f.cmd("B", "# B\n");
    let ctx = f.ctx();
    let before = crate::primitives::file::syncs_on_this_thread();
    let first = f.ensure(
        &ctx,
        &[Request::new(&a, "t")],
        Mode::Direct,
        &mut Packer::new(9_500),
    );
    let claimed = f.ensure(
        &ctx,
        &pending_requests(&ctx, &f.load(), "rule"),
        Mode::Claim,
        &mut Packer::new(9_500),
    );
    assert_eq!(first.delivered().count() + claimed.delivered().count(), 2);
    assert_eq!(f.load().path_list(IN_CONTEXT).len(), 2);
    assert_eq!(
        crate::primitives::file::syncs_on_this_thread(),
        before,
        "a tool call's write was synced"
    );
    let dir = f.project.join("sessions/2026_11_28_NEW");
    crate::pipeline::activation::activate(&ctx, &dir, Some("do")).unwrap();
    assert!(dir.join(crate::mechanisms::session::STATE_FILE).is_file());
    assert!(
        crate::primitives::file::syncs_on_this_thread() > before,
        "the activation's writes were not synced"
    );
}

/// A call that decides twice (without the lock, then under it) reads a file once: what it read
/// stands for the rest of the call, and the next call reads the file again.
#[test]
fn a_call_reads_a_file_for_delivery_once() {
    use crate::primitives::delivery::FileBody;
    let f = fixture();
    let a = f.cmd("A", "first\n");
    let ctx = f.ctx();
    let read = |ctx: &Context| ctx.read_for_delivery(Path::new(&a), 1_000).0;
    assert_eq!(read(&ctx), FileBody::Text("first\n".into()));
    fs::write(&a, "second\n").unwrap();
    assert_eq!(read(&ctx), FileBody::Text("first\n".into()));
    assert_eq!(read(&f.ctx()), FileBody::Text("second\n".into()));
}

/// Passes on one state share the index of what the audience holds (`apply_in`): a claim after
/// a queueing pass on a session of hundreds of files finds a file in context through the index
/// the first pass built, and delivers only what is not; another audience's index is not used.
#[test]
fn passes_share_the_index_of_what_the_audience_holds() {
    let f = fixture();
    let held: Vec<String> = (0..400)
        .map(|i| f.cmd(&format!("HELD_{i:03}"), "held\n"))
        .collect();
    let fresh: Vec<String> = (0..12)
        .map(|i| f.cmd(&format!("FRESH_{i:02}"), "fresh\n"))
        .collect();
    let ctx = f.ctx();
    let mut s = f.load();
    let normal: Vec<String> = held.iter().map(|p| ctx.normalize(p)).collect();
    s.set_paths(IN_CONTEXT, normal);
    let mut index = None;
    let mut packer = Packer::new(1_000_000);
    let mut pass = |s: &mut State, paths: &[String], mode, audience| {
        let requests: Vec<Request> = paths.iter().map(|p| Request::new(p.clone(), "t")).collect();
        let batch = apply_in(&ctx, s, &requests, mode, &mut packer, audience, &mut index);
        (
            batch,
            index.as_ref().map(|i| i.is_for(Paths::InContext(audience))),
        )
    };
    // Queue the fresh files and re-ask for held ones: the held are skipped, the index is built.
    let mut first = fresh.clone();
    first.extend(held[..20].iter().cloned());
    let (queued, queued_indexed) = pass(&mut s, &first, Mode::Queue, Audience::Main);
    assert_eq!(
        queued.events.iter().filter(|e| e.dedup == "new").count(),
        fresh.len()
    );
    assert_eq!(queued_indexed, Some(true));
    // Claim everything with the same index: the fresh go out once, the held never.
    let mut second = held[380..].to_vec();
    second.extend(fresh.iter().cloned());
    let (claimed, _) = pass(&mut s, &second, Mode::Claim, Audience::Main);
    assert_eq!(claimed.delivered().count(), fresh.len());
    let (again, _) = pass(&mut s, &second, Mode::Claim, Audience::Main);
    assert_eq!(
        again.delivered().count(),
        0,
        "what the last pass added is found"
    );
    // A sub-agent's pass starts its own index: it holds nothing yet, so it gets the files.
    let (sub, sub_indexed) = pass(&mut s, &fresh, Mode::Claim, Audience::SubAgent("a1"));
    assert_eq!(sub.delivered().count(), fresh.len());
    assert_eq!(sub_indexed, Some(true));
}
