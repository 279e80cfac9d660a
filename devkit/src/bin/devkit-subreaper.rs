//! `devkit-subreaper PROGRAM [ARG]...`: runs the program as a child
//! subreaper's child, and when it exits, or when standard input closes,
//! kills and reaps every process below, then exits with the program's
//! code ([`devkit::reap`]).

use std::process::ExitCode;

#[cfg(unix)]
fn main() -> ExitCode {
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    devkit::reap::serve(&args)
}

/// Windows has no child subreaper: says so, as for a command that could
/// not start.
#[cfg(not(unix))]
fn main() -> ExitCode {
    eprintln!("devkit-subreaper: child subreapers are Linux's; not on this system");
    ExitCode::from(125)
}
