//! Spawning and timing processes, the no-op floor, peak memory and system-call counts.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// One process to run: binary, arguments, stdin, environment and working directory.
#[derive(Debug, Clone)]
pub struct Call {
    /// The executable.
    pub bin: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Bytes written to its stdin.
    pub stdin: Vec<u8>,
    /// The whole environment (the process starts with an empty one).
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub cwd: PathBuf,
}

impl Call {
    fn command_for(&self, bin: &Path) -> Command {
        let mut cmd = Command::new(bin);
        cmd.args(&self.args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(&self.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Start the process and hand it its stdin.
    pub fn spawn(&self) -> io::Result<Child> {
        self.spawn_with(&self.bin)
    }

    /// Start `bin` instead of this call's binary, with everything else the same.
    pub fn spawn_with(&self, bin: &Path) -> io::Result<Child> {
        let mut child = self.command_for(bin).spawn()?;
        if let Some(mut stdin) = child.stdin.take() {
            // A hook that does not read its stdin closes the pipe: not an error here.
            let _ = stdin.write_all(&self.stdin);
        }
        Ok(child)
    }

    /// Run to completion; the wall time from spawn to exit, and what it printed.
    pub fn run_timed(&self) -> io::Result<(Duration, Output)> {
        self.run_timed_with(&self.bin)
    }

    /// [`Call::run_timed`] for another binary with the same stdin and environment.
    pub fn run_timed_with(&self, bin: &Path) -> io::Result<(Duration, Output)> {
        let start = Instant::now();
        let child = self.spawn_with(bin)?;
        let out = child.wait_with_output()?;
        Ok((start.elapsed(), out))
    }

    /// Peak resident memory of one run, in KiB: this benchmark re-runs itself as a small
    /// probe that starts the call and reports `getrusage(RUSAGE_CHILDREN)`.
    pub fn peak_rss_kib(&self) -> io::Result<u64> {
        let me = std::env::current_exe()?;
        let mut probe = self.clone();
        probe.args = [
            PROBE_FLAG.to_owned(),
            self.bin.to_string_lossy().into_owned(),
        ]
        .into_iter()
        .chain(self.args.iter().cloned())
        .collect();
        let (_, out) = probe.run_timed_with(&me)?;
        let text = String::from_utf8_lossy(&out.stderr);
        text.lines()
            .find_map(|l| l.strip_prefix("maxrss_kib=")?.trim().parse().ok())
            .ok_or_else(|| io::Error::other(format!("probe answered {text:?}")))
    }
}

/// The argument that turns the benchmark binary into the memory probe.
pub const PROBE_FLAG: &str = "--peak-rss-probe";

/// The probe's `main`: run `args[0]` with the remaining arguments, stdin passed through and
/// stdout discarded, then print the children's peak RSS on stderr.
#[allow(clippy::print_stderr)]
pub fn probe_main(args: &[String]) -> std::process::ExitCode {
    let Some((bin, rest)) = args.split_first() else {
        return std::process::ExitCode::FAILURE;
    };
    let status = Command::new(bin)
        .args(rest)
        .stdin(Stdio::inherit())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if status.is_err() {
        return std::process::ExitCode::FAILURE;
    }
    match nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN) {
        Ok(usage) => {
            eprintln!("maxrss_kib={}", usage.max_rss());
            std::process::ExitCode::SUCCESS
        }
        Err(_) => std::process::ExitCode::FAILURE,
    }
}

/// Compile the no-op hook (reads stdin, prints `{}`) into `dir` with `rustc -O`.
pub fn build_noop(dir: &Path) -> io::Result<PathBuf> {
    let src = dir.join("noop.rs");
    std::fs::write(
        &src,
        "use std::io::{Read, Write};\n\
         fn main() {\n\
             let mut input = Vec::new();\n\
             let _ = std::io::stdin().read_to_end(&mut input);\n\
             let _ = std::io::stdout().write_all(b\"{}\\n\");\n\
         }\n",
    )?;
    let out = dir.join("noop");
    let rustc = std::env::var_os("RUSTC")
        .map(PathBuf::from)
        .or_else(|| {
            let cargo = PathBuf::from(std::env::var_os("CARGO")?);
            let sibling = cargo.with_file_name("rustc");
            sibling.is_file().then_some(sibling)
        })
        .unwrap_or_else(|| PathBuf::from("rustc"));
    let status = Command::new(rustc)
        .args(["-O", "-C", "strip=symbols", "--edition", "2021", "-o"])
        .arg(&out)
        .arg(&src)
        .status()?;
    if !status.success() {
        return Err(io::Error::other("rustc could not build the no-op"));
    }
    Ok(out)
}

/// The median of `samples` (sorted in place).
pub fn median(samples: &mut [Duration]) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort_unstable();
    let mid = samples.len() / 2;
    if samples.len() % 2 == 1 {
        samples[mid]
    } else {
        (samples[mid - 1] + samples[mid]) / 2
    }
}

/// What a hook printed, in a few characters: `silent`, `allow`, `allow+ctx 3.1k`, `deny 1.2k`,
/// `ctx 9.4k`, `block 0.4k`, or `BAD …` when it broke the output contract.
pub fn summarize(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return format!("BAD exit {:?}", out.status.code());
    }
    if !out.stderr.is_empty() {
        return "BAD stderr".into();
    }
    if stdout.is_empty() {
        return "silent".into();
    }
    let Ok(v) = serde_json::from_str::<Value>(stdout.trim_end()) else {
        return "BAD json".into();
    };
    if stdout.trim_end().contains('\n') {
        return "BAD lines".into();
    }
    let kchars = |s: &str| format!("{:.1}k", s.chars().count() as f64 / 1000.0);
    let specific = &v["hookSpecificOutput"];
    let context = specific["additionalContext"].as_str().unwrap_or("");
    match specific["permissionDecision"].as_str() {
        Some("allow") if context.is_empty() => return "allow".into(),
        Some("allow") => return format!("allow+ctx {}", kchars(context)),
        Some("deny") => {
            return format!(
                "deny {}",
                kchars(specific["permissionDecisionReason"].as_str().unwrap_or(""))
            );
        }
        _ => {}
    }
    if v["decision"].as_str() == Some("block") {
        return format!("block {}", kchars(v["reason"].as_str().unwrap_or("")));
    }
    if !context.is_empty() {
        return format!("ctx {}", kchars(context));
    }
    "json".into()
}

