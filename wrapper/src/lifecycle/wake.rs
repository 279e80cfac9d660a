//! Asking a stopped daemon to start: `launchctl kickstart` on macOS, and a
//! `wake.signal` file that the daemon's supervisor watches everywhere else
//! (or when launchctl fails). The wrapper itself never spawns or signals a
//! daemon.

use std::path::{Path, PathBuf};

use serde_json::json;
use uuid::Uuid;

use super::{files, now_iso8601};
use crate::logging::event;

/// Path of the wake file under the state directory.
pub fn signal_path(state_dir: &Path) -> PathBuf {
    state_dir.join("wake.signal")
}

/// Write the wake file atomically.
pub fn write_signal(state_dir: &Path, pid: u32, uuid: Uuid) -> std::io::Result<PathBuf> {
    let path = signal_path(state_dir);
    let body = json!({
        "requested_at": now_iso8601(),
        "wrapper_pid": pid,
        "wrapper_uuid": uuid.to_string(),
    });
    files::write_atomic(&path, body.to_string().as_bytes())?;
    Ok(path)
}

/// Ask the daemon to start: launchctl first on macOS, the wake file
/// otherwise or when that fails. Errors are logged only.
pub async fn request_start(state_dir: &Path, pid: u32, uuid: Uuid) {
    if kickstart().await {
        return;
    }
    match write_signal(state_dir, pid, uuid) {
        Ok(path) => tracing::info!(
            event = event::WAKE_REQUESTED,
            how = "wake_signal",
            outcome = "written",
            path = %path.display(),
            "daemon unreachable; wake signal written"
        ),
        Err(e) => tracing::warn!(
            event = event::WAKE_REQUESTED,
            how = "wake_signal",
            outcome = "failed",
            error = %e,
            "daemon unreachable; wake signal could not be written"
        ),
    }
}

/// `/bin/launchctl kickstart -k gui/<uid>/com.iai-mcp.daemon`, argv only,
/// bounded by 5 s. Returns whether it succeeded.
#[cfg(target_os = "macos")]
async fn kickstart() -> bool {
    use std::time::Duration;
    let target = format!("gui/{}/com.iai-mcp.daemon", nix::unistd::getuid());
    let child = tokio::process::Command::new("/bin/launchctl")
        .args(["kickstart", "-k", &target])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .status();
    match tokio::time::timeout(Duration::from_secs(5), child).await {
        Ok(Ok(status)) if status.success() => {
            tracing::info!(
                event = event::WAKE_REQUESTED,
                how = "launchctl",
                outcome = "sent",
                launchd_target = %target,
                "daemon unreachable; launchctl kickstart sent"
            );
            true
        }
        Ok(Ok(status)) => {
            tracing::warn!(event = event::WAKE_REQUESTED, how = "launchctl", outcome = "failed", %status, "launchctl kickstart failed");
            false
        }
        Ok(Err(e)) => {
            tracing::warn!(event = event::WAKE_REQUESTED, how = "launchctl", outcome = "failed", error = %e, "launchctl could not run");
            false
        }
        Err(_) => {
            tracing::warn!(
                event = event::WAKE_REQUESTED,
                how = "launchctl",
                outcome = "failed",
                "launchctl kickstart timed out"
            );
            false
        }
    }
}

/// Not macOS: there is no launchd to ask.
#[cfg(not(target_os = "macos"))]
async fn kickstart() -> bool {
    false
}
