//! The MCP side of the wrapper: reading a client line, the JSON-RPC and MCP
//! rules, the replies, and the stdio loop.

pub mod dispatch;
pub mod message;
pub mod protocol;
pub mod reply;
pub mod server;
