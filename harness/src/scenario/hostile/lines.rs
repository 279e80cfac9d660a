//! The seeded generator of hostile (and some valid) client lines.
//!
//! Every line is returned without its newline and never contains one. Ids
//! that the wrapper can recover are unique over a run (by their canonical
//! JSON text), so each reply names exactly one line. Lines longer than the
//! cap start with `{` and hold at most one top-level `id` (first, last, or
//! far too long to keep), shapes whose fate
//! [`expected_reply`](mcp_oracle::expected_reply) predicts without parsing them.

use std::collections::HashSet;
use std::fmt;

use serde::Serialize;
use serde_json::{Value, json};

use crate::random::Rng;
use crate::scenario::live::{READ_TOOLS, ToolCall, write_serde_name};

/// What kind of line the generator made, for the report's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LineKind {
    /// A valid request: `tools/call` of a real tool, `ping` or `tools/list`.
    Valid,
    /// Invalid UTF-8, raw control characters, lone surrogate escapes.
    BadText,
    /// A valid request cut short.
    Truncated,
    /// Arrays and objects nested from a few to thousands deep.
    DeepNesting,
    /// Numbers beyond `u64` and `f64`, in params.
    HugeNumber,
    /// Members of the wrong JSON type (`jsonrpc`, `method`, `params`, `id`,
    /// tool name and arguments).
    WrongType,
    /// Objects with repeated keys.
    DuplicateKeys,
    /// JSON arrays (batches), empty or not.
    Batch,
    /// Requests whose id is of an unusual form: every JSON type, edge
    /// numbers, long and escaped strings.
    OddId,
    /// Long strings, up to exactly the cap.
    LongString,
    /// Lines longer than the cap.
    OverCap,
    /// Notifications, valid or not (cancellations name no real request).
    Notification,
    /// Response-shaped objects, as if answering a server request.
    ClientResponse,
    /// Well-formed requests the wrapper must refuse or answer oddly:
    /// unknown methods and tools, bad protocol versions, bad arguments.
    OddRequest,
    /// JSON that is not an object.
    NonObject,
    /// Random bytes.
    RandomBytes,
    /// Empty and whitespace-only lines.
    Blank,
    /// A line given by the caller of
    /// [`run_hostile_lines`](super::run_hostile_lines).
    Handcrafted,
}

impl fmt::Display for LineKind {
    /// The kind's snake_case name, as in JSON reports.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_serde_name(self, f)
    }
}

/// One line to send, without its newline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line {
    /// What kind of line it is.
    pub(crate) kind: LineKind,
    /// Its bytes.
    pub(crate) bytes: Vec<u8>,
}

/// How one kind of line is made, and how often.
#[derive(Clone, Copy)]
struct Recipe {
    kind: LineKind,
    /// Out of 1000 lines.
    weight: u64,
    build: fn(&mut LineGen) -> Vec<u8>,
}

/// Every kind the generator makes, with its weight and builder.
const KINDS: [Recipe; 17] = [
    Recipe {
        kind: LineKind::Valid,
        weight: 250,
        build: |g| g.valid().into(),
    },
    Recipe {
        kind: LineKind::BadText,
        weight: 70,
        build: LineGen::bad_text,
    },
    Recipe {
        kind: LineKind::Truncated,
        weight: 70,
        build: LineGen::truncated,
    },
    Recipe {
        kind: LineKind::DeepNesting,
        weight: 50,
        build: |g| g.deep_nesting().into(),
    },
    Recipe {
        kind: LineKind::HugeNumber,
        weight: 50,
        build: |g| g.huge_number().into(),
    },
    Recipe {
        kind: LineKind::WrongType,
        weight: 80,
        build: |g| g.wrong_type().into(),
    },
    Recipe {
        kind: LineKind::DuplicateKeys,
        weight: 60,
        build: |g| g.duplicate_keys().into(),
    },
    Recipe {
        kind: LineKind::Batch,
        weight: 40,
        build: |g| g.batch().into(),
    },
    Recipe {
        kind: LineKind::OddId,
        weight: 85,
        build: |g| g.odd_id().into(),
    },
    Recipe {
        kind: LineKind::LongString,
        weight: 30,
        build: LineGen::long_string,
    },
    Recipe {
        kind: LineKind::OverCap,
        weight: 15,
        build: LineGen::over_cap,
    },
    Recipe {
        kind: LineKind::Notification,
        weight: 50,
        build: |g| g.notification().into(),
    },
    Recipe {
        kind: LineKind::ClientResponse,
        weight: 40,
        build: |g| g.client_response().into(),
    },
    Recipe {
        kind: LineKind::OddRequest,
        weight: 60,
        build: |g| g.odd_request().into(),
    },
    Recipe {
        kind: LineKind::NonObject,
        weight: 20,
        build: LineGen::non_object,
    },
    Recipe {
        kind: LineKind::RandomBytes,
        weight: 20,
        build: LineGen::random_bytes,
    },
    Recipe {
        kind: LineKind::Blank,
        weight: 10,
        build: LineGen::blank,
    },
];

