//! The bridge core's unit tests: every rule, one ordering of events at a time.

use super::*;
use crate::bridge::policy::Policy;
use crate::bridge::policy::{Backoff, BridgeMode, Timings};
use crate::bridge::wire::DaemonResult;
use serde_json::{Value, json};

const DELAY: Duration = Duration::from_millis(1000);

fn bridge(mode: BridgeMode) -> (Bridge, Instant) {
    let timings = Timings {
        reconnect_delay: DELAY,
        connect_wait: Duration::from_secs(10),
        fallback_wait: Duration::from_secs(1),
        call_timeout: Duration::from_secs(60),
        backoff: Backoff::new(Duration::from_millis(50), Duration::from_secs(2)).expect("valid"),
    };
    let policy = Policy::new(mode, timings).expect("valid");
    let now = Instant::now();
    let mut b = Bridge::new(policy, "/tmp/t.sock", 1);
    b.start();
    (b, now)
}

/// The actions since the last drain, without log events and without the
/// status question each connection begins with (its own tests see it).
fn drain(b: &mut Bridge) -> Vec<Action> {
    std::iter::from_fn(|| b.poll_action())
        .filter(|a| !matches!(a, Action::Report(_)))
        .filter(|a| !matches!(a, Action::Send(_, line) if line == wire::STATUS_REQUEST))
        .collect()
}

/// Every action since the last drain, log events included.
fn drain_all(b: &mut Bridge) -> Vec<Action> {
    std::iter::from_fn(|| b.poll_action()).collect()
}

fn req(method: &str, read: bool) -> Request {
    Request {
        method: method.into(),
        params: json!({}),
        access: if read { Access::Read } else { Access::Write },
        fallback: false,
    }
}

/// A failure as the bridge reports it for a call without a fallback.
fn failed(error: BridgeError, sent: bool) -> Result<DaemonResult, Failure> {
    Err(Failure {
        error,
        sent,
        fallback: false,
    })
}

fn wire_id(line: &[u8]) -> u64 {
    let v: Value = serde_json::from_slice(line).expect("json");
    v["id"].as_u64().expect("id")
}

fn response(wire: u64) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": wire, "result": {"ok": true}})
        .to_string()
        .into_bytes()
}

/// Connected on ConnId(1) with one call answered.
fn connected(mode: BridgeMode) -> (Bridge, Instant) {
    let (mut b, now) = bridge(mode);
    assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(1))]);
    b.connected(ConnId(1), now);
    b.call(CallId(1), req("topology", true), now);
    let Some(Action::Send(_, line)) = drain(&mut b).pop() else {
        panic!("expected a send");
    };
    b.line(ConnId(1), &response(wire_id(&line)));
    assert!(matches!(
        drain(&mut b)[..],
        [Action::Reply(CallId(1), Ok(_))]
    ));
    (b, now)
}

#[test]
fn fixed_call_during_reconnect_waits_for_it() {
    let (mut b, now) = connected(BridgeMode::Fixed);
    b.closed(ConnId(1), now);
    assert!(drain(&mut b).is_empty(), "reconnect waits for the delay");
    let t = now + Duration::from_millis(50);
    b.call(CallId(2), req("topology", true), t);
    assert!(drain(&mut b).is_empty(), "the racing call waits");
    assert_eq!(b.poll_timeout(), Some(now + DELAY));
    b.handle_timeout(now + DELAY);
    assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(2))]);
    b.connected(ConnId(2), now + DELAY);
    let actions = drain(&mut b);
    let [Action::Send(ConnId(2), line)] = &actions[..] else {
        panic!("expected the waiting call to be sent: {actions:?}");
    };
    b.line(ConnId(2), &response(wire_id(line)));
    assert!(matches!(
        drain(&mut b)[..],
        [Action::Reply(CallId(2), Ok(_))]
    ));
}

#[test]
fn prefix_call_during_reconnect_fails_at_once() {
    let (mut b, now) = connected(BridgeMode::Prefix);
    b.closed(ConnId(1), now);
    b.call(CallId(2), req("topology", true), now);
    assert_eq!(
        drain(&mut b),
        vec![Action::Reply(
            CallId(2),
            failed(BridgeError::NotConnected, false)
        )]
    );
    b.handle_timeout(now + DELAY);
    assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(2))]);
    b.connected(ConnId(2), now + DELAY);
    // A second drop exhausts the pre-fix bridge's one reconnect.
    b.closed(ConnId(2), now + DELAY);
    b.handle_timeout(now + DELAY * 10);
    assert!(drain(&mut b).is_empty(), "no further reconnect");
    b.call(CallId(3), req("topology", true), now + DELAY * 10);
    assert_eq!(
        drain(&mut b),
        vec![Action::Reply(
            CallId(3),
            failed(BridgeError::NotConnected, false)
        )]
    );
}

