//! The command line: [`Args`], every group of settings flattened into
//! it, and the commands the binary runs instead of serving.

use clap::Parser;

use super::bridge::BridgeArgs;
use super::cli::CliArgs;
use super::daemon::DaemonArgs;
use super::log::LogArgs;
use super::session::SessionArgs;
use crate::install::hosts::Host;

/// The text `--version` prints: this release and the iai-mcp release it
/// stands in for.
fn version_text() -> &'static str {
    let description = crate::mcp::protocol::description();
    description
        .strip_prefix("iai-mcp-wrapper ")
        .unwrap_or(description)
}

/// MCP stdio server for iai-mcp: forwards tool calls to the iai-mcp daemon
/// (Unix socket, or loopback TCP with a token), waiting out daemon restarts
/// instead of failing, and answering the memory tools through the `iai` CLI
/// while the daemon is down.
#[derive(Debug, Clone, Parser)]
#[command(name = "iai-mcp-wrapper", version = version_text(), about, long_about = None, args_conflicts_with_subcommands = true)]
pub struct Args {
    /// Where the daemon listens and the lifecycle files go.
    #[command(flatten)]
    pub daemon: DaemonArgs,

    /// The bridge's mode and timings.
    #[command(flatten)]
    pub bridge: BridgeArgs,

    /// The session's intervals and sizes.
    #[command(flatten)]
    pub session: SessionArgs,

    /// The log.
    #[command(flatten)]
    pub log: LogArgs,

    /// iai-mcp's CLIs: degraded mode, the doctor, the installation, the
    /// store.
    #[command(flatten)]
    pub cli: CliArgs,

    /// Report whether the daemon is reachable (and its release beside the
    /// tool table's), every setting in effect, what is served and where the
    /// lifecycle files go, then exit (0 when the daemon answered, 1
    /// otherwise).
    #[arg(long)]
    pub check: bool,

    /// Instead of serving: edit MCP hosts' configuration files.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// What the binary can do besides serving MCP (which it does when no
/// command is given, as MCP hosts start it).
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// Point the iai-mcp entries in MCP hosts' configuration files at this
    /// binary, keeping every other field; the file as it was is kept beside
    /// it as FILE.iai-mcp-wrapper.bak
    Install(HostChoice),
    /// Give the entries switched by `install` back what they ran before,
    /// from the backup
    Uninstall(HostChoice),
    /// List, per host, which wrapper each iai-mcp entry runs, then the
    /// daemon's release beside the tool table's (exit 0 when every entry
    /// runs this binary)
    Status {
        /// Only this host (repeat for several) [default: every host]
        #[arg(long = "host", value_enum, value_name = "NAME")]
        hosts: Vec<Host>,
    },
}

/// Which hosts to edit, and whether to write.
#[derive(Debug, Clone, clap::Args)]
pub struct HostChoice {
    /// Only this host (repeat for several) [default: every host]
    #[arg(long = "host", value_enum, value_name = "NAME")]
    pub hosts: Vec<Host>,
    /// Print, per file, the change that would be made; write nothing
    #[arg(long)]
    pub dry_run: bool,
}