/// Size of the filler pool long lines are cut from.
const FILLER_BYTES: usize = 1 << 18;

/// Edge-case ids, each used at most once per run (a repeat falls back to a
/// fresh id).
const EDGE_IDS: &[&str] = &[
    "0",
    "-0",
    "0.0",
    "-0.0",
    "1",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "-9223372036854775808",
    "-9223372036854775809",
    "1e-300",
    "5e-324",
    "1.7976931348623157e308",
    "1E2",
    "\"\"",
    "\" \"",
    "\"\\u0000\"",
    "\"\\ud83e\\udd80\"",
    "\"null\"",
    "\"1\"",
    "\"\\\"\"",
    "\"\\\\\"",
];

/// Ids the wrapper cannot recover (not a string or number).
const BAD_IDS: &[&str] = &["null", "true", "false", "{}", "[]", "[1]", "{\"id\":1}"];

/// Bytes that random lines which look a little like JSON are made of.
const JSONISH: &[u8] = b" {}[]\":,0123456789abcdeftrulnid\\";

/// Methods the wrapper answers itself.
const LOCAL_METHODS: &[&str] = &["ping", "tools/list"];

/// `template` with each `{name}` of `values` replaced by its text, in
/// order (no value holds a later name).
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    values
        .iter()
        .fold(template.to_owned(), |text, (name, value)| {
            text.replace(&format!("{{{name}}}"), value)
        })
}

/// The generator: a seeded [`Rng`], the ids handed out so far, and a pool of
/// filler text.
#[derive(Debug)]
pub(crate) struct LineGen {
    rng: Rng,
    cap: usize,
    used_ids: HashSet<String>,
    counter: u64,
    filler: Vec<u8>,
}

impl LineGen {
    /// A generator for seed `seed` and line cap `cap`.
    pub(crate) fn new(seed: u64, cap: usize) -> Self {
        let mut rng = Rng::new(seed);
        const ALPHABET: &[u8] =
            b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .-_";
        let filler = (0..FILLER_BYTES)
            .map(|_| *rng.pick(ALPHABET))
            .collect::<Vec<u8>>();
        Self {
            rng,
            cap: cap.max(1),
            used_ids: HashSet::new(),
            counter: 0,
            filler,
        }
    }

    /// The next line.
    pub(crate) fn next_line(&mut self) -> Line {
        let mut roll = self.rng.below(1000);
        let recipe = *KINDS
            .iter()
            .find(|recipe| {
                let hit = roll < recipe.weight;
                roll = roll.saturating_sub(recipe.weight);
                hit
            })
            .unwrap_or(&KINDS[0]);
        let mut line = (recipe.build)(self);
        // A newline inside would make two lines; none of the builders puts
        // one there, but random bytes are random.
        line.iter_mut()
            .filter(|b| **b == b'\n')
            .for_each(|b| *b = b' ');
        Line {
            kind: recipe.kind,
            bytes: line,
        }
    }

