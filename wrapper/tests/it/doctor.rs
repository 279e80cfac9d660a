//! The doctor probe and the auto-heal through the real binaries, with the
//! `fake-iai` stand-in for `iai-mcp` logging every run.

use devkit::tempdir::{short_tempdir, socket_path_in};
use harness::{FakeDaemon, WrapperOptions, WrapperProcess};
use std::path::{Path, PathBuf};

use std::time::Duration;

use crate::common::{
    JSON_LOG, REPLY, events_named, eventually, ok_method, process_ended, topology, wrapper_cmd,
};
use serde_json::{Value, json};

fn runs(log: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let run: Value = serde_json::from_str(l).expect("json");
            run["argv"]
                .as_array()
                .expect("argv")
                .iter()
                .map(|a| a.as_str().expect("string").to_owned())
                .collect()
        })
        .collect()
}

fn count(log: &Path, argv: &[&str]) -> usize {
    runs(log).iter().filter(|r| r == &argv).count()
}

fn wrapper(opts: WrapperOptions, log: &Path, env: &[(&str, &str)]) -> WrapperProcess {
    let mut opts = opts
        .cli(devkit::bins::fake_cli_bin())
        .env("FAKE_IAI_LOG", log)
        .env(JSON_LOG.0, JSON_LOG.1);
    for (k, v) in env {
        opts = opts.env(k, v);
    }
    let mut w = WrapperProcess::spawn(&wrapper_cmd(), &opts).expect("spawn");
    w.initialize("2025-06-18").expect("initialize");
    w
}

fn absent(dir: &Path) -> WrapperOptions {
    WrapperOptions::new(socket_path_in(dir))
}

#[test]
fn a_failing_doctor_prints_one_warning_and_a_healthy_one_none() {
    let dir = short_tempdir().expect("tempdir");
    let log = dir.path().join("cli.log");
    let w = wrapper(
        absent(dir.path()),
        &log,
        &[
            ("FAKE_IAI_FAIL", "doctor"),
            ("IAI_MCP_HEAL_AFTER_MS", "600000"),
        ],
    );
    let problem = |w: &WrapperProcess| -> Vec<Value> {
        events_named(w, "doctor_run")
            .into_iter()
            .filter(|e| e["mode"] == "probe" && e["outcome"] == "problem")
            .collect()
    };
    let warned = eventually("the doctor warning", || {
        let warned = problem(&w);
        (!warned.is_empty()).then_some(warned)
    });
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert_eq!(warned[0]["level"], "WARN", "{warned:?}");
    assert_eq!(warned[0]["exit"], "1", "{warned:?}");
    assert_eq!(count(&log, &["doctor"]), 1);

    let log = dir.path().join("healthy.log");
    let w = wrapper(
        absent(dir.path()),
        &log,
        &[("IAI_MCP_HEAL_AFTER_MS", "600000")],
    );
    eventually("the doctor verdict", || {
        let runs = events_named(&w, "doctor_run");
        runs.iter()
            .any(|e| e["mode"] == "probe" && e["outcome"] == "healthy")
            .then_some(())
    });
    assert!(problem(&w).is_empty());
}

#[test]
fn a_hung_doctor_delays_no_answer() {
    let dir = short_tempdir().expect("tempdir");
    let log = dir.path().join("cli.log");
    let mut w = wrapper(absent(dir.path()), &log, &[("FAKE_IAI_HANG", "doctor")]);
    eventually("the doctor started", || {
        (count(&log, &["doctor"]) == 1).then_some(())
    });
    let list = w
        .request("tools/list", json!({}), REPLY)
        .expect("tools/list");
    assert!(list["result"]["tools"].is_array(), "{list}");
    w.close_stdin();
    assert_eq!(w.wait_exit(REPLY).expect("exit").code(), Some(0));
    let pid = std::fs::read_to_string(&log)
        .ok()
        .and_then(|l| serde_json::from_str::<Value>(l.lines().next()?).ok())
        .and_then(|run| run["pid"].as_i64())
        .expect("the doctor's pid");
    eventually("the hung doctor ended with the wrapper", || {
        process_ended(pid).then_some(())
    });
}

