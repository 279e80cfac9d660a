//! `broken-wrapper NAME -- WRAPPER [ARG]...`: a wrapper broken on purpose
//! in front of a real one, for the hosts kit's own checks
//! ([`kits::hosts::broken`]).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    kits::hosts::broken::main(&args)
}
