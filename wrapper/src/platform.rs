//! The operating system the wrapper behaves for, as a value.
//!
//! iai-mcp 3.3.0 ships for Linux, macOS and Windows, and does a few things
//! differently on each (how its daemon is supervised and woken, where host
//! configuration files live, whether the daemon listens on a Unix socket
//! or on loopback TCP). Those decisions are made on a [`Platform`] value
//! rather than with `cfg` where they are taken, so every platform's
//! decisions can be tested on any machine; only [`Platform::current`]
//! reads the build target. Unix systems iai-mcp does not ship for (the
//! BSDs, say) behave as Linux does.

/// An operating system iai-mcp ships for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Platform {
    /// Linux, and any other Unix but macOS: a systemd user unit supervises
    /// the daemon, which listens on a Unix socket.
    Linux,
    /// macOS: launchd supervises the daemon (`com.iai-mcp.daemon`), which
    /// listens on a Unix socket.
    MacOs,
    /// Windows: a scheduled task supervises the daemon, which listens on
    /// loopback TCP and writes its port and token to files.
    Windows,
}

impl Platform {
    /// The platform this binary was built for.
    pub const fn current() -> Platform {
        if cfg!(target_os = "macos") {
            Platform::MacOs
        } else if cfg!(windows) {
            Platform::Windows
        } else {
            Platform::Linux
        }
    }

    /// Longest Unix socket path in bytes, the terminating NUL left out:
    /// `sun_path` holds 104 bytes on macOS and 108 on Linux (and in
    /// Windows' `afunix.h`, though the wrapper dials TCP there).
    pub fn max_socket_path(self) -> usize {
        match self {
            Platform::MacOs => 103,
            Platform::Linux | Platform::Windows => 107,
        }
    }

    /// The name used in logs and reports.
    pub fn name(self) -> &'static str {
        match self {
            Platform::Linux => "linux",
            Platform::MacOs => "macos",
            Platform::Windows => "windows",
        }
    }
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_platform_is_the_build_target() {
        let expected = if cfg!(target_os = "macos") {
            "macos"
        } else if cfg!(windows) {
            "windows"
        } else {
            "linux"
        };
        assert_eq!(Platform::current().name(), expected);
        assert_eq!(Platform::current().to_string(), expected);
    }

    #[test]
    fn socket_paths_fit_each_platforms_sun_path() {
        assert_eq!(Platform::MacOs.max_socket_path(), 103);
        assert_eq!(Platform::Linux.max_socket_path(), 107);
        assert_eq!(Platform::Windows.max_socket_path(), 107);
    }
}
