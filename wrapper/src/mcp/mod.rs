//! The MCP side of the wrapper: protocol rules, per-line dispatch and the
//! stdio loop.

pub mod call_line;
pub mod dispatch;
pub mod protocol;
pub mod result_line;
pub mod server;
