//! What a scenario judges: named properties, each either part of the
//! contract every correct wrapper must hold or this workspace's policy, and
//! for each failure its cause.
//!
//! Every report lists its [`Check`]s ([`Judged::checks`]); its verdict,
//! its problems and the scorecard ([`crate::score`]) are all read from
//! them, so a scenario states each condition once.

use std::fmt;

use devkit::format::{format_growth, format_kib};
use serde::Serialize;

use super::outcome::{CallOutcome, DAEMON_TIMEOUT, SOCKET_CLOSED};

/// Whether any correct wrapper must hold a property, or only this one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Any correct wrapper holds it.
    Contract,
    /// This workspace's wrapper's choice (a setting, a message wording).
    Policy,
}

impl Kind {
    /// How the kind reads in tables and pages: `contract` or `policy`.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Contract => "contract",
            Kind::Policy => "policy",
        }
    }
}

/// A property a scenario checks. [`Prop::ALL`] lists them in the
/// scorecard's order, contract first; [`Prop::title`] names each in a few
/// words, for tables, and [`Prop::kind`] says whether it is contract or
/// policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Prop {
    /// Every request with an id gets exactly one response.
    AnsweredOnce,
    /// Stdout carries only JSON-RPC messages.
    StdoutJson,
    /// A call made while the wrapper reconnects to a healthy daemon is
    /// answered, not refused (V3-05).
    ReconnectCall,
    /// After a second drop, a call racing the reconnect is answered and the
    /// wrapper keeps serving.
    SecondDrop,
    /// The daemon holds exactly one connection from the wrapper after it
    /// recovered.
    OneConnection,
    /// No write reaches the daemon twice.
    NoWriteTwice,
    /// Calls succeed again, without a restart, once the daemon is back.
    Recovers,
    /// Bad input, faults and time leave the wrapper running with flat
    /// memory and descriptors.
    StaysUp,
    /// The wrapper exits promptly when its stdin closes.
    ExitsOnEof,
    /// Successful results validate against the tool's `outputSchema`.
    OutputSchema,
    /// A read lost with its connection is re-sent and answered.
    ReplaysReads,
    /// A call waits up to the connect wait for a daemon that is down, then
    /// fails with `daemon_unreachable`.
    ConnectWait,
    /// Reconnect attempts stay bounded (no busy loop) while the daemon is
    /// down.
    BoundedAttempts,
    /// Many wrappers on one daemon do not dial it in lockstep: their
    /// reconnect attempts are spread out (jitter).
    SpreadDials,
    /// A call to a hung daemon fails with `daemon_timeout` at its deadline,
    /// on the connection it had.
    CallDeadline,
    /// Failures say which socket the wrapper dialled.
    NamedSocket,
}

impl Prop {
    /// Every property, in the scorecard's order: contract first, then
    /// policy.
    pub const ALL: [Prop; 16] = [
        Prop::AnsweredOnce,
        Prop::StdoutJson,
        Prop::ReconnectCall,
        Prop::SecondDrop,
        Prop::OneConnection,
        Prop::NoWriteTwice,
        Prop::Recovers,
        Prop::StaysUp,
        Prop::ExitsOnEof,
        Prop::OutputSchema,
        Prop::ReplaysReads,
        Prop::ConnectWait,
        Prop::BoundedAttempts,
        Prop::SpreadDials,
        Prop::CallDeadline,
        Prop::NamedSocket,
    ];

