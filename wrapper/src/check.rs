//! `--check`: a human-readable report of whether this wrapper can work here.

use std::io::Write;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use crate::config::Config;
use crate::lifecycle::{heartbeat::Heartbeat, wake};
use crate::mcp::protocol;
use crate::tools;

/// What the daemon probe found.
#[derive(Debug)]
pub enum Probe {
    /// Connected and got a JSON-RPC response.
    Answered,
    /// Connected, but no valid response came in time.
    Silent(String),
    /// Could not connect.
    Unreachable(String),
}

/// Connect to the daemon and make one read-only call (`topology`).
pub async fn probe(config: &Config) -> Probe {
    let connect = tokio::time::timeout(
        Duration::from_secs(1),
        UnixStream::connect(&config.socket_path),
    )
    .await;
    let mut stream = match connect {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Probe::Unreachable(e.to_string()),
        Err(_) => return Probe::Unreachable("connect timed out after 1 s".into()),
    };
    let exchange = async {
        stream
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"topology\",\"params\":{}}\n")
            .await?;
        let mut lines = BufReader::new(&mut stream).lines();
        while let Some(line) = lines.next_line().await? {
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && v.get("id") == Some(&Value::from(1))
            {
                return Ok(());
            }
        }
        Err(std::io::Error::other("connection closed before a response"))
    };
    match tokio::time::timeout(Duration::from_secs(3), exchange).await {
        Ok(Ok(())) => Probe::Answered,
        Ok(Err(e)) => Probe::Silent(e.to_string()),
        Err(_) => Probe::Silent("no response within 3 s".into()),
    }
}

/// Print the report to `out`; returns whether the daemon answered.
pub async fn report(config: &Config, out: &mut impl Write) -> std::io::Result<bool> {
    let probe = probe(config).await;
    let (mark, detail, ok) = match &probe {
        Probe::Answered => ("ok", "reachable, answers JSON-RPC".to_owned(), true),
        Probe::Silent(why) => ("FAIL", format!("accepts connections but {why}"), false),
        Probe::Unreachable(why) => ("FAIL", format!("not reachable: {why}"), false),
    };
    writeln!(out, "iai-mcp-wrapper {}", env!("CARGO_PKG_VERSION"))?;
    writeln!(
        out,
        "[{mark}] daemon socket {}: {detail}",
        config.socket_path.display()
    )?;
    if !ok {
        writeln!(
            out,
            "       start the iai-mcp daemon, or point IAI_DAEMON_SOCKET_PATH / --socket-path at its socket"
        )?;
    }
    writeln!(out, "bridge mode: {}", config.policy.mode())?;
    let t = config.policy.timings();
    writeln!(
        out,
        "timings: connect wait {:?}, call timeout {:?}, backoff {:?}..{:?}, reconnect test delay {:?}",
        t.connect_wait,
        t.call_timeout,
        t.backoff.initial(),
        t.backoff.max(),
        t.reconnect_delay
    )?;
    writeln!(
        out,
        "protocol: legacy (initialize) {}; modern (per-request _meta) {}",
        protocol::LEGACY_VERSIONS.join(", "),
        protocol::MODERN_VERSION
    )?;
    writeln!(out, "tools ({}):", tools::all().len())?;
    for tool in tools::all() {
        let kind = if tool.replay_safe() {
            "read-only"
        } else {
            "writes"
        };
        writeln!(out, "  {:<26} {kind}", tool.name)?;
    }
    writeln!(
        out,
        "heartbeat: {}/heartbeat-<pid>-<uuid>.json (every {:?})",
        Heartbeat::dir(&config.state_dir).display(),
        config.heartbeat_interval
    )?;
    writeln!(
        out,
        "wake signal (when the daemon is down at start): {}",
        wake::signal_path(&config.state_dir).display()
    )?;
    Ok(ok)
}
