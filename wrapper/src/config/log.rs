//! What stderr's log shows, and how it is written.

use super::values::{EmptyIsDefault, any_text};
use crate::logging::LogFormat;

/// The log's filter and format.
#[derive(Debug, Clone, clap::Args)]
pub struct LogArgs {
    /// Log filter for stderr (tracing syntax, e.g. `info`, `debug`)
    /// [default: warn for the text log, info for the JSON log].
    #[arg(long, env = "IAI_MCP_LOG", value_parser = any_text, value_name = "FILTER")]
    pub log: Option<String>,

    /// How stderr's log is written: `text`, lines for people, or `json`,
    /// one object per event with stable event names, for programs.
    #[arg(long, env = "IAI_MCP_LOG_FORMAT", value_name = "FORMAT",
        default_value_t = LogFormat::default(), value_parser = EmptyIsDefault::<LogFormat>::new())]
    pub log_format: LogFormat,
}

/// How the log is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSettings {
    /// Text or JSON.
    pub format: LogFormat,
    /// What is shown (tracing's filter syntax).
    pub filter: String,
}

impl LogArgs {
    /// The settings; without a filter, the format's own default.
    pub(super) fn resolve(self) -> LogSettings {
        LogSettings {
            format: self.log_format,
            filter: self
                .log
                .filter(|f| !f.is_empty())
                .unwrap_or_else(|| self.log_format.default_filter().to_owned()),
        }
    }
}
