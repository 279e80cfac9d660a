//! Every kept input through its target's check, on stable Rust: the seeds
//! in `fuzz/seeds/<target>/` and the inputs that once found a bug, in
//! `fuzz/regressions/<target>/` (`cargo xtask fuzz` puts each new crash
//! there). A fix that regresses fails here, with the file's name.

use std::path::{Path, PathBuf};

use fuzz_checks::TARGETS;

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
    let ran = run_all("seeds");
    assert!(ran >= TARGETS.len(), "each target has seeds ({ran} in all)");
}

#[test]
fn every_input_that_found_a_bug_passes_now() {
    run_all("regressions");
}
