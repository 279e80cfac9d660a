//! Settings resolved from flags and environment.

#[cfg(unix)]
use std::ffi::OsString;

use clap::Parser;

use super::daemon::check_socket_path;
use super::*;
use crate::bridge::{BridgeMode, PolicyError, Timings};
use crate::codec::DEFAULT_MAX_LINE_BYTES;
use crate::degraded::{self, DegradedConfig};
use crate::lifecycle::{doctor, heartbeat};
use crate::logging::LogFormat;
use crate::mcp::server::DEFAULT_SHUTDOWN_GRACE;
use crate::platform::Platform;
use crate::transport::Endpoint;
#[cfg(unix)]
use crate::transport::EndpointError;
use crate::transport::Port;
use std::path::PathBuf;
use std::time::Duration;

fn home(path: &str) -> Environment {
    Environment {
        home: Some(PathBuf::from(path)),
        wrapper_dir: None,
        real_wrapper_dir: None,
        platform: Platform::Linux,
    }
}

fn parse(args: &[&str]) -> Args {
    Args::try_parse_from(std::iter::once("iai-mcp-wrapper").chain(args.iter().copied()))
        .expect("valid arguments")
}

// Unix's defaults: HOME, paths joined with '/'.
#[cfg(unix)]
#[test]
fn defaults_hang_off_home() {
    let c = parse(&[]).resolve(&home("/home/u")).expect("valid");
    assert_eq!(
        c.daemon.endpoint,
        Endpoint::Unix(PathBuf::from("/home/u/.iai-mcp/.daemon.sock"))
    );
    assert!(c.cli.degraded.enabled && c.cli.degraded.bank_fallback && c.cli.doctor.enabled);
    assert_eq!(c.cli.degraded.cli, "iai");
    assert_eq!(c.cli.doctor.admin_cli, "iai-mcp");
    assert_eq!(
        c.cli.degraded.env,
        [(
            OsString::from("IAI_MCP_STORE"),
            OsString::from("/home/u/.iai-mcp")
        )],
        "the default store is passed on"
    );
    assert_eq!(c.daemon.state_dir, PathBuf::from("/home/u/.iai-mcp"));
    assert_eq!(c.bridge.policy.mode(), BridgeMode::Fixed);
}

// Unix's defaults: HOME, paths joined with '/'.
#[cfg(unix)]
#[test]
fn no_home_needs_explicit_paths() {
    assert!(matches!(
        parse(&[]).resolve(&Environment::default()),
        Err(ConfigError::Endpoint(EndpointError::NoHome {
            variable: "HOME"
        }))
    ));
    let c = parse(&["--socket-path", "/tmp/s", "--state-dir", "/tmp/st"])
        .resolve(&Environment::default())
        .expect("valid");
    assert_eq!(c.daemon.endpoint, Endpoint::Unix(PathBuf::from("/tmp/s")));
}

#[test]
fn windows_defaults_to_tcp_with_the_profiles_port_and_token_files() {
    let windows = |home: Option<&str>| Environment {
        home: home.map(PathBuf::from),
        wrapper_dir: Some("/venv/Scripts".into()),
        real_wrapper_dir: None,
        platform: Platform::Windows,
    };
    let c = parse(&["--python", "/venv/Scripts/python.exe"])
        .resolve(&windows(Some("/Users/u")))
        .expect("valid");
    assert_eq!(
        c.daemon.endpoint,
        Endpoint::Tcp {
            host: "127.0.0.1".into(),
            port: Port::File("/Users/u/.iai-mcp/.daemon.port".into()),
            token: "/Users/u/.iai-mcp/.daemon.token".into(),
        }
    );
    assert_eq!(c.daemon.state_dir, PathBuf::from("/Users/u/.iai-mcp"));
    assert_eq!(
        c.cli.installation.dirs(),
        [
            PathBuf::from("/venv/Scripts"),
            PathBuf::from("/venv/Scripts/Scripts")
        ],
        "beside python.exe, then its Scripts (a base installation's)"
    );
    let c = parse(&["--socket-path", "/run/d.sock", "--state-dir", "/st"])
        .resolve(&windows(None))
        .expect("no profile needed");
    assert_eq!(
        c.daemon.endpoint,
        Endpoint::Tcp {
            host: "127.0.0.1".into(),
            port: Port::File("/run/d.sock.port".into()),
            token: "/run/d.sock.token".into(),
        }
    );
    let refused = parse(&["--socket-path", "/run/d.sock"])
        .resolve(&windows(None))
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "USERPROFILE is not set: pass --state-dir (or its environment variable)"
    );
}

