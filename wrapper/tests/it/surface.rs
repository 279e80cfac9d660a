//! The surface served, through the real binary: a release installed in an
//! environment (this repository's synthetic bundle, laid out as pip lays
//! out iai-pme) is read and served word for word, cached, and routed by
//! name; what cannot be read gives the built-in table, said once in the log
//! and in `--check`.

use std::path::{Path, PathBuf};

use crate::common::{JSON_LOG, REPLY, events_named, eventually, wrapper_cmd, wrapper_process};
use devkit::tempdir::short_tempdir;
use harness::{FakeDaemon, Transport, WrapperOptions, WrapperProcess};
use serde_json::{Value, json};

/// This repository's synthetic bundle, of the releases' shape.
const BUNDLE: &str = include_str!("../fixtures/bundle.js");

/// An environment holding a release of `BUNDLE` as version `version`:
/// `env/bin/python` (never run) and `env/lib/python3.11/site-packages`.
fn environment(root: &Path, version: &str) -> PathBuf {
    let env = root.join("env");
    let site_packages = env.join("lib/python3.11/site-packages");
    let wrapper = site_packages.join("iai_mcp/_wrapper");
    std::fs::create_dir_all(&wrapper).expect("mkdir");
    std::fs::create_dir_all(env.join("bin")).expect("mkdir");
    std::fs::write(env.join("bin/python"), "").expect("write");
    std::fs::write(wrapper.join("index.js"), BUNDLE).expect("write");
    let dist_info = site_packages.join(format!("iai_pme-{version}.dist-info"));
    std::fs::create_dir_all(&dist_info).expect("mkdir");
    std::fs::write(
        dist_info.join("METADATA"),
        format!("Metadata-Version: 2.4\nName: iai-pme\nVersion: {version}\n"),
    )
    .expect("write");
    env
}

fn start(socket: &Path, env: &[(&str, &str)]) -> WrapperProcess {
    let opts = env
        .iter()
        .fold(WrapperOptions::new(socket), |opts, (k, v)| opts.env(k, v));
    WrapperProcess::spawn(&wrapper_cmd(), &opts).expect("spawn wrapper")
}

/// The results of `initialize` and `tools/list`.
fn listing(w: &mut WrapperProcess) -> (Value, Value) {
    let init = w.initialize("2025-06-18").expect("initialize");
    let list = w
        .request("tools/list", json!({}), REPLY)
        .expect("tools/list");
    (init["result"].clone(), list["result"].clone())
}

fn surface_event(w: &WrapperProcess) -> Value {
    let found = events_named(w, "surface");
    assert_eq!(found.len(), 1, "one surface event: {found:?}");
    found[0].clone()
}