#[test]
fn fixed_survives_any_number_of_drops() {
    let (mut b, mut now) = connected(BridgeMode::Fixed);
    for round in 2..10u64 {
        b.closed(ConnId(round - 1), now);
        now += DELAY;
        b.handle_timeout(now);
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(round))]);
        b.connected(ConnId(round), now);
        b.call(CallId(round), req("memory_capture", false), now);
        let actions = drain(&mut b);
        let [Action::Send(c, line)] = &actions[..] else {
            panic!("expected one send: {actions:?}");
        };
        assert_eq!(*c, ConnId(round));
        b.line(*c, &response(wire_id(line)));
        assert!(matches!(drain(&mut b)[..], [Action::Reply(_, Ok(_))]));
    }
}

#[test]
fn reads_in_flight_are_replayed_and_writes_fail() {
    let (mut b, now) = connected(BridgeMode::Fixed);
    b.call(CallId(2), req("topology", true), now);
    b.call(CallId(3), req("memory_capture", false), now);
    let sends = drain(&mut b);
    assert_eq!(sends.len(), 2);
    b.closed(ConnId(1), now);
    assert_eq!(
        drain(&mut b),
        vec![Action::Reply(
            CallId(3),
            failed(BridgeError::SocketClosed, true)
        )]
    );
    b.handle_timeout(now + DELAY);
    drain(&mut b);
    b.connected(ConnId(2), now + DELAY);
    let actions = drain(&mut b);
    let [Action::Send(ConnId(2), line)] = &actions[..] else {
        panic!("expected the read to be re-sent: {actions:?}");
    };
    let Action::Send(_, first) = &sends[0] else {
        panic!("send");
    };
    assert_ne!(wire_id(line), wire_id(first), "replay uses a fresh id");
    // Lost again within its deadline: re-sent again.
    b.closed(ConnId(2), now + DELAY);
    assert!(
        drain(&mut b).is_empty(),
        "the read waits for the next connection"
    );
    b.handle_timeout(now + DELAY + DELAY);
    drain(&mut b);
    b.connected(ConnId(3), now + DELAY + DELAY);
    assert!(matches!(drain(&mut b)[..], [Action::Send(ConnId(3), _)]));
}

#[test]
fn a_read_is_replayed_only_while_its_one_deadline_allows() {
    let (mut b, now) = connected(BridgeMode::Fixed);
    b.call(CallId(2), req("topology", true), now);
    drain(&mut b);
    // The call's deadline: connect wait (10 s) plus call timeout (60 s).
    let expires = now + Duration::from_secs(70);
    // Lost after its deadline's end: no replay, whatever the count.
    b.closed(ConnId(1), expires);
    assert_eq!(
        drain(&mut b),
        vec![Action::Reply(
            CallId(2),
            failed(BridgeError::SocketClosed, true)
        )]
    );
    // A replayed read's wait and response deadline never pass it.
    let (mut b, now) = connected(BridgeMode::Fixed);
    b.call(CallId(2), req("topology", true), now);
    drain(&mut b);
    let lost = now + Duration::from_secs(65);
    b.closed(ConnId(1), lost);
    assert!(drain(&mut b).is_empty(), "replayed");
    b.handle_timeout(lost + DELAY);
    drain(&mut b);
    b.connected(ConnId(2), lost + DELAY);
    drain(&mut b);
    assert_eq!(b.poll_timeout(), Some(now + Duration::from_secs(70)));
}

#[test]
fn four_garbage_lines_fail_the_oldest_call_and_valid_lines_reset_the_streak() {
    let (mut b, now) = connected(BridgeMode::Fixed);
    b.call(CallId(2), req("topology", true), now);
    b.call(CallId(3), req("topology", true), now);
    drain(&mut b);
    for _ in 0..3 {
        b.line(ConnId(1), b"noise");
    }
    b.line(ConnId(1), b"{\"jsonrpc\":\"2.0\",\"id\":999,\"result\":1}");
    for _ in 0..3 {
        b.line(ConnId(1), b"noise");
    }
    assert!(drain(&mut b).is_empty(), "the streak was reset");
    b.line(ConnId(1), b"noise");
    assert_eq!(
        drain(&mut b),
        vec![Action::Reply(
            CallId(2),
            failed(BridgeError::ParseStreak(4), true)
        )]
    );
}