#[test]
fn a_daemon_that_stays_down_is_healed_once_across_wrappers() {
    let dir = short_tempdir().expect("tempdir");
    let log = dir.path().join("cli.log");
    let state: PathBuf = dir.path().join("state");
    let env = [("IAI_MCP_HEAL_AFTER_MS", "200")];
    let mut opts = absent(dir.path());
    opts.state_dir = Some(state.clone());
    let first = wrapper(opts.clone(), &log, &env);
    eventually("doctor --auto ran", || {
        (count(&log, &["doctor", "--auto"]) == 1).then_some(())
    });
    assert!(state.join("doctor-auto.stamp").exists());
    let heals = |w: &WrapperProcess, outcome: &str| {
        events_named(w, "doctor_run")
            .iter()
            .filter(|e| e["mode"] == "heal" && e["outcome"] == outcome)
            .count()
    };
    eventually("the first heal finished", || {
        (heals(&first, "healed") == 1).then_some(())
    });

    let second = wrapper(opts, &log, &env);
    eventually("the second wrapper saw the cooldown", || {
        (heals(&second, "skipped") >= 1).then_some(())
    });
    assert_eq!(count(&log, &["doctor", "--auto"]), 1, "{:?}", runs(&log));
}

#[test]
fn a_connected_daemon_is_never_healed() {
    let dir = short_tempdir().expect("tempdir");
    let log = dir.path().join("cli.log");
    let daemon = FakeDaemon::spawn(&socket_path_in(dir.path())).expect("daemon");
    let mut w = wrapper(
        WrapperOptions::for_daemon(&daemon),
        &log,
        &[("IAI_MCP_HEAL_AFTER_MS", "100")],
    );
    assert_eq!(ok_method(&topology(&mut w)), "topology");
    // Several heal periods pass with the daemon up: the period under test.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(ok_method(&topology(&mut w)), "topology");
    assert_eq!(count(&log, &["doctor", "--auto"]), 0, "{:?}", runs(&log));
}

#[test]
fn doctor_off_runs_neither_probe_nor_heal() {
    let dir = short_tempdir().expect("tempdir");
    let log = dir.path().join("cli.log");
    let mut w = wrapper(
        absent(dir.path()),
        &log,
        &[
            ("IAI_MCP_DOCTOR", "off"),
            ("IAI_MCP_HEAL_AFTER_MS", "100"),
            ("IAI_MCP_DEGRADED", "off"),
            ("IAI_MCP_CONNECT_WAIT_MS", "500"),
        ],
    );
    // A call that waits out several heal periods with the daemon down.
    let reply = topology(&mut w);
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(runs(&log).is_empty(), "{:?}", runs(&log));
}

/// A store whose state file records one run of the daemon (as the daemon
/// writes it at boot), under `dir`.
fn store_with_run(dir: &Path, pid: u32, started_at: &str) -> PathBuf {
    let store = dir.join("store");
    std::fs::create_dir_all(&store).expect("mkdir");
    record_run(&store, pid, started_at);
    store
}

/// The daemon's boot: its state file rewritten with a run.
fn record_run(store: &Path, pid: u32, started_at: &str) {
    let state = json!({"daemon_pid": pid, "daemon_started_at": started_at, "fsm_state": "WAKE"});
    std::fs::write(store.join(".daemon-state.json"), state.to_string()).expect("write");
}

/// A session started on `store`, sharing `state`, whose doctor is
/// `fake-iai`: returns once its probe is logged (ran or kept).
fn session(dir: &Path, log: &Path, store: &Path, state: &Path, env: &[(&str, &str)]) -> Value {
    let mut opts = absent(dir).env("IAI_MCP_STORE", store);
    opts.state_dir = Some(state.to_path_buf());
    let env: Vec<(&str, &str)> = env
        .iter()
        .copied()
        .chain([("IAI_MCP_HEAL_AFTER_MS", "600000")])
        .collect();
    let mut w = wrapper(opts, log, &env);
    let probe = eventually("the session's doctor verdict", || {
        events_named(&w, "doctor_run")
            .into_iter()
            .find(|e| e["mode"] == "probe")
    });
    w.close_stdin();
    assert_eq!(w.wait_exit(REPLY).expect("exit").code(), Some(0));
    probe
}

