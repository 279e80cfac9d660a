//! The kits' integration tests, in one binary so that the kits are linked
//! once: a module per area.

// The end-to-end kit's way to the daemon and its holding proxy, over each
// transport this system has, against the fake daemon: every system.
mod e2e_transport;

// A tiny bench run and the hosts kit's machinery: Linux only, as the bench
// reads /proc and the hosts kit runs its commands under the subreaper
// (prctl); both compile on every Unix.
#[cfg(target_os = "linux")]
mod bench_smoke;
#[cfg(target_os = "linux")]
mod hosts_kit;
