//! Conversations that branch (a fork of a conversation), counted from what the model received
//! and read back from the client's own transcript by `preload audit`, which must agree.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::client::Options;
use crate::model::{Script, Step, bash};
use crate::received::Received;
use crate::scenario::{IMPLEMENT_PROMPT, Scenario, activate, phase, read};
use crate::support::Paths;
use crate::world::World;

/// The transcript the client wrote for conversation `id` (under the world's
/// `~/.claude/projects`).
fn transcript_of(s: &Scenario, id: &str) -> PathBuf {
    let projects = s.world.sandbox.home.join(".claude/projects");
    std::fs::read_dir(&projects)
        .expect("the client keeps its transcripts")
        .filter_map(Result::ok)
        .map(|dir| dir.path().join(format!("{id}.jsonl")))
        .find(|path| path.is_file())
        .unwrap_or_else(|| panic!("no transcript of {id} in {}", projects.display()))
}

/// `preload audit --json` (the installed binary) with `args`, in the project, as the user runs
/// it: its JSON and its exit code.
fn audit(s: &Scenario, args: &[&str]) -> (Value, Option<i32>) {
    audit_in(&s.world, args)
}

/// [`audit`] in `world`.
fn audit_in(world: &World, args: &[&str]) -> (Value, Option<i32>) {
    let out = world
        .user_command(world.prefix().join("preload"))
        .args(["audit", "--json"])
        .args(args)
        .output()
        .expect("run preload audit");
    let text = String::from_utf8_lossy(&out.stdout);
    let value = serde_json::from_str(text.trim()).unwrap_or(Value::Null);
    (value, out.status.code())
}

/// The audit of conversation `id`'s transcript, which must agree with what the model received
/// in `got`: the same files, each as many times (the most any one part or label arrived). The
/// skills the client expanded itself are the client's, not blocks of ours, and are left out.
fn audit_agrees(s: &Scenario, id: &str, got: &Received) -> Value {
    transcript_agrees(s.name, &s.world, &transcript_of(s, id), got)
}

/// The audit of the transcript (or rollout) at `transcript`, which must agree with what the
/// model received in `got` (see [`audit_agrees`]).
pub fn transcript_agrees(name: &str, world: &World, transcript: &Path, got: &Received) -> Value {
    let (receipt, code) = audit_in(world, &["--transcript", transcript.to_str().unwrap()]);
    let audited: BTreeMap<String, u64> = receipt["files"]
        .as_array()
        .unwrap_or_else(|| panic!("{name}: audit printed no files: {receipt}"))
        .iter()
        .filter(|f| f["expanded"].is_null())
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f["count"].as_u64().unwrap(),
            )
        })
        .collect();
    // Per file: its whole arrivals, and per part label the parts'; a whole one holds every part.
    let mut whole: BTreeMap<String, u64> = BTreeMap::new();
    let mut parts: BTreeMap<(String, String), u64> = BTreeMap::new();
    for header in got.headers() {
        if header.part.is_some() {
            *parts.entry((header.path, header.label)).or_default() += 1;
        } else {
            *whole.entry(header.path).or_default() += 1;
        }
    }
    let mut most_of_a_part: BTreeMap<String, u64> = BTreeMap::new();
    for ((path, _), n) in parts {
        let most = most_of_a_part.entry(path).or_default();
        *most = (*most).max(n);
    }
    let mut received = whole;
    for (path, n) in most_of_a_part {
        *received.entry(path).or_default() += n;
    }
    assert_eq!(
        audited,
        received,
        "{name}: preload audit of {} counts what the model received",
        transcript.display()
    );
    let clean = receipt["duplicates"] == json!([]) && receipt["missing"] == json!([]);
    assert_eq!(
        code,
        Some(i32::from(!clean)),
        "{name}: the audit's exit code says whether it is clean: {receipt}"
    );
    receipt
}

/// What the second run of the branch scenarios makes due: phase 2's commands and the package's
/// directives (its Read in the package, its move to phase 2).
pub fn due_in_the_branch(p: &Paths) -> Vec<String> {
    let mut due = p.cmds(&[
        "CMD_GENERATE_PLAN",
        "CMD_WALK_THROUGH_RESULTS",
        "CMD_APPEND_LOG",
    ]);
    due.extend(p.core_directives());
    due
}