#[test]
fn a_daemon_that_accepts_and_drops_is_redialled_with_backoff() {
    let timings = Timings {
        backoff: Backoff::new(Duration::from_millis(100), Duration::from_secs(2)).expect("valid"),
        ..Timings::default()
    };
    let mut b = Bridge::new(
        Policy::new(BridgeMode::Fixed, timings).expect("valid"),
        "/tmp/t.sock",
        3,
    );
    let mut now = Instant::now();
    b.start();
    let mut gaps = Vec::new();
    for round in 1..=6u64 {
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(round))]);
        b.connected(ConnId(round), now);
        b.closed(ConnId(round), now);
        assert!(drain(&mut b).is_empty(), "no immediate redial");
        let next = b.poll_timeout().expect("a retry");
        gaps.push(next - now);
        now = next;
        b.handle_timeout(now);
    }
    assert!(gaps.windows(2).all(|w| w[1] >= w[0] / 2), "{gaps:?}");
    assert!(gaps[5] >= Duration::from_millis(1000), "{gaps:?}");
    // A connection that answered is healthy: losing it redials at once.
    b.connected(ConnId(7), now);
    b.call(CallId(1), req("topology", true), now);
    let Some(Action::Send(_, line)) = drain(&mut b).pop() else {
        panic!("send");
    };
    b.line(ConnId(7), &response(wire_id(&line)));
    drain(&mut b);
    b.closed(ConnId(7), now);
    assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(8))]);
}

/// The reason a TCP daemon's silent close is given.
const REFUSED: &str = "token refused, /h/.iai-mcp/.daemon.token";

#[test]
fn a_refused_token_is_a_failed_attempt_and_the_call_fails_at_its_wait_naming_it() {
    let (mut b, now) = bridge(BridgeMode::Fixed);
    drain(&mut b);
    b.call(CallId(1), req("topology", true), now);
    b.call(CallId(2), req("memory_capture", false), now);
    let mut t = now;
    let mut conn = 1;
    let mut attempts = 0;
    let reply = loop {
        b.connected(ConnId(conn), t);
        let sent = drain(&mut b);
        assert!(
            sent.iter()
                .all(|a| matches!(a, Action::Send(c, _) if *c == ConnId(conn))),
            "{sent:?}"
        );
        b.refused(ConnId(conn), REFUSED.into(), t);
        attempts += 1;
        let mut actions = drain(&mut b);
        if conn == 1 {
            // The write went out and is never sent again.
            assert_eq!(
                actions.remove(0),
                Action::Reply(
                    CallId(2),
                    failed(
                        BridgeError::Refused {
                            reason: REFUSED.into()
                        },
                        true
                    )
                )
            );
        }
        assert!(actions.is_empty(), "no redial at once: {actions:?}");
        assert_eq!(b.status().failed_attempts, attempts);
        let next = b.poll_timeout().expect("a retry or the deadline");
        assert!(next > t, "backoff applies");
        t = next;
        b.handle_timeout(t);
        match drain(&mut b).pop() {
            Some(Action::Connect(c)) => conn = c.0,
            Some(Action::Reply(CallId(1), reply)) => break reply,
            other => panic!("{other:?}"),
        }
    };
    // The read waited its one connect wait, not one per refusal.
    assert_eq!(t, now + Duration::from_secs(10));
    let Err(Failure { error, sent, .. }) = reply else {
        panic!("a failure");
    };
    assert!(sent);
    let text = error.to_string();
    assert!(text.starts_with("daemon_unreachable: "), "{text}");
    assert!(text.contains(REFUSED), "{text}");
    assert!((10..=100).contains(&attempts), "{attempts} attempts");
}

#[test]
fn a_silent_close_after_the_connection_proved_itself_is_only_a_loss() {
    // Answered once: a later silent close is a daemon going away.
    let (mut b, now) = connected(BridgeMode::Fixed);
    b.refused(ConnId(1), REFUSED.into(), now);
    assert_eq!(b.status().failed_attempts, 0);
    assert!(b.poll_timeout().is_some(), "the reconnect delay");
    // Up for a while without a word: the same.
    let (mut b, now) = bridge(BridgeMode::Fixed);
    drain(&mut b);
    b.connected(ConnId(1), now);
    b.refused(ConnId(1), REFUSED.into(), now + PROVEN_AFTER);
    assert_eq!(b.status().failed_attempts, 0);
    // An old connection's close does nothing.
    b.refused(ConnId(1), REFUSED.into(), now + PROVEN_AFTER);
    assert!(drain(&mut b).is_empty());
}

#[test]
fn garbage_on_an_idle_connection_does_not_count_toward_the_streak() {
    let (mut b, now) = connected(BridgeMode::Fixed);
    for _ in 0..10 {
        b.line(ConnId(1), b"stray print");
    }
    b.call(CallId(2), req("topology", true), now);
    drain(&mut b);
    b.line(ConnId(1), b"stray print");
    assert!(drain(&mut b).is_empty(), "one line is not a streak");
}

