//! The endpoint: where the daemon listens ([`Endpoint::select`], 3.3.0's
//! rules and the files beside a custom socket path), and one connection to
//! it, ready for JSON-RPC with the token sent ([`Endpoint::connect`]).

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::platform::{Platform, Transport};

use super::stream::{self, DaemonStream};

/// File name of the daemon's socket under its base directory.
pub const SOCKET_FILE: &str = ".daemon.sock";
/// File name of the port file under the base directory (TCP daemons).
pub const PORT_FILE: &str = ".daemon.port";
/// File name of the token file under the base directory (TCP daemons).
pub const TOKEN_FILE: &str = ".daemon.token";
/// Host dialled for TCP when none is configured.
pub const DEFAULT_TCP_HOST: &str = "127.0.0.1";

/// Largest port or token file read; both hold one short line.
const MAX_SMALL_FILE: u64 = 4096;

/// Where the TCP port comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Port {
    /// A port given in the configuration.
    Fixed(u16),
    /// The port the daemon wrote to this file; read at every connect,
    /// because a restarted daemon listens on a new port.
    File(PathBuf),
}

/// The daemon endpoint the wrapper dials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A Unix socket.
    Unix(PathBuf),
    /// Loopback TCP; the token file's content is sent as the first line of
    /// every connection (read at every connect: the daemon writes a new
    /// token each time it starts).
    Tcp {
        /// Host to dial.
        host: String,
        /// Port, or where to read it.
        port: Port,
        /// The token file.
        token: PathBuf,
    },
}

/// The endpoint-related settings, as configured (flag or environment).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointSettings {
    /// `IAI_DAEMON_SOCKET_PATH`.
    pub socket_path: Option<PathBuf>,
    /// `IAI_DAEMON_TCP_HOST`.
    pub tcp_host: Option<String>,
    /// `IAI_DAEMON_TCP_PORT`.
    pub tcp_port: Option<u16>,
    /// `IAI_DAEMON_TOKEN_PATH`.
    pub token_path: Option<PathBuf>,
    /// `IAI_DAEMON_TRANSPORT`: how the daemon listens, when not as the
    /// platform's daemon does.
    pub transport: Option<Transport>,
}

/// Why no endpoint could be chosen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    /// A default path needs the daemon's base directory (`.iai-mcp` in the
    /// user's profile) and the variable naming the profile is not set.
    #[error(
        "{variable} is not set: set IAI_DAEMON_SOCKET_PATH, or IAI_DAEMON_TCP_PORT and IAI_DAEMON_TOKEN_PATH"
    )]
    NoHome {
        /// The variable (`HOME`, or `USERPROFILE` on Windows).
        variable: &'static str,
    },
}

/// Why one connection could not be made ready.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The port file is missing, unreadable or holds no valid port.
    #[error("no daemon port in {}: {why} (the daemon writes it when it starts)", path.display())]
    PortFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The token file is missing, unreadable or empty.
    #[error("daemon token file {} {why}; the daemon writes it when it starts (restart it, or set IAI_DAEMON_TOKEN_PATH)", path.display())]
    Token {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The socket is served by a process of another user: whatever took the
    /// path is not this user's daemon, and is sent nothing.
    #[error("the daemon socket {} is served by uid {peer}, not by this user (uid {own}); refusing to talk to it (another user's process may have taken the path)", path.display())]
    ForeignPeer {
        /// The socket.
        path: PathBuf,
        /// The uid of the process serving it.
        peer: u32,
        /// This process's effective uid.
        own: u32,
    },
    /// Connecting (or sending the token) failed.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The attempt took longer than allowed.
    #[error("connect timed out after {0:?}")]
    TimedOut(Duration),
}

impl ConnectError {
    /// Whether nothing listened where the daemon was dialled (the
    /// connection was refused): what a daemon between its bind and its
    /// listen looks like.
    pub fn is_refused(&self) -> bool {
        matches!(self, ConnectError::Io(e) if e.kind() == io::ErrorKind::ConnectionRefused)
    }
}

