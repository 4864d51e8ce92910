//! Spawning and timing processes, the no-op floor, CPU time and system-call counts.

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

/// True when `strace` can be run.
pub fn strace_available() -> bool {
    Command::new("strace")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The 95th percentile of `samples` (sorted in place; the largest below 20 samples).
pub fn p95(samples: &mut [Duration]) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort_unstable();
    let at = (samples.len() * 95).div_ceil(100).saturating_sub(1);
    samples[at.min(samples.len() - 1)]
}

/// User plus system CPU time of every child this process has waited for so far.
pub fn children_cpu() -> Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_CHILDREN).map_or(Duration::ZERO, |u| {
        let tv = |t: nix::sys::time::TimeVal| {
            Duration::from_secs(u64::try_from(t.tv_sec()).unwrap_or(0))
                + Duration::from_micros(u64::try_from(t.tv_usec()).unwrap_or(0))
        };
        tv(u.user_time()) + tv(u.system_time())
    })
}

/// Run `call` under `strace` with `options`, writing the trace to `trace_file`; returns it.
fn strace(call: &Call, options: &[&str], trace_file: &Path) -> io::Result<String> {
    let mut traced = call.clone();
    traced.args = options
        .iter()
        .map(|s| (*s).to_owned())
        .chain(["-o".to_owned(), trace_file.to_string_lossy().into_owned()])
        .chain([call.bin.to_string_lossy().into_owned()])
        .chain(call.args.iter().cloned())
        .collect();
    let path = std::env::var("PATH").unwrap_or_default();
    traced.env.push(("PATH".into(), path));
    traced.run_timed_with(Path::new("strace"))?;
    std::fs::read_to_string(trace_file)
}

/// How many other sessions' `.state.json` one run of `call` opens (a scan of `sessions` opens
/// them all), from `strace`; `state` is the call's own session state, not counted.
pub fn count_other_session_opens(
    call: &Call,
    state: &Path,
    sessions: &Path,
    trace_file: &Path,
) -> io::Result<usize> {
    let text = strace(call, &["-f", "-qq", "-e", "trace=open,openat"], trace_file)?;
    let own = format!("\"{}\"", state.display());
    let prefix = format!("\"{}/", sessions.display());
    Ok(text
        .lines()
        .filter(|l| !l.contains("= -1") && l.contains(&prefix) && !l.contains(&own))
        .filter(|l| l.contains("/.state.json\""))
        .count())
}

/// Every system call of one run of `call` (its children included), from `strace -f -c`.
pub fn count_all_syscalls(call: &Call, trace_file: &Path) -> io::Result<usize> {
    let text = strace(call, &["-f", "-c"], trace_file)?;
    // The summary's last line: `100.00 <seconds> <usecs/call> <calls> <errors> total`.
    text.lines()
        .rev()
        .find(|l| l.trim_end().ends_with("total"))
        .and_then(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            fields.get(3).and_then(|n| n.parse().ok())
        })
        .ok_or_else(|| io::Error::other("no strace summary"))
}
