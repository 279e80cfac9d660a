//! Where the daemon listens and how to reach it: a Unix socket, or loopback
//! TCP with a token.
//!
//! The daemon of iai-mcp 3.3.0 listens on a Unix socket where the platform
//! has them and on loopback TCP elsewhere; on TCP every connection must
//! first send the token the daemon wrote at start-up. [`Endpoint::select`]
//! applies 3.3.0's selection rules (plus the port and token files the
//! daemon writes beside a custom socket path), and [`Endpoint::connect`]
//! makes one connection ready for JSON-RPC, token sent. Every part of the
//! wrapper that dials the daemon (bridge, warm-up, release question,
//! `--check`) goes through here, so they all reach the same place the same
//! way; those that need one message and its answer use [`one_shot`].

mod endpoint;
pub mod one_shot;
pub mod stream;

pub use endpoint::{
    ConnectError, DEFAULT_TCP_HOST, Endpoint, EndpointError, EndpointSettings, PORT_FILE, Port,
    SOCKET_FILE, TOKEN_FILE,
};
pub use one_shot::{OneShot, OneShotError};
pub use stream::{DaemonReader, DaemonStream, DaemonWriter};
