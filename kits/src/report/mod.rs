//! How the kits' results read for people: the bench's Markdown, and the
//! files it is written to.
//!
//! This tree only reads what the runs found ([`crate::bench`]); nothing
//! that runs imports it, so a change of presentation never touches a
//! measurement.

pub mod bench;
