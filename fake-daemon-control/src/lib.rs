//! The fake daemon's control language, with no runtime, so that the
//! daemon and the harness that drives it hold the same values:
//!
//! - [`Command`]: one stdin line, read ([`std::str::FromStr`]) by the
//!   daemon and written ([`std::fmt::Display`]) by the harness;
//! - [`Ack`]: its one-line answer on stdout, written by the daemon and read
//!   by the harness, with the counters ([`StatsSnapshot`]) and the JSON
//!   reports ([`reports`]);
//! - [`StartupOrder`]: how the daemon binds, listens and publishes its
//!   endpoint, at start and at each `UP`, and the [`StartupStep`]s it logs;
//! - [`TcpEndpointFiles`]: where a daemon on TCP publishes its port and
//!   token, beside the path it is given;
//! - [`spec::COMMANDS`]: every command described for people, from which
//!   `fake-daemon --help` and the table of `docs/fake-daemon.md` are made.
//!
//! A new fault is a variant of [`Command`] with its row in
//! [`spec::COMMANDS`] (this crate), its effect (the fake daemon's
//! `execute`), and its test.

mod ack;
mod command;
mod endpoint_files;
pub mod reports;
pub mod spec;
mod start_up;
mod stats;

pub use ack::{Ack, AckError, BOUND};
pub use command::{Command, CommandError, MAX_BYTES_ARGUMENT, MAX_DELAY_MS, MAX_GARBAGE_LINES};
pub use endpoint_files::{TcpEndpointFiles, with_suffix};
pub use start_up::{MAX_PAUSE_MS, START_UP_OPTION, StartupOrder, StartupOrderError, StartupStep};
pub use stats::{STATS_FORM, StatsError, StatsSnapshot};
