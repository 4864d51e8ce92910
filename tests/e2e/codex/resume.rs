//! Codex conversations that go on: a resumed one and a fork, judged by what the model received.

use super::*;

/// (5) `codex exec resume --last`: the resumed conversation holds the first run; SessionStart
/// (`resume`) and the calls after it send nothing the conversation holds, so every file the
/// hooks delivered in either run is in it exactly once (a shell read of a file whose
/// directives the first run brought brings none again), what they delivered after the resume
/// came after the first run (a patch under `docs/` brings the directive beside it), and the
/// resuming codex process owns the session.
#[test]
fn codex_resume_does_not_resend_what_the_conversation_holds() {
    let Some((s, docs_directive)) = CodexScenario::with_docs_directive("codex_resume") else {
        return;
    };
    let first = vec![
        activate_step(),
        phase_step("1: Interrogation"),
        shell("ls packages/estimate"),
        shell("ls packages/estimate/src"),
    ];
    let run = s.run(first, PROMPT, Mode::New);
    let second = vec![
        shell("sed -n 1,40p packages/estimate/src/parser.ts"),
        glossary_patch(),
        shell("ls docs"),
        shell("ls packages"),
    ];
    let resumed = s.run(second, CARRY_ON, Mode::ResumeLast);
    let id = codex_client::session_id(&run).expect("the client prints its session id");
    assert_eq!(
        Some(id),
        codex_client::session_id(&resumed),
        "{}: the resumed run goes on with the first run's conversation",
        s.name
    );
    let (requests, saved) = s.requests();
    let got = last_turn(&requests).expect("the resumed conversation");
    assert!(
        got.bash_call("session activate").is_some() && got.text_position(CARRY_ON).is_some(),
        "{}: the last conversation is the resumed one, holding the first run",
        s.name
    );
    s.assert_discovered("resumed", &got, &docs_directive, &saved);
    // The first run ends with the model's final answer; everything after it is the resume's.
    let resumed_at = got
        .messages
        .iter()
        .position(|m| m.role == "assistant" && m.texts.iter().any(|t| t == FINAL_TEXT))
        .expect("the first run's final answer")
        + 1;
    let resume = resume_point(s.log()).expect("SessionStart ran for the resume");
    let by_resume: Vec<String> = deliveries(s.log())
        .into_iter()
        .filter(|d| d.index >= resume && d.hook == "session-start")
        .map(|d| format!("{} ({})", d.file, d.source))
        .collect();
    assert_clean(
        s.name,
        "SessionStart (resume) sends nothing: the conversation holds it all",
        &by_resume,
        &got,
        &saved,
    );
    let after_resume = delivered_to_main(s.log(), resume, usize::MAX);
    notice(&format!(
        "{}: delivered after the resume: {after_resume:?}",
        s.name
    ));
    assert!(
        after_resume.contains(&docs_directive),
        "{}: the patch after the resume brought its directive: {after_resume:?}",
        s.name
    );
    let late = got.check_arrives_within(
        &after_resume,
        resumed_at,
        got.messages.len(),
        "after the first run",
    );
    assert_clean(
        s.name,
        "what the hooks delivered after the resume reached the model after the first run",
        &late,
        &got,
        &saved,
    );
    s.assert_patch_brings(&got, &docs_directive, &saved);
    s.assert_owner(&resumed, "1: Interrogation");
}

/// The rollout of Codex conversation `id` (under the client's `CODEX_HOME/sessions`).
fn rollout_of(s: &CodexScenario, id: &str) -> PathBuf {
    let mut files = Vec::new();
    collect_files(&s.codex_home.join("sessions"), &mut files);
    files
        .into_iter()
        .find(|f| {
            fs::read_to_string(f)
                .ok()
                .and_then(|t| t.lines().next().map(str::to_owned))
                .is_some_and(|first| first.contains(&format!("\"id\":\"{id}\"")))
        })
        .unwrap_or_else(|| panic!("{}: no rollout of {id}", s.name))
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
    {
        let path = entry.path();
        if path.is_dir() {
            collect_files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// `codex exec fork <id>` (SessionStart `fork`; the fork's rollout names its parent in its
/// `session_meta`): the fork starts as its parent's window, is never locked out, gets nothing
/// twice, and what becomes due in it arrives there; `preload audit` of its rollout agrees with
/// what the model received.
#[test]
fn codex_fork_starts_as_its_parents_window() {
    let world = World::new();
    let Some(s) = CodexScenario::new("codex_fork", world) else {
        return;
    };
    let first = vec![
        activate_step(),
        phase_step("1: Interrogation"),
        shell("ls packages/estimate"),
    ];
    let run = s.run(first, PROMPT, Mode::New);
    let parent = codex_client::session_id(&run).expect("the client prints its session id");
    let second = vec![
        shell("sed -n 1,40p packages/estimate/src/parser.ts"),
        phase_step("2: Planning"),
        shell("ls packages"),
    ];
    let forked = s.run(second, "Go on in a fork.", Mode::Fork(parent.clone()));
    let fork = codex_client::session_id(&forked).expect("the fork's session id");
    assert_ne!(
        fork, parent,
        "{}: a fork is a conversation of its own",
        s.name
    );
    let (requests, saved) = s.requests();
    let got = last_turn(&requests).expect("the fork's conversation");
    let rollout = rollout_of(&s, &fork);
    crate::branches::assert_fork_audited(s.name, &s.world, &rollout, &got, &saved);
}