/// The checks of a branch's conversation `got`: no call locked out by the session gate, and
/// each of `files` there once (it `why`).
pub fn assert_branch(name: &str, got: &Received, files: &[String], why: &str, saved: &Path) {
    assert_eq!(
        got.count_text("[block: session"),
        0,
        "{name}: the branch is never locked out by the session gate ({})",
        saved.display()
    );
    for file in files {
        assert_eq!(
            got.count(file),
            1,
            "{name}: {file} {why}, once ({})",
            saved.display()
        );
    }
}

/// The first conversation of the fork scenarios: activation and phase 1 of `/implement`,
/// nothing read in a package yet.
fn first_conversation(s: &Scenario) -> String {
    let first = vec![
        activate(),
        phase("1: Interrogation"),
        bash("ls packages/estimate"),
    ];
    let run = s.run(Script::main(first), IMPLEMENT_PROMPT);
    run.session_id().expect("the client reports its session id")
}

/// In a fork: a Read in the package (its directives are due) and the move to phase 2 (its
/// commands are due).
fn fork_steps(s: &Scenario) -> Vec<Step> {
    vec![
        read(&s.world, "packages/estimate/src/parser.ts"),
        phase("2: Planning"),
        bash("ls packages/estimate/src"),
    ]
}

/// The checks of a fork's conversation `got`: no call locked out by the session gate, nothing
/// twice (the fork holds its parent's history, with everything the hooks added to it), and
/// what became due in the fork arrived in it, once.
fn assert_fork(s: &Scenario, got: &Received, (parent, fork): (&str, &str), saved: &Path) {
    let transcript = transcript_of(s, fork);
    let receipt = assert_fork_audited(s.name, &s.world, &transcript, got, saved);
    assert_eq!(
        receipt["forkedFrom"],
        json!(parent),
        "{}: the transcript names the conversation the fork was made from",
        s.name
    );
}

/// The checks of a fork's conversation `got`, whichever client made it: no call locked out by
/// the session gate, what became due in the fork arrived in it, once, and the audit of its
/// `transcript` agrees with `got` and finds nothing twice. The audit's receipt.
pub fn assert_fork_audited(
    name: &str,
    world: &World,
    transcript: &Path,
    got: &Received,
    saved: &Path,
) -> Value {
    let due = due_in_the_branch(&Paths::new(world));
    assert_branch(
        name,
        got,
        &due,
        "became due in the fork and arrives there",
        saved,
    );
    let receipt = transcript_agrees(name, world, transcript, got);
    assert_eq!(
        receipt["duplicates"],
        json!([]),
        "{name}: the fork receives nothing twice ({})",
        saved.display()
    );
    receipt
}

/// A first conversation, then its fork (`--resume A --fork-session`) with [`fork_steps`],
/// checked by [`assert_fork`]: the fork's run and conversation.
fn fork_of_a_first_conversation(s: &Scenario) -> (crate::client::Run, Received) {
    let parent = first_conversation(s);
    let options = Options::forking(&parent);
    let forked = s.run_with(Script::main(fork_steps(s)), "Go on in a fork.", &options);
    let fork = forked.session_id().expect("the fork's session id");
    assert_ne!(fork, parent, "a fork is a conversation of its own");
    let (requests, saved) = s.requests();
    let got = Received::last_of(&requests, "main").expect("the fork's conversation");
    assert_fork(s, &got, (&parent, &fork), &saved);
    (forked, got)
}

/// A fork of a conversation whose client has ended (`--resume A --fork-session`): it starts as
/// A's window at the fork point, under its own conversation, is never locked out, gets nothing
/// twice, and what becomes due in it arrives there; `preload audit` agrees with the model.
#[test]
fn a_fork_starts_as_its_parents_window_and_gets_nothing_twice() {
    let Some(s) = Scenario::new("fork", World::new()) else {
        return;
    };
    let (forked, _) = fork_of_a_first_conversation(&s);
    s.world
        .assert_session_owner(forked.pid, "the fork's client works in the session");
}