    /// A fresh id of a random recoverable type, as JSON text.
    fn fresh_id(&mut self) -> String {
        self.counter += 1;
        let n = self.counter;
        let text = match self.rng.below(10) {
            0 | 1 => format!("\"h{n}\""),
            2 => format!("\"\\u00e9t\\u00e9 {n}\""),
            3 => format!("\"🦀 {n} \\\"q\\\" \\\\ \\t\""),
            4 => format!("{}", 10_000_000_000 + n),
            5 => format!("-{n}"),
            6 => format!("{n}.5"),
            7 => format!("{n}5e-1"),
            8 => format!("{n}000000000000000000000000"),
            // Long, but well within what the wrapper keeps of the id of an
            // oversized line.
            _ => format!("\"L{n}-{}\"", self.filler_text(1, 200)),
        };
        self.claim_id(text)
    }

    /// `text` if it is a new recoverable id (or no recoverable id at all),
    /// else a fresh one.
    fn claim_id(&mut self, text: String) -> String {
        match serde_json::from_str::<Value>(&text) {
            Ok(id @ (Value::String(_) | Value::Number(_))) => {
                if self.used_ids.insert(id.to_string()) {
                    text
                } else {
                    self.fresh_id()
                }
            }
            _ => text,
        }
    }

    /// `len` bytes of filler text (no quotes, backslashes or newlines), of a
    /// random length in `lo..=hi`.
    fn filler_text(&mut self, lo: usize, hi: usize) -> String {
        let len = self.rng.between(lo as u64, hi as u64) as usize;
        self.filler_exact(len)
    }

    /// Exactly `len` bytes of filler text.
    fn filler_exact(&mut self, len: usize) -> String {
        let mut out = String::with_capacity(len);
        while out.len() < len {
            let start = self.rng.index(FILLER_BYTES);
            let take = (len - out.len()).min(FILLER_BYTES - start);
            // The filler is ASCII.
            out.push_str(&String::from_utf8_lossy(&self.filler[start..start + take]));
        }
        out
    }

    /// Exactly `len` bytes of JSON string content that mixes filler with
    /// escapes and decoys a naive scanner could take for structure: escaped
    /// quotes and backslashes, brackets, commas, colons and `\"id\":1`.
    fn tricky_exact(&mut self, len: usize) -> String {
        const DECOYS: &[&str] = &[
            "\\\"id\\\":1,",
            "\\\"",
            "\\\\",
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "\\u0022id\\u0022:",
        ];
        let mut out = String::with_capacity(len);
        while out.len() < len {
            let decoy = *self.rng.pick(DECOYS);
            if out.len() + decoy.len() <= len {
                out.push_str(decoy);
            }
            let run = self.rng.between(1, 4096) as usize;
            let fill = run.min(len - out.len());
            out.push_str(&self.filler_exact(fill));
        }
        out
    }

    fn tag(&mut self) -> String {
        format!("hostile-{}", self.rng.next_u64() % 1_000_000_000)
    }