#[test]
fn a_hung_daemon_fails_the_call_at_its_deadline_and_its_connection_is_replaced() {
    let (mut b, now) = connected(BridgeMode::Fixed);
    b.call(CallId(2), req("topology", true), now);
    drain(&mut b);
    // A read sent later is still in flight when the first call expires.
    let later = now + Duration::from_secs(1);
    b.call(CallId(3), req("topology", true), later);
    drain(&mut b);
    let deadline = b.poll_timeout().expect("a deadline");
    assert_eq!(deadline, now + Duration::from_secs(60));
    b.handle_timeout(deadline);
    assert_eq!(
        drain(&mut b),
        vec![
            Action::Reply(
                CallId(2),
                failed(BridgeError::Timeout(Duration::from_secs(60)), true)
            ),
            Action::Close(ConnId(1)),
        ]
    );
    assert_eq!(b.connection(), None, "the silent connection is gone");
    // The other read is re-sent on the next connection.
    b.handle_timeout(deadline + DELAY);
    assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(2))]);
    b.connected(ConnId(2), deadline + DELAY);
    let actions = drain(&mut b);
    assert!(
        matches!(&actions[..], [Action::Send(ConnId(2), _)]),
        "{actions:?}"
    );
}

#[test]
fn a_slow_daemon_that_answers_other_calls_keeps_its_connection() {
    let (mut b, now) = connected(BridgeMode::Fixed);
    b.call(CallId(2), req("memory_consolidate", false), now);
    drain(&mut b);
    b.call(CallId(3), req("topology", true), now);
    let Some(Action::Send(_, line)) = drain(&mut b).pop() else {
        panic!("send");
    };
    b.line(ConnId(1), &response(wire_id(&line)));
    drain(&mut b);
    b.handle_timeout(now + Duration::from_secs(60));
    assert_eq!(
        drain(&mut b),
        vec![Action::Reply(
            CallId(2),
            failed(BridgeError::Timeout(Duration::from_secs(60)), true)
        )]
    );
    assert_eq!(
        b.connection(),
        Some(ConnId(1)),
        "alive: the connection is kept"
    );
}

#[test]
fn a_down_daemon_is_dialled_with_growing_backoff_and_calls_fail_at_the_wait_deadline() {
    let (mut b, now) = bridge(BridgeMode::Fixed);
    drain(&mut b);
    b.call(CallId(1), req("topology", true), now);
    let mut t = now;
    let mut gaps = Vec::new();
    let mut conn = 1;
    loop {
        b.connect_failed(ConnId(conn), ConnectFailure::Other("refused".into()), t);
        let next = b.poll_timeout().expect("retry or deadline");
        gaps.push(next - t);
        t = next;
        b.handle_timeout(t);
        let actions = drain(&mut b);
        if let [Action::Reply(CallId(1), Err(Failure { error: e, .. }))] = &actions[..] {
            assert!(matches!(e, BridgeError::ConnectWait { .. }));
            assert!(e.to_string().contains("/tmp/t.sock"));
            break;
        }
        conn += 1;
        assert_eq!(actions, vec![Action::Connect(ConnId(conn))]);
    }
    assert_eq!(t, now + Duration::from_secs(10));
    // While the call waits, the pause grows to four initial steps
    // (jittered by half a step either way) and no further.
    assert!(
        gaps.iter().all(|g| *g >= Duration::from_millis(25)),
        "{gaps:?}"
    );
    assert!(
        gaps.iter().all(|g| *g < Duration::from_millis(300)),
        "{gaps:?}"
    );
    assert!(gaps.len() <= 100, "bounded attempts: {}", gaps.len());
}

#[test]
fn without_waiting_calls_the_backoff_grows_to_its_cap() {
    let (mut b, now) = bridge(BridgeMode::Fixed);
    drain(&mut b);
    let mut t = now;
    let mut gaps = Vec::new();
    for conn in 1..=10 {
        b.connect_failed(ConnId(conn), ConnectFailure::Other("refused".into()), t);
        let next = b.poll_timeout().expect("retry");
        gaps.push(next - t);
        t = next;
        b.handle_timeout(t);
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn + 1))]);
    }
    assert!(gaps[9] >= Duration::from_secs(1), "{gaps:?}");
}

