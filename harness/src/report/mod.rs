//! How the results read for people: the sweep's table, summaries and
//! chart, the scorecard's table and page, and the files each is written
//! to.
//!
//! This tree only reads what the runs found ([`crate::scenario`],
//! [`crate::score`]); nothing that runs imports it, so a change of
//! presentation never touches a scenario.

pub mod score;
pub mod sweep;
