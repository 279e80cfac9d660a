//! The kits' integration tests, in one binary so that the kits are linked
//! once: a module per area (a tiny bench run, the hosts kit's machinery).
//! Unix only, as the kits are.
#![cfg(unix)]

mod bench_smoke;
mod hosts_kit;
