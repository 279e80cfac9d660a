//! `broken-wrapper NAME -- WRAPPER [ARG]...`: a wrapper broken on purpose
//! in front of a real one, for the hosts kit's own checks
//! ([`kits::hosts::broken`]).

use std::process::ExitCode;

#[cfg(unix)]
fn main() -> ExitCode {
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    kits::hosts::broken::main(&args)
}

/// Where the kits cannot run (kits/src/lib.rs says why): says so.
#[cfg(not(unix))]
fn main() -> ExitCode {
    eprintln!("broken-wrapper: the hosts kit runs on Unix only");
    ExitCode::from(2)
}
