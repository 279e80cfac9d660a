//! Every kept input through its target's check, on stable Rust: the seeds
//! in `fuzz/seeds/<target>/` and the inputs that once found a bug, in
//! `fuzz/regressions/<target>/` (`cargo xtask fuzz` puts each new crash
//! there). A fix that regresses fails here, with the file's name.

use std::path::{Path, PathBuf};

use fuzz_checks::TARGETS;
use fuzz_checks::host_config::{self, Reached};

fn kept(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz")
        .join(kind)
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

fn run_all(kind: &str) -> usize {
    let mut ran = 0;
    for target in TARGETS {
        for file in kept(kind, target.name) {
            let bytes = std::fs::read(&file).expect("readable");
            let outcome = std::panic::catch_unwind(|| (target.check)(&bytes));
            assert!(
                outcome.is_ok(),
                "{} fails on {}",
                target.name,
                file.display()
            );
            ran += 1;
        }
    }
    ran
}

#[test]
fn every_seed_passes_its_check() {
    for target in TARGETS {
        let seeds = kept("seeds", target.name).len();
        assert!(seeds >= 3, "{} has {seeds} seeds", target.name);
    }
    run_all("seeds");
}

/// A configuration target's check, saying how far an input got.
type Reach = fn(&[u8]) -> Reached;

/// The configuration seeds are files with iai-mcp entries that install
/// rewrites: each gets as far as a rewrite, and every target has seeds that
/// go through the whole round trip, so the deepest checks do run.
#[test]
fn every_config_seed_is_rewritten_and_each_format_round_trips() {
    let reach: [(&str, Reach); 3] = [
        ("config_json", host_config::reach_json),
        ("config_jsonc", host_config::reach_jsonc),
        ("config_toml", host_config::reach_toml),
    ];
    for (target, reach) in reach {
        let mut round_trips = 0;
        for file in kept("seeds", target) {
            let reached = reach(&std::fs::read(&file).expect("readable"));
            assert!(
                reached >= Reached::Rewritten,
                "{}: {reached:?}",
                file.display()
            );
            round_trips += usize::from(reached == Reached::RoundTrip);
        }
        assert!(round_trips >= 2, "{target}: {round_trips} seeds round-trip");
    }
}

#[test]
fn every_input_that_found_a_bug_passes_now() {
    run_all("regressions");
}
