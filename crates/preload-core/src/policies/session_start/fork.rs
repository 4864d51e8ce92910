//! The conversation a `fork` start was made from.

use crate::mechanisms::context::Context;
use crate::primitives::transcript::rollout;
use crate::primitives::{env, process};

/// The conversation a `fork` start (`source`) of `conversation` was made from. The input names
/// no parent. A Codex rollout (`codex exec fork <id>`) names it in its `session_meta`, written
/// before the hooks run. A Claude Code fork's transcript is written only after its first
/// prompt: its parent is the `--resume <id>` (`-r <id>`, `--resume=<id>`) the client was
/// started with, as `claude --resume <id> --fork-session` is; the client is `CLAUDE_PID`, which
/// it sets, else the hook's nearest process that is not a shell. `None` for a fork made inside
/// a running client.
pub(super) fn fork_parent(ctx: &Context, source: &str, conversation: &str) -> Option<String> {
    if source != "fork" {
        return None;
    }
    let from_rollout = ctx.transcript().and_then(rollout::forked_from);
    let parent = from_rollout.or_else(|| {
        let client = ctx
            .env
            .number::<u32>(env::CLAUDE_PID)
            .filter(|pid| *pid > 0)
            .unwrap_or_else(process::nearest_non_shell_ancestor);
        resumed_conversation(&process::arguments(client)?).map(str::to_owned)
    });
    parent.filter(|parent| parent != conversation)
}

/// The conversation a client's arguments resume.
fn resumed_conversation(args: &[String]) -> Option<&str> {
    let mut words = args.iter().map(String::as_str);
    while let Some(word) = words.next() {
        if let Some(id) = word.strip_prefix("--resume=") {
            return Some(id).filter(|id| !id.is_empty());
        }
        if word == "--resume" || word == "-r" {
            return words.next().filter(|id| !id.starts_with('-'));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn a_fork_is_made_from_the_conversation_its_client_resumes() {
        let of = |line: &str| resumed_conversation(&words(line)).map(str::to_owned);
        assert_eq!(
            of("claude -p go --resume abc --fork-session").as_deref(),
            Some("abc")
        );
        assert_eq!(of("claude --fork-session -r abc").as_deref(), Some("abc"));
        assert_eq!(
            of("claude --resume=abc --fork-session").as_deref(),
            Some("abc")
        );
        assert_eq!(of("claude --resume --fork-session"), None);
        assert_eq!(of("claude --continue --fork-session"), None);
        assert_eq!(of("claude"), None);
    }
}