#[test]
fn the_release_beside_the_python_is_served_word_for_word_then_from_the_cache() {
    let dir = short_tempdir().expect("tempdir");
    let env = environment(dir.path(), "9.8.7");
    let socket = dir.path().join("d.sock");
    let daemon = FakeDaemon::spawn(&socket).expect("spawn fake daemon");
    let python = env.join("bin/python");
    let python = python.to_str().expect("utf-8 path");
    // One state directory for both starts: the cache is kept there.
    let state = dir.path().join("state");
    let state = state.to_str().expect("utf-8 path");
    let settings = [
        JSON_LOG,
        ("IAI_MCP_PYTHON", python),
        ("IAI_MCP_STATE_DIR", state),
    ];

    let mut w = start(&socket, &settings);
    let (init, list) = listing(&mut w);
    assert_eq!(init["serverInfo"]["name"], "iai-mcp");
    assert_eq!(
        init["serverInfo"]["version"], "9.8.7",
        "the package's version"
    );
    assert_eq!(
        init["capabilities"],
        json!({"tools": {"listChanged": true}})
    );
    assert_eq!(
        init["instructions"],
        "Read before you write.\n\nconfig: {\"context_editing\":{\"type\":\"clear_everything\",\"trigger\":{\"type\":\"input_tokens\",\"value\":30000}},\"hot_tools\":[\"alpha_read\",\"beta_write\"]}"
    );
    let tools = list["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["alpha_read", "beta_write"]);
    assert_eq!(tools[1]["description"], "Writes a note — once.");
    assert_eq!(
        tools[1]["outputSchema"]["properties"]["id"],
        json!({"type": "string", "format": "uuid"}),
        "the release's own schema"
    );
    assert!(tools[1]["outputSchema"]["properties"]["value"].is_object());
    assert!(tools[0].get("outputSchema").is_none(), "none made up");

    // Routed by name; a tool the release does not list is unknown.
    let answered = w
        .call_tool("beta_write", json!({"text": "x"}), REPLY)
        .expect("answered");
    assert_eq!(
        answered["result"]["structuredContent"]["method"],
        "beta_write"
    );
    let unknown = w
        .call_tool("memory_recall", json!({"cue": "x"}), REPLY)
        .expect("answered");
    assert_eq!(unknown["result"]["isError"], true);
    assert_eq!(
        unknown["result"]["content"][0]["text"],
        "unknown tool memory_recall"
    );
    let seen = daemon.seen().expect("seen");
    assert!(seen.iter().any(|m| m == "beta_write"), "{seen:?}");

    let event = surface_event(&w);
    assert_eq!(event["level"], "INFO", "{event}");
    assert_eq!(event["release"], "9.8.7", "{event}");
    assert_eq!(event["cached"], false, "{event}");
    w.close_stdin();
    assert_eq!(w.wait_exit(REPLY).expect("exit").code(), Some(0));

    // The next start takes the cache, and serves the same.
    let mut again = start(&socket, &settings);
    let (init_again, list_again) = listing(&mut again);
    assert_eq!((init_again, list_again), (init, list));
    assert_eq!(surface_event(&again)["cached"], true);
    let cache = dir.path().join("state/iai-mcp-wrapper");
    assert_eq!(
        std::fs::read_dir(&cache)
            .expect("the cache directory")
            .count(),
        1,
        "one cache file, in the wrapper's own directory"
    );
}

#[test]
fn a_release_that_cannot_be_read_gives_the_builtin_table_and_says_why() {
    let dir = short_tempdir().expect("tempdir");
    let env = environment(dir.path(), "3.3.0");
    let bundle = env.join("lib/python3.11/site-packages/iai_mcp/_wrapper/index.js");
    std::fs::write(&bundle, &BUNDLE[..BUNDLE.len() / 2]).expect("truncate");
    let socket = dir.path().join("d.sock");
    let release = env.to_str().expect("utf-8 path");

    let mut w = start(&socket, &[JSON_LOG, ("IAI_MCP_SURFACE", release)]);
    let (init, list) = listing(&mut w);
    assert_eq!(list["tools"].as_array().map(Vec::len), Some(15));
    assert_eq!(init["serverInfo"]["version"], "3.3.0");
    let event = surface_event(&w);
    assert_eq!(event["level"], "WARN", "{event}");
    let reason = event["reason"].as_str().expect("a reason");
    assert!(reason.contains("index.js"), "{reason}");
    w.close_stdin();
    assert_eq!(w.wait_exit(REPLY).expect("exit").code(), Some(0));

    let check = wrapper_process()
        .arg("--check")
        .env("HOME", dir.path())
        .env("IAI_DAEMON_SOCKET_PATH", &socket)
        .env("IAI_MCP_SURFACE", release)
        .output()
        .expect("--check");
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(
        text.contains(
            "[warn] tools and instructions served: the built-in table (iai-mcp 3.3.0's tools, in this wrapper's words): "
        ),
        "{text}"
    );
}

#[test]
fn check_names_the_release_served_and_its_file_and_builtin_can_be_chosen() {
    let dir = short_tempdir().expect("tempdir");
    let env = environment(dir.path(), "3.2.3");
    let release = env.to_str().expect("utf-8 path");
    let check = |surface: &str| {
        let output = wrapper_process()
            .arg("--check")
            .env("HOME", dir.path())
            .env("IAI_DAEMON_SOCKET_PATH", dir.path().join("absent.sock"))
            .env("IAI_MCP_SURFACE", surface)
            .output()
            .expect("--check");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let text = check(release);
    let bundle = env.join("lib/python3.11/site-packages/iai_mcp/_wrapper/index.js");
    assert!(
        text.contains(&format!(
            "[ok] tools and instructions served: iai-mcp 3.2.3's own, read from {}\n",
            bundle.display()
        )),
        "{text}"
    );
    assert!(text.contains("tools (2):"), "{text}");
    assert!(text.contains("(tools served: 3.2.3's)"), "{text}");
    let text = check("builtin");
    assert!(
        text.contains("[warn] tools and instructions served: the built-in table (iai-mcp 3.3.0's tools, in this wrapper's words)\n"),
        "{text}"
    );
}

/// A fake daemon at `socket` that says it is release `release`.
fn daemon_of(socket: &Path, release: &str) -> FakeDaemon {
    let program = devkit::bins::try_fake_daemon_bin().expect("fake-daemon binary");
    FakeDaemon::spawn_with(
        &program,
        socket,
        Transport::native(),
        &["--release", release],
    )
    .expect("spawn fake daemon")
}

/// Upgrades the release in `env` to `version` as an installer does: a
/// bundle that lists one more tool, then the metadata directory of the new
/// version in place of the old one's.
fn upgrade(env: &Path, from: &str, to: &str) {
    let site_packages = env.join("lib/python3.11/site-packages");
    let bundle = BUNDLE
        .replace(
            "\"beta_write\"\n];",
            "\"beta_write\",\n  \"gamma_new\"\n];",
        )
        .replace(
            "var toolSchemas = {\n",
            "var toolSchemas = {\n  gamma_new: {\n    name: \"gamma_new\",\n    description: \"Comes with the upgrade.\",\n    inputSchema: { type: \"object\", properties: {} }\n  },\n",
        );
    std::fs::write(site_packages.join("iai_mcp/_wrapper/index.js"), bundle).expect("write");
    let old = site_packages.join(format!("iai_pme-{from}.dist-info"));
    let new = site_packages.join(format!("iai_pme-{to}.dist-info"));
    std::fs::rename(&old, &new).expect("rename");
    std::fs::write(
        new.join("METADATA"),
        format!("Metadata-Version: 2.4\nName: iai-pme\nVersion: {to}\n"),
    )
    .expect("write");
}

/// The next message that is a notification, keeping what else arrives.
fn next_notification(w: &mut WrapperProcess) -> Value {
    loop {
        let message = w.recv_any(REPLY).expect("a message");
        if message.get("method").is_some() && message.get("id").is_none() {
            return message;
        }
    }
}

fn tool_names(w: &mut WrapperProcess) -> Vec<String> {
    let list = w
        .request("tools/list", json!({}), REPLY)
        .expect("tools/list");
    list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn an_upgrade_is_served_once_the_daemon_runs_it_and_every_client_is_told() {
    let dir = short_tempdir().expect("tempdir");
    let env = environment(dir.path(), "9.8.7");
    let socket = dir.path().join("d.sock");
    let old_daemon = daemon_of(&socket, "9.8.7");
    let python = env.join("bin/python");
    let python = python.to_str().expect("utf-8 path");
    let mut w = start(&socket, &[JSON_LOG, ("IAI_MCP_PYTHON", python)]);
    w.initialize("2025-06-18").expect("initialize");
    // A modern client's stream, asking to hear of the tool list.
    let listen = json!({
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
        "notifications": {"toolsListChanged": true}
    });
    w.send_request_with_id(json!("stream"), "subscriptions/listen", listen)
        .expect("listen");
    let ack = next_notification(&mut w);
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "stream"
    );
    assert_eq!(ack["params"]["notifications"]["toolsListChanged"], true);
    eventually("the daemon's release logged", || {
        (!events_named(&w, "daemon_release").is_empty()).then_some(())
    });

    upgrade(&env, "9.8.7", "9.9.0");
    // The daemon still runs the old release: the old tools stay.
    let pending = eventually("the upgrade seen", || {
        events_named(&w, "surface_pending").into_iter().next()
    });
    assert_eq!(
        (&pending["installed"], &pending["daemon"], &pending["level"]),
        (&json!("9.9.0"), &json!("9.8.7"), &json!("WARN")),
        "{pending}"
    );
    assert_eq!(tool_names(&mut w), ["alpha_read", "beta_write"]);

    // The daemon restarts as the new release: the client is told, and
    // served the new release's tools.
    old_daemon.quit().expect("quit");
    let _new_daemon = daemon_of(&socket, "9.9.0");
    let mut told = [next_notification(&mut w), next_notification(&mut w)];
    told.sort_by_key(|n| n["params"].is_object());
    assert_eq!(
        told[0],
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    );
    assert_eq!(
        told[1]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "stream"
    );
    assert_eq!(
        tool_names(&mut w),
        ["alpha_read", "beta_write", "gamma_new"]
    );
    let init = w.initialize("2025-06-18").expect("initialize again");
    assert_eq!(init["result"]["serverInfo"]["version"], "9.9.0");
    let changed = events_named(&w, "surface_changed");
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert_eq!(
        (&changed[0]["from"], &changed[0]["to"]),
        (&json!("9.8.7"), &json!("9.9.0"))
    );
    assert!(
        events_named(&w, "daemon_release")
            .iter()
            .all(|e| e["level"] == "INFO"),
        "the daemon always ran the release served: no warning"
    );

    // The stream, like every request, is answered when the server ends.
    w.close_stdin();
    let end = w
        .wait_response(&json!("stream"), REPLY)
        .expect("the stream ends");
    assert_eq!(end["result"]["resultType"], "complete");
    assert_eq!(w.wait_exit(REPLY).expect("exit").code(), Some(0));
}

#[test]
fn with_no_daemon_running_an_upgrade_is_served_at_once() {
    let dir = short_tempdir().expect("tempdir");
    let env = environment(dir.path(), "9.8.7");
    let python = env.join("bin/python");
    let python = python.to_str().expect("utf-8 path");
    let mut w = start(
        &dir.path().join("absent.sock"),
        &[JSON_LOG, ("IAI_MCP_PYTHON", python)],
    );
    w.initialize("2025-06-18").expect("initialize");
    upgrade(&env, "9.8.7", "9.9.0");
    let told = next_notification(&mut w);
    assert_eq!(told["method"], "notifications/tools/list_changed");
    assert_eq!(
        tool_names(&mut w),
        ["alpha_read", "beta_write", "gamma_new"]
    );
    assert!(events_named(&w, "surface_pending").is_empty());
    w.close_stdin();
    assert_eq!(w.wait_exit(REPLY).expect("exit").code(), Some(0));
}
