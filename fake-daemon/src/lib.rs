//! A stand-in for the iai-mcp daemon, used by tests, the race kit,
//! benchmarks and soak runs (docs/CONTRACT.md sections 4 and 13).
//!
//! [`FakeDaemon`] binds a Unix socket and answers every newline-delimited
//! JSON-RPC request with `{"jsonrpc":"2.0","id":<id>,"result":{"ok":true,
//! "method":<method>,"fake_daemon":true}}`. Its [`Command`]s inject the
//! faults a real daemon connection can show: dropped connections, a stopped
//! or hung daemon, slow, sliced, cut, oversized, duplicated and stray
//! replies, and garbage lines. [`run`] is the whole `fake-daemon` binary
//! (commands on stdin, acknowledgements on stdout). The command language
//! itself (commands, acknowledgements, counters, start-up orders) is the
//! `fake-daemon-control` crate's, which the harness uses too.
//!
//! Being the floor of the latency and throughput benchmarks, it is built to
//! be fast: one task per connection, big reads, every reply produced by one
//! read written with one `write`, ids and methods echoed from the raw
//! request text without building JSON values.

pub mod cli;
mod connection;
mod endpoint;
pub mod fake_cli;
mod faults;
mod journal;
pub mod listener;
mod protocol;
pub mod server;
mod shared;
mod stats;
pub mod stdio;
mod sync;

pub use fake_daemon_control::{Ack, Command, CommandError, StartupOrder, StatsSnapshot};
pub use journal::DEFAULT_JOURNAL_BYTES;
pub use listener::{BindError, MAX_SOCKET_PATH_BYTES, SocketPathError};
pub use protocol::STRAY_ID;
pub use server::{Config, DEFAULT_MAX_LINE_BYTES, FakeDaemon, Outcome};
pub use stdio::{RunError, run};