#[test]
fn a_call_in_a_backoff_pause_brings_the_attempt_forward_at_most_once_per_initial_backoff() {
    let (mut b, now) = bridge(BridgeMode::Fixed);
    drain(&mut b);
    let mut t = now;
    // Four failed attempts: the pause grows well past the initial 50 ms.
    for conn in 1..=4 {
        b.connect_failed(ConnId(conn), ConnectFailure::Other("refused".into()), t);
        t = b.poll_timeout().expect("retry");
        b.handle_timeout(t);
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn + 1))]);
    }
    b.connect_failed(ConnId(5), ConnectFailure::Other("refused".into()), t);
    drain(&mut b);
    let retry_at = b.poll_timeout().expect("retry");
    let (spacing, bound) = b.hurry_bound().expect("backing off");
    assert_eq!(bound, t + spacing);
    assert!(
        (Duration::from_millis(50)..Duration::from_millis(100)).contains(&spacing),
        "one to two initial backoffs: {spacing:?}"
    );
    assert!(
        bound < retry_at,
        "the backoff pause is longer than the bound"
    );
    // Within the initial backoff of the last attempt, a call brings the
    // next attempt forward to the bound, not sooner.
    b.call(
        CallId(1),
        req("topology", true),
        t + Duration::from_millis(10),
    );
    assert!(drain(&mut b).is_empty(), "bounded: no attempt yet");
    assert_eq!(b.poll_timeout(), Some(bound));
    // More calls meanwhile change nothing.
    b.call(
        CallId(2),
        req("topology", true),
        t + Duration::from_millis(20),
    );
    assert!(drain(&mut b).is_empty());
    assert_eq!(b.poll_timeout(), Some(bound));
    b.handle_timeout(bound);
    assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(6))]);
    // That attempt fails too; a call well after it dials at once.
    b.connect_failed(ConnId(6), ConnectFailure::Other("refused".into()), bound);
    drain(&mut b);
    let later = bound + Duration::from_millis(100);
    assert!(later < b.poll_timeout().expect("retry"));
    b.call(CallId(3), req("topology", true), later);
    assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(7))]);
    // The daemon is back: the three waiting calls go out on it.
    b.connected(ConnId(7), later);
    let sent = drain(&mut b)
        .iter()
        .filter(|a| matches!(a, Action::Send(ConnId(7), _)))
        .count();
    assert_eq!(sent, 3);
}

#[test]
fn the_reconnect_delay_is_not_cut_short_by_calls() {
    let (mut b, now) = connected(BridgeMode::Fixed);
    b.closed(ConnId(1), now);
    drain(&mut b);
    for ms in [60, 200, 600] {
        b.call(
            CallId(ms),
            req("topology", true),
            now + Duration::from_millis(ms),
        );
        assert!(drain(&mut b).is_empty(), "waits for the delay at {ms} ms");
    }
}

#[test]
fn stale_events_are_ignored() {
    let (mut b, now) = connected(BridgeMode::Fixed);
    b.call(CallId(2), req("topology", true), now);
    let Some(Action::Send(_, line)) = drain(&mut b).pop() else {
        panic!("send");
    };
    b.closed(ConnId(1), now);
    b.handle_timeout(now + DELAY);
    b.connected(ConnId(2), now + DELAY);
    drain(&mut b);
    b.line(ConnId(1), &response(wire_id(&line)));
    b.closed(ConnId(1), now + DELAY);
    assert!(drain(&mut b).is_empty());
    assert_eq!(b.connection(), Some(ConnId(2)));
    // A connect result for an attempt nobody waits for is closed.
    b.connected(ConnId(7), now + DELAY);
    assert_eq!(drain(&mut b), vec![Action::Close(ConnId(7))]);
}

#[test]
fn shutdown_fails_everything_and_closes() {
    let (mut b, now) = connected(BridgeMode::Fixed);
    b.call(CallId(2), req("topology", true), now);
    drain(&mut b);
    b.shutdown();
    assert_eq!(
        drain(&mut b),
        vec![
            Action::Close(ConnId(1)),
            Action::Reply(CallId(2), failed(BridgeError::Shutdown, true))
        ]
    );
    b.call(CallId(3), req("topology", true), now);
    assert_eq!(
        drain(&mut b),
        vec![Action::Reply(
            CallId(3),
            failed(BridgeError::Shutdown, false)
        )]
    );
}

/// A bridge with a watch armed whose idle outage has reached the wait
/// for the endpoint: `(bridge, now, next conn id)`.
fn awaiting_endpoint() -> (Bridge, Instant, u64) {
    let (mut b, now) = bridge(BridgeMode::Fixed);
    b.watch(Watch::Armed, now);
    let mut t = now;
    let mut conn = 1;
    loop {
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn))]);
        b.connect_failed(ConnId(conn), ConnectFailure::Other("refused".into()), t);
        conn += 1;
        match b.poll_timeout() {
            Some(at) => {
                t = at;
                b.handle_timeout(t);
            }
            None => break,
        }
    }
    assert_eq!(conn - 1, u64::from(WATCHED_RETRIES), "a few quick retries");
    assert!(drain(&mut b).is_empty(), "no timer, no dial");
    (b, t, conn)
}

#[test]
fn with_a_watch_an_idle_bridge_stops_dialling_and_dials_when_the_endpoint_appears() {
    let (mut b, t, conn) = awaiting_endpoint();
    let appeared = t + Duration::from_secs(3600);
    b.endpoint_appeared(appeared);
    let due = b.poll_timeout().expect("an attempt is due");
    assert!(due < appeared + APPEARED_SPREAD, "{:?}", due - appeared);
    b.handle_timeout(due);
    assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn))]);
    // An endpoint that appears but refuses is awaited again at once.
    b.connect_failed(ConnId(conn), ConnectFailure::Other("refused".into()), due);
    assert_eq!(b.poll_timeout(), None);
    assert!(b.status().awaiting_endpoint);
}

