//! The daemon side of the wrapper: one connection, owned by one task, whose
//! decisions live in a sans-IO state machine.

pub mod core;
pub mod driver;
pub mod error;
pub mod policy;
pub mod report;
pub mod wire;

pub use self::core::{
    Access, Action, Bridge, CallId, ConnId, ConnectFailure, Event, Failure, LinkStatus, Request,
    Watch,
};
pub use driver::{BridgeHandle, DriverConfig, StatusAnswer, WatchSettings, spawn};
pub use error::{BridgeError, DAEMON_UNREACHABLE_CODE};
pub use policy::{Backoff, BridgeMode, Policy, PolicyError, Timings};
pub use wire::{DaemonResult, DaemonStatus, StatusError};
