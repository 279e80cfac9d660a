//! The dev kit's integration tests, in one binary: a module per area.

mod command;
mod process;