/// The `additionalContext` a hook printed, or "".
pub fn context_of(out: &Output) -> String {
    serde_json::from_slice::<Value>(&out.stdout)
        .ok()
        .and_then(|v| {
            v["hookSpecificOutput"]["additionalContext"]
                .as_str()
                .map(str::to_owned)
        })
        .unwrap_or_default()
}

/// File-system calls of one run, from `strace`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Syscalls {
    /// Successful opens of the state file for reading.
    pub state_reads: usize,
    /// Renames onto the state file (atomic writes).
    pub state_writes: usize,
    /// Lock directories created next to the state file.
    pub locks: usize,
    /// Opens of other sessions' `.state.json` (a directory scan).
    pub other_sessions: usize,
}

/// True when `strace` can be run.
pub fn strace_available() -> bool {
    Command::new("strace")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Run `call` under `strace` and count what it did to `state` and to other session states
/// under `sessions`.
pub fn count_syscalls(
    call: &Call,
    state: &Path,
    sessions: &Path,
    trace_file: &Path,
) -> io::Result<Syscalls> {
    let mut traced = call.clone();
    traced.args = [
        "-f",
        "-qq",
        "-e",
        "trace=open,openat,rename,renameat,renameat2,mkdir,mkdirat",
        "-o",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([trace_file.to_string_lossy().into_owned()])
    .chain([call.bin.to_string_lossy().into_owned()])
    .chain(call.args.iter().cloned())
    .collect();
    let path = std::env::var("PATH").unwrap_or_default();
    traced.env.push(("PATH".into(), path));
    traced.run_timed_with(Path::new("strace"))?;
    let text = std::fs::read_to_string(trace_file)?;
    let state_q = format!("\"{}\"", state.display());
    let lock_q = format!("\"{}.lock\"", state.display());
    let sessions_prefix = format!("\"{}/", sessions.display());
    let mut counts = Syscalls::default();
    for line in text.lines() {
        let ok = !line.contains("= -1");
        if !ok {
            continue;
        }
        if line.contains("open") && line.contains(&state_q) && line.contains("O_RDONLY") {
            counts.state_reads += 1;
        } else if line.contains("rename")
            && line.contains(&state_q)
            && line.find(&state_q) > line.find(".tmp.")
        {
            counts.state_writes += 1;
        } else if line.contains("mkdir") && line.contains(&lock_q) {
            counts.locks += 1;
        } else if line.contains("open")
            && line.contains(&sessions_prefix)
            && line.contains("/.state.json\"")
            && !line.contains(&state_q)
        {
            counts.other_sessions += 1;
        }
    }
    Ok(counts)
}
