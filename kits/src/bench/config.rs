//! What the bench is asked to do: its amounts, the wrappers it measures
//! beside the floor, and the names and defaults the phases share. Every
//! phase reads it; it reads none of them.

use std::path::PathBuf;
use std::time::Duration;

use harness::error::HarnessError;
use harness::wrapper::WrapperCommand;

use super::results::{Amounts, Settings};
use super::transport;

/// Default number of sequential calls measured per subject.
pub const DEFAULT_CALLS: usize = 10_000;
/// Default number of cold starts per wrapper.
pub const DEFAULT_COLD_STARTS: usize = 20;
/// Default number of recovery attempts per wrapper.
pub const DEFAULT_RECOVERIES: usize = 20;
/// Default number of outages per wrapper in the outage phase.
pub const DEFAULT_OUTAGES: usize = 5;
/// Default length of the outage phase's away window: long enough for a
/// per-minute figure, short enough for a quick bench.
pub const DEFAULT_AWAY: Duration = Duration::from_secs(10);
/// Default herd sizes: the herd the targets apply to.
pub const DEFAULT_HERDS: [usize; 1] = [50];
/// Default restarts of a herd's daemon in each start-up order.
pub const DEFAULT_HERD_ROUNDS: usize = 3;
/// Default away window of each herd restart, in which the wrappers' own
/// wake-ups are counted (after a two-second settling pause).
pub const DEFAULT_HERD_AWAY: Duration = Duration::from_secs(3);

/// The name of the floor subject in reports.
pub const FLOOR_NAME: &str = "floor";
/// The name of [`BenchConfig::wrapper`] in reports.
pub const WRAPPER_NAME: &str = "wrapper";
/// The tool every call invokes (the daemon method the floor calls).
pub const TOOL: &str = "topology";

/// Another wrapper the bench measures beside this workspace's.
#[derive(Debug, Clone)]
pub struct Compared {
    /// Its name in the report (neither `floor` nor `wrapper`).
    pub name: String,
    /// How to start it.
    pub cmd: WrapperCommand,
}

/// What to bench and how much.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// The main wrapper under test (reported as `wrapper`); normally this
    /// workspace's release build, chosen by the caller.
    pub wrapper: WrapperCommand,
    /// The fake daemon binary (release build for meaningful floor figures).
    pub fake_daemon_bin: PathBuf,
    /// More wrappers to measure the same way, for example `node` running
    /// `node /path/dist/index.js`.
    pub compare: Vec<Compared>,
    /// What to measure, and how often.
    pub amounts: Amounts,
    /// Longest wait for any response (by default longer than the wrapper's
    /// 10 s connect wait); a subject silent for longer is stopped and the
    /// phase reported as failed.
    pub response_timeout: Duration,
    /// Print one line per phase to stderr while running.
    pub progress: bool,
}

impl BenchConfig {
    /// The defaults for `wrapper`, with no compared wrappers.
    pub fn new(wrapper: WrapperCommand, fake_daemon_bin: impl Into<PathBuf>) -> Self {
        Self {
            wrapper,
            fake_daemon_bin: fake_daemon_bin.into(),
            compare: Vec::new(),
            amounts: Amounts {
                calls: DEFAULT_CALLS,
                warmup_calls: 500,
                pipelined_calls: 20_000,
                depths: vec![1, 8, 64],
                rounds: 5,
                cold_starts: DEFAULT_COLD_STARTS,
                recoveries: DEFAULT_RECOVERIES,
                outages: DEFAULT_OUTAGES,
                away_ms: u64::try_from(DEFAULT_AWAY.as_millis()).unwrap_or(u64::MAX),
                herds: DEFAULT_HERDS.to_vec(),
                herd_rounds: DEFAULT_HERD_ROUNDS,
                herd_away_ms: u64::try_from(DEFAULT_HERD_AWAY.as_millis()).unwrap_or(u64::MAX),
            },
            response_timeout: Duration::from_secs(30),
            progress: false,
        }
    }

    /// Parses a `--compare` argument, `NAME=CMD`, where CMD is split by
    /// [`WrapperCommand::parse_shell_words`].
    pub fn parse_compare(arg: &str) -> Result<Compared, HarnessError> {
        let (name, command) = arg.split_once('=').ok_or_else(|| {
            HarnessError::WrapperCommand(format!("expected NAME=CMD for --compare, got {arg:?}"))
        })?;
        let name = name.trim();
        if name.is_empty() {
            return Err(HarnessError::WrapperCommand(format!(
                "empty name in --compare {arg:?}"
            )));
        }
        Ok(Compared {
            name: name.to_owned(),
            cmd: WrapperCommand::parse_shell_words(command)?,
        })
    }

