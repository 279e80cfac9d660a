//! The MCP side of the wrapper: reading a client line, the JSON-RPC and MCP
//! rules, the replies, and the stdio loop.

pub mod dispatch;
pub(crate) mod message;
pub(crate) mod protocol;
pub(crate) mod reply;
pub mod server;
