//! Long random event sequences against the bridge core (proptest), checking
//! the same invariants as the exhaustive checker after every step, with
//! more calls, more drops and daemon garbage lines mixed in.

mod model;

use iai_mcp_wrapper::bridge::BridgeMode;
use model::World;
use proptest::prelude::*;

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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn fixed_policy_holds_on_long_random_runs(
        calls in 1usize..24,
        drops in 0usize..8,
        choices in proptest::collection::vec(any::<u16>(), 0..300),
    ) {
        if let Err(e) = run(BridgeMode::Fixed, calls, drops, &choices) {
            prop_assert!(false, "{}", e);
        }
    }
}

#[test]
fn prefix_policy_is_caught_by_the_same_checks() {
    // The V3-05 ordering: connected, drop, a call lands in the window, the
    // reconnect timer fires and the reconnect succeeds.
    use model::Step::*;
    let mut world = World::new(BridgeMode::Prefix, 1, 1);
    let mut outcome = Ok(());
    for step in [ConnectOk, Close, Call, Timer, ConnectOk] {
        outcome = world.step(step);
        if outcome.is_err() {
            break;
        }
    }
    let violation = outcome.expect_err("pre-fix must violate the V3-05 invariant");
    assert!(violation.invariant.starts_with("no daemon_unreachable"));

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
        world.step(step).expect("fixed policy holds");
    }
    world.drain().expect("every call answered once");
}
