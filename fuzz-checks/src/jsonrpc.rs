//! Reading JSON the way a reference reader would, independently of the
//! wrapper's own readers: what the checks compare the wrapper against.

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

/// A JSON object's top-level members in order, their values unread (a
/// member given twice appears twice).
pub struct Members(pub Vec<(String, Box<RawValue>)>);

impl Members {
    /// The members of `text`, when it is one JSON object.
    pub fn of(text: &[u8]) -> Option<Members> {
        // UTF-8 first: serde_json skips a string without checking it.
        serde_json::from_str(std::str::from_utf8(text).ok()?).ok()
    }

    /// How many times `name` is given.
    pub fn count(&self, name: &str) -> usize {
        self.0.iter().filter(|(key, _)| key == name).count()
    }

    /// The value of `name`, read, when it is given exactly once.
    pub fn single(&self, name: &str) -> Option<Value> {
        if self.count(name) != 1 {
            return None;
        }
        let (_, raw) = self.0.iter().find(|(key, _)| key == name)?;
        serde_json::from_str(raw.get()).ok()
    }
}

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Collect;
        impl<'de> Visitor<'de> for Collect {
            type Value = Members;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, Box<RawValue>>()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(Collect)
    }
}

/// Asserts that `line` is one whole JSON-RPC 2.0 response (newline
/// included, no other newline) and returns its `id`.
pub fn assert_response(line: &[u8]) -> Value {
    let Some(body) = line.strip_suffix(b"\n") else {
        panic!(
            "a reply ends with a newline: {}",
            String::from_utf8_lossy(line)
        );
    };
    assert!(
        !body.contains(&b'\n'),
        "a reply is one line: {}",
        String::from_utf8_lossy(line)
    );
    let members = Members::of(body).unwrap_or_else(|| {
        panic!(
            "a reply is a JSON object: {}",
            String::from_utf8_lossy(body)
        )
    });
    for name in ["jsonrpc", "id", "result", "error"] {
        assert!(members.count(name) <= 1, "{name} given twice: {members:?}");
    }
    assert_eq!(members.single("jsonrpc"), Some(Value::from("2.0")));
    let id = members
        .single("id")
        .unwrap_or_else(|| panic!("a reply carries an id: {members:?}"));
    assert!(
        matches!(id, Value::Null | Value::String(_) | Value::Number(_)),
        "an id is a string, a number or null: {id}"
    );
    let (result, error) = (members.count("result"), members.count("error"));
    assert_eq!(result + error, 1, "exactly one of result and error");
    if let Some(error) = members.single("error") {
        assert!(
            error["code"].is_i64(),
            "an error code is an integer: {error}"
        );
        assert!(
            error["message"].is_string(),
            "an error message is a string: {error}"
        );
    }
    id
}

impl std::fmt::Debug for Members {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(k, v)| (k, v.get())))
            .finish()
    }
}
