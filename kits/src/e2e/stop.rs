//! Stopping the real daemon the way its platform does, and telling a
//! daemon's process from another that reuses its pid.
//!
//! On Unix the daemon leads a process group of its own, and a stop is a
//! signal to that group: SIGTERM as a service manager sends it (the
//! release's own `daemon stop` sends it to the daemon's pid), or SIGKILL
//! for a crash. Windows has no signal a background Python process can be
//! sent; iai-mcp's own `daemon stop` ends the daemon's whole tree with
//! `taskkill /F /T` there, and so does the kit, for either kind of stop.

use std::process::Command;
use std::time::Duration;

use devkit::command::run_within;
use devkit::process::GroupGuard;
use harness::footprint::has_ended;

/// How a daemon is stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// As a service manager stops it: SIGTERM on Unix, which the daemon
    /// handles by shutting down.
    Graceful,
    /// A crash: SIGKILL on Unix; nothing of the daemon runs after it.
    Crash,
}

/// Stops the daemon our child leads, and what it started, without
/// waiting.
pub fn stop_group(daemon: &mut GroupGuard, how: Stop) {
    #[cfg(unix)]
    daemon.signal_group(signal(how));
    #[cfg(not(unix))]
    {
        let _ = how;
        daemon.kill_group();
    }
}

/// Stops process `pid`, which is not our child (a daemon `iai-mcp doctor
/// --auto` started), and on Windows what it started, without waiting.
pub fn stop_process(pid: u32, how: Stop) {
    #[cfg(unix)]
    {
        if let Ok(pid) = i32::try_from(pid) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal(how));
        }
    }
    #[cfg(not(unix))]
    {
        let _ = how;
        devkit::process::kill_tree(pid);
    }
}

#[cfg(unix)]
fn signal(how: Stop) -> devkit::process::Signal {
    match how {
        Stop::Graceful => devkit::process::Signal::SIGTERM,
        Stop::Crash => devkit::process::Signal::SIGKILL,
    }
}

/// Whether `pid` is a live iai-mcp daemon (told by its command line, so
/// that a reused pid is never stopped).
pub fn is_daemon(pid: u32) -> bool {
    command_line(pid).is_some_and(|line| line.contains("iai_mcp.daemon")) && !has_ended(pid)
}

/// How long asking the system for a command line may take.
const LISTER_LIMIT: Duration = Duration::from_secs(15);

/// The command line of `pid`: from `/proc` on Linux, from `ps` on other
/// Unix systems, from the process's CIM record (through PowerShell) on
/// Windows.
fn command_line(pid: u32) -> Option<String> {
    if cfg!(target_os = "linux") {
        let bytes = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        return Some(String::from_utf8_lossy(&bytes).into_owned());
    }
    let mut lister = if cfg!(windows) {
        let mut command = Command::new("powershell");
        command
            .args(["-NoProfile", "-NonInteractive", "-Command"])
            .arg(format!(
                "(Get-CimInstance Win32_Process -Filter 'ProcessId={pid}').CommandLine"
            ));
        command
    } else {
        let mut command = Command::new("ps");
        command.args(["-o", "command=", "-p"]).arg(pid.to_string());
        command
    };
    let text = run_within(&mut lister, "asking for a command line", LISTER_LIMIT).ok()?;
    let text = text.trim().to_owned();
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_a_command_line_and_is_no_daemon() {
        let me = std::process::id();
        let line = command_line(me).expect("this process's command line");
        assert!(!line.is_empty());
        assert!(!is_daemon(me), "{line}");
    }
}