// Unix socket paths' limit (sun_path).
#[cfg(unix)]
#[test]
fn long_socket_paths_are_refused() {
    let long = format!("/tmp/{}", "x".repeat(200));
    assert!(matches!(
        parse(&["--socket-path", &long]).resolve(&Environment::default()),
        Err(ConfigError::SocketPathTooLong { .. })
    ));
}

#[test]
fn the_socket_path_limit_is_the_platforms() {
    // 105 bytes: fits Linux's 108-byte sun_path, not macOS's 104.
    let path = PathBuf::from(format!("/tmp/{}", "x".repeat(100)));
    let endpoint = Endpoint::Unix(path.clone());
    assert!(check_socket_path(&endpoint, Platform::Linux).is_ok());
    match check_socket_path(&endpoint, Platform::MacOs) {
        Err(ConfigError::SocketPathTooLong { len, max, .. }) => {
            assert_eq!((len, max), (105, 103));
        }
        other => panic!("expected SocketPathTooLong, got {other:?}"),
    }
    let longest = Endpoint::Unix(PathBuf::from("y".repeat(103)));
    assert!(check_socket_path(&longest, Platform::MacOs).is_ok());
}

#[test]
fn empty_values_mean_the_default() {
    let c = Args::try_parse_from([
        "w",
        "--socket-path",
        "",
        "--bridge-mode",
        "",
        "--reconnect-test-delay-ms",
        "",
        "--connect-wait-ms",
        "",
        "--python",
        "",
        "--store",
        "",
        "--log",
        "",
        "--tcp-port",
        "",
        "--cli",
        "",
        "--degraded",
        "",
        "--doctor",
        "",
        "--bank-fallback",
        "",
    ])
    .expect("empty values parse")
    .resolve(&home("/h"))
    .expect("valid");
    assert_eq!(
        c.daemon.endpoint,
        Endpoint::Unix(PathBuf::from("/h/.iai-mcp/.daemon.sock"))
    );
    assert_eq!(c.bridge.policy.mode(), BridgeMode::Fixed);
    assert_eq!(c.bridge.policy.timings().reconnect_delay, Duration::ZERO);
    assert_eq!(
        c.bridge.policy.timings().connect_wait,
        Duration::from_secs(10)
    );
    assert_eq!(c.log.filter, "warn");
    assert_eq!(c.cli.degraded.cli, "iai");
    assert!(c.cli.degraded.enabled && c.cli.doctor.enabled && c.cli.degraded.bank_fallback);
}

// Unix's defaults: HOME, paths joined with '/'.
#[cfg(unix)]
#[test]
fn tcp_and_cli_settings_reach_the_config() {
    let c = parse(&[
        "--tcp-port",
        "4100",
        "--token-path",
        "/t/tok",
        "--cli",
        "/venv/bin/iai",
        "--admin-cli",
        "/venv/bin/iai-mcp",
        "--store",
        "/data/store",
        "--bank-fallback",
        "0",
        "--degraded",
        "off",
        "--doctor",
        "FALSE",
        "--heal-after-ms",
        "2500",
    ])
    .resolve(&home("/h"))
    .expect("valid");
    assert_eq!(
        c.daemon.endpoint,
        Endpoint::Tcp {
            host: "127.0.0.1".into(),
            port: crate::transport::Port::Fixed(4100),
            token: "/t/tok".into(),
        }
    );
    assert_eq!(c.cli.degraded.cli, "/venv/bin/iai");
    assert_eq!(c.cli.degraded.admin_cli, "/venv/bin/iai-mcp");
    assert!(!c.cli.degraded.bank_fallback && !c.cli.degraded.enabled && !c.cli.doctor.enabled);
    assert_eq!(c.cli.doctor.heal_after, Duration::from_millis(2500));
    assert_eq!(
        c.cli.degraded.env,
        [(
            OsString::from("IAI_MCP_STORE"),
            OsString::from("/data/store")
        )]
    );
    let c = parse(&["--socket-path", "/run/d.sock", "--tcp-port", "9"])
        .resolve(&home("/h"))
        .expect("valid");
    assert_eq!(c.daemon.endpoint, Endpoint::Unix("/run/d.sock".into()));
    assert_eq!(
        c.cli.doctor.env,
        [
            (
                OsString::from("IAI_MCP_STORE"),
                OsString::from("/h/.iai-mcp")
            ),
            (
                OsString::from("IAI_DAEMON_SOCKET_PATH"),
                OsString::from("/run/d.sock")
            )
        ]
    );
    for bad in [
        ["--tcp-port", "0"],
        ["--tcp-port", "70000"],
        ["--degraded", "maybe"],
    ] {
        assert!(
            Args::try_parse_from(["w", bad[0], bad[1]]).is_err(),
            "{bad:?}"
        );
    }
}

