//! Two clients at once in one project: each its own PID, seed, session and conversation, and
//! neither sees the other's files or state.

use serde_json::json;

use crate::client::{self, Options};
use crate::model::{ModelServer, Script, bash};
use crate::received::Received;
use crate::scenario::{IMPLEMENT_PROMPT, Scenario, activate_of, phase_of, read};
use crate::support::{delivered_to_main, dump, notice, request_summary, union};
use crate::world::World;

/// (e) Two clients start together in the same project, each activates its own `/implement`
/// session and works through phase 1. Each conversation gets every file the hooks delivered
/// to it exactly once; each session is owned by its own client; no block or session name of
/// one reaches the other.
#[test]
fn two_clients_at_once_in_one_project_keep_their_own_context() {
    let Some(s) = Scenario::new("two_clients", World::new()) else {
        return;
    };
    let names = ["e2e-a", "e2e-b"];
    let files = [
        "packages/estimate/src/parser.ts",
        "packages/estimate/src/total.ts",
    ];
    let servers: Vec<ModelServer> = names
        .iter()
        .zip(files)
        .map(|(name, file)| {
            ModelServer::start(Script::main(vec![
                activate_of(name),
                phase_of(name, "1: Interrogation"),
                read(&s.world, file),
                bash(&format!("ls sessions/{name}")),
            ]))
        })
        .collect();
    let logs: Vec<_> = names
        .iter()
        .map(|n| {
            s.world
                .sandbox
                .root()
                .join(format!("delivery-log-{n}.jsonl"))
        })
        .collect();
    let running: Vec<_> = servers
        .iter()
        .zip(&logs)
        .map(|(server, log)| {
            let options = Options {
                log: Some(log.clone()),
                ..Options::default()
            };
            client::start(&s.claude, &s.world, server, IMPLEMENT_PROMPT, &options)
        })
        .collect();
    let runs: Vec<_> = running.into_iter().map(client::Running::wait).collect();
    for (run, server) in runs.iter().zip(&servers) {
        s.check_run(run, server);
    }

    let p = s.paths();
    let phase1 = p.phase_one();
    let mut expected = p.core_standards();
    expected.extend(phase1.clone());
    expected.extend(p.core_directives());
    for (i, name) in names.iter().enumerate() {
        let requests = servers[i].requests();
        let saved = dump(&format!("{}/{name}", s.name), &requests, &s.world);
        notice(&format!(
            "{} {name}: {}",
            s.name,
            request_summary(&requests)
        ));
        let got = Received::last_of(&requests, "main").expect("the client's conversation");
        let logged = delivered_to_main(&logs[i], 0, usize::MAX);
        s.assert_context(name, &got, &union(&expected, &logged), &saved);
        s.assert_skill_once(name, &got, &saved);
        s.assert_phase_files(name, &got, "1: Interrogation", &phase1, &saved);
        let other = names[1 - i];
        assert_eq!(
            got.count_text(&format!("sessions/{other}")),
            0,
            "{name} never hears of {other}"
        );
        let state = s
            .world
            .state_of(name)
            .expect("each client activated its session");
        assert_eq!(
            state["pid"],
            json!(runs[i].pid),
            "{name} is owned by its own client"
        );
        assert_eq!(state["currentPhase"], "1: Interrogation");
        assert!(
            state["sessionId"] != s.world.state_of(other).expect("the other")["sessionId"],
            "two conversations"
        );
    }
    assert_ne!(runs[0].pid, runs[1].pid);
}
