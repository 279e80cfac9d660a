//! Why settings cannot be used.

use std::path::PathBuf;

use thiserror::Error;

use crate::bridge::PolicyError;
use crate::transport::EndpointError;

/// A setting that cannot be used.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// A default path needs the user's profile directory (`$HOME`, or
    /// `%USERPROFILE%` on Windows) and it is not known.
    #[error("{variable} is not set: pass --{flag} (or its environment variable)")]
    NoHome {
        /// The variable that names the profile directory.
        variable: &'static str,
        /// The flag that makes it unnecessary.
        flag: &'static str,
    },
    /// No daemon endpoint can be chosen.
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    /// The socket path is longer than a Unix socket address allows.
    #[error("socket path {path:?} is {len} bytes; Unix socket paths are limited to {max} bytes")]
    SocketPathTooLong {
        /// The path given.
        path: PathBuf,
        /// Its length in bytes.
        len: usize,
        /// The limit on this system.
        max: usize,
    },
    /// A timing is out of range.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// A size or interval that must be positive is zero.
    #[error("--{0} must be greater than zero")]
    Zero(&'static str),
}
