//! The value types of settings and their parsers: an empty value means
//! the flag's default (hosts often write a variable as `""` rather than
//! leave it out), anything else is parsed strictly.

use std::ffi::OsStr;
use std::fmt::Display;
use std::marker::PhantomData;
use std::str::FromStr;
use std::time::Duration;

use clap::builder::TypedValueParser;
use clap::error::ErrorKind;

use crate::platform::Transport;

/// Parses a setting's value; an empty value means the default the flag
/// declares (hosts often write a variable as `""` rather than leave it
/// out), anything else is parsed strictly.
#[derive(Debug)]
pub struct EmptyIsDefault<T>(PhantomData<fn() -> T>);

impl<T> EmptyIsDefault<T> {
    /// The parser for settings of type `T`.
    pub fn new() -> Self {
        EmptyIsDefault(PhantomData)
    }
}

impl<T> Default for EmptyIsDefault<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for EmptyIsDefault<T> {
    fn clone(&self) -> Self {
        Self::new()
    }
}

impl<T> TypedValueParser for EmptyIsDefault<T>
where
    T: FromStr + Clone + Send + Sync + 'static,
    T::Err: Display,
{
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        let name = arg.map_or_else(|| "the setting".to_owned(), |a| format!("--{}", a.get_id()));
        let Some(text) = value.to_str() else {
            return Err(clap::Error::raw(
                ErrorKind::InvalidUtf8,
                format!("the value of {name} is not UTF-8\n"),
            )
            .with_cmd(cmd));
        };
        let text = if text.is_empty() {
            arg.and_then(|a| a.get_default_values().first())
                .and_then(|default| default.to_str())
                .unwrap_or(text)
        } else {
            text
        };
        text.parse().map_err(|e: T::Err| {
            clap::Error::raw(
                ErrorKind::ValueValidation,
                format!("invalid value {text:?} for {name}: {e}\n"),
            )
            .with_cmd(cmd)
        })
    }
}

/// Any text, the empty string included (an empty value means "unset").
pub(super) fn any_text(s: &str) -> Result<String, std::convert::Infallible> {
    Ok(s.to_owned())
}

/// A duration in whole milliseconds, as the settings spell durations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Millis(pub Duration);

impl FromStr for Millis {
    type Err = std::num::ParseIntError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse().map(|ms| Millis(Duration::from_millis(ms)))
    }
}

impl Display for Millis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0.as_millis())
    }
}

/// An on/off setting. Accepts `on`/`off`, `1`/`0`, `true`/`false` and
/// `yes`/`no` in any case, so that a value written for iai-mcp 3.3.0
/// (which only knew `0`) keeps its meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switch(pub bool);

impl FromStr for Switch {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "on" | "1" | "true" | "yes" => Ok(Switch(true)),
            "off" | "0" | "false" | "no" => Ok(Switch(false)),
            other => Err(format!("expected on or off (or 1/0), got {other:?}")),
        }
    }
}

impl Display for Switch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0 { "on" } else { "off" })
    }
}

/// A TCP port number, 1 to 65535, or unset (an empty value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpPort(pub Option<u16>);

pub(super) fn port(s: &str) -> Result<TcpPort, String> {
    if s.is_empty() {
        return Ok(TcpPort(None));
    }
    match s.parse::<u16>() {
        Ok(0) | Err(_) => Err(format!("expected a port number from 1 to 65535, got {s:?}")),
        Ok(port) => Ok(TcpPort(Some(port))),
    }
}

/// How the daemon listens, or unset (an empty value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransportSetting(pub Option<Transport>);

pub(super) fn transport(s: &str) -> Result<TransportSetting, String> {
    if s.is_empty() {
        return Ok(TransportSetting(None));
    }
    s.parse().map(|t| TransportSetting(Some(t)))
}
