//! `WrapperProcess` and `WrapperCommand` with a scripted stand-in program:
//! the environment a wrapper gets, stderr capture, exit and kill-on-drop.

use std::path::Path;
use std::time::Duration;

use harness::{BridgeMode, WrapperCommand, WrapperOptions, WrapperProcess};
use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::Pid;
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(10);

/// A "wrapper" that prints the variables the harness sets as one JSON line,
/// logs to stderr, and exits when its stdin closes.
const ENV_REPORTER: &str = r#"sh -c '
printf "{\"socket\":\"%s\",\"mode\":\"%s\",\"delay\":\"%s\",\"state\":\"%s\",\"home\":\"%s\",\"store\":\"%s\",\"python\":\"%s\",\"extra\":\"%s\",\"own\":\"%s\"}\n" \
  "$IAI_DAEMON_SOCKET_PATH" "${IAI_MCP_BRIDGE_MODE-unset}" "${IAI_MCP_RECONNECT_TEST_DELAY_MS-unset}" \
  "$IAI_MCP_STATE_DIR" "$HOME" "$IAI_MCP_STORE" "$IAI_MCP_PYTHON" "${EXTRA-unset}" "${OWN-unset}"
echo "reporter log line" >&2
cat >/dev/null'"#;

fn reporter() -> WrapperCommand {
    WrapperCommand::parse_shell_words(&format!("OWN=from-cmd {ENV_REPORTER}")).unwrap()
}

#[test]
fn the_wrapper_gets_an_isolated_environment() {
    let opts = WrapperOptions::new("/tmp/iaiX/d.sock")
        .mode(BridgeMode::Prefix)
        .reconnect_delay_ms(1000)
        .env("EXTRA", "yes");
    let mut wrapper = WrapperProcess::spawn(&reporter(), &opts).unwrap();
    let env = wrapper.recv_any(WAIT).unwrap();
    let field = |k: &str| env[k].as_str().unwrap().to_owned();

    assert_eq!(field("socket"), "/tmp/iaiX/d.sock");
    assert_eq!(field("mode"), "prefix");
    assert_eq!(field("delay"), "1000");
    assert_eq!(field("extra"), "yes");
    assert_eq!(field("own"), "from-cmd");
    assert_eq!(field("python"), "python3");
    assert_eq!(Path::new(&field("home")), wrapper.home_dir());
    assert_eq!(Path::new(&field("state")), wrapper.state_dir());
    for dir in ["home", "state", "store"] {
        let path = field(dir);
        assert!(path.starts_with("/tmp/iai"), "{dir} = {path}");
        assert!(Path::new(&path).is_dir(), "{dir} = {path} exists");
    }

    wrapper.close_stdin();
    assert!(wrapper.wait_exit(WAIT).unwrap().success());
    assert!(wrapper.stderr_text().contains("reporter log line"));
    assert!(wrapper.defects().is_empty());
}

#[test]
fn unset_options_stay_unset_and_dropping_kills_and_cleans_up() {
    let mut wrapper =
        WrapperProcess::spawn(&reporter(), &WrapperOptions::new("/tmp/x.sock")).unwrap();
    // Wait until it runs, so the kill hits a live process.
    let env: Value = wrapper.recv_any(WAIT).unwrap();
    for unset in ["mode", "delay", "extra"] {
        assert_eq!(env[unset], "unset");
    }
    let pid = wrapper.pid();
    let home = wrapper.home_dir().to_path_buf();
    drop(wrapper);
    assert_eq!(kill(Pid::from_raw(pid as i32), None), Err(Errno::ESRCH));
    assert!(!home.exists());
}