#[test]
fn with_a_watch_a_waiting_call_goes_out_within_the_spread_of_the_appearance() {
    let (mut b, now) = bridge(BridgeMode::Fixed);
    b.watch(Watch::Armed, now);
    drain(&mut b);
    b.connect_failed(ConnId(1), ConnectFailure::Other("refused".into()), now);
    let mut t = now + Duration::from_millis(1);
    b.call(CallId(1), req("topology", true), t);
    assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(2))]);
    b.connect_failed(ConnId(2), ConnectFailure::Other("refused".into()), t);
    let mut conn = 3;
    // The call waits through attempts that keep failing; the backoff
    // grows past the waiting cap: it is only a safety net.
    let mut gaps = Vec::new();
    for _ in 0..6 {
        let at = b.poll_timeout().expect("a retry while a call waits");
        gaps.push(at - t);
        t = at;
        b.handle_timeout(t);
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn))]);
        b.connect_failed(ConnId(conn), ConnectFailure::Other("refused".into()), t);
        conn += 1;
    }
    assert!(
        gaps.iter().any(|g| *g > Duration::from_millis(300)),
        "{gaps:?}"
    );
    let appeared = t + Duration::from_millis(200);
    b.endpoint_appeared(appeared);
    let due = b.poll_timeout().expect("due");
    assert!(due < appeared + APPEARED_SPREAD);
    b.handle_timeout(due);
    assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn))]);
    b.connected(ConnId(conn), due);
    let actions = drain(&mut b);
    assert!(
        matches!(actions[..], [Action::Send(c, _)] if c == ConnId(conn)),
        "{actions:?}"
    );
}

#[test]
fn an_appearance_right_after_a_failed_attempt_is_not_held_back_by_its_spacing() {
    // A herd's case: a call waits, the last attempt failed a moment ago,
    // then the daemon's socket appears. A call arriving now could bring
    // the next attempt only one to two initial backoffs after the last;
    // the appearance brings it within the spread.
    let (mut b, now) = bridge(BridgeMode::Fixed);
    b.watch(Watch::Armed, now);
    drain(&mut b);
    b.call(CallId(1), req("topology", true), now);
    b.connect_failed(ConnId(1), ConnectFailure::Other("no socket".into()), now);
    drain(&mut b);
    let appeared = now + Duration::from_millis(1);
    b.endpoint_appeared(appeared);
    let due = b.poll_timeout().expect("an attempt is due");
    assert!(due < appeared + APPEARED_SPREAD, "{:?}", due - appeared);
    b.handle_timeout(due);
    assert!(
        drain(&mut b).contains(&Action::Connect(ConnId(2))),
        "the appearance's dial"
    );
}

#[test]
fn an_appearance_during_an_attempt_brings_the_next_one_without_backoff_if_it_fails() {
    let (mut b, t, conn) = awaiting_endpoint();
    b.call(CallId(1), req("topology", true), t + Duration::from_secs(1));
    assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn))]);
    let appeared = t + Duration::from_secs(1);
    b.endpoint_appeared(appeared);
    // The attempt raced the daemon's bind and fails: the next attempt
    // follows within the spread, not on the grown backoff, and is not
    // awaited.
    b.connect_failed(
        ConnId(conn),
        ConnectFailure::Other("refused".into()),
        appeared,
    );
    let due = b.poll_timeout().expect("due");
    assert!(due < appeared + APPEARED_SPREAD, "{:?}", due - appeared);
    b.handle_timeout(due);
    assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn + 1))]);
}

#[test]
fn a_call_while_the_endpoint_is_awaited_dials_at_once() {
    let (mut b, t, conn) = awaiting_endpoint();
    b.call(CallId(1), req("topology", true), t + Duration::from_secs(5));
    assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn))]);
    // Failing, it is retried on the backoff while the call waits.
    b.connect_failed(
        ConnId(conn),
        ConnectFailure::Other("refused".into()),
        t + Duration::from_secs(5),
    );
    assert!(b.poll_timeout().is_some());
    assert!(drain(&mut b).is_empty());
}

#[test]
fn losing_the_watch_resumes_the_backoff() {
    let (mut b, t, conn) = awaiting_endpoint();
    b.watch(Watch::Unavailable, t);
    let at = b.poll_timeout().expect("the backoff again");
    b.handle_timeout(at);
    assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn))]);
    b.connect_failed(ConnId(conn), ConnectFailure::Other("refused".into()), at);
    assert!(b.poll_timeout().is_some(), "no wait without a watch");
}

#[test]
fn an_appearance_while_connected_or_stopped_changes_nothing() {
    let (mut b, now) = connected(BridgeMode::Fixed);
    b.endpoint_appeared(now);
    assert!(drain(&mut b).is_empty());
    assert_eq!(b.poll_timeout(), None);
    b.shutdown();
    drain(&mut b);
    b.endpoint_appeared(now);
    assert!(drain(&mut b).is_empty());
    assert_eq!(b.poll_timeout(), None);
}