#[test]
fn ten_sessions_of_one_daemon_run_run_the_doctor_once_and_a_restart_runs_it_again() {
    let dir = short_tempdir().expect("tempdir");
    let log = dir.path().join("cli.log");
    let state = dir.path().join("state");
    let store = store_with_run(dir.path(), 4242, "2026-12-06T01:00:00+00:00");
    let verdicts: Vec<String> = (0..10)
        .map(|_| session(dir.path(), &log, &store, &state, &[]))
        .map(|probe| {
            assert_eq!(probe["outcome"], "healthy", "{probe}");
            probe["verdict"].as_str().expect("verdict").to_owned()
        })
        .collect();
    assert_eq!(count(&log, &["doctor"]), 1, "{:?}", runs(&log));
    assert_eq!(verdicts[0], "ran");
    assert!(verdicts[1..].iter().all(|v| v == "kept"), "{verdicts:?}");
    assert!(
        state.join("iai-mcp-wrapper/doctor/verdict.json").is_file(),
        "kept in the wrapper's own directory"
    );

    // The daemon restarts: a new run, a new verdict.
    record_run(&store, 4343, "2026-12-06T02:00:00+00:00");
    let probe = session(dir.path(), &log, &store, &state, &[]);
    assert_eq!(probe["verdict"], "ran", "{probe}");
    assert_eq!(count(&log, &["doctor"]), 2);
    // A verdict older than the bound is reached again.
    let probe = session(
        dir.path(),
        &log,
        &store,
        &state,
        &[("IAI_MCP_DOCTOR_VERDICT_MAX_AGE_MS", "1")],
    );
    assert_eq!(probe["verdict"], "ran", "{probe}");
    assert_eq!(count(&log, &["doctor"]), 3);
}

#[test]
fn a_sick_verdict_warns_every_session_of_the_run() {
    let dir = short_tempdir().expect("tempdir");
    let log = dir.path().join("cli.log");
    let state = dir.path().join("state");
    let store = store_with_run(dir.path(), 4242, "2026-12-06T01:00:00+00:00");
    for _ in 0..3 {
        let probe = session(
            dir.path(),
            &log,
            &store,
            &state,
            &[("FAKE_IAI_FAIL", "doctor")],
        );
        assert_eq!(
            (&probe["outcome"], &probe["level"], &probe["exit"]),
            (&json!("problem"), &json!("WARN"), &json!("1")),
            "{probe}"
        );
    }
    assert_eq!(count(&log, &["doctor"]), 1, "{:?}", runs(&log));
}

#[test]
fn sessions_starting_at_once_run_the_doctor_once() {
    let dir = short_tempdir().expect("tempdir");
    let log = dir.path().join("cli.log");
    let state = dir.path().join("state");
    let store = store_with_run(dir.path(), 4242, "2026-12-06T01:00:00+00:00");
    let probes: Vec<Value> = std::thread::scope(|scope| {
        let starts: Vec<_> = (0..8)
            .map(|_| scope.spawn(|| session(dir.path(), &log, &store, &state, &[])))
            .collect();
        starts
            .into_iter()
            .map(|s| s.join().expect("a session"))
            .collect()
    });
    assert!(
        probes.iter().all(|p| p["outcome"] == "healthy"),
        "{probes:?}"
    );
    assert_eq!(count(&log, &["doctor"]), 1, "{:?}", runs(&log));
    assert_eq!(probes.iter().filter(|p| p["verdict"] == "ran").count(), 1);
}

#[test]
fn a_hung_doctor_is_killed_and_the_next_session_runs_it_again() {
    let dir = short_tempdir().expect("tempdir");
    let log = dir.path().join("cli.log");
    let state = dir.path().join("state");
    let store = store_with_run(dir.path(), 4242, "2026-12-06T01:00:00+00:00");
    let hung = session(
        dir.path(),
        &log,
        &store,
        &state,
        &[("FAKE_IAI_HANG", "doctor")],
    );
    assert_eq!(hung["outcome"], "failed", "{hung}");
    // No verdict was reached: the next session runs the doctor itself.
    let next = session(dir.path(), &log, &store, &state, &[]);
    assert_eq!(
        (&next["outcome"], &next["verdict"]),
        (&json!("healthy"), &json!("ran")),
        "{next}"
    );
    assert_eq!(count(&log, &["doctor"]), 2, "{:?}", runs(&log));
}

#[cfg(unix)]
#[test]
fn a_state_directory_that_cannot_be_written_still_warns() {
    let dir = short_tempdir().expect("tempdir");
    let log = dir.path().join("cli.log");
    let store = store_with_run(dir.path(), 4242, "2026-12-06T01:00:00+00:00");
    // A file where the wrapper's own directory should be.
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).expect("mkdir");
    std::fs::write(state.join("iai-mcp-wrapper"), "in the way").expect("write");
    for _ in 0..2 {
        let probe = session(
            dir.path(),
            &log,
            &store,
            &state,
            &[("FAKE_IAI_FAIL", "doctor")],
        );
        assert_eq!(probe["outcome"], "problem", "{probe}");
    }
    assert_eq!(
        count(&log, &["doctor"]),
        2,
        "run for each session, as before"
    );
}
