//! What the `iai-mcp-wrapper` binary does: parse the command line, then
//! serve MCP on stdin/stdout, print the `--check` report, or edit MCP hosts'
//! configuration files. The binary itself only calls [`run`].

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::{Args, Command, Config, Environment, Setting, settings_in_effect};
use crate::install::{self, Action, Request, hosts::Places};
use crate::lifecycle::release;
use crate::platform::Platform;
use crate::transport::Endpoint;
use crate::{app, check, logging, real_path};
use clap::{CommandFactory, FromArgMatches};
use tracing_subscriber::EnvFilter;

/// Runs the binary: its command line and environment are the process's.
pub fn run() -> ExitCode {
    let matches = Args::command().get_matches();
    let mut args = Args::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let platform = Platform::current();
    let home = platform.profile_dir(|name| std::env::var_os(name));
    let env = Environment {
        home: home.clone(),
        wrapper_dir: this_binary()
            .ok()
            .and_then(|exe| exe.parent().map(PathBuf::from)),
        real_wrapper_dir: std::env::current_exe()
            .and_then(|exe| real_path::canonicalize(&exe))
            .ok()
            .and_then(|exe| exe.parent().map(PathBuf::from)),
        platform,
    };
    if let Some(command) = args.command.take() {
        // `status` also says which release the daemon is, found where the
        // wrapper would look for it (the settings' environment variables).
        let endpoint = matches!(command, Command::Status { .. }).then(|| {
            args.resolve(&env)
                .map(|config| Served::of(&config))
                .map_err(|e| e.to_string())
        });
        return match edit_hosts(command, home, endpoint) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::FAILURE,
            Err(e) => {
                eprintln!("iai-mcp-wrapper: {e}");
                ExitCode::from(2)
            }
        };
    }
    let config = match args.resolve(&env) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("iai-mcp-wrapper: {e}");
            return ExitCode::from(2);
        }
    };
    let filter = match EnvFilter::try_new(&config.log.filter) {
        Ok(filter) => filter,
        Err(e) => {
            eprintln!(
                "iai-mcp-wrapper: invalid log filter {:?}: {e}",
                config.log.filter
            );
            return ExitCode::from(2);
        }
    };
    logging::init(config.log.format, filter);
    match serve_or_check(config, settings_in_effect(&matches)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("iai-mcp-wrapper: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Why the binary could not do what it was asked (it exits non-zero with
/// this message).
#[derive(Debug, thiserror::Error)]
enum RunError {
    /// The user's profile directory is unknown.
    #[error("{variable} is not set: it is where MCP hosts keep their configuration")]
    NoProfile {
        /// The variable that names it.
        variable: &'static str,
    },
    /// This binary's own path could not be found.
    #[error("finding this binary's path: {0}")]
    ThisBinary(std::io::Error),
    /// The async runtime could not start.
    #[error("starting the async runtime: {0}")]
    Runtime(std::io::Error),
    /// Serving, the report, or editing the hosts' files failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The single-threaded runtime the binary runs on: the wrapper relays
/// small messages, and one thread avoids cross-thread wake-ups on that
/// path.
fn runtime() -> Result<tokio::runtime::Runtime, RunError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(RunError::Runtime)
}

/// `install`, `uninstall` or `status`; whether all that was asked was done.
/// For `status`, `endpoint` is where the daemon is asked its release (or
/// why no endpoint could be chosen).
fn edit_hosts(
    command: Command,
    home: Option<PathBuf>,
    endpoint: Option<Result<Served, String>>,
) -> Result<bool, RunError> {
    let home = home.ok_or(RunError::NoProfile {
        variable: Platform::current().home_variable(),
    })?;
    let exe = this_binary()?;
    let (action, hosts, dry_run) = match command {
        Command::Install(c) => (Action::Install, c.hosts, c.dry_run),
        Command::Uninstall(c) => (Action::Uninstall, c.hosts, c.dry_run),
        Command::Status { hosts } => (Action::Status, hosts, false),
    };
    let request = Request {
        action,
        hosts,
        dry_run,
        exe,
    };
    let runtime = runtime()?;
    let places = Places::from_env(&home);
    let mut out = std::io::stdout().lock();
    runtime.block_on(async {
        let summary = install::execute(&request, &places, &mut out).await?;
        if let Some(endpoint) = &endpoint {
            let endpoint = endpoint.as_ref().map_err(String::as_str);
            daemon_release(endpoint, &mut out).await?;
        }
        Ok(summary.done)
    })
}

/// Where the daemon is and which release's tools are served, for
/// `status`.
struct Served {
    endpoint: Endpoint,
    version: String,
}

impl Served {
    /// As the serving wrapper would find them with `config`.
    fn of(config: &Config) -> Served {
        let surface = config.surface_finder().load();
        Served {
            endpoint: config.daemon.endpoint.clone(),
            version: surface.version().to_owned(),
        }
    }
}

/// For `status`: one line with the daemon's release beside the one whose
/// tools are served, asked of the daemon (best effort, within
/// [`release::STATUS_BUDGET`]); `Err` holds why no endpoint could be
/// chosen. Whether the entries run this binary does not depend on it.
async fn daemon_release(
    served: Result<&Served, &str>,
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    let text = match served {
        Ok(served) => {
            let asked = release::query(&served.endpoint, release::STATUS_BUDGET).await;
            release::summarize(&asked, &served.version).text
        }
        Err(why) => format!("unknown, no daemon endpoint: {why}"),
    };
    writeln!(out, "{:<15} {text}", "daemon release")
}

/// This binary's absolute path as it was invoked (a symbolic link such as
/// a package manager's stays a link, so host entries survive upgrades),
/// or the resolved path when the invocation names it no better.
fn this_binary() -> Result<PathBuf, RunError> {
    let real = std::env::current_exe()
        .and_then(|exe| real_path::canonicalize(&exe))
        .map_err(RunError::ThisBinary)?;
    let invoked = std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(|argv0| {
            if argv0.components().count() > 1 {
                std::path::absolute(&argv0).ok()
            } else {
                let dirs = std::env::var_os("PATH")?;
                std::env::split_paths(&dirs)
                    .map(|dir| dir.join(&argv0))
                    .find(|p| p.is_file())
                    .and_then(|p| std::path::absolute(p).ok())
            }
        });
    Ok(invoked
        .filter(|p| real_path::canonicalize(p).is_ok_and(|c| c == real))
        .unwrap_or(real))
}

/// Serves, or prints the `--check` report (`settings`: every setting in
/// effect, for it).
fn serve_or_check(config: Config, settings: Vec<Setting>) -> Result<ExitCode, RunError> {
    let runtime = runtime()?;
    if config.check {
        let ok = runtime.block_on(async {
            let mut out = std::io::stdout().lock();
            check::report(&config, &settings, &mut out).await
        })?;
        return Ok(if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    let outcome = runtime.block_on(app::run(config));
    // The stdin reader may still be parked in a blocking read (after a
    // signal the client has not closed stdin); do not wait for it.
    runtime.shutdown_background();
    outcome?;
    Ok(ExitCode::SUCCESS)
}
