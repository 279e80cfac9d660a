//! Wiring: build the bridge, the lifecycle tasks and the MCP loop from a
//! [`Config`], run until the client goes away, and clean up.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use uuid::Uuid;

use crate::bridge::{self, Bridge, DriverConfig};
use crate::call::Caller;
use crate::config::Config;
use crate::degraded::Degraded;
use crate::lifecycle::wake::{self, WakeSettings};
use crate::lifecycle::{doctor, heartbeat::Heartbeat, upgrade, warmup};
use crate::log_names as event;
use crate::logging;
use crate::mcp::server::{self, ServerConfig, Serving, StopReason};
use crate::stdio;
use crate::surface::{self, Finder};

/// Contract: a connect attempt gives up after 5 s.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Contract: the bridge's first connect attempt gives up after 1 s; when it
/// fails, the wake-up probes the daemon as 3.3.0 does before waking it.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// Serve MCP on stdin/stdout until EOF or SIGTERM/SIGINT (Windows: Ctrl-C,
/// Ctrl-Break, console close), then exit
/// cleanly: calls in flight answered or failed, heartbeat removed, daemon
/// connection closed.
pub async fn run(config: Config) -> std::io::Result<StopReason> {
    let pid = std::process::id();
    let session = Uuid::new_v4();
    // Signal handlers first: nothing below may be left behind by a signal.
    let stop = termination()?;

    let finder = Finder::new(
        config.cli.surface.clone(),
        &config.cli.installation,
        &config.cli.doctor.admin_cli,
        &config.daemon.state_dir,
    );
    let served = finder.load();
    surface::log(&served);
    let (surface_tx, surface_rx) = watch::channel(Arc::new(served));

    let heartbeat = Heartbeat::new(&config.daemon.state_dir, pid, session);
    heartbeat.write();
    let refresher = tokio::spawn(
        heartbeat
            .clone()
            .refresh_every(config.session.heartbeat_interval),
    );

    let core = Bridge::new(
        config.bridge.policy,
        config.daemon.endpoint.to_string(),
        u64::from(pid) ^ session.as_u64_pair().0,
    );
    let (bridge, driver) = bridge::spawn(
        core,
        DriverConfig {
            endpoint: config.daemon.endpoint.clone(),
            connect_timeout: CONNECT_TIMEOUT,
            probe_timeout: PROBE_TIMEOUT,
            max_line_bytes: config.session.max_line_bytes,
            watch: config.bridge.watch,
            reporter: logging::bridge::report,
        },
    );
    let waker = tokio::spawn(wake::wake_when_down(
        WakeSettings::new(config.cli.store.clone()),
        config.daemon.endpoint.clone(),
        bridge.status(),
        config.daemon.state_dir.clone(),
        pid,
        session,
    ));
    let doctor_config = config.cli.doctor.clone().located(&config.cli.installation);
    let healer = doctor_config.enabled.then(|| {
        tokio::spawn(doctor::heal_when_down(
            doctor_config.clone(),
            config.daemon.state_dir.clone(),
            config.daemon.endpoint.clone(),
            bridge.status(),
        ))
    });
    let upgrades = tokio::spawn(upgrade::follow(
        finder,
        surface_tx,
        bridge.answers(),
        bridge.status(),
    ));
    let trigger = warmup::spawn(
        bridge.clone(),
        config.daemon.endpoint.clone(),
        session,
        &doctor_config,
        warmup::DoctorPlaces {
            state_dir: config.daemon.state_dir.clone(),
            store: config.cli.store.clone(),
        },
    );

    // The loop runs as a task of its own rather than as the runtime's root
    // future: a task woken by another task is only queued, while waking
    // the root future sends the scheduler through the reactor first (one
    // more `epoll_wait` for every response).
    let serving = tokio::spawn(server::serve(
        stdio::input(),
        stdio::output(),
        Serving {
            surface: surface_rx.clone(),
            caller: Caller::new(
                bridge.clone(),
                Degraded::new(config.cli.degraded.clone(), &config.cli.installation),
            ),
            warmup: trigger,
        },
        ServerConfig {
            max_line_bytes: config.session.max_line_bytes,
            shutdown_grace: config.session.shutdown_grace,
        },
        stop,
    ));
    let reason = match serving.await {
        Ok(reason) => reason,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // Only a runtime shutting down cancels it, and this awaits it.
        Err(_) => StopReason::Signal,
    };
    tracing::info!(
        event = event::SHUTTING_DOWN,
        reason = reason.as_str(),
        "shutting down"
    );

    refresher.abort();
    waker.abort();
    upgrades.abort();
    if let Some(healer) = healer {
        healer.abort();
    }
    heartbeat.remove();
    bridge.shutdown().await;
    let _ = driver.await;
    Ok(reason)
}

/// Completes on SIGTERM or SIGINT.
#[cfg(unix)]
fn termination() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}

/// Completes on Ctrl-C, Ctrl-Break, or the console window being closed
/// (Windows gives the process a few seconds after that one, enough for
/// the exit steps).
#[cfg(windows)]
fn termination() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close};
    let mut interrupt = ctrl_c()?;
    let mut brk = ctrl_break()?;
    let mut close = ctrl_close()?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = brk.recv() => {}
            _ = close.recv() => {}
        }
    })
}
