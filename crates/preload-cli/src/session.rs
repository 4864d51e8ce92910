//! `preload activate` and `preload phase`: the session-state half of `session.sh` the hooks read.
//!
//! For engines and tests that run without `session.sh`, they enforce what `session.sh` enforces
//! (session parameters, completed skills, the phase sequence, the proof a phase needs) with its
//! messages and exit codes. Both work on a `.state.json` that `session.sh` created (unknown
//! fields are kept) and hold the state lock from read to rename. The parameters `activate`
//! reads are checked in [`parameters`], phase changes are [`crate::transition`].

pub mod parameters;

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::exit::{self, Exit};
use crate::transition::{self, Outcome, PhaseRequest, proof};
use preload_core::pipeline::activation::{self, Failure, Options};
use preload_core::pipeline::runner;
use preload_core::primitives::env::Env;
use preload_core::primitives::input::MAX_STDIN_BYTES;
use preload_core::{Context, HookInput};

/// How long `phase` waits for its proof on stdin (the engine's `read -t 1`).
pub const PROOF_TIMEOUT: Duration = Duration::from_secs(1);
/// How long `activate` waits for the session parameters on stdin.
pub const PARAMETERS_TIMEOUT: Duration = Duration::from_secs(2);

/// `preload activate`.
#[derive(Debug, Clone, clap::Args)]
pub struct ActivateArgs {
    /// The session directory (`sessions/<name>`).
    #[arg(value_parser = crate::path_arg)]
    pub dir: std::path::PathBuf,
    /// The skill, as `session.sh activate <dir> <skill>` takes it.
    pub skill: Option<String>,
    /// The skill (the same as the positional form).
    #[arg(long = "skill", value_name = "NAME", conflicts_with = "skill")]
    pub skill_flag: Option<String>,
    /// Skip the completed-skill check and record `fastTrack: true`.
    #[arg(long)]
    pub fast_track: bool,
    /// The user allowed activating a completed skill again.
    #[arg(long, value_name = "REASON")]
    pub user_approved: Option<String>,
}

/// `preload phase`.
#[derive(Debug, Clone, clap::Args)]
pub struct PhaseArgs {
    /// The session directory (`sessions/<name>`).
    #[arg(value_parser = crate::path_arg)]
    pub dir: std::path::PathBuf,
    /// The phase, `"<label>: <name>"`.
    pub phase: String,
    /// The user approved a non-sequential transition.
    #[arg(long, value_name = "REASON")]
    pub user_approved: Option<String>,
}

/// Run `preload activate`.
pub fn activate(args: &ActivateArgs) -> ExitCode {
    finish(activate_cmd(&cli_context("activate"), args))
}

/// Run `preload phase`.
pub fn phase(args: &PhaseArgs) -> ExitCode {
    finish(Ok(phase_cmd(&cli_context("phase"), args)))
}

/// Print what a command produced; its exit code.
fn finish(result: Result<Outcome, Failure>) -> ExitCode {
    let exit = match result {
        Ok(outcome) => {
            exit::stderr(&outcome.stderr);
            if !outcome.stdout.is_empty() {
                runner::print_text(&outcome.stdout);
            }
            if outcome.refused {
                Exit::Failure
            } else {
                Exit::Success
            }
        }
        Err(Failure::Usage(why)) => {
            exit::complain(&format!("preload: {why}"));
            Exit::Usage
        }
        Err(Failure::Refused(why)) => {
            exit::complain(&format!("preload: {why}"));
            Exit::Failure
        }
        Err(Failure::Rejected(why)) => {
            exit::complain(&why);
            Exit::Failure
        }
    };
    exit.into()
}

/// The context of a command-line call: the process's environment and working directory.
fn cli_context(name: &'static str) -> Context {
    let input = HookInput::from_value(json!({ "cwd": crate::process_cwd() }));
    Context::new(Env::from_process(), name, &input, Duration::from_secs(5))
}

/// What arrived on stdin within `limit` (at most [`MAX_STDIN_BYTES`]); nothing for a terminal.
/// A stdin held open without end is read until the limit and no longer waited for.
fn read_stdin(limit: Duration) -> String {
    if std::io::stdin().is_terminal() {
        return String::new();
    }
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let reader = std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut buf = vec![0_u8; 64 * 1024];
            loop {
                match stdin.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        });
    if reader.is_err() {
        return String::new();
    }
    let deadline = Instant::now() + limit;
    let mut bytes = Vec::new();
    while let Ok(chunk) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        bytes.extend(chunk);
        if bytes.len() as u64 > MAX_STDIN_BYTES {
            break;
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn session_dir_arg(ctx: &Context, arg: &str) -> PathBuf {
    let path = Path::new(arg);
    let path = if path.is_absolute() {
        path.to_path_buf()
    } else {
        ctx.cwd.join(path)
    };
    preload_core::primitives::paths::lexical_clean(&path)
}

fn activate_cmd(ctx: &Context, args: &ActivateArgs) -> Result<Outcome, Failure> {
    let mut out = Outcome::default();
    let skill = args.skill.clone().or_else(|| args.skill_flag.clone());
    let mut options = Options {
        fast_track: args.fast_track,
        approval: args.user_approved.clone(),
        ..Options::default()
    };
    let dir = args.dir.to_string_lossy().into_owned();
    let dir = session_dir_arg(ctx, &dir);
    let activated =
        parameters::check(&ctx.paths, &read_stdin(PARAMETERS_TIMEOUT)).and_then(|parameters| {
            options.parameters = parameters;
            activation::activate_with(ctx, &dir, skill.as_deref(), &options)
        });
    let done = match activated {
        Ok(done) => done,
        Err(Failure::Refused(why)) => {
            out.refuse(&format!("preload: {why}"));
            return Ok(out);
        }
        Err(Failure::Rejected(why)) => {
            out.refuse(&why);
            return Ok(out);
        }
        Err(usage) => return Err(usage),
    };
    if done.approved_again {
        out.say(&format!(
            "Skill re-activation approved (previously completed): {}",
            done.skill
        ));
        out.say(&format!(
            "  Approval: {}",
            options.approval.as_deref().unwrap_or("")
        ));
    }
    out.say(&format!(
        "Session activated: {} (skill: {}, pid: {})",
        dir.display(),
        done.skill,
        ctx.owner_pid
    ));
    out.say(&format!("Current phase: {}", done.phase));
    Ok(out)
}

fn phase_cmd(ctx: &Context, args: &PhaseArgs) -> Outcome {
    let request = PhaseRequest {
        phase: args.phase.clone(),
        approval: args.user_approved.clone(),
        proof: proof::parse(&read_stdin(PROOF_TIMEOUT)),
    };
    transition::change_phase(
        ctx,
        &session_dir_arg(ctx, &args.dir.to_string_lossy()),
        &request,
    )
}

#[cfg(test)]
mod tests;
