//! `preload report`: a summary of a delivery event log.

use std::fs;
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::exit::{self, CommandError, Exit};
use preload_core::mechanisms::report::Report;
use preload_core::primitives::env::{self, Env};

/// `preload report`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ReportArgs {
    /// The delivery event log (default: `$PRELOAD_TEST_LOG`).
    #[arg(value_parser = crate::path_arg)]
    pub log: Option<PathBuf>,
}

/// Why no report was made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// No log given and `PRELOAD_TEST_LOG` not set.
    #[error("usage: preload report [LOG] (default $PRELOAD_TEST_LOG)")]
    NoLog,
    /// The log could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The log.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

impl CommandError for ReportError {
    fn exit(&self) -> Exit {
        match self {
            Self::NoLog => Exit::Usage,
            Self::Read { .. } => Exit::Failure,
        }
    }
}

/// Run `preload report`.
pub fn run(args: &ReportArgs) -> ExitCode {
    exit::finish("report", report(args))
}

/// The report of the log `args` names (or `$PRELOAD_TEST_LOG`), rendered.
fn report(args: &ReportArgs) -> Result<String, ReportError> {
    let path = args
        .log
        .clone()
        .or_else(|| {
            Env::from_process()
                .get(env::PRELOAD_TEST_LOG)
                .map(PathBuf::from)
        })
        .ok_or(ReportError::NoLog)?;
    let text = fs::read_to_string(&path).map_err(|source| ReportError::Read { path, source })?;
    Ok(Report::from_log(&text).render())
}
