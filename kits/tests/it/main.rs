//! The kits' integration tests, in one binary so that the kits are linked
//! once: a module per area (a tiny bench run, the hosts kit's machinery).
//! Linux only: the bench reads /proc, and the hosts kit runs its commands
//! under the subreaper (prctl); the kits themselves compile on every Unix.
#![cfg(target_os = "linux")]

mod bench_smoke;
mod hosts_kit;
