//! The binary's behaviour around a [`FakeDaemon`]: `BOUND` and the command
//! acknowledgements on stdout, commands from stdin, and SIGTERM/SIGINT
//! (Ctrl-C and Ctrl-Break on Windows).
//!
//! Stdin is read by a plain thread, because a blocking read cannot be
//! cancelled and the daemon must be able to exit while one is in progress.
//! End of stdin stops command reading only; the daemon serves on until
//! `QUIT` or a signal.

use std::future::Future;
use std::io::{BufRead, Write};

use fake_daemon_control::{Ack, BOUND, Command};
use thiserror::Error;
use tokio::sync::mpsc;

use crate::listener::BindError;
use crate::server::{Config, FakeDaemon, Outcome};

/// Why [`run`] could not serve.
#[derive(Debug, Error)]
pub enum RunError {
    /// The socket could not be bound.
    #[error(transparent)]
    Bind(#[from] BindError),
    /// A signal handler could not be installed.
    #[error("cannot handle {signal}: {source}")]
    Signal {
        /// The signal's name.
        signal: &'static str,
        /// The cause.
        source: std::io::Error,
    },
}

/// Runs the daemon as the `fake-daemon` binary does: comes up in its
/// start-up order, prints `BOUND`, executes stdin commands and prints their
/// acknowledgements, and returns after `QUIT`, SIGTERM or SIGINT with the
/// listener and every connection closed and the socket file removed (a
/// signal during the start-up stops it there, as cleanly).
pub async fn run(config: Config) -> Result<(), RunError> {
    // Handlers first, so a signal sent as soon as BOUND appears is handled.
    let stop = stop_signals()?;
    tokio::pin!(stop);

    let mut daemon = tokio::select! {
        () = &mut stop => return Ok(()),
        daemon = FakeDaemon::bind(config) => daemon?,
    };
    print_line(BOUND);
    let mut commands = Some(read_stdin_lines());
    loop {
        let line = tokio::select! {
            () = &mut stop => break,
            line = next_line(&mut commands) => line,
        };
        let Some(line) = line else {
            // End of stdin: keep serving until QUIT or a signal.
            commands = None;
            continue;
        };
        let outcome = match line.parse::<Command>() {
            Ok(command) => tokio::select! {
                () = &mut stop => break,
                outcome = daemon.execute(command) => outcome,
            },
            Err(err) => Outcome::Ack(Ack::Refused(err.to_string())),
        };
        match outcome {
            Outcome::Ack(ack) => print_line(&ack.to_string()),
            Outcome::Quit => return Ok(()),
        }
    }
    daemon.shutdown().await;
    Ok(())
}

/// Installs the handlers now; the future completes at SIGTERM or SIGINT.
#[cfg(unix)]
fn stop_signals() -> Result<impl Future<Output = ()>, RunError> {
    use tokio::signal::unix::{SignalKind, signal};
    let install = |kind: SignalKind, name: &'static str| {
        signal(kind).map_err(|source| RunError::Signal {
            signal: name,
            source,
        })
    };
    let mut terminate = install(SignalKind::terminate(), "SIGTERM")?;
    let mut interrupt = install(SignalKind::interrupt(), "SIGINT")?;
    Ok(async move {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
    })
}

/// Installs the handlers now; the future completes at Ctrl-C or
/// Ctrl-Break, Windows' console signals (it has no SIGTERM to catch).
#[cfg(windows)]
fn stop_signals() -> Result<impl Future<Output = ()>, RunError> {
    use tokio::signal::windows::{ctrl_break, ctrl_c};
    let mut interrupt = ctrl_c().map_err(|source| RunError::Signal {
        signal: "Ctrl-C",
        source,
    })?;
    let mut brk = ctrl_break().map_err(|source| RunError::Signal {
        signal: "Ctrl-Break",
        source,
    })?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = brk.recv() => {}
        }
    })
}

/// The next stdin line, `None` at end of stdin, or never once stdin ended.
async fn next_line(commands: &mut Option<mpsc::Receiver<String>>) -> Option<String> {
    match commands {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

/// Starts the thread that forwards stdin lines; the channel closes at end
/// of stdin (or on a read error).
fn read_stdin_lines() -> mpsc::Receiver<String> {
    let (sender, receiver) = mpsc::channel(16);
    let spawned = std::thread::Builder::new()
        .name("stdin".to_owned())
        .spawn(move || {
            let stdin = std::io::stdin();
            let mut stdin = stdin.lock();
            let mut line = Vec::new();
            loop {
                line.clear();
                match stdin.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let text = String::from_utf8_lossy(&line).into_owned();
                        if sender.blocking_send(text).is_err() {
                            break;
                        }
                    }
                }
            }
        });
    if let Err(err) = spawned {
        // Without a reader the daemon still serves; commands are just off.
        eprintln!("fake-daemon: cannot read commands from stdin: {err}");
    }
    receiver
}

/// Prints one line on stdout and flushes it. Errors are ignored: a reader
/// that went away must not stop the daemon.
fn print_line(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(line.as_bytes());
    let _ = stdout.write_all(b"\n");
    let _ = stdout.flush();
}