#[test]
fn bad_values_are_rejected() {
    assert!(
        Args::try_parse_from(["w", "--bridge-mode", "sometimes"]).is_err(),
        "unknown mode"
    );
    assert!(Args::try_parse_from(["w", "--connect-wait-ms", "-1"]).is_err());
    assert!(matches!(
        parse(&["--backoff-initial-ms", "0"]).resolve(&home("/h")),
        Err(ConfigError::Policy(PolicyError::ZeroBackoff))
    ));
    assert!(matches!(
        parse(&["--heartbeat-interval-ms", "0"]).resolve(&home("/h")),
        Err(ConfigError::Zero(_))
    ));
}

#[test]
fn the_installation_is_where_its_python_and_this_binary_are() {
    let c = parse(&["--python", "/venv/bin/python3.11"])
        .resolve(&Environment {
            home: Some("/h".into()),
            wrapper_dir: Some("/opt/wrapper/bin".into()),
            real_wrapper_dir: None,
            platform: Platform::Linux,
        })
        .expect("valid");
    assert_eq!(
        c.cli.installation.dirs(),
        [
            PathBuf::from("/venv/bin"),
            PathBuf::from("/opt/wrapper/bin")
        ]
    );
    assert_eq!(c.cli.degraded.cli, "iai", "names stay names until located");
    let c = parse(&["--cli", "/elsewhere/iai"])
        .resolve(&home("/h"))
        .expect("valid");
    assert_eq!(c.cli.degraded.cli, "/elsewhere/iai");
    assert!(c.cli.installation.dirs().is_empty());
    let c = parse(&["--python", "python3"])
        .resolve(&home("/h"))
        .expect("valid");
    assert!(
        c.cli.installation.dirs().is_empty(),
        "a bare name has no directory"
    );
}

#[test]
fn the_log_filter_follows_the_format_unless_given() {
    let c = parse(&[]).resolve(&home("/h")).expect("valid");
    assert_eq!(
        (c.log.format, c.log.filter.as_str()),
        (LogFormat::Text, "warn")
    );
    let c = parse(&["--log-format", "json"])
        .resolve(&home("/h"))
        .expect("valid");
    assert_eq!(
        (c.log.format, c.log.filter.as_str()),
        (LogFormat::Json, "info")
    );
    let c = parse(&["--log-format", "json", "--log", "debug"])
        .resolve(&home("/h"))
        .expect("valid");
    assert_eq!(c.log.filter, "debug");
    assert!(Args::try_parse_from(["w", "--log-format", "yaml"]).is_err());
}

#[test]
fn defaults_are_the_declared_constants() {
    let c = parse(&[]).resolve(&home("/h")).expect("valid");
    assert_eq!(*c.bridge.policy.timings(), Timings::default());
    assert_eq!(c.session.heartbeat_interval, heartbeat::DEFAULT_INTERVAL);
    assert_eq!(c.session.shutdown_grace, DEFAULT_SHUTDOWN_GRACE);
    assert_eq!(c.session.max_line_bytes, DEFAULT_MAX_LINE_BYTES);
    assert_eq!(c.cli.degraded.limit, degraded::DEFAULT_LIMIT);
    assert_eq!(c.cli.doctor.heal_after, doctor::DEFAULT_HEAL_AFTER);
    let defaults = DegradedConfig::default();
    assert_eq!(
        (
            c.cli.degraded.enabled,
            c.cli.degraded.bank_fallback,
            &c.cli.degraded.cli
        ),
        (defaults.enabled, defaults.bank_fallback, &defaults.cli)
    );
}
