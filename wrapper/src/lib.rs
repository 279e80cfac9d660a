//! `iai-mcp-wrapper`: the MCP stdio server of iai-mcp.
//!
//! MCP clients start it as a subprocess and speak newline-delimited
//! JSON-RPC on its stdin/stdout; it serves the handshake, discovery and the
//! tool list itself and forwards tool calls to the long-running iai-mcp
//! daemon over a Unix socket.
//!
//! Layout, following a request: [`codec`] frames lines with a size cap,
//! [`mcp`] applies the JSON-RPC and MCP rules, [`tools`] is the static
//! registry, [`bridge`] owns the daemon connection (its decisions in the
//! sans-IO [`bridge::Bridge`], its I/O in one task), [`lifecycle`] handles
//! heartbeat, wake-up and warm-up, and [`app`] wires it all together.

#![deny(clippy::print_stdout)]

pub mod app;
pub mod bridge;
pub mod check;
pub mod codec;
pub mod config;
pub mod lifecycle;
pub mod mcp;
pub mod stdio;
pub mod tools;