/// The same fork when one owner PID stands for every client (the engine's `run.sh` exports
/// `CLAUDE_SUPERVISOR_PID`): the fork goes on from the owner's session, which served its parent.
#[test]
fn a_fork_under_one_supervisor_goes_on_from_its_parents_window() {
    let Some(s) = Scenario::new("fork_supervised", supervised()) else {
        return;
    };
    let (_, got) = fork_of_a_first_conversation(&s);
    assert_eq!(
        got.count(&s.paths().skill("SKILL.md")),
        0,
        "{}: the client holds SKILL.md from the parent; no block of it goes out again",
        s.name
    );
}

/// `preload audit` on real transcripts: clean; a file that arrived twice (a stand-in hook sends
/// a core standard again with a tool call); a record that claims a file that never went out;
/// a file that is no transcript, and one that is not there.
#[test]
fn preload_audit_reads_what_the_client_wrote() {
    let Some(s) = Scenario::new("audit", World::new()) else {
        return;
    };
    let run = s.run(Script::main(vec![activate(), bash("ls")]), IMPLEMENT_PROMPT);
    let id = run.session_id().expect("session id");
    let (requests, _) = s.requests();
    let got = Received::last_of(&requests, "main").expect("the conversation");
    let receipt = audit_agrees(&s, &id, &got);
    assert_eq!(receipt["duplicates"], json!([]), "{receipt}");
    assert_eq!(receipt["missing"], json!([]), "{receipt}");
    let state = s.world.sandbox.project.join("sessions/e2e/.state.json");
    assert_eq!(
        receipt["state"],
        json!(state),
        "the record is found from the transcript"
    );

    // A record that claims more than went out.
    let mut claimed: Value =
        serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    let never = s.paths().cmd("CMD_CLOSE_SESSION");
    claimed["preloadedFiles"]
        .as_array_mut()
        .unwrap()
        .push(json!(never));
    let claims = s.world.sandbox.root().join("claims.json");
    std::fs::write(&claims, claimed.to_string()).unwrap();
    let transcript = transcript_of(&s, &id);
    let t = transcript.to_str().unwrap();
    let (receipt, code) = audit(
        &s,
        &["--transcript", t, "--state", claims.to_str().unwrap()],
    );
    assert_eq!(code, Some(1), "{receipt}");
    assert_eq!(receipt["missing"], json!([never]), "{receipt}");

    // A file twice: a stand-in PreToolUse hook beside the product sends a standard again.
    let standard = s.paths().core_standards()[0].clone();
    let answer = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "allow",
        "additionalContext": format!("[Preloaded: {standard}]\nagain\n")}});
    let again = s.world.stand_in_hook("again", &answer);
    let settings = s.world.settings_path();
    let mut wired: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    wired["hooks"]["PreToolUse"]
        .as_array_mut()
        .unwrap()
        .push(json!({"matcher": "Bash",
        "hooks": [{"type": "command", "command": again, "timeout": 10}]}));
    std::fs::write(&settings, wired.to_string()).unwrap();
    let run = s.run(Script::main(vec![bash("ls")]), "Once more.");
    let id = run.session_id().expect("session id");
    let (requests, _) = s.requests();
    let got = Received::last_of(&requests, "main").expect("the conversation");
    let receipt = audit_agrees(&s, &id, &got);
    assert_eq!(receipt["duplicates"], json!([standard]), "{receipt}");
    // `preload doctor` audits the latest conversation and names the file.
    let doctor = s
        .world
        .user_command(s.world.prefix().join("preload"))
        .args(["doctor", "--prefix"])
        .arg(s.world.prefix())
        .output()
        .expect("run preload doctor");
    let said = String::from_utf8_lossy(&doctor.stdout);
    let line = format!("latest conversation {id}: twice: {standard}");
    assert!(said.contains(&line), "doctor names the duplicate:\n{said}");

    // No transcript.
    let notes = s.world.sandbox.root().join("notes.txt");
    std::fs::write(&notes, "not a transcript\n").unwrap();
    for path in [notes, s.world.sandbox.root().join("none.jsonl")] {
        let (out, code) = audit(&s, &["--transcript", path.to_str().unwrap()]);
        assert_eq!(code, Some(2), "{}: {out}", path.display());
        assert_eq!(out, Value::Null, "nothing on stdout for {}", path.display());
    }
}

