//! `iai-mcp-wrapper`: the MCP stdio server of iai-mcp.
//!
//! MCP clients start it as a subprocess and speak newline-delimited
//! JSON-RPC on its stdin/stdout; it serves the handshake, discovery and the
//! tool list itself and forwards tool calls to the long-running iai-mcp
//! daemon over a Unix socket.
//!
//! Layout, following a request: [`codec`] frames lines with a size cap,
//! [`mcp`] reads each line once and applies the JSON-RPC and MCP rules
//! (with the object readers of [`json`]), [`tools`] is the tool
//! surface (one JSON table), [`call`] runs one tool call, [`bridge`] owns
//! the daemon connection (its decisions in the sans-IO [`bridge::Bridge`],
//! its I/O in one task) over a [`transport`] (Unix socket or TCP with a
//! token), [`degraded`] answers memory tools through the CLI (run by
//! [`process`]) while the daemon is down, [`lifecycle`] handles heartbeat,
//! wake-up, warm-up and the doctor, and [`app`] wires it all together.
//! [`config`] turns flags and environment into settings, [`platform`] names
//! the operating system whose conventions apply, [`programs`] finds
//! the iai-mcp CLIs on disk, [`real_path`] gives a file's real location as
//! people write it, and [`logging`] writes the log for people or,
//! as JSON events, for programs. Beside serving, [`install`] points MCP
//! hosts' iai-mcp entries at this binary and back, and [`check`] reports on
//! a setup.

#![deny(clippy::print_stdout)]

mod app;
pub mod bridge;
pub mod call;
mod check;
pub mod codec;
pub mod config;
pub mod degraded;
mod dir_watch;
mod endpoint_watch;
pub mod entry;
mod files;
pub mod install;
mod json;
pub mod lifecycle;
mod log_names;
mod logging;
pub mod mcp;
pub mod platform;
mod process;
pub mod programs;
mod real_path;
mod stdio;
pub mod surface;
mod tools;
pub mod transport;
