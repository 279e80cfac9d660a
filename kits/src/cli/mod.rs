//! The `kits` command line: the benchmarks' and the end-to-end kit's
//! commands ([`tools`]) and the hosts kit's ([`hosts`]), each printing a
//! report and returning its verdict as the exit code.

pub mod hosts;
pub mod tools;