    /// Every wrapper to measure with its name in the report: this
    /// workspace's, then the compared ones in order.
    pub fn wrappers(&self) -> Vec<(&str, &WrapperCommand)> {
        let compared = self.compare.iter().map(|c| (c.name.as_str(), &c.cmd));
        std::iter::once((WRAPPER_NAME, &self.wrapper))
            .chain(compared)
            .collect()
    }

    /// Checks the numbers and names before anything is started.
    pub fn validate(&self) -> Result<(), HarnessError> {
        let invalid = |why: String| Err(HarnessError::Scenario(format!("bench settings: {why}")));
        if self.amounts.calls == 0 {
            return invalid("calls must be at least 1".to_owned());
        }
        if self.amounts.depths.contains(&0) {
            return invalid("every depth must be at least 1".to_owned());
        }
        if !self.amounts.depths.is_empty() && self.amounts.pipelined_calls == 0 {
            return invalid("pipelined_calls must be at least 1".to_owned());
        }
        if self.amounts.rounds == 0 {
            return invalid("rounds must be at least 1".to_owned());
        }
        if self.amounts.outages > 0 && self.amounts.away_ms == 0 {
            return invalid("the away window must not be empty".to_owned());
        }
        if self.amounts.herds.contains(&0) {
            return invalid("every herd must have at least 1 wrapper".to_owned());
        }
        if !self.amounts.herds.is_empty() && self.amounts.herd_rounds == 0 {
            return invalid("a herd needs at least one restart in each order".to_owned());
        }
        if !self.amounts.herds.is_empty() && self.amounts.herd_away_ms == 0 {
            return invalid("a herd's away window must not be empty".to_owned());
        }
        if self.response_timeout.is_zero() {
            return invalid("response_timeout must not be zero".to_owned());
        }
        let mut names = vec![FLOOR_NAME, WRAPPER_NAME];
        for Compared { name, .. } in &self.compare {
            if name.trim().is_empty() {
                return invalid("a compared wrapper has an empty name".to_owned());
            }
            if names.contains(&name.as_str()) {
                return invalid(format!("subject name {name:?} is used twice (or reserved)"));
            }
            names.push(name);
        }
        Ok(())
    }

    /// The settings as recorded in the report.
    pub(super) fn settings(&self) -> Settings {
        Settings {
            amounts: self.amounts.clone(),
            response_timeout_ms: u64::try_from(self.response_timeout.as_millis())
                .unwrap_or(u64::MAX),
            fake_daemon: self.fake_daemon_bin.display().to_string(),
            protocol_version: transport::PROTOCOL_VERSION.to_owned(),
            tool: TOOL.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_compare_arguments() {
        let node = BenchConfig::parse_compare("node=node '/a b/index.js'").unwrap();
        assert_eq!(node.name, "node");
        assert_eq!(node.cmd.program, "node");
        assert_eq!(node.cmd.args, ["/a b/index.js"]);
        let with_env = BenchConfig::parse_compare("x=FOO=1 prog").unwrap();
        assert_eq!(with_env.cmd.env.len(), 1);
        assert!(BenchConfig::parse_compare("node").is_err());
        assert!(BenchConfig::parse_compare("=node").is_err());
        assert!(BenchConfig::parse_compare("n=").is_err());
    }

    fn compared(name: &str) -> Compared {
        Compared {
            name: name.to_owned(),
            cmd: WrapperCommand::new("x"),
        }
    }

    #[test]
    fn validates_settings() {
        let base = BenchConfig::new(WrapperCommand::new("w"), "d");
        assert!(base.validate().is_ok());
        let breakages: [fn(&mut BenchConfig); 8] = [
            |c| c.amounts.away_ms = 0,
            |c| c.amounts.herds = vec![20, 0],
            |c| c.amounts.herd_rounds = 0,
            |c| c.amounts.herd_away_ms = 0,
            |c| c.amounts.depths = vec![1, 0],
            |c| c.amounts.calls = 0,
            |c| c.compare = vec![compared("wrapper")],
            |c| c.compare = vec![compared("a"), compared("a")],
        ];
        for breakage in breakages {
            let mut bad = base.clone();
            breakage(&mut bad);
            assert!(bad.validate().is_err());
        }
    }
}