    /// A request line with `id` (JSON text), `method` and `params` (JSON
    /// text, or none), members in one of a few orders.
    fn request(&mut self, id: &str, method: &str, params: Option<&str>) -> String {
        let method = json!(method).to_string();
        let params = params
            .map(|p| format!(",\"params\":{p}"))
            .unwrap_or_default();
        match self.rng.below(3) {
            0 => format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":{method}{params}}}"),
            1 => format!("{{\"method\":{method}{params},\"jsonrpc\":\"2.0\",\"id\":{id}}}"),
            _ => format!(
                "{{ \"id\" : {id} , \"method\" : {method} {params} , \"jsonrpc\" : \"2.0\" }}\r"
            ),
        }
    }

    /// The params of a valid `tools/call`, as JSON text.
    fn tool_call_params(&mut self) -> String {
        let tag = self.tag();
        let call = match self.rng.below(6) {
            0 => ToolCall::read("topology", json!({})),
            1 => ToolCall::read("episodes_recent", json!({"n": 5})),
            2 => ToolCall::write(
                "memory_capture",
                json!({"text": format!("hostile run note {tag}")}),
            ),
            _ => self.rng.pick(&READ_TOOLS).call(tag),
        };
        call.params().to_string()
    }

    fn valid(&mut self) -> String {
        let id = self.fresh_id();
        if self.rng.percent(60) {
            let params = self.tool_call_params();
            self.request(&id, "tools/call", Some(&params))
        } else {
            let method = *self.rng.pick(LOCAL_METHODS);
            let params = self.rng.percent(50).then_some("{}");
            self.request(&id, method, params)
        }
    }

    fn bad_text(&mut self) -> Vec<u8> {
        const BAD: &[&[u8]] = &[
            b"\xff",
            b"\xfe\xff",
            b"\xc0\xaf",
            b"\xe2\x82",
            b"\xed\xa0\x80",
            b"\xf4\x90\x80\x80",
            b"\x80\x80",
            b"\x00",
            b"\x01\x1f",
            b"\x7f\t\x0b",
            b"\\ud800",
            b"\\udc00x",
            b"\\u12",
            b"\\x41",
        ];
        const SHAPES: [&str; 4] = [
            r#"{"jsonrpc":"2.0","id":{id},"method":"ping","params":{"s":"a{bad}b"}}"#,
            r#"{"jsonrpc":"2.0","id":{id},"method":"{bad}"}"#,
            r#"{bad}{"jsonrpc":"2.0","id":{id},"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":"{bad}","method":"ping"}"#,
        ];
        let id = self.fresh_id();
        let bad = *self.rng.pick(BAD);
        let shape = *self.rng.pick(&SHAPES);
        let line = fill(shape, &[("id", &id)]);
        let (head, tail) = line.split_once("{bad}").unwrap_or_default();
        [head.as_bytes(), bad, tail.as_bytes()].concat()
    }

    fn truncated(&mut self) -> Vec<u8> {
        let mut line = self.valid().into_bytes();
        if line.len() > 1 {
            let keep = 1 + self.rng.index(line.len() - 1);
            line.truncate(keep);
        }
        line
    }

    fn deep_nesting(&mut self) -> String {
        const DEPTHS: &[usize] = &[8, 64, 120, 125, 126, 127, 128, 129, 130, 200, 1000, 20_000];
        let depth = *self.rng.pick(DEPTHS);
        let (open, close) = if self.rng.percent(50) {
            ("[", "]")
        } else {
            ("{\"a\":", "}")
        };
        let mut nested = open.repeat(depth);
        nested.push('1');
        if self.rng.percent(85) {
            nested.push_str(&close.repeat(depth));
        }
        let id = self.fresh_id();
        match self.rng.below(4) {
            0 => self.request(&id, "ping", Some(&format!("{{\"deep\":{nested}}}"))),
            1 => {
                let tag = self.tag();
                let params = format!(
                    "{{\"name\":\"memory_recall\",\"arguments\":{{\"cue\":\"{tag}\",\"deep\":{nested}}}}}"
                );
                self.request(&id, "tools/call", Some(&params))
            }
            2 => format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":{nested}}}"),
            _ => nested,
        }
    }

    fn huge_number(&mut self) -> String {
        let digits = self.rng.between(20, 500) as usize;
        let big: String = std::iter::once('9')
            .chain((1..digits).map(|_| char::from(b'0' + self.rng.below(10) as u8)))
            .collect();
        let number = match self.rng.below(8) {
            0 => big,
            1 => format!("-{big}"),
            2 => "1e400".to_owned(),
            3 => "-1e400".to_owned(),
            4 => "1.7976931348623159e308".to_owned(),
            5 => format!("0.{}1", "0".repeat(digits)),
            6 => format!("{big}.{big}e-{digits}"),
            _ => "123456789012345678901234567890e-10".to_owned(),
        };
        let id = self.fresh_id();
        match self.rng.below(3) {
            0 => self.request(&id, "ping", Some(&format!("{{\"n\":{number}}}"))),
            1 => {
                let params = format!(
                    "{{\"name\":\"events_query\",\"arguments\":{{\"kind\":\"{}\",\"limit\":{number}}}}}",
                    self.tag()
                );
                self.request(&id, "tools/call", Some(&params))
            }
            _ => format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\",\"n\":[{number},{number}]}}"
            ),
        }
    }

    fn wrong_type(&mut self) -> String {
        const VALUES: &[&str] = &["5", "null", "[]", "{}", "true", "\"x\"", "2.0", "[\"2.0\"]"];
        const SHAPES: [&str; 8] = [
            r#"{"jsonrpc":{value},"id":{id},"method":"ping"}"#,
            r#"{"id":{id},"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":{id},"method":{value}}"#,
            r#"{"jsonrpc":"2.0","id":{id}}"#,
            r#"{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{value}}"#,
            r#"{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{"name":{value},"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{"name":"topology","arguments":{value}}}"#,
            r#"{"jsonrpc":"2.0","id":{bad},"method":"ping"}"#,
        ];
        let value = *self.rng.pick(VALUES);
        let id = self.fresh_id();
        let shape = *self.rng.pick(&SHAPES);
        let bad = self.bad_id_for(shape);
        fill(shape, &[("id", &id), ("value", value), ("bad", bad)])
    }

    /// A bad id if `shape` has a place for one (drawn only then).
    fn bad_id_for(&mut self, shape: &str) -> &'static str {
        let bad = shape.contains("{bad}").then(|| self.rng.pick(BAD_IDS));
        bad.copied().unwrap_or_default()
    }

    fn duplicate_keys(&mut self) -> String {
        const SHAPES: [&str; 6] = [
            r#"{"jsonrpc":"2.0","id":{first},"method":"ping","id":{second}}"#,
            r#"{"jsonrpc":"2.0","id":{first},"method":"ping","id":{bad}}"#,
            r#"{"jsonrpc":"2.0","id":{bad},"method":"ping","id":{second}}"#,
            r#"{"jsonrpc":"2.0","id":{first},"method":"nope/never","method":"tools/list"}"#,
            r#"{"jsonrpc":"1.0","id":{first},"method":"ping","jsonrpc":"2.0","params":[],"params":{}}"#,
            r#"{"jsonrpc":"2.0","id":{first},"method":"tools/call","params":{"name":"x"},"params":{params}}"#,
        ];
        let first = self.fresh_id();
        let second = self.fresh_id();
        let shape = *self.rng.pick(&SHAPES);
        let bad = self.bad_id_for(shape);
        let params = if shape.contains("{params}") {
            self.tool_call_params()
        } else {
            String::new()
        };
        let values = [("first", &*first), ("second", &second), ("bad", bad)];
        fill(
            shape,
            &[values[0], values[1], values[2], ("params", &params)],
        )
    }

    fn batch(&mut self) -> String {
        match self.rng.below(5) {
            0 => "[]".to_owned(),
            1 => "[1,2,3]".to_owned(),
            2 => "[[]]".to_owned(),
            _ => {
                let count = self.rng.between(1, 4);
                let items: Vec<String> = (0..count)
                    .map(|_| {
                        let id = self.fresh_id();
                        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}")
                    })
                    .collect();
                format!("[{}]", items.join(","))
            }
        }
    }

    fn odd_id(&mut self) -> String {
        let id = match self.rng.below(5) {
            0 => {
                let edge = (*self.rng.pick(EDGE_IDS)).to_owned();
                self.claim_id(edge)
            }
            1 => (*self.rng.pick(BAD_IDS)).to_owned(),
            2 => {
                let long = format!("\"{}\"", self.filler_text(1000, 20_000));
                self.claim_id(long)
            }
            3 => {
                // Numbers written in unusual but valid ways.
                self.counter += 1;
                let n = self.counter;
                let text = match self.rng.below(3) {
                    0 => format!("{n}e0"),
                    1 => format!("{n}.0000"),
                    _ => format!("-{n}.25E+0"),
                };
                self.claim_id(text)
            }
            _ => self.fresh_id(),
        };
        let method = *self.rng.pick(LOCAL_METHODS);
        self.request(&id, method, None)
    }

    /// A line of exactly `len` bytes (when `len` leaves room for the
    /// frame): `shape` with `values` filled in and, in place of `{pad}`,
    /// filler (or, in place of `{tricky}`, [`tricky_exact`](Self::tricky_exact)
    /// text).
    fn padded(&mut self, shape: &str, values: &[(&str, &str)], len: usize) -> Vec<u8> {
        let line = fill(shape, values);
        let (head, tail) = line
            .split_once("{pad}")
            .or_else(|| line.split_once("{tricky}"))
            .unwrap_or_default();
        let room = len.saturating_sub(head.len() + tail.len());
        let content = if line.contains("{pad}") {
            self.filler_exact(room)
        } else {
            self.tricky_exact(room)
        };
        [head, &content, tail].concat().into_bytes()
    }

    fn long_string(&mut self) -> Vec<u8> {
        const SHAPES: [&str; 4] = [
            r#"{"jsonrpc":"2.0","id":{id},"method":"ping","params":{"pad":"{tricky}"}}"#,
            r#"{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{"name":"memory_recall","arguments":{"cue":"{tag} {pad}"}}}"#,
            r#"{"jsonrpc":"2.0","id":{id},"method":"no/such/{pad}"}"#,
            r#"{"jsonrpc":"2.0","method":"ping","params":{"pad":"{pad}"},"id":{id}}"#,
        ];
        let len = if self.rng.percent(20) {
            self.cap
        } else {
            self.rng.between(1024, self.cap as u64) as usize
        };
        let id = self.fresh_id();
        let shape = *self.rng.pick(&SHAPES);
        let tag = if shape.contains("{tag}") {
            self.tag()
        } else {
            String::new()
        };
        self.padded(shape, &[("id", &id), ("tag", &tag)], len)
    }

    fn over_cap(&mut self) -> Vec<u8> {
        const SHAPES: [&str; 6] = [
            r#"{"jsonrpc":"2.0","id":{id},"method":"ping","params":{"pad":"{pad}"}}"#,
            r#"{"id":{id},"pad":"{pad}"}"#,
            r#"{"jsonrpc":"2.0","method":"ping","params":{"pad":"{pad}"},"id":{id}}"#,
            // An id string longer than the head the wrapper keeps.
            r#"{"jsonrpc":"2.0","id":{long_id},"pad":"{pad}"}"#,
            // The id last, after nested decoy ids and a string full of
            // escapes and brackets.
            r#"{"jsonrpc":"2.0","method":"ping","params":{"id":"decoy","pad":"{tricky}","n":[1,{"id":2}]},"id":{id}}"#,
            // No object at all: filler only, never an id.
            "{pad}",
        ];
        let len = match self.rng.below(10) {
            0 => self.cap + 1,
            1 => self.cap + 2,
            2 => self.rng.between(2 * self.cap as u64, 4 * self.cap as u64) as usize,
            _ => self.rng.between(self.cap as u64 + 3, 2 * self.cap as u64) as usize,
        };
        let id = self.fresh_id();
        let shape = *self.rng.pick(&SHAPES);
        let long_id = if shape.contains("{long_id}") {
            let long = self.filler_text(600, 2000);
            self.claim_id(format!("\"{long}\""))
        } else {
            String::new()
        };
        let mut line = self.padded(shape, &[("id", &id), ("long_id", &long_id)], len);
        if shape == "{pad}"
            && let Some(first) = line.first_mut()
        {
            *first = b'x';
        }
        line
    }

    fn notification(&mut self) -> String {
        const SHAPES: [&str; 8] = [
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":{n},"progress":0.5}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"cancel-nobody-{n}"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":null}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#,
            r#"{"jsonrpc":"2.0","method":"vendor/unknown-{n}","params":[1,2]}"#,
            r#"{"jsonrpc":"2.0","method":5}"#,
            r#"{"method":"notifications/initialized"}"#,
        ];
        self.counter += 1;
        let n = self.counter.to_string();
        let shape = *self.rng.pick(&SHAPES);
        fill(shape, &[("n", &n)])
    }

    fn client_response(&mut self) -> String {
        const SHAPES: [&str; 5] = [
            r#"{"jsonrpc":"2.0","id":{id},"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":{id},"error":{"code":-32601,"message":"no"}}"#,
            r#"{"id":{id},"result":1}"#,
            r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":{id},"result":{},"error":{}}"#,
        ];
        let id = self.fresh_id();
        let shape = *self.rng.pick(&SHAPES);
        fill(shape, &[("id", &id)])
    }

    fn odd_request(&mut self) -> String {
        const REQUESTS: [(&str, Option<&str>); 11] = [
            (
                "initialize",
                Some(r#"{"protocolVersion":"1999-01-01","capabilities":{}}"#),
            ),
            ("initialize", None),
            (
                "tools/call",
                Some(r#"{"name":"no_such_tool","arguments":{}}"#),
            ),
            ("tools/call", Some(r#"{"arguments":{}}"#)),
            (
                "tools/call",
                Some(r#"{"name":"profile_get_set","arguments":{"operation":"explode"}}"#),
            ),
            (
                "tools/list",
                Some(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-12-31"}}"#),
            ),
            ("server/discover", Some("{}")),
            ("resources/list", None),
            ("prompts/get", Some(r#"{"name":"x"}"#)),
            ("logging/setLevel", Some(r#"{"level":"debug"}"#)),
            ("$/weird method\u{1F980}", None),
        ];
        let id = self.fresh_id();
        let (method, params) = *self.rng.pick(&REQUESTS);
        self.request(&id, method, params)
    }

    fn non_object(&mut self) -> Vec<u8> {
        const VALUES: &[&str] = &[
            "42",
            "\"ping\"",
            "null",
            "true",
            "1e999",
            "-",
            "{}",
            "\"\\u0000\"",
        ];
        (*self.rng.pick(VALUES)).as_bytes().to_vec()
    }

    fn random_bytes(&mut self) -> Vec<u8> {
        let len = self.rng.between(1, 300) as usize;
        if self.rng.percent(50) {
            (0..len).map(|_| self.rng.below(256) as u8).collect()
        } else {
            (0..len).map(|_| *self.rng.pick(JSONISH)).collect()
        }
    }

    fn blank(&mut self) -> Vec<u8> {
        (*self.rng.pick(&[&b""[..], b" ", b"\t", b"\r", b"  \t \r"])).to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_oracle::{Expect, expected_reply};
    use std::collections::BTreeMap;

    #[test]
    fn lines_are_deterministic_single_lines_with_unique_ids() {
        let cap = 4096;
        let mut a = LineGen::new(42, cap);
        let mut b = LineGen::new(42, cap);
        let mut ids = HashSet::new();
        let mut kinds = BTreeMap::new();
        let mut over_cap_with_id = 0;
        for n in 0..20_000 {
            let Line { kind, bytes: line } = a.next_line();
            assert_eq!(
                b.next_line(),
                Line {
                    kind,
                    bytes: line.clone()
                },
                "line {n}"
            );
            assert!(!line.contains(&b'\n'), "line {n} has a newline");
            *kinds.entry(kind).or_insert(0) += 1;
            let expect = expected_reply(&line, cap);
            if let Some(id) = expect.id() {
                assert!(ids.insert(id.to_string()), "line {n}: id {id} repeats");
            }
            if kind == LineKind::Valid {
                assert!(matches!(expect, Expect::Exactly(_)), "line {n}: {expect:?}");
            }
            if line.len() > cap {
                assert!(
                    matches!(
                        kind,
                        LineKind::OverCap | LineKind::DeepNesting | LineKind::OddId
                    ),
                    "line {n} ({kind}) is over the cap"
                );
                over_cap_with_id += usize::from(expect.id().is_some());
            }
        }
        assert_eq!(kinds.len(), KINDS.len(), "{kinds:?}");
        assert!(over_cap_with_id > 0);
    }

    #[test]
    fn a_seed_replays_the_lines_it_always_made() {
        // FNV-1a of the first 2000 kinds and lines of seed 42 at a 4096-byte
        // cap: if it moves, a printed seed no longer replays its run.
        let mut generator = LineGen::new(42, 4096);
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for _ in 0..2000 {
            let line = generator.next_line();
            for byte in line
                .kind
                .to_string()
                .bytes()
                .chain(line.bytes)
                .chain([b'\n'])
            {
                hash = (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3);
            }
        }
        assert_eq!(hash, 0x1b6b_235e_41a6_5eb5, "{hash:#x}");
    }
}