    /// The property in a few words, for tables.
    pub fn title(self) -> &'static str {
        match self {
            Prop::AnsweredOnce => "every request answered exactly once",
            Prop::StdoutJson => "stdout carries only JSON-RPC",
            Prop::ReconnectCall => "a call during a reconnect succeeds",
            Prop::SecondDrop => "still serving after a second drop",
            Prop::OneConnection => "one daemon connection after recovery",
            Prop::NoWriteTwice => "no write run twice",
            Prop::Recovers => "recovers without restart when the daemon returns",
            Prop::StaysUp => "stays up, memory and descriptors flat",
            Prop::ExitsOnEof => "exits promptly on stdin EOF",
            Prop::OutputSchema => "results validate against outputSchema",
            Prop::ReplaysReads => "replays reads lost with a connection",
            Prop::ConnectWait => "waits the connect wait for a down daemon",
            Prop::BoundedAttempts => "reconnect attempts bounded while down",
            Prop::SpreadDials => "many wrappers' reconnects spread out",
            Prop::CallDeadline => "call deadline against a hung daemon",
            Prop::NamedSocket => "failures name the socket",
        }
    }

    /// Whether any correct wrapper must hold the property, or only this
    /// workspace's wrapper, by its own choice of setting or wording.
    pub fn kind(self) -> Kind {
        match self {
            Prop::AnsweredOnce
            | Prop::StdoutJson
            | Prop::ReconnectCall
            | Prop::SecondDrop
            | Prop::OneConnection
            | Prop::NoWriteTwice
            | Prop::Recovers
            | Prop::StaysUp
            | Prop::ExitsOnEof
            | Prop::OutputSchema => Kind::Contract,
            Prop::ReplaysReads
            | Prop::ConnectWait
            | Prop::BoundedAttempts
            | Prop::SpreadDials
            | Prop::CallDeadline
            | Prop::NamedSocket => Kind::Policy,
        }
    }
}

/// Why a property failed; [`Cause::text`] says it in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// Refused while a reconnect was in flight: the V3-05 race.
    V305,
    /// Written to a connection that was already dying (`socket closed`).
    DyingConnection,
    /// The wrapper could not connect (or said the daemon is not running).
    ConnectFailure,
    /// The wrapper gave up waiting for the daemon's answer.
    Timeout,
    /// No answer reached the harness in time.
    NoAnswer,
    /// More than one answer to one request.
    AnsweredTwice,
    /// A result did not validate against its `outputSchema`.
    SchemaMismatch,
    /// More daemon connections (or memory, or descriptors) than it should.
    Leak,
    /// The wrapper stopped serving: its process went away, or it no longer
    /// reconnects.
    Died,
    /// Stdout carried something other than JSON-RPC.
    NotJson,
    /// A write reached the daemon twice.
    WrittenTwice,
    /// Anything else; the figure says what.
    Other,
}

impl Cause {
    /// Every cause, in declaration order.
    pub const ALL: [Cause; 12] = [
        Cause::V305,
        Cause::DyingConnection,
        Cause::ConnectFailure,
        Cause::Timeout,
        Cause::NoAnswer,
        Cause::AnsweredTwice,
        Cause::SchemaMismatch,
        Cause::Leak,
        Cause::Died,
        Cause::NotJson,
        Cause::WrittenTwice,
        Cause::Other,
    ];

    /// The cause in words.
    pub fn text(self) -> &'static str {
        match self {
            Cause::V305 => "V3-05",
            Cause::DyingConnection => "written to a dying connection",
            Cause::ConnectFailure => "connect failure",
            Cause::Timeout => "timeout",
            Cause::NoAnswer => "no answer",
            Cause::AnsweredTwice => "answered twice",
            Cause::SchemaMismatch => "schema mismatch",
            Cause::Leak => "leak",
            Cause::Died => "died",
            Cause::NotJson => "not JSON",
            Cause::WrittenTwice => "written twice",
            Cause::Other => "other",
        }
    }

    /// The cause of a failed call made while the daemon was healthy (a
    /// refusal is then V3-05) or down (a refusal is then a connect
    /// failure).
    pub fn of_call(outcome: &CallOutcome, daemon_up: bool) -> Cause {
        match outcome {
            CallOutcome::NoResponse => Cause::NoAnswer,
            CallOutcome::WrapperGone(_) => Cause::Died,
            CallOutcome::Ok => Cause::Other,
            _ => Cause::of_text(outcome.error_text().unwrap_or(""), daemon_up),
        }
    }

    /// The cause named by a failure's text.
    pub fn of_text(text: &str, daemon_up: bool) -> Cause {
        let text = text.to_ascii_lowercase();
        // A reset or broken pipe is the dying connection seen by a read or
        // a write (Node words it `socket error: read ECONNRESET`).
        let dying = ["socket closed", "econnreset", "epipe"];
        if text.contains(SOCKET_CLOSED) || dying.iter().any(|w| text.contains(w)) {
            Cause::DyingConnection
        } else if text.contains(DAEMON_TIMEOUT) || text.contains("timed out") {
            Cause::Timeout
        } else if text.contains("not connected") || text.contains("daemon_unreachable") {
            if daemon_up {
                Cause::V305
            } else {
                Cause::ConnectFailure
            }
        } else if text.contains("not running") || text.contains("connect") {
            Cause::ConnectFailure
        } else {
            Cause::Other
        }
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

/// One judgement of a property by one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// The property.
    pub prop: Prop,
    /// `None` when it held; the cause when it did not.
    pub failure: Option<Cause>,
    /// The figure behind the judgement, in words.
    pub figure: String,
}