impl Endpoint {
    /// The endpoint 3.3.0 would dial on `platform` (or for a daemon on the
    /// transport the settings name), given the settings and the daemon's
    /// base directory (`.iai-mcp` in the user's profile, if it is known):
    ///
    /// 1. a configured socket path wins: dialled as a Unix socket, or where
    ///    there are none, over TCP with the port and token files the
    ///    daemon writes beside it (`<path>.port`, `<path>.token`);
    /// 2. then a configured TCP port (host default 127.0.0.1);
    /// 3. then, where there are no Unix sockets, the default port file;
    /// 4. else the default socket.
    ///
    /// A configured token path always wins over the default token file.
    pub fn select(
        settings: &EndpointSettings,
        base: Option<&Path>,
        platform: Platform,
    ) -> Result<Self, EndpointError> {
        let transport = settings
            .transport
            .unwrap_or_else(|| platform.daemon_transport());
        let unix_sockets = transport == Transport::UnixSocket;
        let base = || {
            base.ok_or(EndpointError::NoHome {
                variable: platform.home_variable(),
            })
        };
        let default_token = || -> Result<PathBuf, EndpointError> {
            match &settings.token_path {
                Some(path) => Ok(path.clone()),
                None => Ok(base()?.join(TOKEN_FILE)),
            }
        };
        let host = || {
            settings
                .tcp_host
                .clone()
                .unwrap_or_else(|| DEFAULT_TCP_HOST.to_owned())
        };
        if let Some(path) = &settings.socket_path {
            if unix_sockets {
                return Ok(Endpoint::Unix(path.clone()));
            }
            return Ok(Endpoint::Tcp {
                host: DEFAULT_TCP_HOST.to_owned(),
                port: Port::File(with_suffix(path, ".port")),
                token: settings
                    .token_path
                    .clone()
                    .unwrap_or_else(|| with_suffix(path, ".token")),
            });
        }
        if let Some(port) = settings.tcp_port {
            return Ok(Endpoint::Tcp {
                host: host(),
                port: Port::Fixed(port),
                token: default_token()?,
            });
        }
        if !unix_sockets {
            return Ok(Endpoint::Tcp {
                host: DEFAULT_TCP_HOST.to_owned(),
                port: Port::File(base()?.join(PORT_FILE)),
                token: default_token()?,
            });
        }
        Ok(Endpoint::Unix(base()?.join(SOCKET_FILE)))
    }

    /// The files whose appearance or change means the daemon may be back,
    /// for a watch to look out for while it is away: the socket; on TCP
    /// the port file, and the token file (the daemon writes a new one at
    /// every start, and it is all there is to watch with a fixed port).
    pub fn watched_files(&self) -> Vec<PathBuf> {
        match self {
            Endpoint::Unix(path) => vec![path.clone()],
            Endpoint::Tcp {
                port: Port::File(port),
                token,
                ..
            } => vec![port.clone(), token.clone()],
            Endpoint::Tcp {
                port: Port::Fixed(_),
                token,
                ..
            } => vec![token.clone()],
        }
    }

    /// What it means when the daemon closes a connection right after it
    /// was made, before sending a single byte: on TCP, that the token was
    /// refused (iai-mcp's daemon closes such a connection without a word),
    /// naming the token file; on a Unix socket nothing in particular.
    pub fn silent_close_reason(&self) -> Option<String> {
        match self {
            Endpoint::Unix(_) => None,
            Endpoint::Tcp { token, .. } => Some(format!("token refused, {}", token.display())),
        }
    }

