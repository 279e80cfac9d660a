//! Which wrapper a command tests, and how it reports: the options every
//! scenario's command takes, and the race's.

use std::process::ExitCode;

use clap::Args;
use devkit::rows::verdict_code;

use crate::daemon::Transport;
use crate::error::HarnessError;
use crate::scenario::Setup;
use crate::wrapper::{BridgeMode, WrapperCommand};

/// Which wrapper to test, and how to report.
#[derive(Debug, Clone, Args)]
pub struct Target {
    /// Wrapper command line to test, e.g. "node /path/dist/index.js"
    /// (default: this workspace's iai-mcp-wrapper). Split like a shell
    /// would, without expansions; leading NAME=value words set environment
    /// variables. Another wrapper is reported on, not judged: exit code 0.
    #[arg(long, value_name = "CMD")]
    pub wrapper_cmd: Option<String>,
    /// Bridge mode to set through IAI_MCP_BRIDGE_MODE (unset: the wrapper's
    /// default).
    #[arg(long, value_name = "fixed|prefix")]
    pub mode: Option<BridgeMode>,
    /// How the fake daemon listens: a Unix socket, or loopback TCP with a
    /// token (as iai-mcp does where there are no Unix sockets).
    #[arg(long, default_value = "unix", value_name = "unix|tcp")]
    pub transport: Transport,
    /// Print the report as one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
}

impl Target {
    /// The wrapper to start.
    pub fn command(&self) -> Result<WrapperCommand, HarnessError> {
        match &self.wrapper_cmd {
            Some(line) => WrapperCommand::parse_shell_words(line),
            None => WrapperCommand::try_this_workspace(),
        }
    }

    /// The scenario setup these options ask for.
    pub fn setup(&self) -> Setup {
        Setup {
            mode: self.mode,
            transport: self.transport,
            fake_daemon_bin: None,
        }
    }

    /// The exit code of a run: a verdict for this workspace's wrapper, 0
    /// for another one (reported on, not judged).
    pub fn exit_code(&self, passed: bool) -> ExitCode {
        verdict_code(passed || self.wrapper_cmd.is_some())
    }
}