impl Check {
    /// Whether the property held.
    pub fn held(&self) -> bool {
        self.failure.is_none()
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.failure {
            None => write!(f, "{}: {}", self.prop.title(), self.figure),
            Some(cause) => write!(f, "{} [{cause}]: {}", self.prop.title(), self.figure),
        }
    }
}

/// The checks of a run, collected in the order they are made.
#[derive(Debug, Default)]
pub struct Checks(Vec<Check>);

impl Checks {
    /// Records that `prop` held (`failure` is `None`) or failed, with its
    /// figure.
    pub fn judge(&mut self, prop: Prop, failure: Option<Cause>, figure: impl Into<String>) {
        self.0.push(Check {
            prop,
            failure,
            figure: figure.into(),
        });
    }

    /// Records `prop` held when `ok`, failed with `cause` otherwise.
    pub fn expect(&mut self, prop: Prop, ok: bool, cause: Cause, figure: impl Into<String>) {
        self.judge(prop, (!ok).then_some(cause), figure);
    }

    /// Records `prop` held when `count` is zero: `{count} {what}`.
    pub fn zero<T>(&mut self, prop: Prop, count: T, cause: Cause, what: &str)
    where
        T: fmt::Display + Default + PartialEq,
    {
        let ok = count == T::default();
        self.expect(prop, ok, cause, format!("{count} {what}"));
    }

    /// No more than one daemon connection at the end (none at all is a
    /// wrapper that stopped reconnecting, judged by the scenario itself).
    pub fn one_connection(&mut self, conns: u32) {
        self.expect(
            Prop::OneConnection,
            conns <= 1,
            Cause::Leak,
            format!("{conns} daemon connection(s) at the end"),
        );
    }

    /// No stdout defects.
    pub fn stdout_clean(&mut self, defects: &[String]) {
        let figure = match defects.first() {
            None => "no stdout defects".to_owned(),
            Some(first) => format!("{} stdout defect(s), first: {first}", defects.len()),
        };
        self.expect(Prop::StdoutJson, defects.is_empty(), Cause::NotJson, figure);
    }

    /// The wrapper's resident memory grew by less than `limit_kib` (when
    /// it could be measured).
    pub fn rss_flat(&mut self, growth_kib: Option<i64>, limit_kib: u64) {
        if let Some(growth) = growth_kib {
            self.expect(
                Prop::StaysUp,
                growth < i64::try_from(limit_kib).unwrap_or(i64::MAX),
                Cause::Leak,
                format!(
                    "resident memory grew by {} (limit {})",
                    format_growth(Some(growth)),
                    format_kib(Some(limit_kib))
                ),
            );
        }
    }

    /// The wrapper was still running at the end, and never stopped
    /// talking (`gone` says why it did).
    pub fn alive(&mut self, alive: bool, gone: Option<&str>) {
        let figure = match (alive, gone) {
            (true, None) => "running and answering at the end".to_owned(),
            (_, Some(why)) => format!("went away: {why}"),
            (false, None) => "not running at the end".to_owned(),
        };
        self.expect(Prop::StaysUp, alive && gone.is_none(), Cause::Died, figure);
    }

