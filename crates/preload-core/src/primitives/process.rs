//! Process facts the hooks need: liveness, start time, parent and name.
//!
//! Liveness is `kill -0` everywhere. The other facts come from the platform's own interface:
//! `/proc/<pid>/stat` on Linux (and any other system with a Linux-style `/proc`), libproc's
//! `proc_pidinfo` on macOS (see the `macos` module). They mean the same on both: the start time
//! is a value that changes when a PID is reused, the parent is the parent PID, the name is the
//! short command name (at most 15 bytes, as `comm`).

use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::Pid;

#[cfg(target_os = "macos")]
use super::system::libproc as macos;

/// True when a process with this PID exists (`kill -0`; a process of another user counts).
pub fn is_alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    if raw <= 0 {
        return false;
    }
    match kill(Pid::from_raw(raw), None) {
        Ok(()) | Err(Errno::EPERM) => true,
        Err(_) => false,
    }
}

/// What the kernel says about one process; each fact is absent when it cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Facts {
    /// The short command name (`comm`).
    name: String,
    /// The parent PID.
    parent: Option<u32>,
    /// The start time, in the platform's unit (see [`start_time`]).
    started: Option<u64>,
}

/// The facts of `pid` from `/proc/<pid>/stat`, one line of a few hundred bytes.
#[cfg(not(target_os = "macos"))]
fn facts(pid: u32) -> Option<Facts> {
    parse_stat(&read_line(
        std::path::Path::new(&format!("/proc/{pid}/stat")),
        4096,
    )?)
}

/// The line of a one-line file that states a process's facts (`/proc/<pid>/stat`, a lock's
/// `pid`), at most `max` bytes of it: read until it ends with its line end or the file ends,
/// so one `read` usually takes it, with no `statx` and no read that meets the end
/// (`fs::read_to_string` makes both, and on `/proc`, which reports a size of 0, reads 32 bytes
/// and doubles: a `statx` and six `read`s). `None` when the file cannot be opened or read, or
/// is not UTF-8.
pub fn read_line(path: &std::path::Path, max: usize) -> Option<String> {
    use std::io::{ErrorKind, Read as _};
    let mut file = std::fs::File::open(path).ok()?;
    let mut buf = vec![0u8; max];
    let mut len = 0;
    while len < buf.len() {
        let n = match file.read(&mut buf[len..]) {
            Ok(n) => n,
            Err(err) if err.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return None,
        };
        len += n;
        if n == 0 || buf[..len].ends_with(b"\n") {
            break;
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).ok()
}

/// The facts of `pid` from libproc.
#[cfg(target_os = "macos")]
fn facts(pid: u32) -> Option<Facts> {
    let facts = macos::facts(pid)?;
    Some(Facts {
        name: facts.name,
        parent: facts.parent,
        started: facts.started,
    })
}

/// Parse one `/proc/<pid>/stat` line: the name is between the first `(` and the last `)` (it
/// may itself hold spaces and parentheses); after it come state(0) ppid(1) ... and starttime,
/// field 22 overall, index 19.
#[cfg(any(test, not(target_os = "macos")))]
fn parse_stat(text: &str) -> Option<Facts> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_owned();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    Some(Facts {
        name,
        parent: rest.get(1).and_then(|field| field.parse().ok()),
        started: rest.get(19).and_then(|field| field.parse().ok()),
    })
}

/// The start time of a process, when it can be read: clock ticks since boot on Linux,
/// microseconds since the Unix epoch on macOS (there only for processes of the same user, as
/// the kernel answers for them alone unless we are root).
///
/// Stored next to a PID so a PID reused by another process is recognised; compare it only with
/// values taken on the same machine.
pub fn start_time(pid: u32) -> Option<u64> {
    facts(pid)?.started
}

/// The parent PID of a process, when it can be read.
pub fn parent_of(pid: u32) -> Option<u32> {
    facts(pid)?.parent
}

/// The short command name of a process (`comm`), when it can be read.
pub fn name_of(pid: u32) -> Option<String> {
    facts(pid).map(|facts| facts.name)
}

/// The command line a process was started with (`/proc/<pid>/cmdline`, at most 64 KiB), when the
/// platform shows it there; `None` elsewhere (macOS) or when it cannot be read.
pub fn arguments(pid: u32) -> Option<Vec<String>> {
    use std::io::Read as _;
    let file = std::fs::File::open(format!("/proc/{pid}/cmdline")).ok()?;
    let mut bytes = Vec::new();
    file.take(64 * 1024).read_to_end(&mut bytes).ok()?;
    let args: Vec<String> = bytes
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    (!args.is_empty()).then_some(args)
}

