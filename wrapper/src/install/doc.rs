//! A host configuration file read as a small tree of values that remember
//! where their text is, so an entry can be changed by replacing the bytes
//! of one value while every other byte of the file stays as it was.

use std::ops::Range;

use jsonc_parser::common::Ranged;
use jsonc_parser::{CollectOptions, ParseOptions, ast};

/// The syntax of a host's configuration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Plain JSON, as Claude Code, Claude Desktop, Cursor and OpenClaw read it.
    Json,
    /// JSON with comments and trailing commas, as opencode reads it.
    Jsonc,
    /// TOML, as Codex reads it.
    Toml,
}

/// One value of a configuration file and the byte range of its text.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Where the value's text is (empty for TOML standard tables, which are
    /// never replaced whole).
    pub span: Range<usize>,
    /// What the value is.
    pub kind: Kind,
}

/// The kinds of value an entry is made of; the rest is kept opaque.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A string, unescaped.
    Str(String),
    /// An array.
    List(Vec<Node>),
    /// An object or table, keys in file order.
    Map(Vec<(String, Node)>),
    /// Anything else (numbers, booleans, dates, null).
    Other,
}

impl Node {
    /// The child under `key`, if this is a map holding it.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.kind {
            Kind::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::Str(s) => Some(s),
            _ => None,
        }
    }
}

impl Format {
    /// Read a whole file; an error says why it is not valid in this format.
    pub fn parse(self, text: &str) -> Result<Node, String> {
        match self {
            Format::Json => {
                // The lenient parser below accepts comments and trailing
                // commas; a host reading plain JSON would not.
                serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|e| e.to_string())?;
                json(text)
            }
            Format::Jsonc => json(text),
            Format::Toml => {
                let doc = toml_edit::Document::parse(text).map_err(|e| e.to_string())?;
                Ok(Node {
                    span: 0..0,
                    kind: toml_table(doc.as_table()),
                })
            }
        }
    }

    /// A string literal for `s` in this format.
    pub fn string(self, s: &str) -> String {
        match self {
            Format::Json | Format::Jsonc => serde_json::Value::from(s).to_string(),
            Format::Toml => toml_edit::Value::from(s).to_string(),
        }
    }

    /// An array literal of string literals, on one line.
    pub fn list(self, items: &[&str]) -> String {
        let items: Vec<String> = items.iter().map(|s| self.string(s)).collect();
        format!("[{}]", items.join(", "))
    }
}

fn json(text: &str) -> Result<Node, String> {
    let options = ParseOptions::default();
    let parsed = jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &options)
        .map_err(|e| e.to_string())?;
    parsed
        .value
        .as_ref()
        .map(json_node)
        .ok_or_else(|| "the file holds no value".to_owned())?
}

/// A JSON value as a [`Node`]. A key given twice in one object is refused:
/// parsers disagree on which one counts (JavaScript's takes the last), so
/// no edit could be sure to change what the host reads.
fn json_node(value: &ast::Value<'_>) -> Result<Node, String> {
    let range = value.range();
    let kind = match value {
        ast::Value::StringLit(s) => Kind::Str(s.value.to_string()),
        ast::Value::Array(a) => {
            Kind::List(a.elements.iter().map(json_node).collect::<Result<_, _>>()?)
        }
        ast::Value::Object(o) => {
            let mut entries: Vec<(String, Node)> = Vec::with_capacity(o.properties.len());
            for p in &o.properties {
                let key = p.name.as_str();
                if entries.iter().any(|(k, _)| k == key) {
                    return Err(format!("the key {key:?} appears twice in one object"));
                }
                entries.push((key.to_owned(), json_node(&p.value)?));
            }
            Kind::Map(entries)
        }
        _ => Kind::Other,
    };
    Ok(Node {
        span: range.start..range.end,
        kind,
    })
}

fn toml_table(table: &dyn toml_edit::TableLike) -> Kind {
    Kind::Map(
        table
            .iter()
            .filter_map(|(k, item)| toml_item(item).map(|n| (k.to_owned(), n)))
            .collect(),
    )
}

