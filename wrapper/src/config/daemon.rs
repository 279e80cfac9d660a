//! Where the daemon listens and where the wrapper's own files go.

use std::path::{Path, PathBuf};

use super::environment::{Environment, given};
use super::error::ConfigError;
use super::values::{TcpPort, TransportSetting, any_text, port, transport};
use crate::platform::Platform;
use crate::transport::{Endpoint, EndpointSettings};

/// The daemon's endpoint and the lifecycle files' directory.
#[derive(Debug, Clone, clap::Args)]
pub struct DaemonArgs {
    /// Daemon socket to dial [default: $HOME/.iai-mcp/.daemon.sock]. Wins
    /// over the TCP settings. Where there are no Unix sockets, the daemon's
    /// port and token files beside it (PATH.port, PATH.token) are used.
    #[arg(long, env = "IAI_DAEMON_SOCKET_PATH",
        value_parser = any_text, value_name = "PATH")]
    pub socket_path: Option<String>,

    /// Dial the daemon over TCP on this port (when no socket path is set);
    /// the token file's content is sent first on every connection.
    #[arg(long, env = "IAI_DAEMON_TCP_PORT", value_parser = port, value_name = "PORT")]
    pub tcp_port: Option<TcpPort>,

    /// Host for --tcp-port [default: 127.0.0.1]. The token travels in clear
    /// text: use loopback only.
    #[arg(long, env = "IAI_DAEMON_TCP_HOST", value_parser = any_text, value_name = "HOST")]
    pub tcp_host: Option<String>,

    /// Token file for TCP [default: $HOME/.iai-mcp/.daemon.token].
    #[arg(long, env = "IAI_DAEMON_TOKEN_PATH", value_parser = any_text, value_name = "PATH")]
    pub token_path: Option<String>,

    /// How the daemon listens: `unix` (a socket) or `tcp` (loopback, with
    /// the port and token files it writes, as on Windows) [default: tcp on
    /// Windows, unix elsewhere]. For tests, and daemons run in the other
    /// platform's way.
    #[arg(long, env = "IAI_DAEMON_TRANSPORT", value_name = "unix|tcp",
        value_parser = transport, hide_short_help = true)]
    pub daemon_transport: Option<TransportSetting>,

    /// Directory for the heartbeat and wake files [default: $HOME/.iai-mcp]
    #[arg(long, env = "IAI_MCP_STATE_DIR",
        value_parser = any_text, value_name = "DIR")]
    pub state_dir: Option<String>,
}

/// What [`DaemonArgs`] resolve to: the daemon's part of the
/// [`super::Config`].
#[derive(Debug, Clone)]
pub struct DaemonSettings {
    /// Where the daemon listens.
    pub endpoint: Endpoint,
    /// The socket path as given, passed on to the CLIs so that they find
    /// the same daemon.
    socket_path: Option<PathBuf>,
    /// Heartbeat and wake-file directory.
    pub state_dir: PathBuf,
}

impl DaemonSettings {
    /// The socket path as given (not the default), if any.
    pub fn socket_path(&self) -> Option<&Path> {
        self.socket_path.as_deref()
    }
}

impl DaemonArgs {
    /// The endpoint and directories, with defaults under `base` (the
    /// daemon's base directory in the user's profile, if known).
    pub(super) fn resolve(
        self,
        env: &Environment,
        base: Option<&Path>,
    ) -> Result<DaemonSettings, ConfigError> {
        let socket_path = given(self.socket_path);
        let endpoint = Endpoint::select(
            &EndpointSettings {
                socket_path: socket_path.clone(),
                tcp_host: self.tcp_host.filter(|h| !h.is_empty()),
                tcp_port: self.tcp_port.and_then(|p| p.0),
                token_path: given(self.token_path),
                transport: self.daemon_transport.and_then(|t| t.0),
            },
            base,
            env.platform,
        )?;
        check_socket_path(&endpoint, env.platform)?;
        let state_dir = match given(self.state_dir) {
            Some(p) => p,
            None => base.map(Path::to_path_buf).ok_or(ConfigError::NoHome {
                variable: env.platform.home_variable(),
                flag: "state-dir",
            })?,
        };
        Ok(DaemonSettings {
            endpoint,
            socket_path,
            state_dir,
        })
    }
}

/// A Unix socket path must fit the platform's address structure
/// ([`Platform::max_socket_path`]).
pub(super) fn check_socket_path(
    endpoint: &Endpoint,
    platform: Platform,
) -> Result<(), ConfigError> {
    if let Endpoint::Unix(path) = endpoint {
        let len = path.as_os_str().len();
        let max = platform.max_socket_path();
        if len > max {
            return Err(ConfigError::SocketPathTooLong {
                path: path.clone(),
                len,
                max,
            });
        }
    }
    Ok(())
}
