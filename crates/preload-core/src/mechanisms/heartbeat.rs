//! The heartbeat reminder: a rule's text with the agent's tool calls since its last log entry
//! against the limit, the time and the context fill, and the `engine log` command that writes
//! the session's log.

use std::path::Path;
use std::time::SystemTime;

use crate::primitives::artifacts;
use crate::primitives::clock;
use crate::state::fields;
use crate::state::{self, State};

/// Calls before the heartbeat blocks, when the state does not say ([`fields::BLOCK_AFTER`]).
pub const DEFAULT_BLOCK_AFTER: u64 = 10;

/// `<text> (N/M) [HH:MM | Context: P%]` and the `engine log` command for the log of the session
/// in `session_dir` (shown relative to `cwd`), for an agent with `count` calls since its last
/// log entry. The text as it is when the session has no log template and no skill.
pub fn enrich(
    text: &str,
    s: &State,
    session_dir: &Path,
    cwd: &Path,
    now: SystemTime,
    count: u64,
) -> String {
    let template = s
        .str(fields::LOG_TEMPLATE)
        .and_then(artifacts::template_name)
        .map(str::to_owned);
    let log_file = match (&template, s.str(fields::SKILL).filter(|k| !k.is_empty())) {
        (Some(t), _) => artifacts::document_name(t).unwrap_or(t).to_owned(),
        (None, Some(skill)) => {
            let upper: String = skill
                .chars()
                .map(|c| {
                    if c.is_ascii_alphabetic() {
                        c.to_ascii_uppercase()
                    } else {
                        '_'
                    }
                })
                .collect();
            format!("{upper}_LOG.md")
        }
        (None, None) => return text.to_owned(),
    };
    let log_path = session_dir.join(log_file);
    let shown = log_path
        .strip_prefix(cwd)
        .unwrap_or(&log_path)
        .to_string_lossy()
        .into_owned();
    let limit = s
        .number(fields::BLOCK_AFTER)
        .map_or(DEFAULT_BLOCK_AFTER, state::whole);
    let percent = (s.number(fields::CONTEXT_USAGE).unwrap_or(0.0) * 100.0).round();
    let (_, _, _, hh, mm, _) = clock::utc_parts(now);
    let head = format!("{text} ({count}/{limit}) [{hh:02}:{mm:02} | Context: {percent}%]");
    match template {
        Some(t) => format!("{head}\n    $ engine log {shown} <<'EOF' [Template: {t}] ... EOF"),
        None => format!("{head}\n    $ engine log {shown}"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use serde_json::json;

    use super::*;

    fn state(pairs: &[(&str, serde_json::Value)]) -> State {
        let mut s = State::default();
        for (key, value) in pairs {
            s.set(key, value.clone());
        }
        s
    }

    #[test]
    fn the_log_comes_from_the_template_else_the_skill() {
        let at = UNIX_EPOCH + Duration::from_secs(3_600 * 13 + 60 * 7);
        let s = state(&[
            (
                fields::LOG_TEMPLATE,
                json!("/h/assets/TEMPLATE_IMPLEMENTATION_LOG.md"),
            ),
            (fields::CONTEXT_USAGE, json!(0.42)),
        ]);
        let dir = Path::new("/p/sessions/s");
        assert_eq!(
            enrich("beat", &s, dir, Path::new("/p"), at, 3),
            "beat (3/10) [13:07 | Context: 42%]\n    $ engine log sessions/s/IMPLEMENTATION_LOG.md \
             <<'EOF' [Template: TEMPLATE_IMPLEMENTATION_LOG.md] ... EOF"
        );
        let s = state(&[
            (fields::SKILL, json!("fix-it")),
            (fields::BLOCK_AFTER, json!(4)),
        ]);
        assert_eq!(
            enrich("beat", &s, dir, Path::new("/elsewhere"), at, 1),
            "beat (1/4) [13:07 | Context: 0%]\n    $ engine log /p/sessions/s/FIX_IT_LOG.md"
        );
        assert_eq!(
            enrich("beat", &State::default(), dir, Path::new("/p"), at, 1),
            "beat"
        );
    }
}