/// True when `pid` names a live process that is the same one that had `started` as start time.
///
/// Without a recorded start time only liveness is checked.
pub fn is_same_live_process(pid: u32, started: Option<u64>) -> bool {
    if !is_alive(pid) {
        return false;
    }
    match (started, start_time(pid)) {
        (Some(recorded), Some(now)) => recorded == now,
        _ => true,
    }
}

/// Run `command` with stdin and stderr closed and return its stdout, unless it fails to start,
/// exits unsuccessfully, or is still running at `deadline` (then it is killed).
pub fn output_within(
    command: &mut std::process::Command,
    deadline: std::time::Instant,
) -> Option<String> {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let mut out = String::new();
    child
        .stdout
        .take()?
        .take(64 * 1024)
        .read_to_string(&mut out)
        .ok()?;
    status.success().then_some(out)
}

/// Shell names skipped when looking for the owning Claude process.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh"];

/// The nearest ancestor of this process that is not a shell, else the parent PID.
pub fn nearest_non_shell_ancestor() -> u32 {
    nearest_non_shell_ancestor_started().0
}

/// [`nearest_non_shell_ancestor`] and its [`start_time`], from the one look at it.
pub fn nearest_non_shell_ancestor_started() -> (u32, Option<u64>) {
    let parent = std::os::unix::process::parent_id();
    let mut pid = parent;
    for _ in 0..16 {
        match facts(pid) {
            Some(facts) if SHELLS.contains(&facts.name.as_str()) => match facts.parent {
                Some(up) if up > 1 => pid = up,
                _ => return (parent, start_time(parent)),
            },
            Some(facts) => return (pid, facts.started),
            None => return (parent, start_time(parent)),
        }
    }
    (parent, start_time(parent))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ancestor_and_its_start_time_come_from_one_look() {
        let (pid, started) = nearest_non_shell_ancestor_started();
        assert_eq!(pid, nearest_non_shell_ancestor());
        assert_eq!(started, start_time(pid));
        assert!(started.is_some());
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_process_command_line_is_its_arguments() {
        let args = arguments(std::process::id()).unwrap();
        assert_eq!(
            args.first().map(String::as_str),
            std::env::args().next().as_deref()
        );
        assert_eq!(args.len(), std::env::args().count());
        assert_eq!(arguments(0), None);
    }

    #[test]
    fn own_process_is_alive_and_has_a_start_time() {
        let me = std::process::id();
        assert!(is_alive(me));
        assert!(start_time(me).is_some());
        assert!(is_same_live_process(me, start_time(me)));
        assert!(!is_same_live_process(me, start_time(me).map(|t| t + 1)));
    }

    #[test]
    fn impossible_pids_are_dead() {
        assert!(!is_alive(0));
        assert!(!is_alive(u32::MAX));
        assert!(!is_alive(4_000_000));
        assert_eq!(start_time(u32::MAX), None);
        assert_eq!(parent_of(u32::MAX), None);
        assert_eq!(name_of(u32::MAX), None);
    }

    #[test]
    fn own_parent_and_name_are_what_the_process_knows() {
        let me = std::process::id();
        assert_eq!(parent_of(me), Some(std::os::unix::process::parent_id()));
        let exe = std::env::current_exe().unwrap();
        let exe = exe.file_name().unwrap().to_string_lossy().into_owned();
        let name = name_of(me).unwrap();
        assert!(!name.is_empty() && name.len() <= 15, "{name:?}");
        assert!(
            exe.starts_with(&name),
            "{name:?} is not the start of {exe:?}"
        );
    }

    #[test]
    fn a_child_has_its_name_parent_and_a_later_start_until_it_is_reaped() {
        let me = std::process::id();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(is_alive(pid));
        assert_eq!(name_of(pid).as_deref(), Some("sleep"));
        assert_eq!(parent_of(pid), Some(me));
        let started = start_time(pid).unwrap();
        assert!(started >= start_time(me).unwrap());
        assert!(is_same_live_process(pid, Some(started)));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!is_alive(pid));
        assert!(!is_same_live_process(pid, Some(started)));
        assert_eq!(name_of(pid), None);
    }

    #[test]
    fn stat_lines_with_odd_names_parse() {
        let line = "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 \
                    987654 1000 100 18446744073709551615";
        let facts = parse_stat(line).unwrap();
        assert_eq!(facts.name, "a (b) c");
        assert_eq!(facts.parent, Some(17));
        assert_eq!(facts.started, Some(987_654));
        let short = parse_stat("7 (sh) S").unwrap();
        assert_eq!((short.parent, short.started), (None, None));
        assert_eq!(parse_stat("no parentheses"), None);
    }
}