fn toml_item(item: &toml_edit::Item) -> Option<Node> {
    match item {
        toml_edit::Item::None => None,
        toml_edit::Item::Value(v) => Some(toml_value(v)),
        toml_edit::Item::Table(t) => Some(Node {
            span: 0..0,
            kind: toml_table(t),
        }),
        toml_edit::Item::ArrayOfTables(_) => Some(Node {
            span: 0..0,
            kind: Kind::Other,
        }),
    }
}

fn toml_value(value: &toml_edit::Value) -> Node {
    let kind = match value {
        toml_edit::Value::String(s) => Kind::Str(s.value().to_owned()),
        toml_edit::Value::Array(a) => Kind::List(a.iter().map(toml_value).collect()),
        toml_edit::Value::InlineTable(t) => toml_table(t),
        _ => Kind::Other,
    };
    Node {
        span: value.span().unwrap_or(0..0),
        kind,
    }
}

/// Replace byte ranges of `text`; the ranges must not overlap.
pub fn splice(text: &str, edits: &[(Range<usize>, String)]) -> String {
    let mut sorted: Vec<_> = edits.iter().collect();
    sorted.sort_by_key(|(span, _)| std::cmp::Reverse(span.start));
    let mut out = text.to_owned();
    for (span, new) in sorted {
        out.replace_range(span.clone(), new);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of<'a>(text: &'a str, node: &Node) -> &'a str {
        &text[node.span.clone()]
    }

    /// The text of the entry's `command` and `args` values.
    fn fields<'a>(text: &'a str, entry: &Node) -> (&'a str, &'a str) {
        let field = |key| text_of(text, entry.get(key).expect(key));
        (field("command"), field("args"))
    }

    #[test]
    fn json_values_know_their_bytes() {
        let text = "{\"é\": 1, \"s\": {\"iai-mcp\": {\"command\": \"node\", \"args\": [\"/x/index.js\"]}}}";
        let root = Format::Json.parse(text).expect("parses");
        let entry = root.get("s").and_then(|s| s.get("iai-mcp")).expect("entry");
        assert_eq!(fields(text, entry), ("\"node\"", "[\"/x/index.js\"]"));
    }

    #[test]
    fn a_key_given_twice_is_refused() {
        let text = r#"{"mcpServers": {"iai-mcp": {"command": "a", "command": "node"}}}"#;
        let refused = Format::Json.parse(text).expect_err("refused");
        assert!(refused.contains("\"command\" appears twice"), "{refused}");
    }

    #[test]
    fn plain_json_refuses_comments_that_jsonc_takes() {
        let text = "{\n  // note\n  \"mcp\": {},\n}";
        assert!(Format::Json.parse(text).is_err());
        assert!(Format::Jsonc.parse(text).is_ok());
    }

    #[test]
    fn toml_values_know_their_bytes_in_every_table_form() {
        let text = "[mcp_servers.iai-mcp]\ncommand = \"node\" # c\nargs = ['/x/index.js']\n\n[mcp_servers]\nother = { command = \"a\" }\n";
        let root = Format::Toml.parse(text).expect("parses");
        let servers = root.get("mcp_servers").expect("servers");
        let entry = servers.get("iai-mcp").expect("entry");
        assert_eq!(fields(text, entry), ("\"node\"", "['/x/index.js']"));
        let other = servers.get("other").and_then(|o| o.get("command"));
        assert_eq!(other.map(|c| text_of(text, c)), Some("\"a\""));
    }

    #[test]
    fn literals_escape_in_each_format() {
        assert_eq!(Format::Json.string("a\"b"), "\"a\\\"b\"");
        assert_eq!(Format::Toml.list(&["/bin/w"]), "[\"/bin/w\"]");
        let toml = format!("k = {}\n", Format::Toml.string("a\"b\\c"));
        let root = Format::Toml.parse(&toml).expect("parses");
        assert_eq!(root.get("k").and_then(Node::as_str), Some("a\"b\\c"));
    }

    #[test]
    fn splices_apply_from_the_end() {
        let out = splice("abcdef", &[(0..1, "X".into()), (4..6, "YZW".into())]);
        assert_eq!(out, "XbcdYZW");
    }
}
