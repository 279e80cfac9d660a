//! Wiring: build the bridge, the lifecycle tasks and the MCP loop from a
//! [`Config`], run until the client goes away, and clean up.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use uuid::Uuid;

use crate::bridge::{self, Bridge, BridgeHandle, DriverConfig};
use crate::call::Caller;
use crate::config::Config;
use crate::degraded::Degraded;
use crate::lifecycle::doctor::{self, DoctorConfig};
use crate::lifecycle::wake::{self, WakeReport, WakeSettings};
use crate::lifecycle::{heartbeat::Heartbeat, upgrade, warmup};
use crate::log_names as event;
use crate::logging;
use crate::mcp::server::{self, ServerConfig, Serving, StopReason};
use crate::stdio;
use crate::surface::{self, Finder, Surface};

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
    let ids = Ids {
        pid: std::process::id(),
        session: Uuid::new_v4(),
    };
    // Signal handlers first: nothing below may be left behind by a signal.
    let stop = termination()?;

    let finder = config.surface_finder();
    let served = finder.load();
    surface::log(&served);
    let (surface_tx, surface_rx) = watch::channel(Arc::new(served));

    let heartbeat = Heartbeat::new(&config.daemon.state_dir, ids.pid, ids.session);
    heartbeat.write();
    let (bridge, driver) = start_bridge(&config, ids);
    let doctor = config.cli.doctor.clone().located(&config.cli.installation);
    let tasks = Background::start(
        &config, ids, &doctor, &heartbeat, &bridge, finder, surface_tx,
    );
    let trigger = warmup::spawn(
        bridge.clone(),
        config.daemon.endpoint.clone(),
        ids.session,
        &doctor,
        warmup::DoctorPlaces {
            state_dir: config.daemon.state_dir.clone(),
            store: config.cli.store.clone(),
        },
    );
    let serving = Serving {
        surface: surface_rx,
        caller: Caller::new(
            bridge.clone(),
            Degraded::new(config.cli.degraded.clone(), &config.cli.installation),
        ),
        warmup: trigger,
    };
    let reason = serve(&config, serving, stop).await;
    tracing::info!(
        event = event::SHUTTING_DOWN,
        reason = reason.as_str(),
        "shutting down"
    );

    tasks.abort();
    heartbeat.remove();
    bridge.shutdown().await;
    let _ = driver.await;
    Ok(reason)
}

/// Who this wrapper is: its process and its session.
#[derive(Debug, Clone, Copy)]
struct Ids {
    pid: u32,
    session: Uuid,
}

/// The bridge to the daemon and the task that drives it, reporting
/// through the log.
fn start_bridge(config: &Config, ids: Ids) -> (BridgeHandle, JoinHandle<()>) {
    let core = Bridge::new(
        config.bridge.policy,
        config.daemon.endpoint.to_string(),
        u64::from(ids.pid) ^ ids.session.as_u64_pair().0,
    );
    bridge::spawn(
        core,
        DriverConfig {
            endpoint: config.daemon.endpoint.clone(),
            connect_timeout: CONNECT_TIMEOUT,
            probe_timeout: PROBE_TIMEOUT,
            max_line_bytes: config.session.max_line_bytes,
            watch: config.bridge.watch,
            reporter: logging::bridge::report,
        },
    )
}

/// The lifecycle tasks that run beside the session until it ends: the
/// heartbeat's refresh, the wake-up, the doctor's heal step (when it is
/// on) and the installed release followed across an upgrade.
struct Background {
    refresher: JoinHandle<()>,
    waker: JoinHandle<Option<WakeReport>>,
    healer: Option<JoinHandle<()>>,
    upgrades: JoinHandle<()>,
}

impl Background {
    /// Starts every lifecycle task.
    fn start(
        config: &Config,
        ids: Ids,
        doctor: &DoctorConfig,
        heartbeat: &Heartbeat,
        bridge: &BridgeHandle,
        finder: Finder,
        surface: watch::Sender<Arc<Surface>>,
    ) -> Background {
        let refresher = tokio::spawn(
            heartbeat
                .clone()
                .refresh_every(config.session.heartbeat_interval),
        );
        let waker = tokio::spawn(wake::wake_when_down(
            WakeSettings::new(config.cli.store.clone()),
            config.daemon.endpoint.clone(),
            bridge.status(),
            config.daemon.state_dir.clone(),
            ids.pid,
            ids.session,
        ));
        let healer = doctor.enabled.then(|| {
            tokio::spawn(doctor::heal_when_down(
                doctor.clone(),
                config.daemon.state_dir.clone(),
                config.daemon.endpoint.clone(),
                bridge.status(),
            ))
        });
        let upgrades = tokio::spawn(upgrade::follow(
            finder,
            surface,
            bridge.answers(),
            bridge.status(),
        ));
        Background {
            refresher,
            waker,
            healer,
            upgrades,
        }
    }

    /// Stops every task.
    fn abort(self) {
        self.refresher.abort();
        self.waker.abort();
        self.upgrades.abort();
        if let Some(healer) = self.healer {
            healer.abort();
        }
    }
}

/// Runs the MCP loop on stdin and stdout until the client goes away or
/// `stop` completes, and says why it ended.
async fn serve(
    config: &Config,
    serving: Serving<warmup::Initialized>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> StopReason {
    // The loop runs as a task of its own rather than as the runtime's root
    // future: a task woken by another task is only queued, while waking
    // the root future sends the scheduler through the reactor first (one
    // more `epoll_wait` for every response).
    let serving = tokio::spawn(server::serve(
        stdio::input(),
        stdio::output(),
        serving,
        ServerConfig {
            max_line_bytes: config.session.max_line_bytes,
            shutdown_grace: config.session.shutdown_grace,
        },
        stop,
    ));
    match serving.await {
        Ok(reason) => reason,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // Only a runtime shutting down cancels it, and this awaits it.
        Err(_) => StopReason::Signal,
    }
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
