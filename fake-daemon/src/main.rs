//! `fake-daemon <socket-path>`: see `fake-daemon --help`.

use std::process::ExitCode;

use anyhow::Context as _;
use fake_daemon::cli::{self, Invocation};

fn main() -> ExitCode {
    match cli::parse_args(std::env::args_os().skip(1)) {
        Ok(Invocation::Help) => {
            print!("{}", cli::help_text());
            ExitCode::SUCCESS
        }
        Ok(Invocation::Version) => {
            println!("{}", cli::version_text());
            ExitCode::SUCCESS
        }
        Ok(Invocation::Run(config)) => match serve(config) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("fake-daemon: {err:#}");
                ExitCode::FAILURE
            }
        },
        Err(err) => {
            eprintln!("fake-daemon: {err}\nRun 'fake-daemon --help' for usage.");
            ExitCode::from(2)
        }
    }
}

/// Serves on a current-thread runtime: the daemon does almost no work per
/// request, so one thread avoids cross-thread wake-ups and leaves the other
/// cores to the clients being measured. (Its request/reply latency measured
/// the same as a blocking thread-per-connection echo server's.)
fn serve(config: fake_daemon::Config) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the Tokio runtime")?;
    runtime
        .block_on(fake_daemon::run(config))
        .context("fake daemon failed")
}