/// The `uuid` of the last assistant message of conversation `id`: the point a rewind goes back
/// to (`--resume-session-at`).
fn last_answer(s: &Scenario, id: &str) -> String {
    let text = std::fs::read_to_string(transcript_of(s, id)).expect("the transcript");
    text.lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "assistant")
        .find_map(|v| v["uuid"].as_str().map(str::to_owned))
        .expect("an assistant message")
}

/// A world whose clients all run under one supervisor PID, as under the engine's `run.sh`.
fn supervised() -> World {
    let mut world = World::new();
    world.client_env.push((
        "CLAUDE_SUPERVISOR_PID".into(),
        std::process::id().to_string(),
    ));
    world
}

/// The last main conversation, which must not hold the prompt `left` of a branch it left
/// (`why` says so when it does), with the file its requests are saved in.
fn last_without(s: &Scenario, left: &str, why: &str) -> (Received, PathBuf) {
    let (requests, saved) = s.requests();
    let got = Received::last_of(&requests, "main").expect("the last main conversation");
    assert_eq!(
        got.count_text(left),
        0,
        "{}: {why} ({})",
        s.name,
        saved.display()
    );
    (got, saved)
}

/// A conversation resumed, then rewound (`--resume A --resume-session-at <uuid>`) to before the
/// resumed run: what that run carried (phase 2's commands, the package's directives) is out of
/// the client's context, and arrives again, once, on the new branch.
fn a_rewind_gets_back_what_it_took_out(name: &'static str, world: World) {
    let Some(s) = Scenario::new(name, world) else {
        return;
    };
    let id = first_conversation(&s);
    let cut = last_answer(&s, &id);
    let resumed = Options::resuming(&id);
    s.run_with(Script::main(fork_steps(&s)), "Carry on.", &resumed);
    let rewound = Options {
        resume_at: Some(cut),
        ..Options::resuming(&id)
    };
    let steps = vec![bash("ls packages"), bash("ls packages/estimate/src")];
    s.run_with(Script::main(steps), "Let us go another way.", &rewound);
    let (got, saved) = last_without(&s, "Carry on.", "the client dropped the rewound turns");
    let taken = due_in_the_branch(&s.paths());
    let why = "was carried by a rewound turn and arrives again on the new branch";
    assert_branch(s.name, &got, &taken, why, &saved);
    let receipt = audit_agrees(&s, &id, &got);
    assert_eq!(receipt["duplicates"], json!([]), "{receipt}");
    assert_eq!(
        receipt["missing"],
        json!([]),
        "{}: the record holds only what the branch shows: {receipt}",
        s.name
    );
}

#[test]
fn a_rewind_gets_back_exactly_what_it_took_out() {
    a_rewind_gets_back_what_it_took_out("rewind", World::new());
}

#[test]
fn a_rewind_under_one_supervisor_gets_back_exactly_what_it_took_out() {
    a_rewind_gets_back_what_it_took_out("rewind_supervised", supervised());
}

/// Under one supervisor PID: a fork goes on in the owner's session, then the parent is resumed.
/// The parent's window was kept as it was at the fork: its resume sends nothing twice.
#[test]
fn a_resume_of_the_parent_after_a_fork_sends_nothing_twice() {
    let Some(s) = Scenario::new("fork_then_parent", supervised()) else {
        return;
    };
    let parent = first_conversation(&s);
    let fork = Options::forking(&parent);
    s.run_with(Script::main(fork_steps(&s)), "Go on in a fork.", &fork);
    let back = Options::resuming(&parent);
    let steps = vec![read(&s.world, "packages/estimate/src/total.ts"), bash("ls")];
    s.run_with(Script::main(steps), "Back to the first.", &back);
    let (got, saved) = last_without(
        &s,
        "Go on in a fork.",
        "the last conversation is the parent's",
    );
    assert_eq!(
        got.count_text("session-gate"),
        0,
        "{}: not locked out",
        s.name
    );
    let receipt = audit_agrees(&s, &parent, &got);
    assert_eq!(
        receipt["duplicates"],
        json!([]),
        "{}: the parent's resume sends nothing twice ({})",
        s.name,
        saved.display()
    );
    assert_eq!(
        got.count(&s.paths().skill("SKILL.md")),
        0,
        "{}: the client holds SKILL.md; no block of it goes out",
        s.name
    );
}
