//! Process facts the hooks need: liveness, start time, parent and name (Linux `/proc`).

use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::Pid;

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

/// The fields of `/proc/<pid>/stat` after the command name.
fn stat_fields(pid: u32) -> Option<(String, Vec<String>)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_owned();
    let rest = text.get(close + 1..)?;
    Some((name, rest.split_whitespace().map(str::to_owned).collect()))
}

/// The start time of a process in clock ticks since boot, when it can be read.
///
/// Stored next to a PID so a PID reused by another process is recognised.
pub fn start_time(pid: u32) -> Option<u64> {
    // After the name: state(0) ppid(1) ... starttime is field 22 overall, index 19 here.
    stat_fields(pid)?.1.get(19)?.parse().ok()
}

/// The parent PID of a process, when it can be read.
pub fn parent_of(pid: u32) -> Option<u32> {
    stat_fields(pid)?.1.get(1)?.parse().ok()
}

/// The short command name of a process (`comm`), when it can be read.
pub fn name_of(pid: u32) -> Option<String> {
    stat_fields(pid).map(|(name, _)| name)
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
    let parent = std::os::unix::process::parent_id();
    let mut pid = parent;
    for _ in 0..16 {
        match name_of(pid) {
            Some(name) if SHELLS.contains(&name.as_str()) => match parent_of(pid) {
                Some(up) if up > 1 => pid = up,
                _ => return parent,
            },
            Some(_) => return pid,
            None => return parent,
        }
    }
    parent
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
