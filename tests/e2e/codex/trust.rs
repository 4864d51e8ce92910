//! Codex trust: hooks `preload install --trust` wired run without the bypass flag, and hooks
//! installed without it do not run.

use super::*;

/// `preload install --agent codex --trust-project` writes the trust entries the real client
/// reads: with the project left untrusted by the harness and no
/// `--dangerously-bypass-hook-trust`, the client loads the project's `.codex/`, runs every
/// hook, and the model receives what the activation scenario's does, each file once; the
/// harness's own settings in `config.toml` (the scripted provider) stay as they were.
#[test]
fn codex_hooks_trusted_by_install_run_without_the_bypass() {
    let Some(s) = CodexScenario::with_trust("codex_trusted", World::new(), Trust::Installed) else {
        return;
    };
    let config = fs::read_to_string(s.codex_home.join("config.toml")).expect("config.toml");
    assert!(
        config.contains("[model_providers.scripted]") && config.contains("trusted_hash = "),
        "{}: install kept the client's settings and added its entries: {config}",
        s.name
    );
    let steps = vec![
        activate_step(),
        shell("ls packages/estimate"),
        phase_step("1: Interrogation"),
        shell("ls packages/estimate/tests"),
        shell("ls packages"),
    ];
    let (got, saved) = s.assert_activation(steps);
    let p = s.paths();
    let early =
        got.check_arrives_within(&at_start(&p), 0, first_call(&got), "before the first call");
    assert_clean(s.name, "standards at start-up", &early, &got, &saved);
}

/// Without `--trust` and without the bypass, the client skips every hook of the install (it
/// says nothing about it): no hook context reaches the model, the session gate denies
/// nothing, and no hook delivered anything. What makes the trusted scenario able to fail.
#[test]
fn codex_hooks_installed_without_trust_do_not_run() {
    let Some(s) = CodexScenario::with_trust("codex_untrusted", World::new(), Trust::None) else {
        return;
    };
    s.run(vec![shell("ls packages")], "Say hello.", Mode::New);
    let (requests, saved) = s.requests();
    let got = last_turn(&requests).expect("the conversation");
    assert!(
        got.hook_contexts().is_empty(),
        "{}: an untrusted hook's context reached the model: {:?} ({})",
        s.name,
        got.hook_contexts(),
        saved.display()
    );
    assert!(
        got.errors().is_empty(),
        "{}: an untrusted gate denied a call: {:?}",
        s.name,
        got.errors()
    );
    assert!(
        deliveries(s.log()).is_empty(),
        "{}: an untrusted hook delivered files",
        s.name
    );
}