fn degradable(method: &str, read: bool) -> Request {
    Request {
        fallback: true,
        ..req(method, read)
    }
}

#[test]
fn a_call_that_can_fall_back_is_handed_on_when_the_next_attempt_fails() {
    let (mut b, now) = bridge(BridgeMode::Fixed);
    assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(1))]);
    b.call(CallId(1), degradable("memory_capture", false), now);
    assert!(
        drain(&mut b).is_empty(),
        "it waits for the attempt under way"
    );
    b.connect_failed(
        ConnId(1),
        ConnectFailure::Other("No such file or directory".into()),
        now,
    );
    let actions = drain(&mut b);
    let [Action::Reply(CallId(1), Err(failure))] = &actions[..] else {
        panic!("expected a failure: {actions:?}");
    };
    assert!(failure.fallback && !failure.sent, "{failure:?}");
    assert!(failure.error.is_unreachable());
    // The next one makes a fresh attempt at once instead of waiting for
    // the backoff.
    b.call(CallId(2), degradable("memory_recall", true), now);
    assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(2))]);
    b.connected(ConnId(2), now);
    let actions = drain(&mut b);
    assert!(
        matches!(actions[..], [Action::Send(ConnId(2), _)]),
        "{actions:?}"
    );
}

#[test]
fn while_restarting_a_call_that_can_fall_back_waits_for_the_daemon() {
    let (mut b, now) = connected(BridgeMode::Fixed);
    b.closed(ConnId(1), now);
    b.call(CallId(2), degradable("memory_recall", true), now);
    b.handle_timeout(now + DELAY);
    assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(2))]);
    b.connect_failed(
        ConnId(2),
        ConnectFailure::Other("refused".into()),
        now + DELAY,
    );
    assert!(drain(&mut b).is_empty(), "a restart is waited out");
    // A connect wait after the loss, the daemon counts as down.
    let until = b.poll_timeout().expect("a retry");
    assert!(until < now + Duration::from_secs(10));
    b.handle_timeout(until);
    assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(3))]);
    b.connected(ConnId(3), until);
    let actions = drain(&mut b);
    assert!(
        matches!(actions[..], [Action::Send(ConnId(3), _)]),
        "{actions:?}"
    );
}

#[test]
fn a_write_lost_after_sending_is_never_handed_on_but_a_read_is() {
    let (mut b, now) = connected(BridgeMode::Fixed);
    b.call(CallId(2), degradable("memory_capture", false), now);
    b.call(CallId(3), degradable("memory_recall", true), now);
    drain(&mut b);
    b.closed(ConnId(1), now);
    let actions = drain(&mut b);
    let [Action::Reply(CallId(2), Err(failure))] = &actions[..] else {
        panic!("expected the write to fail: {actions:?}");
    };
    assert_eq!(failure.error, BridgeError::SocketClosed);
    assert!(failure.sent && !failure.fallback, "{failure:?}");
    // The read waits out the restart, then may be answered elsewhere.
    let deadline = now + Duration::from_secs(10);
    b.handle_timeout(deadline);
    let actions: Vec<Action> = drain(&mut b)
        .into_iter()
        .filter(|a| matches!(a, Action::Reply(..)))
        .collect();
    let [Action::Reply(CallId(3), Err(failure))] = &actions[..] else {
        panic!("expected the read to give up: {actions:?}");
    };
    assert!(failure.sent && failure.fallback, "{failure:?}");
}

#[test]
fn each_connection_begins_with_the_status_question_and_hands_its_answer_on() {
    let (mut b, now) = bridge(BridgeMode::Fixed);
    assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(1))]);
    b.call(CallId(1), req("topology", true), now);
    b.connected(ConnId(1), now);
    let actions = drain_all(&mut b);
    let sends: Vec<&Vec<u8>> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Send(ConnId(1), line) => Some(line),
            _ => None,
        })
        .collect();
    assert_eq!(sends.len(), 2, "{actions:?}");
    assert_eq!(sends[0], wire::STATUS_REQUEST, "the question goes first");
    let call_line = sends[1].clone();

    // The call's answer, even before the status answer, is the call's.
    b.line(ConnId(1), &response(wire_id(&call_line)));
    assert!(matches!(
        drain(&mut b)[..],
        [Action::Reply(CallId(1), Ok(_))]
    ));
    let answer = br#"{"ok":true,"state":"WAKE","version":"3.3.0"}"#;
    b.line(ConnId(1), answer);
    assert_eq!(
        drain_all(&mut b),
        vec![Action::Status(ConnId(1), answer.to_vec())]
    );
    // Answered once: a second such line answers nothing.
    b.line(ConnId(1), answer);
    assert_eq!(
        drain_all(&mut b),
        vec![Action::Report(Event::Unmatched { id: None })]
    );

    // A reconnect asks again.
    b.closed(ConnId(1), now + Duration::from_secs(5));
    b.handle_timeout(now + Duration::from_secs(5) + DELAY);
    assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(2))]);
    b.connected(ConnId(2), now + Duration::from_secs(7));
    assert!(
        drain_all(&mut b)
            .iter()
            .any(|a| matches!(a, Action::Send(ConnId(2), line) if line == wire::STATUS_REQUEST))
    );
}

