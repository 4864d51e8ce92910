//! Typing text into the user's tmux pane: the command a paste rule hands to the terminal,
//! sent in the background and never waited for.

use std::process::{Command, Stdio};

use crate::primitives::env::{self, Env};

/// The paste script: `$1` pane (may be empty), `$2` text, `$3` 1 to interrupt first.
const PASTE_SCRIPT: &str = r#"k() { if [ -n "$P" ]; then tmux send-keys -t "$P" "$@"; else tmux send-keys "$@"; fi; }
P=$1
if [ "$3" = 1 ]; then k Escape; sleep 0.3; k Escape; sleep 0.3; k C-u; sleep 0.3; fi
k -l "$2" && k Enter"#;

/// Type `text` into the pane of `TMUX_PANE` (the current one when unset) and press Enter;
/// with `interrupt`, first clear what the pane is doing (Escape twice, then `C-u`).
///
/// Nothing happens outside tmux (`TMUX` unset) or for an empty text; a failure to start the
/// script is ignored, as the paste is a courtesy to the user, not part of the answer.
pub fn paste(env: &Env, text: &str, interrupt: bool) {
    if env.get(env::TMUX).is_none() || text.is_empty() {
        return;
    }
    let _ = Command::new("sh")
        .arg("-c")
        .arg(PASTE_SCRIPT)
        .arg("preload-paste")
        .arg(env.get(env::TMUX_PANE).unwrap_or(""))
        .arg(text)
        .arg(if interrupt { "1" } else { "0" })
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
}
