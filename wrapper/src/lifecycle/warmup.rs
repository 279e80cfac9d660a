//! The warm-up that lets the daemon prepare for a session: a `session_open`
//! control message on a separate short-lived connection right after the
//! first successful connect, then one `session_start_payload` call once the
//! MCP session is initialized; and, once initialized, the `iai-mcp doctor`
//! probe. All best effort, none on the path of an MCP answer.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;
use tokio::sync::watch;
use uuid::Uuid;

use super::doctor::{self, DoctorConfig};
use super::now_iso8601;
use crate::bridge::{Access, BridgeHandle, Request};
use crate::mcp::server::WarmupTrigger;
use crate::transport::{Endpoint, OneShot, OneShotError};

/// How long the `session_open` side connection may take in all.
pub const SESSION_OPEN_BUDGET: Duration = Duration::from_secs(2);

/// Signals, from the MCP side, that the session is initialized.
#[derive(Debug, Clone)]
pub struct Initialized(watch::Sender<bool>);

impl WarmupTrigger for Initialized {
    fn initialized(&self) {
        self.0
            .send_if_modified(|done| !std::mem::replace(done, true));
    }
}

/// Where the doctor's verdicts are kept, and the daemon's store whose
/// state file says which run of the daemon a verdict is about.
#[derive(Debug, Clone)]
pub struct DoctorPlaces {
    /// The wrapper's state directory.
    pub state_dir: PathBuf,
    /// The daemon's store.
    pub store: Option<PathBuf>,
}

/// Start the warm-up tasks (and the doctor probe, when `doctor` is on);
/// returns the trigger the MCP loop calls.
pub fn spawn(
    bridge: BridgeHandle,
    endpoint: Endpoint,
    session: Uuid,
    doctor: &DoctorConfig,
    places: DoctorPlaces,
) -> Initialized {
    let (tx, rx) = watch::channel(false);
    if doctor.enabled {
        let doctor = doctor.clone();
        let mut initialized = rx.clone();
        tokio::spawn(async move {
            if initialized.wait_for(|done| *done).await.is_ok() {
                doctor::probe_for_session(&doctor, &places.state_dir, places.store.as_deref())
                    .await;
            }
        });
    }
    tokio::spawn(run(bridge, endpoint, session, rx));
    Initialized(tx)
}

async fn run(
    bridge: BridgeHandle,
    endpoint: Endpoint,
    session: Uuid,
    mut initialized: watch::Receiver<bool>,
) {
    let mut status = bridge.status();
    if status.wait_for(|s| s.connects > 0).await.is_err() {
        return;
    }
    match session_open(&endpoint, session).await {
        Ok(()) => tracing::debug!("session_open sent"),
        Err(e) => tracing::debug!(error = %e, "session_open failed"),
    }
    if initialized.wait_for(|done| *done).await.is_err() {
        return;
    }
    let outcome = bridge
        .call(Request {
            method: "session_start_payload".into(),
            params: json!({ "session_id": session.to_string() }),
            access: Access::Write,
            fallback: false,
        })
        .await;
    if let Err(e) = outcome {
        tracing::debug!(error = %e, "session_start_payload failed (ignored)");
    }
}

/// Tells the daemon a session opens, and waits until it has read the
/// message (it closes the connection then), so that
/// `session_start_payload` on the main connection cannot overtake it.
async fn session_open(endpoint: &Endpoint, session: Uuid) -> Result<(), OneShotError> {
    let mut line = json!({
        "type": "session_open",
        "session_id": session.to_string(),
        "ts": now_iso8601(),
    })
    .to_string();
    line.push('\n');
    OneShot::new(endpoint, SESSION_OPEN_BUDGET)
        .tell(line.as_bytes())
        .await
}
