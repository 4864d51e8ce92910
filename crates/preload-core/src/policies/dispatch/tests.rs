use serde_json::json;

use super::*;
use crate::{HookInput, HookOutput};

const fn route(
    binary: &'static str,
    args: &'static [&'static str],
    event: HookEvent,
    matcher: Option<&'static str>,
    chunked: bool,
) -> Wiring {
    Wiring {
        binary,
        args,
        event,
        matcher,
        timeout: 5,
        chunked,
        filter: None,
    }
}

/// A row of a PostToolUse policy without arguments, on the calls of `matcher`.
const fn post_tool(binary: &'static str, matcher: Option<&'static str>) -> Wiring {
    route(binary, &[], HookEvent::PostToolUse, matcher, false)
}

const ROUTES: &[Wiring] = &[
    route(
        "preload-session-start",
        &[],
        HookEvent::SessionStart,
        None,
        true,
    ),
    route(
        "preload-compaction-reread",
        &["sessionstart"],
        HookEvent::SessionStart,
        Some("compact"),
        false,
    ),
    route(
        "preload-overflow",
        &[],
        HookEvent::PreToolUse,
        Some("*"),
        false,
    ),
    route(
        "preload-compaction-reread",
        &["pretooluse"],
        HookEvent::PreToolUse,
        Some("*"),
        false,
    ),
    post_tool("preload-injections", Some("*")),
    post_tool("preload-templates", Some("Skill")),
    post_tool("preload-templates", Some("Bash")),
    post_tool("preload-phase-commands", Some("Bash")),
    post_tool("preload-unknown", None),
];

fn names(policies: &[Policy]) -> Vec<&'static str> {
    policies.iter().map(|p| p.name).collect()
}

#[test]
fn an_event_runs_its_rows_in_the_wirings_order_each_once() {
    let post = plan(ROUTES, HookEvent::PostToolUse, None);
    assert_eq!(names(&post), ["injections", "templates", "phase-commands"]);
    assert!(post[0].matchers.is_empty(), "`*` matches every call");
    assert_eq!(post[1].matchers, ["Skill", "Bash"], "both rows' matchers");
    assert_eq!(post[2].matchers, ["Bash"]);
    let pre = plan(ROUTES, HookEvent::PreToolUse, None);
    assert_eq!(names(&pre), ["guards", "compaction-reread"]);
    assert_eq!(pre[1].event, HookEvent::PreToolUse);
    assert!(plan(ROUTES, HookEvent::Stop, None).is_empty());
}

#[test]
fn a_row_matching_everything_opens_the_policy_to_every_call() {
    let routes = [
        post_tool("preload-templates", Some("Skill")),
        post_tool("preload-templates", None),
        post_tool("preload-templates", Some("Bash")),
    ];
    let post = plan(&routes, HookEvent::PostToolUse, None);
    assert_eq!(post.len(), 1);
    assert!(post[0].matchers.is_empty());
}

#[test]
fn session_start_chunks_print_their_slice_and_the_last_runs_the_rest() {
    let chunk = |index| Some(Chunk { index, total: 4 });
    assert_eq!(
        names(&plan(ROUTES, HookEvent::SessionStart, chunk(0))),
        ["session-start"]
    );
    assert_eq!(
        names(&plan(ROUTES, HookEvent::SessionStart, chunk(2))),
        ["session-start"]
    );
    let last = plan(ROUTES, HookEvent::SessionStart, chunk(3));
    assert_eq!(names(&last), ["session-start", "compaction-reread"]);
    assert_eq!(last[1].matchers, ["compact"]);
    let whole = plan(ROUTES, HookEvent::SessionStart, None);
    assert_eq!(names(&whole), ["session-start", "compaction-reread"]);
}

#[test]
fn every_policy_binary_has_a_handler_and_nothing_else_does() {
    for (binary, args) in [
        ("preload-overflow", &[][..]),
        ("preload-injections", &[]),
        ("preload-templates", &[]),
        ("preload-phase-commands", &[]),
        ("preload-prompt-submit", &[]),
        ("preload-session-start", &[]),
        ("preload-e2e-auto-answer", &[]),
        ("preload-compaction-reread", &["register"]),
        ("preload-compaction-reread", &["precompact"]),
        ("preload-compaction-reread", &["sessionstart"]),
        ("preload-compaction-reread", &["pretooluse"]),
        ("preload-compaction-reread", &["stop"]),
    ] {
        assert!(
            handler_of(binary, args, None).is_some(),
            "{binary} {args:?}"
        );
    }
    assert!(handler_of("preload-compaction-reread", &["nope"], None).is_none());
    assert!(handler_of("preload-overflow", &["extra"], None).is_none());
    assert!(handler_of("preload", &[], None).is_none());
}

#[test]
fn event_names_are_the_clients() {
    for event in HookEvent::ALL {
        assert_eq!(HookEvent::from_name(event.name()), Some(event));
    }
    assert_eq!(HookEvent::from_name("pretooluse"), None);
    assert_eq!(HookEvent::from_name(""), None);
}

#[test]
fn the_auto_answer_policy_is_silent_unless_switched_on() {
    let handler = handler_of("preload-e2e-auto-answer", &[], None)
        .unwrap()
        .handler;
    let input = HookInput::from_value(json!({"hook_event_name": "PreToolUse",
        "tool_name": "AskUserQuestion",
        "tool_input": {"questions": [{"question": "Which?", "options": [{"label": "A"}]}]}}));
    let off = crate::Context::new(
        crate::primitives::env::Env::from_pairs::<&str, &str>([]),
        NAME,
        &input,
        std::time::Duration::from_secs(1),
    );
    assert_eq!(handler(&input, &off).unwrap(), HookOutput::Silent);
    let on = crate::Context::new(
        crate::primitives::env::Env::from_pairs([(
            crate::primitives::env::E2E_AUTO_ANSWER,
            "first",
        )]),
        NAME,
        &input,
        std::time::Duration::from_secs(1),
    );
    assert!(matches!(handler(&input, &on).unwrap(), HookOutput::Deny(_)));
}