    /// The checks made.
    pub fn into_vec(self) -> Vec<Check> {
        self.0
    }
}

/// A report that judges itself.
pub trait Judged {
    /// Every check the run made.
    fn checks(&self) -> Vec<Check>;

    /// Whether every check held.
    fn passed(&self) -> bool {
        self.checks().iter().all(Check::held)
    }

    /// The failed checks, in words.
    fn problems(&self) -> Vec<String> {
        self.checks()
            .iter()
            .filter(|c| !c.held())
            .map(Check::to_string)
            .collect()
    }

    /// One line: PASS, or FAIL with every failed property and its cause.
    fn verdict_line(&self) -> String {
        let problems = self.problems();
        if problems.is_empty() {
            format!("verdict: PASS ({} checks held)", self.checks().len())
        } else {
            format!("verdict: FAIL: {}", problems.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_classified_by_their_words_and_the_daemon_state() {
        let v305 = "error: daemon_unreachable: bridge not connected (code -32002)";
        assert_eq!(Cause::of_text(v305, true), Cause::V305);
        assert_eq!(Cause::of_text(v305, false), Cause::ConnectFailure);
        let dying = "error: daemon_unreachable: socket closed (code -32002)";
        assert_eq!(Cause::of_text(dying, true), Cause::DyingConnection);
        let reset = "error: daemon_unreachable: socket error: read ECONNRESET (code -32002)";
        assert_eq!(Cause::of_text(reset, true), Cause::DyingConnection);
        let node = "iai-mcp daemon not running at /tmp/x.sock";
        assert_eq!(Cause::of_text(node, false), Cause::ConnectFailure);
        let slow = "error: daemon_timeout: no response within 0.5 s";
        assert_eq!(Cause::of_text(slow, true), Cause::Timeout);
        assert_eq!(
            Cause::of_call(&CallOutcome::NoResponse, true),
            Cause::NoAnswer
        );
        assert_eq!(
            Cause::of_call(&CallOutcome::WrapperGone("eof".into()), true),
            Cause::Died
        );
        let texts: std::collections::BTreeSet<&str> = Cause::ALL.iter().map(|c| c.text()).collect();
        assert_eq!(
            texts.len(),
            Cause::ALL.len(),
            "every cause reads differently"
        );
    }

    #[test]
    fn every_property_has_a_kind_and_the_catalogue_lists_contract_first() {
        let kinds: Vec<Kind> = Prop::ALL.iter().map(|p| p.kind()).collect();
        let first_policy = kinds.iter().position(|k| *k == Kind::Policy).unwrap();
        assert!(kinds[first_policy..].iter().all(|k| *k == Kind::Policy));
        assert_eq!(Prop::ReconnectCall.kind(), Kind::Contract);
        assert_eq!(Prop::ReplaysReads.kind(), Kind::Policy);
        let titles: std::collections::BTreeSet<&str> =
            Prop::ALL.iter().map(|p| p.title()).collect();
        assert_eq!(titles.len(), Prop::ALL.len(), "each property listed once");
    }

    #[test]
    fn a_report_is_judged_by_its_checks() {
        struct R(Vec<Check>);
        impl Judged for R {
            fn checks(&self) -> Vec<Check> {
                self.0.clone()
            }
        }
        let mut checks = Checks::default();
        checks.one_connection(2);
        checks.zero(Prop::NoWriteTwice, 0, Cause::WrittenTwice, "writes twice");
        let r = R(checks.into_vec());
        assert!(!r.passed());
        assert_eq!(
            r.problems(),
            ["one daemon connection after recovery [leak]: 2 daemon connection(s) at the end"]
        );
        assert!(
            r.verdict_line()
                .starts_with("verdict: FAIL: one daemon connection")
        );
    }
}
