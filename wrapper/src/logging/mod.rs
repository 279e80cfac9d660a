//! The wrapper's log on stderr: readable lines for people (the default),
//! or one JSON object per event for programs (`--log-format json`).
//!
//! Every event worth a program's attention carries an `event` field whose
//! value is one of the names in [`crate::log_names`]; those names and the fields
//! beside them are stable (docs/CONTRACT.md, section 12, lists them), while the message
//! text is for people and may change. In the JSON form each line is an
//! object with `timestamp` (RFC 3339, UTC), `level`, `event` and the
//! event's fields, `message` and `target`.

use std::fmt;
use std::str::FromStr;

use tracing_subscriber::EnvFilter;

pub mod bridge;

/// How the log is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// Lines for people.
    #[default]
    Text,
    /// One JSON object per event, for programs.
    Json,
}

impl LogFormat {
    /// The filter used when none is configured: warnings for people (a
    /// host's log should stay quiet while all is well), every event for
    /// programs (they asked for the events).
    pub fn default_filter(self) -> &'static str {
        match self {
            LogFormat::Text => "warn",
            LogFormat::Json => "info",
        }
    }

    /// The spelling used on the command line and in `IAI_MCP_LOG_FORMAT`.
    pub fn as_str(self) -> &'static str {
        match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        }
    }
}

impl fmt::Display for LogFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A log format that is neither `text` nor `json`.
#[derive(Debug, thiserror::Error)]
#[error("unknown log format {0:?} (expected \"text\" or \"json\")")]
pub struct UnknownFormat(String);

impl FromStr for LogFormat {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(UnknownFormat(other.to_owned())),
        }
    }
}

/// Installs the log for the whole process: `format`, showing what
/// `filter` (tracing's filter syntax) lets through.
pub fn init(format: LogFormat, filter: EnvFilter) {
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .init(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_and_print() {
        for format in [LogFormat::Text, LogFormat::Json] {
            assert_eq!(format.as_str().parse::<LogFormat>().ok(), Some(format));
        }
        assert!("JSON".parse::<LogFormat>().is_err());
        assert_eq!(LogFormat::default(), LogFormat::Text);
    }
}