    /// What to tell a user who cannot reach the daemon here.
    pub fn hint(&self) -> &'static str {
        match self {
            Endpoint::Unix(_) => {
                "start the daemon, or point IAI_DAEMON_SOCKET_PATH at the socket it listens on"
            }
            Endpoint::Tcp { .. } => {
                "start the daemon, or set IAI_DAEMON_TCP_PORT and IAI_DAEMON_TOKEN_PATH to where it listens"
            }
        }
    }

    /// Connect within `limit` and make the connection ready for JSON-RPC
    /// (on TCP: the token line written first).
    pub async fn connect(&self, limit: Duration) -> Result<DaemonStream, ConnectError> {
        match tokio::time::timeout(limit, self.connect_unbounded()).await {
            Ok(outcome) => outcome,
            Err(_) => Err(ConnectError::TimedOut(limit)),
        }
    }

    async fn connect_unbounded(&self) -> Result<DaemonStream, ConnectError> {
        match self {
            Endpoint::Unix(path) => connect_unix(path).await,
            Endpoint::Tcp { host, port, token } => {
                let port = match port {
                    Port::Fixed(port) => *port,
                    Port::File(path) => read_port(path).await?,
                };
                // Read before dialling: a missing token is reported as
                // such, and the daemon never sees a connection that cannot
                // authenticate.
                let token = read_token(token).await?;
                let mut stream = TcpStream::connect((host.as_str(), port)).await?;
                stream.set_nodelay(true)?;
                let mut line = token.into_bytes();
                line.push(b'\n');
                stream.write_all(&line).await?;
                Ok(stream::tcp(stream))
            }
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Unix(path) => write!(f, "{}", path.display()),
            Endpoint::Tcp {
                host,
                port: Port::Fixed(port),
                ..
            } => write!(f, "tcp://{host}:{port}"),
            Endpoint::Tcp {
                host,
                port: Port::File(path),
                ..
            } => write!(f, "tcp://{host} (port from {})", path.display()),
        }
    }
}

/// `path` with `suffix` appended to its file name (`d.sock` + `.port`).
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// A small file's content, trimmed, and its permission bits, read off the
/// runtime thread (a port or token file on a slow or hung file system must
/// not stall the wrapper).
async fn read_small(path: &Path) -> io::Result<(String, u32)> {
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let file = std::fs::File::open(path)?;
        #[cfg(unix)]
        let mode = std::os::unix::fs::PermissionsExt::mode(&file.metadata()?.permissions()) & 0o777;
        #[cfg(not(unix))]
        let mode = 0o600;
        let mut text = String::new();
        file.take(MAX_SMALL_FILE).read_to_string(&mut text)?;
        Ok((text.trim().to_owned(), mode))
    })
    .await
    .map_err(io::Error::other)?
}

async fn read_port(path: &Path) -> Result<u16, ConnectError> {
    let why = |why: String| ConnectError::PortFile {
        path: path.to_owned(),
        why,
    };
    let (text, _) = read_small(path).await.map_err(|e| why(e.to_string()))?;
    match text.parse::<u16>() {
        Ok(port) if port > 0 => Ok(port),
        _ => Err(why(format!("{text:?} is not a port number"))),
    }
}

async fn read_token(path: &Path) -> Result<String, ConnectError> {
    let why = |why: String| ConnectError::Token {
        path: path.to_owned(),
        why,
    };
    match read_small(path).await {
        // A token others can read lets anyone in: refuse to use it rather
        // than carry on as if the daemon were protected.
        Ok((_, mode)) if mode & 0o077 != 0 => Err(why(format!(
            "is open to other users (mode {mode:04o}): chmod 600 it"
        ))),
        Ok((token, _)) if token.is_empty() => Err(why("is empty".into())),
        Ok((token, _)) if token.contains(['\n', '\r']) => {
            Err(why("holds more than one line".into()))
        }
        Ok((token, _)) => Ok(token),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(why("is missing".into())),
        Err(e) => Err(why(format!("cannot be read: {e}"))),
    }
}

