//! The environment of an install (pip, npm) or of a program the kits
//! start: cleared, then given an explicit list. From this process's own
//! environment only what the package registries' clients need of this
//! machine is kept (its certificate authorities, the registries and their
//! settings, proxies set for them); the user's configuration files for
//! pip and npm are named to the client explicitly, since its `HOME` is a
//! scratch directory, where install scripts and caches write.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Variables naming this machine's certificate authorities.
pub const CERTIFICATES: [&str; 5] = [
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
];

/// Proxies, in both spellings: kept for installs when set (the registries
/// may be reached through them), never for the hosts, which are offline.
pub const PROXIES: [&str; 8] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
];

/// pip's settings of where and how to fetch.
pub const PIP: [&str; 10] = [
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
    "PIP_NO_INDEX",
    "PIP_CERT",
    "PIP_CLIENT_CERT",
    "PIP_TRUSTED_HOST",
    "PIP_DEFAULT_TIMEOUT",
    "PIP_RETRIES",
    "PIP_CONFIG_FILE",
];

/// npm's settings of where and how to fetch, as `npm_config_NAME` (any
/// case, `-` written `_`).
pub const NPM: [&str; 11] = [
    "registry",
    "cafile",
    "ca",
    "cert",
    "key",
    "strict_ssl",
    "proxy",
    "https_proxy",
    "noproxy",
    "userconfig",
    "globalconfig",
];

/// The client an install runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// pip, in a virtual environment.
    Pip,
    /// npm.
    Npm,
}

/// A cleared environment and the variables given to it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanEnv {
    vars: Vec<(OsString, OsString)>,
}

impl CleanEnv {
    /// Nothing but `PATH` as this process has it (a default otherwise).
    pub fn with_path() -> Self {
        let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
        let mut env = CleanEnv::default();
        env.set("PATH", path);
        env
    }

    /// The environment of an install by `client`: `PATH`, `HOME` set to
    /// `home` (a scratch directory: caches and install scripts write
    /// there), a UTF-8 locale, the certificate authorities, proxies and
    /// the client's own registry settings this process has, and the
    /// user's configuration file of the client, named explicitly.
    pub fn for_install(client: Client, home: &Path) -> Self {
        let mut env = CleanEnv::with_path();
        env.set("HOME", home);
        env.set("LC_ALL", "C.UTF-8");
        env.inherit(&CERTIFICATES);
        env.inherit(&PROXIES);
        match client {
            Client::Pip => {
                env.inherit(&PIP);
                if !env.has("PIP_CONFIG_FILE")
                    && let Some(file) = user_pip_config()
                {
                    env.set("PIP_CONFIG_FILE", file);
                }
            }
            Client::Npm => {
                for (name, value) in std::env::vars_os() {
                    if is_npm_setting(&name) {
                        env.set(name, value);
                    }
                }
                let named = env.vars.iter().any(|(k, _)| {
                    k.to_string_lossy()
                        .eq_ignore_ascii_case("npm_config_userconfig")
                });
                if !named && let Some(file) = user_npmrc() {
                    env.set("npm_config_userconfig", file);
                }
            }
        }
        env
    }

    /// Sets `name` to `value`, replacing an earlier value.
    pub fn set(&mut self, name: impl Into<OsString>, value: impl Into<OsString>) {
        let name = name.into();
        self.vars.retain(|(k, _)| *k != name);
        self.vars.push((name, value.into()));
    }

    /// Copies each of `names` this process has set.
    pub fn inherit(&mut self, names: &[&str]) {
        for name in names {
            if let Some(value) = std::env::var_os(name) {
                self.set(*name, value);
            }
        }
    }

    /// Whether `name` is set.
    pub fn has(&self, name: &str) -> bool {
        self.vars.iter().any(|(k, _)| k == name)
    }

    /// The value of `name`, if set.
    pub fn get(&self, name: &str) -> Option<&OsStr> {
        self.vars
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_os_str())
    }

    /// The variables, in the order set.
    pub fn vars(&self) -> &[(OsString, OsString)] {
        &self.vars
    }

    /// Clears `command`'s environment and gives it these variables.
    pub fn apply<'c>(&self, command: &'c mut Command) -> &'c mut Command {
        command.env_clear().envs(self.vars.iter().cloned())
    }
}

/// Whether `name` is one of npm's registry settings ([`NPM`]).
fn is_npm_setting(name: &OsStr) -> bool {
    let name = name.to_string_lossy().to_ascii_lowercase();
    name.strip_prefix("npm_config_")
        .is_some_and(|setting| NPM.contains(&setting.replace('-', "_").as_str()))
}

/// This user's home, from `HOME`.
fn user_home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// The user's pip configuration file, where pip looks for it.
fn user_pip_config() -> Option<PathBuf> {
    let home = user_home()?;
    let config_home = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map_or_else(|| home.join(".config"), PathBuf::from);
    [config_home.join("pip/pip.conf"), home.join(".pip/pip.conf")]
        .into_iter()
        .find(|file| file.is_file())
}

/// The user's `.npmrc`.
fn user_npmrc() -> Option<PathBuf> {
    Some(user_home()?.join(".npmrc")).filter(|file| file.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npm_settings_are_told_by_name_in_any_case() {
        assert!(is_npm_setting(OsStr::new("npm_config_registry")));
        assert!(is_npm_setting(OsStr::new("NPM_CONFIG_CAFILE")));
        assert!(is_npm_setting(OsStr::new("npm_config_strict-ssl")));
        assert!(!is_npm_setting(OsStr::new("npm_config_script_shell")));
        assert!(!is_npm_setting(OsStr::new("NODE_OPTIONS")));
    }

    #[test]
    fn an_install_gets_a_scratch_home_and_no_other_variable_of_the_user() {
        let env = CleanEnv::for_install(Client::Npm, Path::new("/scratch"));
        assert_eq!(env.get("HOME"), Some(OsStr::new("/scratch")));
        assert!(env.has("PATH"));
        let allowed = |name: &str| {
            ["PATH", "HOME", "LC_ALL"].contains(&name)
                || CERTIFICATES.contains(&name)
                || PROXIES.contains(&name)
                || is_npm_setting(OsStr::new(name))
        };
        for (name, _) in env.vars() {
            let name = name.to_string_lossy();
            assert!(allowed(&name), "{name} leaked into an npm install");
        }
        let mut command = Command::new("true");
        env.apply(&mut command);
        let given: Vec<_> = command.get_envs().collect();
        assert_eq!(given.len(), env.vars().len());
    }

    #[test]
    fn a_later_value_replaces_an_earlier_one() {
        let mut env = CleanEnv::default();
        env.set("A", "1");
        env.set("A", "2");
        assert_eq!(env.vars().len(), 1);
        assert_eq!(env.get("A"), Some(OsStr::new("2")));
    }
}
