//! fuzz-checks' integration tests, in one binary so that the wrapper and
//! the checks are linked once: every kept input through its target's
//! check ([`kept_inputs`]), and arbitrary lines through the MCP stream's
//! check by structure ([`protocol_props`]).

mod kept_inputs;
mod protocol_props;