#[test]
fn a_refusal_of_the_status_question_is_its_answer_and_proves_the_connection() {
    let (mut b, now) = bridge(BridgeMode::Fixed);
    drain(&mut b);
    b.connected(ConnId(1), now);
    drain(&mut b);
    // A daemon that takes no control messages answers with a null id.
    let refusal = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"id required"}}"#;
    b.line(ConnId(1), refusal);
    assert_eq!(
        drain_all(&mut b),
        vec![Action::Status(ConnId(1), refusal.to_vec())]
    );
    // Proven: a close right after is the loss of a working connection
    // (the reconnect delay), not one more failed attempt.
    b.closed(ConnId(1), now + Duration::from_millis(10));
    assert_eq!(
        b.poll_timeout(),
        Some(now + Duration::from_millis(10) + DELAY)
    );
}

/// The failures an attempt's `connect_failed` event reports.
fn reported_failures(actions: &[Action]) -> Option<u32> {
    actions.iter().find_map(|a| match a {
        Action::Report(Event::ConnectFailed { failures, .. }) => Some(*failures),
        _ => None,
    })
}

#[test]
fn refused_just_after_an_appearance_is_tried_again_a_few_times_before_it_counts() {
    let (mut b, t, mut conn) = awaiting_endpoint();
    let failures = u32::try_from(conn - 1).expect("few");
    let appeared = t + Duration::from_secs(60);
    b.endpoint_appeared(appeared);
    let mut at = b.poll_timeout().expect("due");
    let mut pauses = Vec::new();
    for _ in 0..REFUSED_RETRIES {
        b.handle_timeout(at);
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn))]);
        b.connect_failed(ConnId(conn), ConnectFailure::Refused("refused".into()), at);
        let actions = drain_all(&mut b);
        assert_eq!(
            reported_failures(&actions),
            Some(failures),
            "a daemon between bind and listen: not counted"
        );
        let next = b.poll_timeout().expect("tried again");
        pauses.push(next - at);
        at = next;
        conn += 1;
    }
    assert_eq!(
        pauses,
        (0..REFUSED_RETRIES)
            .map(|n| REFUSED_PAUSE * 2u32.pow(n))
            .collect::<Vec<_>>()
    );
    // One more refusal counts: the endpoint is awaited again.
    b.handle_timeout(at);
    assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn))]);
    b.connect_failed(ConnId(conn), ConnectFailure::Refused("refused".into()), at);
    assert_eq!(reported_failures(&drain_all(&mut b)), Some(failures + 1));
    assert_eq!(b.poll_timeout(), None);
    assert!(b.status().awaiting_endpoint);
}

#[test]
fn only_a_refusal_answering_an_appearance_is_tried_again() {
    // Another failure after an appearance counts at once.
    let (mut b, t, conn) = awaiting_endpoint();
    b.endpoint_appeared(t);
    let due = b.poll_timeout().expect("due");
    b.handle_timeout(due);
    drain(&mut b);
    b.connect_failed(
        ConnId(conn),
        ConnectFailure::Other("no such file".into()),
        due,
    );
    assert_eq!(b.poll_timeout(), None, "awaited again at once");

    // A refusal of an attempt no appearance brought counts too.
    let (mut b, now) = bridge(BridgeMode::Fixed);
    drain(&mut b);
    b.connect_failed(ConnId(1), ConnectFailure::Refused("refused".into()), now);
    assert_eq!(reported_failures(&drain_all(&mut b)), Some(1));
}

#[test]
fn a_call_waiting_for_the_next_attempt_only_is_not_failed_by_a_refusal_tried_again() {
    let (mut b, t, conn) = awaiting_endpoint();
    b.endpoint_appeared(t);
    let due = b.poll_timeout().expect("due");
    b.handle_timeout(due);
    drain(&mut b);
    // A call the CLI can answer, made while the attempt is under way.
    let mut fallback = req("memory_recall", true);
    fallback.fallback = true;
    b.call(CallId(1), fallback, due);
    drain(&mut b);
    b.connect_failed(ConnId(conn), ConnectFailure::Refused("refused".into()), due);
    assert!(
        drain(&mut b).is_empty(),
        "the call waits for the attempt made again"
    );
    let again = b.poll_timeout().expect("due again");
    b.handle_timeout(again);
    assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn + 1))]);
    b.connected(ConnId(conn + 1), again);
    assert!(matches!(drain(&mut b)[..], [Action::Send(_, _)]));
}
