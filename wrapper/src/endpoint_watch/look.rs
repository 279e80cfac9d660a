//! One look at the endpoint's files, and whether what it sees is news of a
//! daemon that may be back.
//!
//! The daemon's own order decides what counts. On a Unix socket it binds
//! and listens in one call: a socket that was not there, or is another
//! socket than before, is news (a regular file at its path is none). On TCP (3.3.0's `_ipc.py`) it
//! writes its token file (first empty, then the token), binds and
//! listens, and only then writes the port file (truncated first): so news
//! is a port file that holds a port and was not seen so before, with a
//! token beside it. An empty port file, an empty token, or a token written
//! while the port file still names the previous run's port, is not. With a
//! port fixed in the settings, a new token is the only sign there is.
//!
//! A look reads only regular files, at most a few kilobytes each: a FIFO
//! or a device at a watched path is never opened.

use std::io::Read;
use std::path::Path;
use std::time::SystemTime;

use crate::transport::{Endpoint, Port};

/// Longest port or token file read.
const MAX_FILE: u64 = 4096;

/// What tells one file from another at the same path, or the same file
/// rewritten: its size, modification time and (on Unix) inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

impl FileId {
    /// The identity of whatever is at `path` (a link is not followed), if
    /// anything is.
    fn of(path: &Path) -> Option<FileId> {
        path.symlink_metadata().ok().map(|m| FileId::from(&m))
    }

    /// The identity of the socket at `path`, if a socket is there: a
    /// regular file or anything else at a socket's path is not one (on
    /// Unix; elsewhere, whatever is there).
    fn of_socket(path: &Path) -> Option<FileId> {
        let metadata = path.symlink_metadata().ok()?;
        is_socket(&metadata).then(|| FileId::from(&metadata))
    }

    fn from(metadata: &std::fs::Metadata) -> FileId {
        FileId {
            len: metadata.len(),
            modified: metadata.modified().ok(),
            inode: inode(metadata),
        }
    }
}

#[cfg(unix)]
fn is_socket(metadata: &std::fs::Metadata) -> bool {
    std::os::unix::fs::FileTypeExt::is_socket(&metadata.file_type())
}

#[cfg(not(unix))]
fn is_socket(_: &std::fs::Metadata) -> bool {
    true
}

#[cfg(unix)]
fn inode(metadata: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(metadata)
}

#[cfg(not(unix))]
fn inode(_: &std::fs::Metadata) -> u64 {
    0
}

/// What one look at the endpoint found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sighting {
    /// A Unix socket: the socket at its path, if one is there.
    Socket(Option<FileId>),
    /// TCP, the port read from a file: the port and that file's identity
    /// when the file holds one, and whether the token file holds a token.
    PortFile {
        /// The port and the port file's identity.
        port: Option<(u16, FileId)>,
        /// The token file holds a token.
        token: bool,
    },
    /// TCP on a port fixed in the settings: the token file's identity when
    /// it holds a token.
    Token(Option<FileId>),
}

impl Sighting {
    /// Looks at `endpoint`'s files now.
    pub fn of(endpoint: &Endpoint) -> Sighting {
        match endpoint {
            Endpoint::Unix(path) => Sighting::Socket(FileId::of_socket(path)),
            Endpoint::Tcp {
                port: Port::File(port),
                token,
                ..
            } => Sighting::PortFile {
                port: read_port(port),
                token: holds_text(token).is_some(),
            },
            Endpoint::Tcp {
                port: Port::Fixed(_),
                token,
                ..
            } => Sighting::Token(holds_text(token)),
        }
    }

    /// Whether the endpoint looks ready to be dialled.
    pub fn is_ready(&self) -> bool {
        match self {
            Sighting::Socket(file) => file.is_some(),
            Sighting::PortFile { port, token } => port.is_some() && *token,
            Sighting::Token(token) => token.is_some(),
        }
    }

    /// Whether this sighting, after `before`, is news of a daemon that may
    /// be back: ready now, and what readiness rests on (the socket file,
    /// the port file, the token with a fixed port) is not what it was.
    pub fn is_news_after(&self, before: &Sighting) -> bool {
        if !self.is_ready() {
            return false;
        }
        match (self, before) {
            (Sighting::Socket(now), Sighting::Socket(then)) => now != then,
            (Sighting::PortFile { port: now, .. }, Sighting::PortFile { port: then, .. }) => {
                now != then
            }
            (Sighting::Token(now), Sighting::Token(then)) => now != then,
            // The endpoint itself changed kind: only a new endpoint does.
            _ => true,
        }
    }
}

/// The port a port file holds (trimmed, a number from 1 to 65535), with the
/// file's identity.
fn read_port(path: &Path) -> Option<(u16, FileId)> {
    let id = FileId::of(path)?;
    let text = read_regular(path)?;
    match text.trim().parse::<u16>() {
        Ok(port) if port > 0 => Some((port, id)),
        _ => None,
    }
}

