//! The bridge's state: what [`Bridge`] holds, how a bridge is made, and
//! the one place a call is answered ([`Bridge::finish`]). The inputs that
//! change it are implemented beside it: those about the connection and
//! time in this module's parent, where calls and lines go in `routing`.

use std::collections::VecDeque;

use super::calls::Calls;
use super::link::Link;
use super::types::{Access, Action, CallId, Failure, Watch};
use crate::bridge::error::BridgeError;
use crate::bridge::policy::Policy;
use crate::bridge::wire::DaemonResult;

/// The sans-IO bridge state machine. See the module documentation.
#[derive(Debug, Clone)]
pub struct Bridge {
    pub(super) policy: Policy,
    pub(super) endpoint: String,
    pub(super) link: Link,
    pub(super) next_conn: u64,
    /// Connections established so far.
    pub(super) connects: u64,
    /// Connect attempts that failed so far.
    pub(super) failed_attempts: u64,
    /// Reconnects scheduled after lost connections (the pre-fix policy
    /// allows one).
    pub(super) reconnects: u32,
    pub(super) calls: Calls,
    pub(super) rng: fastrand::Rng,
    /// Whether the endpoint is watched.
    pub(super) watch: Watch,
    pub(super) actions: VecDeque<Action>,
}

impl Bridge {
    /// A bridge following `policy`, dialling the daemon at `endpoint` (a
    /// socket path or TCP address, used in error messages). `seed` drives
    /// the backoff jitter, so a test can replay a run exactly.
    pub fn new(policy: Policy, endpoint: impl Into<String>, seed: u64) -> Self {
        Bridge {
            policy,
            endpoint: endpoint.into(),
            link: Link::Idle,
            next_conn: 0,
            connects: 0,
            failed_attempts: 0,
            reconnects: 0,
            calls: Calls::default(),
            rng: fastrand::Rng::with_seed(seed),
            watch: Watch::Unavailable,
            actions: VecDeque::new(),
        }
    }

    /// Answer call `id` (if still pending) with `outcome`, stating on a
    /// failure whether it was ever sent and whether the caller may answer
    /// it another way. This is the one place that decides the write rule:
    /// a write that reached a daemon connection is never handed on.
    pub(super) fn finish(&mut self, id: CallId, outcome: Result<DaemonResult, BridgeError>) {
        let Some(call) = self.calls.remove(id) else {
            return;
        };
        let outcome = outcome.map_err(|error| {
            let sent = call.sends > 0;
            let unreachable = match error {
                BridgeError::Shutdown => false,
                BridgeError::Timeout(_) => call.request.access == Access::Read,
                ref e => e.is_unreachable(),
            };
            let fallback = call.request.fallback
                && unreachable
                && (call.request.access == Access::Read || !sent);
            Failure {
                error,
                sent,
                fallback,
            }
        });
        self.actions.push_back(Action::Reply(id, outcome));
    }
}
