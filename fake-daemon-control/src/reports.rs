//! The JSON reports `ACCEPTS`, `SEEN` and `LOG` answer with, as the harness
//! reads them. The daemon writes each line itself, from the raw text of
//! what it received; its tests read them back through these types.

use serde::Deserialize;
use serde_json::Value;

/// `ACCEPTS`: when the daemon accepted its most recent connections.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct AcceptTimes {
    /// Microseconds since the Unix epoch, oldest first (at most the 10,000
    /// most recent).
    pub accepted_at_us: Vec<u64>,
}

/// `SEEN`: the request methods and control message types received, in
/// order, as far as the daemon's bounded journal holds them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct SeenReport {
    /// Each a JSON string as received (a method, or a control type).
    pub seen: Vec<Value>,
    /// How many older entries the journal forgot to stay within its memory
    /// budget (the daemon leaves the member out when none).
    #[serde(default)]
    pub dropped: u64,
}

/// `LOG`: the JSON-RPC requests the daemon received, oldest first, as far
/// as its bounded journal holds them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct RequestLog {
    /// The requests the journal still holds.
    pub requests: Vec<LoggedRequest>,
    /// How many older entries the journal forgot to stay within its memory
    /// budget (the daemon leaves the member out when none).
    #[serde(default)]
    pub dropped: u64,
}

/// One request in a [`RequestLog`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LoggedRequest {
    /// Its method.
    pub method: String,
    /// Its params (`null` when it had none).
    #[serde(default)]
    pub params: Value,
    /// Its id, as sent (`None` for a notification).
    #[serde(default)]
    pub id: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_request_log_with_and_without_forgotten_requests() {
        let line = r#"{"requests":[{"method":"topology","params":{"x":1},"id":3},{"method":"notifications/initialized","params":null}],"dropped":42}"#;
        let log: RequestLog = serde_json::from_str(line).unwrap();
        assert_eq!(log.dropped, 42);
        assert_eq!(log.requests[0].method, "topology");
        assert_eq!(log.requests[0].params, serde_json::json!({"x": 1}));
        assert_eq!(log.requests[0].id, Some(Value::from(3)));
        assert_eq!(log.requests[1].params, Value::Null);
        assert_eq!(log.requests[1].id, None);
        let log: RequestLog = serde_json::from_str(r#"{"requests":[]}"#).unwrap();
        assert_eq!(log, RequestLog::default());
    }
}