/// Connects, then checks who serves the socket: this user, or root (who
/// can read this user's files anyway). Anyone else is refused.
#[cfg(unix)]
async fn connect_unix(path: &Path) -> Result<DaemonStream, ConnectError> {
    let stream = tokio::net::UnixStream::connect(path).await?;
    let peer = stream.peer_cred()?.uid();
    let own = nix::unistd::geteuid().as_raw();
    if peer != own && peer != 0 {
        return Err(ConnectError::ForeignPeer {
            path: path.to_owned(),
            peer,
            own,
        });
    }
    Ok(stream::unix(stream))
}

#[cfg(not(unix))]
async fn connect_unix(path: &Path) -> Result<DaemonStream, ConnectError> {
    Err(ConnectError::Io(io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "{} is a Unix socket, and this platform has none",
            path.display()
        ),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, BufReader};

    fn settings() -> EndpointSettings {
        EndpointSettings::default()
    }

    const BASE: &str = "/h/.iai-mcp";

    /// Linux and macOS dial a Unix socket by default, Windows TCP.
    fn select(s: &EndpointSettings, unix: bool) -> Endpoint {
        let platform = if unix {
            Platform::Linux
        } else {
            Platform::Windows
        };
        Endpoint::select(s, Some(Path::new(BASE)), platform).expect("an endpoint")
    }

    fn tcp(host: &str, port: Port, token: &str) -> Endpoint {
        Endpoint::Tcp {
            host: host.into(),
            port,
            token: token.into(),
        }
    }

    #[test]
    fn default_is_the_socket_under_home_or_the_port_file_without_unix_sockets() {
        assert_eq!(
            select(&settings(), true),
            Endpoint::Unix("/h/.iai-mcp/.daemon.sock".into())
        );
        assert_eq!(
            select(&settings(), false),
            tcp(
                "127.0.0.1",
                Port::File("/h/.iai-mcp/.daemon.port".into()),
                "/h/.iai-mcp/.daemon.token"
            )
        );
        assert_eq!(
            Endpoint::select(&settings(), None, Platform::Linux),
            Err(EndpointError::NoHome { variable: "HOME" })
        );
        let no_profile = Endpoint::select(&settings(), None, Platform::Windows).unwrap_err();
        assert!(
            no_profile.to_string().starts_with("USERPROFILE is not set"),
            "{no_profile}"
        );
        assert_eq!(
            select(&settings(), true),
            Endpoint::select(&settings(), Some(Path::new(BASE)), Platform::MacOs).expect("macOS")
        );
    }

    #[test]
    fn a_socket_path_wins_over_tcp_settings() {
        let s = EndpointSettings {
            socket_path: Some("/run/d.sock".into()),
            tcp_port: Some(4000),
            ..settings()
        };
        assert_eq!(select(&s, true), Endpoint::Unix("/run/d.sock".into()));
        // Without Unix sockets the daemon writes its port and token beside
        // the configured path.
        assert_eq!(
            select(&s, false),
            tcp(
                "127.0.0.1",
                Port::File("/run/d.sock.port".into()),
                "/run/d.sock.token"
            )
        );
        assert_eq!(
            Endpoint::select(&s, None, Platform::Linux),
            Ok(Endpoint::Unix("/run/d.sock".into()))
        );
    }

    #[test]
    fn a_tcp_port_comes_next_with_the_default_or_given_host_and_token() {
        let s = EndpointSettings {
            tcp_port: Some(4000),
            ..settings()
        };
        assert_eq!(
            select(&s, true),
            tcp("127.0.0.1", Port::Fixed(4000), "/h/.iai-mcp/.daemon.token")
        );
        let s = EndpointSettings {
            tcp_port: Some(4000),
            tcp_host: Some("::1".into()),
            token_path: Some("/t/tok".into()),
            ..settings()
        };
        assert_eq!(select(&s, true), tcp("::1", Port::Fixed(4000), "/t/tok"));
        // A token path given makes HOME unnecessary.
        assert_eq!(
            Endpoint::select(&s, None, Platform::Linux),
            Ok(tcp("::1", Port::Fixed(4000), "/t/tok"))
        );
        let s = EndpointSettings {
            socket_path: Some("/run/d.sock".into()),
            token_path: Some("/t/tok".into()),
            ..settings()
        };
        assert_eq!(
            select(&s, false),
            tcp("127.0.0.1", Port::File("/run/d.sock.port".into()), "/t/tok")
        );
    }

    #[test]
    fn a_transport_setting_applies_the_other_platforms_rules() {
        let tcp_here = EndpointSettings {
            transport: Some(Transport::Tcp),
            ..settings()
        };
        assert_eq!(select(&tcp_here, true), select(&settings(), false));
        let with_path = EndpointSettings {
            socket_path: Some("/run/d.sock".into()),
            transport: Some(Transport::Tcp),
            ..settings()
        };
        assert_eq!(
            select(&with_path, true),
            tcp(
                "127.0.0.1",
                Port::File("/run/d.sock.port".into()),
                "/run/d.sock.token"
            )
        );
        let unix_there = EndpointSettings {
            transport: Some(Transport::UnixSocket),
            ..settings()
        };
        assert_eq!(select(&unix_there, false), select(&settings(), true));
    }

    #[tokio::test]
    async fn tcp_sends_the_token_line_first_and_reads_port_and_token_at_each_connect() {
        let dir = tempfile::tempdir().expect("tempdir");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let port_file = dir.path().join("d.sock.port");
        let token_file = dir.path().join("d.sock.token");
        let endpoint = Endpoint::Tcp {
            host: "127.0.0.1".into(),
            port: Port::File(port_file.clone()),
            token: token_file.clone(),
        };

        let missing = endpoint.connect(Duration::from_secs(5)).await.unwrap_err();
        assert!(missing.to_string().contains("d.sock.port"), "{missing}");
        std::fs::write(&port_file, format!("{port}\n")).expect("port");
        let missing = endpoint.connect(Duration::from_secs(5)).await.unwrap_err();
        let text = missing.to_string();
        assert!(
            text.contains("d.sock.token") && text.contains("missing"),
            "{text}"
        );
        let write_token = |text: &str, mode: u32| {
            std::fs::write(&token_file, text).expect("token");
            // Mode bits are Unix's; Windows has none to set.
            #[cfg(unix)]
            std::fs::set_permissions(
                &token_file,
                std::os::unix::fs::PermissionsExt::from_mode(mode),
            )
            .expect("chmod");
            #[cfg(not(unix))]
            let _ = mode;
        };
        write_token("", 0o600);
        let empty = endpoint.connect(Duration::from_secs(5)).await.unwrap_err();
        assert!(empty.to_string().contains("empty"), "{empty}");
        // A token file open to other users is refused where modes exist.
        #[cfg(unix)]
        {
            write_token("secret\n", 0o644);
            let open = endpoint.connect(Duration::from_secs(5)).await.unwrap_err();
            assert!(
                open.to_string().contains("open to other users (mode 0644)"),
                "{open}"
            );
        }

        for token in ["first-token", "second-token"] {
            write_token(&format!("{token}\n"), 0o600);
            let mut stream = endpoint
                .connect(Duration::from_secs(5))
                .await
                .expect("connect");
            stream.write_all(b"{\"id\":1}\n").await.expect("write");
            let (accepted, _) = listener.accept().await.expect("accept");
            let mut lines = BufReader::new(accepted).lines();
            assert_eq!(
                lines.next_line().await.expect("read").as_deref(),
                Some(token)
            );
            assert_eq!(
                lines.next_line().await.expect("read").as_deref(),
                Some("{\"id\":1}")
            );
        }
    }

    #[test]
    fn endpoints_display_where_they_dial() {
        assert_eq!(Endpoint::Unix("/s".into()).to_string(), "/s");
        assert_eq!(
            tcp("127.0.0.1", Port::Fixed(9), "/t").to_string(),
            "tcp://127.0.0.1:9"
        );
        assert!(
            tcp("127.0.0.1", Port::File("/p".into()), "/t")
                .to_string()
                .contains("/p")
        );
    }
}
