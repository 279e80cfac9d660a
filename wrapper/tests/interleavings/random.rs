//! Long random event sequences against the bridge core (proptest), checking
//! the same invariants as the exhaustive search after every step, with
//! more calls, more drops and daemon garbage lines mixed in.

use iai_mcp_wrapper::bridge::BridgeMode;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use crate::model::{Step, World};

/// Random runs of the fixed policy.
pub const CASES: u32 = 2048;

/// Run the choices against a fresh world: each choice picks one of the
/// events enabled at that point.
fn run(mode: BridgeMode, calls: usize, drops: usize, choices: &[u16]) -> Result<World, String> {
    let mut world = World::new(mode, calls, drops);
    for &choice in choices {
        let enabled = world.enabled_with_garbage();
        if enabled.is_empty() {
            break;
        }
        let step = enabled[usize::from(choice) % enabled.len()];
        world
            .step(step)
            .map_err(|v| format!("{}: {}", v.invariant, v.detail))?;
    }
    world
        .drain()
        .map_err(|v| format!("{}: {}", v.invariant, v.detail))?;
    Ok(world)
}

/// The fixed policy holds on [`CASES`] random runs of up to 300 events,
/// with up to 23 calls and 7 drops; the error names the smallest failing
/// run proptest found.
pub fn fixed_policy_holds_on_long_random_runs() -> Result<(), String> {
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        // Failing inputs are kept beside this file, as `proptest!` keeps them.
        source_file: Some(file!()),
        ..Config::default()
    });
    let runs = (
        1usize..24,
        0usize..8,
        proptest::collection::vec(any::<u16>(), 0..300),
    );
    runner
        .run(&runs, |(calls, drops, choices)| {
            run(BridgeMode::Fixed, calls, drops, &choices)
                .map(drop)
                .map_err(TestCaseError::fail)
        })
        .map_err(|e| e.to_string())
}

/// The V3-05 ordering breaks the pre-fix policy under the checks the
/// random runs make, and a close variant of it passes under the fixed one.
pub fn prefix_policy_is_caught_by_the_same_checks() -> Result<(), String> {
    // The V3-05 ordering: connected, drop, a call lands in the window, the
    // reconnect timer fires and the reconnect succeeds.
    use Step::*;
    let mut world = World::new(BridgeMode::Prefix, 1, 1);
    let mut outcome = Ok(());
    for step in [ConnectOk, Close, Call, Timer, ConnectOk] {
        outcome = world.step(step);
        if outcome.is_err() {
            break;
        }
    }
    let Err(violation) = outcome else {
        return Err("pre-fix must violate the V3-05 invariant, and broke none".to_owned());
    };
    if !violation.invariant.starts_with("no daemon_unreachable") {
        return Err(format!(
            "pre-fix must violate the V3-05 invariant, and broke \"{}\": {}",
            violation.invariant, violation.detail
        ));
    }

    // The same ordering under the fixed policy is fine (the connection
    // first answers a call, so its loss reads as a daemon restarting).
    let mut world = World::new(BridgeMode::Fixed, 2, 1);
    for step in [
        ConnectOk,
        Call,
        Respond(0),
        Close,
        Call,
        Timer,
        ConnectOk,
        Respond(0),
    ] {
        world
            .step(step)
            .map_err(|v| format!("fixed policy: {}: {}", v.invariant, v.detail))?;
    }
    world
        .drain()
        .map_err(|v| format!("every call answered once: {}: {}", v.invariant, v.detail))
}
