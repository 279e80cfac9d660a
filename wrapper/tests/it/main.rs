//! The wrapper's integration tests, in one binary so that the wrapper and
//! the harness are linked once: a module per area, each driving the real
//! binaries through the harness. The bridge model checker keeps its own
//! binary (`tests/interleavings/`): it runs without the libtest harness.

mod backpressure;
mod cli;
mod common;
mod daemon_faults;
mod degraded;
mod doctor;
mod endpoint_watch;
mod install;
mod lifecycle;
mod logging;
mod protocol;
mod race;
mod release;
mod security;
mod settings_doc;
mod surface;
mod tcp;
mod wake;
