//! What the daemon received, in order, for the `SEEN` and `LOG` commands.
//!
//! Tests use it to prove what reached the daemon (for instance that a write
//! tool never ran twice). Soak runs send millions of requests, so the journal
//! keeps the most recent entries within a memory budget and counts the ones it
//! forgot; both reports then carry `"dropped": <count>`.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::ops::Range;

use crate::protocol::Request;

/// Default memory budget of the journal, in bytes.
pub const DEFAULT_JOURNAL_BYTES: usize = 64 * 1024 * 1024;

/// The start of every recorded request object.
const REQUEST_HEAD: &str = "{\"method\":";

/// One received message.
#[derive(Debug)]
enum Entry {
    /// A JSON-RPC request, kept as its `LOG` object
    /// `{"method":..,"params":..,"id":..}` and where the method sits in it.
    Request {
        object: Box<str>,
        method: Range<usize>,
    },
    /// A control message's `type`, as a JSON string literal.
    Control { kind: Box<str> },
}

impl Entry {
    /// The JSON string `SEEN` lists for this entry.
    fn name(&self) -> &str {
        match self {
            Entry::Request { object, method } => &object[method.clone()],
            Entry::Control { kind } => kind,
        }
    }

    /// What the entry costs against the budget.
    fn cost(&self) -> usize {
        let text = match self {
            Entry::Request { object, .. } => object.len(),
            Entry::Control { kind } => kind.len(),
        };
        text + size_of::<Entry>()
    }
}

/// The bounded, ordered record of received requests and control messages.
#[derive(Debug)]
pub(crate) struct Journal {
    entries: VecDeque<Entry>,
    bytes: usize,
    budget: usize,
    dropped: u64,
}

impl Journal {
    /// An empty journal that keeps at most `budget` bytes of entries
    /// (0: keep nothing, only count).
    pub(crate) fn new(budget: usize) -> Self {
        Journal {
            entries: VecDeque::new(),
            bytes: 0,
            budget,
            dropped: 0,
        }
    }

    /// Records a JSON-RPC request (or notification).
    pub(crate) fn record_request(&mut self, request: &Request<'_>) {
        if self.budget == 0 {
            self.dropped += 1;
            return;
        }
        let params = request.params.unwrap_or("null");
        let mut object = String::with_capacity(
            REQUEST_HEAD.len()
                + request.method.len()
                + params.len()
                + request.id.map_or(0, str::len)
                + 20,
        );
        object.push_str(REQUEST_HEAD);
        let method = object.len()..object.len() + request.method.len();
        object.push_str(request.method);
        object.push_str(",\"params\":");
        object.push_str(params);
        if let Some(id) = request.id {
            object.push_str(",\"id\":");
            object.push_str(id);
        }
        object.push('}');
        self.push(Entry::Request {
            object: object.into_boxed_str(),
            method,
        });
    }

    /// Records a control message by its `type` (a JSON string literal).
    pub(crate) fn record_control(&mut self, kind: &str) {
        if self.budget == 0 {
            self.dropped += 1;
            return;
        }
        self.push(Entry::Control { kind: kind.into() });
    }

    fn push(&mut self, entry: Entry) {
        self.bytes += entry.cost();
        self.entries.push_back(entry);
        while self.bytes > self.budget {
            let Some(oldest) = self.entries.pop_front() else {
                break;
            };
            self.bytes -= oldest.cost();
            self.dropped += 1;
        }
    }

    /// The `SEEN` reply: `{"seen":[...]}` listing request methods and
    /// control types in the order received.
    pub(crate) fn seen_line(&self) -> String {
        self.report("seen", self.entries.iter().map(Entry::name))
    }

    /// The `LOG` reply: `{"requests":[{"method":..,"params":..,"id":..},...]}`
    /// with every recorded request in order (`params` is null when absent,
    /// `id` is left out for a notification).
    pub(crate) fn log_line(&self) -> String {
        let requests = self.entries.iter().filter_map(|entry| match entry {
            Entry::Request { object, .. } => Some(&**object),
            Entry::Control { .. } => None,
        });
        self.report("requests", requests)
    }

    fn report<'s>(&self, key: &str, items: impl Iterator<Item = &'s str>) -> String {
        let mut line = format!("{{\"{key}\":[");
        for (i, item) in items.enumerate() {
            if i > 0 {
                line.push(',');
            }
            line.push_str(item);
        }
        line.push(']');
        if self.dropped > 0 {
            let _ = write!(line, ",\"dropped\":{}", self.dropped);
        }
        line.push('}');
        line
    }
}

#[cfg(test)]
mod tests {
    use fake_daemon_control::reports::{RequestLog, SeenReport};
    use serde_json::{Value, json};

    use super::*;

    fn request<'a>(id: Option<&'a str>, method: &'a str, params: Option<&'a str>) -> Request<'a> {
        Request { id, method, params }
    }

    fn parse(line: &str) -> Value {
        serde_json::from_str(line).unwrap()
    }

    #[test]
    fn seen_and_log_keep_arrival_order() {
        let mut journal = Journal::new(DEFAULT_JOURNAL_BYTES);
        journal.record_control("\"session_open\"");
        journal.record_request(&request(
            Some("1"),
            "\"session_start_payload\"",
            Some("{\"session_id\":\"s\"}"),
        ));
        journal.record_request(&request(None, "\"topology\"", None));
        assert_eq!(
            parse(&journal.seen_line()),
            json!({"seen": ["session_open", "session_start_payload", "topology"]})
        );
        assert_eq!(
            parse(&journal.log_line()),
            json!({"requests": [
                {"method": "session_start_payload", "params": {"session_id": "s"}, "id": 1},
                {"method": "topology", "params": null},
            ]})
        );
    }

    #[test]
    fn reports_read_as_the_control_language_types() {
        let mut journal = Journal::new(DEFAULT_JOURNAL_BYTES);
        journal.record_control("\"status\"");
        journal.record_request(&request(Some("\"a\""), "\"topology\"", Some("{\"x\":1}")));
        let seen: SeenReport = serde_json::from_str(&journal.seen_line()).unwrap();
        assert_eq!(seen.seen, [json!("status"), json!("topology")]);
        let log: RequestLog = serde_json::from_str(&journal.log_line()).unwrap();
        assert_eq!(log.requests.len(), 1);
        assert_eq!(log.requests[0].method, "topology");
        assert_eq!(log.requests[0].params, json!({"x": 1}));
        assert_eq!(log.requests[0].id, Some(json!("a")));
        assert_eq!(log.dropped, 0);
    }

    #[test]
    fn empty_journal_reports_empty_lists() {
        let journal = Journal::new(DEFAULT_JOURNAL_BYTES);
        assert_eq!(journal.seen_line(), r#"{"seen":[]}"#);
        assert_eq!(journal.log_line(), r#"{"requests":[]}"#);
    }

    #[test]
    fn budget_forgets_the_oldest_and_counts_them() {
        let one = Entry::Control {
            kind: "\"status\"".into(),
        }
        .cost();
        let mut journal = Journal::new(2 * one);
        for _ in 0..5 {
            journal.record_control("\"status\"");
        }
        assert_eq!(
            parse(&journal.seen_line()),
            json!({"seen": ["status", "status"], "dropped": 3})
        );
    }

    #[test]
    fn zero_budget_records_nothing_but_counts() {
        let mut journal = Journal::new(0);
        journal.record_control("\"status\"");
        journal.record_request(&request(Some("1"), "\"m\"", None));
        assert_eq!(
            parse(&journal.log_line()),
            json!({"requests": [], "dropped": 2})
        );
    }
}
