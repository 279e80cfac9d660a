//! The heartbeat file that tells the daemon's lifecycle machinery this
//! wrapper is alive: written at boot, refreshed on an interval, removed on
//! graceful exit. Failures are logged and never touch MCP traffic.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use uuid::Uuid;

use super::now_iso8601;
use crate::files;
use crate::log_names as event;

/// How often the heartbeat file is refreshed by default (the daemon's
/// lifecycle machinery treats a file older than a few intervals as a wrapper
/// gone).
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(30);

/// Version of the heartbeat file's layout.
pub const SCHEMA_VERSION: u32 = 1;

/// One wrapper's heartbeat file.
#[derive(Debug, Clone)]
pub struct Heartbeat {
    path: PathBuf,
    pid: u32,
    uuid: Uuid,
    started_at: String,
}

impl Heartbeat {
    /// The heartbeat of process `pid` with boot session `uuid`, under
    /// `state_dir/wrappers/`.
    pub fn new(state_dir: &Path, pid: u32, uuid: Uuid) -> Self {
        Heartbeat {
            path: Self::path_for(state_dir, pid, uuid),
            pid,
            uuid,
            started_at: now_iso8601(),
        }
    }

    /// The directory holding every wrapper's heartbeat.
    pub fn dir(state_dir: &Path) -> PathBuf {
        state_dir.join("wrappers")
    }

    /// Where the heartbeat of `pid`/`uuid` lives.
    pub fn path_for(state_dir: &Path, pid: u32, uuid: Uuid) -> PathBuf {
        Self::dir(state_dir).join(format!("heartbeat-{pid}-{uuid}.json"))
    }

    /// Write (or refresh) the file now.
    pub fn write(&self) {
        let body = json!({
            "pid": self.pid,
            "uuid": self.uuid.to_string(),
            "started_at": self.started_at,
            "last_refresh": now_iso8601(),
            "wrapper_version": crate::mcp::protocol::SERVER_VERSION,
            "schema_version": SCHEMA_VERSION,
        });
        if let Err(e) = files::write_atomic(&self.path, body.to_string().as_bytes()) {
            tracing::warn!(
                event = event::HEARTBEAT_FAILED,
                path = %self.path.display(),
                error = %e,
                "heartbeat write failed"
            );
        }
    }

    /// Remove the file (graceful exit).
    pub fn remove(&self) {
        match std::fs::remove_file(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(
                    event = event::HEARTBEAT_FAILED,
                    path = %self.path.display(),
                    error = %e,
                    "heartbeat removal failed"
                );
            }
        }
    }

    /// Refresh the file every `interval`, forever (run it as a task and
    /// abort it at exit).
    pub async fn refresh_every(self, interval: Duration) {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            self.write();
        }
    }
}