/// The identity of a file that holds some text once trimmed.
fn holds_text(path: &Path) -> Option<FileId> {
    let id = FileId::of(path)?;
    let text = read_regular(path)?;
    (!text.trim().is_empty()).then_some(id)
}

/// A regular file's text, at most [`MAX_FILE`] bytes.
fn read_regular(path: &Path) -> Option<String> {
    let metadata = std::fs::metadata(path).ok()?;
    if !metadata.is_file() {
        return None;
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_FILE)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(dir: &Path) -> Endpoint {
        Endpoint::Tcp {
            host: "127.0.0.1".into(),
            port: Port::File(dir.join("d.port")),
            token: dir.join("d.token"),
        }
    }

    /// Writes `text` to `path` as a new file (another inode, as the daemon's
    /// rewrite makes).
    fn write(path: &Path, text: &str) {
        let _ = std::fs::remove_file(path);
        std::fs::write(path, text).expect("write");
    }

    #[test]
    fn on_tcp_only_a_port_written_beside_a_token_is_news() {
        let dir = tempfile::tempdir().expect("tempdir");
        let endpoint = tcp(dir.path());
        let (port, token) = (dir.path().join("d.port"), dir.path().join("d.token"));
        // A previous run's files.
        write(&token, "old-token");
        write(&port, "4100");
        let mut seen = Sighting::of(&endpoint);
        assert!(seen.is_ready());
        let mut step = |what: &dyn Fn(), news: bool, why: &str| {
            what();
            let now = Sighting::of(&endpoint);
            assert_eq!(
                now.is_news_after(&seen),
                news,
                "{why}: {now:?} after {seen:?}"
            );
            seen = now;
        };
        // The daemon's start, as 3.3.0 orders it.
        step(&|| write(&token, ""), false, "the token file emptied");
        step(
            &|| write(&token, "new-token"),
            false,
            "a token, the old port",
        );
        step(&|| write(&port, ""), false, "the port file emptied");
        step(&|| write(&port, "4200"), true, "the new port");
        step(&|| write(&port, "4200\n"), true, "the port file rewritten");
        step(&|| write(&port, "not a port"), false, "garbage");
        step(&|| write(&port, "0"), false, "port 0");
        step(&|| write(&port, "4300"), true, "a port again");
        step(
            &|| std::fs::remove_file(&token).expect("rm"),
            false,
            "no token",
        );
        step(&|| write(&token, "t"), false, "a token, the same port");
    }

    #[cfg(unix)]
    #[test]
    fn on_a_socket_a_new_socket_is_news_and_its_loss_or_a_file_is_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("d.sock");
        let endpoint = Endpoint::Unix(path.clone());
        let absent = Sighting::of(&endpoint);
        assert!(!absent.is_ready());
        std::fs::write(&path, "").expect("a regular file");
        let file = Sighting::of(&endpoint);
        assert!(!file.is_ready() && !file.is_news_after(&absent));
        std::fs::remove_file(&path).expect("rm");
        let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
        let present = Sighting::of(&endpoint);
        assert!(present.is_news_after(&absent));
        assert!(!present.is_news_after(&present.clone()), "nothing changed");
        drop(listener);
        std::fs::remove_file(&path).expect("rm");
        let gone = Sighting::of(&endpoint);
        assert!(!gone.is_news_after(&present));
        let _again = std::os::unix::net::UnixListener::bind(&path).expect("bind again");
        assert!(Sighting::of(&endpoint).is_news_after(&gone));
    }

    #[test]
    fn with_a_fixed_port_a_new_token_is_news() {
        let dir = tempfile::tempdir().expect("tempdir");
        let token = dir.path().join("d.token");
        let endpoint = Endpoint::Tcp {
            host: "127.0.0.1".into(),
            port: Port::Fixed(4100),
            token: token.clone(),
        };
        let none = Sighting::of(&endpoint);
        write(&token, "");
        let empty = Sighting::of(&endpoint);
        assert!(!empty.is_news_after(&none));
        write(&token, "t1");
        let first = Sighting::of(&endpoint);
        assert!(first.is_news_after(&empty));
        write(&token, "t2");
        assert!(Sighting::of(&endpoint).is_news_after(&first));
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_where_the_port_file_should_be_is_never_opened() {
        let dir = tempfile::tempdir().expect("tempdir");
        let endpoint = tcp(dir.path());
        write(&dir.path().join("d.token"), "t");
        nix::unistd::mkfifo(
            &dir.path().join("d.port"),
            nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
        )
        .expect("mkfifo");
        // Opening the FIFO would block this test for ever.
        let seen = Sighting::of(&endpoint);
        assert!(!seen.is_ready());
    }
}
