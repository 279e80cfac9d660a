//! Exhaustive check of the bridge core: every ordering of bridge events
//! (calls arriving, connect attempts succeeding or failing, the connection
//! closing, or closed by the daemon before it wrote anything as it refuses
//! a token, responses arriving in any order, stale events from old
//! connections, timers firing) up to a fixed depth, with three concurrent
//! calls (read-only, write, read-only) and up to two connection drops.
//!
//! After every step: every call answered at most once; never two
//! connections or connect attempts; no write sent twice and no read more
//! than twice; stale events produce no action; while connected, every
//! unanswered call is in flight on that connection (nothing is left
//! waiting); no `daemon_unreachable` for a call made while a reconnect that
//! then succeeds is in flight; a refused connection never lengthens the
//! wait of a call that waited for it; each connection begins with one
//! status question, and the daemon's answer to it (before any call's
//! answer, or never: the daemon answers a connection's lines in order) is
//! handed on as such and answers no call. At every
//! leaf, time is run out with the daemon gone and every call must have
//! exactly one answer.
//!
//! A second search runs the same world with the endpoint watched: the
//! bridge is told its watch is armed, and the endpoint may appear (up to
//! twice) and the watch break (once) anywhere among the other events; its
//! daemon never answers the status question (the answer only proves a
//! connection, which the first search covers), to stay within its depth.
//! There, also: an appearance while backing off or awaiting the endpoint
//! brings an attempt within the spread, however recent the last one; an appearance never delays anything; without a watch
//! a bridge waiting to dial always has a timer.
//!
//! The fixed policy must pass everywhere; the pre-fix policy must break the
//! V3-05 invariant, which shows the checker can see the bug.
//!
//! Then long random event sequences ([`random`]) with more calls, more
//! drops and daemon garbage lines, under the same checks.
//!
//! Runs without the libtest harness so that the explored counts are always
//! printed. The random runs share this binary because they share the model:
//! in one crate, every part of the model is used.

mod model;
mod random;

use iai_mcp_wrapper::bridge::BridgeMode;
use model::{SCRIPT, Violation, World};

/// Events per explored ordering.
const DEPTH: usize = 12;

/// Events per explored ordering with the endpoint watched (its extra events
/// widen every level).
const WATCHED_DEPTH: usize = 10;

/// Appearances of the endpoint per ordering, with the endpoint watched.
const APPEARANCES: usize = 2;

struct Search {
    paths: u64,
    steps: u64,
    first_violation: Option<Violation>,
}

fn explore(world: &World, depth: usize, search: &mut Search) {
    let enabled = world.enabled();
    if depth == 0 || enabled.is_empty() {
        search.paths += 1;
        let mut end = world.clone();
        if let Err(v) = end.drain() {
            search.first_violation.get_or_insert(v);
        }
        return;
    }
    for step in enabled {
        let mut next = world.clone();
        search.steps += 1;
        match next.step(step) {
            Ok(()) => explore(&next, depth - 1, search),
            Err(v) => {
                search.paths += 1;
                search.first_violation.get_or_insert(v);
            }
        }
        if search.first_violation.is_some() {
            return;
        }
    }
}

fn run(mode: BridgeMode, depth: usize) -> Search {
    search_from(&World::new(mode, SCRIPT.len(), 2), depth)
}

fn search_from(world: &World, depth: usize) -> Search {
    let mut search = Search {
        paths: 0,
        steps: 0,
        first_violation: None,
    };
    explore(world, depth, &mut search);
    search
}

fn verdict(search: &Search) -> String {
    match &search.first_violation {
        None => "all invariants hold".to_owned(),
        Some(v) => format!("VIOLATION of \"{}\": {}", v.invariant, v.detail),
    }
}

/// Iterative deepening: the shortest ordering that breaks an invariant.
fn shortest_violation(mode: BridgeMode) -> (usize, Search) {
    for depth in 1..=DEPTH {
        let search = run(mode, depth);
        if search.first_violation.is_some() {
            return (depth, search);
        }
    }
    (DEPTH, run(mode, DEPTH))
}

fn main() {
    let checks = [
        exhaustive_fixed_policy(),
        exhaustive_prefix_policy(),
        random_fixed_policy(),
        random_prefix_policy(),
    ];
    let passed = checks.iter().filter(|&&passed| passed).count();
    let failed = checks.len() - passed;
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        std::process::exit(1);
    }
}

/// Every ordering up to [`DEPTH`] events under the fixed policy keeps every
/// invariant; prints the explored counts.
fn exhaustive_fixed_policy() -> bool {
    let fixed = run(BridgeMode::Fixed, DEPTH);
    println!(
        "interleavings: fixed policy: explored {} orderings ({} steps, depth {DEPTH}, {} calls, up to 2 drops): {}",
        fixed.paths,
        fixed.steps,
        SCRIPT.len(),
        verdict(&fixed)
    );
    let watched = search_from(
        &World::new(BridgeMode::Fixed, SCRIPT.len(), 2)
            .watched(APPEARANCES)
            .ignoring_status(),
        WATCHED_DEPTH,
    );
    println!(
        "interleavings: fixed policy, endpoint watched: explored {} orderings ({} steps, depth {WATCHED_DEPTH}, {} calls, up to 2 drops, {APPEARANCES} appearances, 1 watch loss): {}",
        watched.paths,
        watched.steps,
        SCRIPT.len(),
        verdict(&watched)
    );
    println!(
        "interleavings: {} orderings in all",
        fixed.paths + watched.paths
    );
    fixed.first_violation.is_none() && watched.first_violation.is_none()
}

/// The pre-fix policy breaks the V3-05 invariant (the checker can see the
/// bug); prints the shortest ordering's length.
fn exhaustive_prefix_policy() -> bool {
    let (depth, prefix) = shortest_violation(BridgeMode::Prefix);
    println!(
        "interleavings: pre-fix policy: {} (shortest ordering: {depth} events)",
        match &prefix.first_violation {
            Some(v) => format!("violates \"{}\": {}", v.invariant, v.detail),
            None => "NO VIOLATION FOUND".to_owned(),
        },
    );
    prefix
        .first_violation
        .as_ref()
        .is_some_and(|v| v.invariant.starts_with("no daemon_unreachable"))
}

/// [`random::fixed_policy_holds_on_long_random_runs`], reported.
fn random_fixed_policy() -> bool {
    let outcome = random::fixed_policy_holds_on_long_random_runs();
    println!(
        "interleavings: random runs: fixed policy: {} runs: {}",
        random::CASES,
        match &outcome {
            Ok(()) => "all invariants hold".to_owned(),
            Err(e) => format!("VIOLATION: {e}"),
        }
    );
    outcome.is_ok()
}

/// [`random::prefix_policy_is_caught_by_the_same_checks`], reported.
fn random_prefix_policy() -> bool {
    let outcome = random::prefix_policy_is_caught_by_the_same_checks();
    println!(
        "interleavings: random runs' checks: the V3-05 ordering {}",
        match &outcome {
            Ok(()) => "breaks the pre-fix policy only".to_owned(),
            Err(e) => format!("FAILED: {e}"),
        }
    );
    outcome.is_ok()
}
