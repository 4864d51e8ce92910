//! The `preload` commands, one file per command (named after its module in
//! `crates/preload-cli/src/`), run as users run them: the built binary against a sandbox.

mod diagnostics;
mod doctor;
mod explain;
mod install;
mod plugin;
mod session;

/// Fails unless `text` (what a command printed) holds each of `wanted`, naming the one missing
/// and showing the whole text.
fn assert_says(text: &str, wanted: &[&str]) {
    for part in wanted {
        assert!(text.contains(part), "{part:?} missing from:\n{text}");
    }
}
