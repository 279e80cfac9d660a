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
