//! Scripted scenarios that drive a wrapper and the fake daemon together and
//! report what happened as data.
//!
//! Each scenario returns a report whose outcome is a measurement (the
//! wrapper under test may well fail it); a `HarnessError` means the scenario
//! itself could not be carried out.

pub mod down_up;
pub mod hang;
pub mod hostile;
mod live;
pub mod outcome;
pub mod property;
pub mod race;
pub mod soak;
pub mod storm;
pub mod sweep;

pub use crate::format::format_ms;
pub use crate::table::{Align, table_lines};
