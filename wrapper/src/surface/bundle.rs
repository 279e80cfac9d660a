//! What an iai-mcp release serves, read from its bundled Node wrapper
//! (`iai_mcp/_wrapper/index.js`) without running it.
//!
//! Every release from 3.0.0 to 3.3.0 (and 2.8) keeps its surface in the
//! bundle as top-level data, read here with [`literal`](super::literal):
//!
//! - `HOT_TOOLS`, the names in listing order (`[...TOOL_NAMES]`);
//! - `toolSchemas`, an object with each tool's whole definition (name,
//!   description, input and output schema, annotations);
//! - `listHotTools`, the function `tools/list` calls, which maps the names
//!   to their definitions (checked to do just that: it is code, and a
//!   release that changed it would list something else);
//! - `SERVER_INSTRUCTIONS`, the prose joined to `JSON.stringify` of a
//!   configuration object;
//! - the server's name and version, given to `new Server(...)`.
//!
//! The same names in every release: no rule per release. What this reader
//! does not recognise is an error, and the wrapper then serves its
//! built-in table.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::literal::{Declarations, LiteralError};

/// Largest bundle read (3.3.0's is 572 KB): a larger file is not what it
/// claims to be.
pub const MAX_BUNDLE_BYTES: u64 = 16 * 1024 * 1024;

/// Most tools a release may list (3.3.0 lists 15).
pub const MAX_TOOLS: usize = 256;

/// A release's surface, as its own wrapper serves it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleaseSurface {
    /// The `tools/list` entries, in listing order, each exactly as the
    /// release defines it.
    pub tools: Vec<Value>,
    /// The server instructions.
    pub instructions: String,
    /// The version the bundle gives its server (3.0.0's says `0.1.0`), if
    /// it gives one.
    pub server_version: Option<String>,
}

/// Why a bundle could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    /// A declaration could not be read as data.
    #[error("reading {name}: {error}")]
    Declaration {
        /// The declaration.
        name: &'static str,
        /// What went wrong.
        error: LiteralError,
    },
    /// The declarations were read but do not have the shape of a surface.
    #[error("{0}")]
    Shape(String),
}

/// Reads the surface out of a bundle's text.
pub fn read(text: &str) -> Result<ReleaseSurface, BundleError> {
    let declarations = Declarations::new(text);
    let value = |name: &'static str| {
        declarations
            .value(name)
            .map_err(|error| BundleError::Declaration { name, error })
    };
    check_listing_function(&declarations)?;
    let names = value("HOT_TOOLS")?;
    let schemas = value("toolSchemas")?;
    let instructions = match value("SERVER_INSTRUCTIONS")? {
        Value::String(text) => text,
        _ => return Err(shape("SERVER_INSTRUCTIONS is not a string")),
    };
    let tools = listing(names, schemas)?;
    Ok(ReleaseSurface {
        tools,
        instructions,
        server_version: server_version(text),
    })
}

/// `HOT_TOOLS.map((n) => toolSchemas[n])`, checked to be what
/// `listHotTools` does (spaces aside, whatever its parameter's name).
fn check_listing_function(declarations: &Declarations<'_>) -> Result<(), BundleError> {
    let body: String = declarations
        .function_body("listHotTools")
        .map_err(|error| BundleError::Declaration {
            name: "listHotTools",
            error,
        })?
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let maps_names = body
        .strip_prefix("returnHOT_TOOLS.map((")
        .and_then(|rest| rest.split_once(")=>toolSchemas["))
        .and_then(|(parameter, rest)| {
            (rest.strip_suffix("]);") == Some(parameter) && !parameter.is_empty()).then_some(())
        });
    maps_names.ok_or_else(|| shape("listHotTools does not list HOT_TOOLS' entries of toolSchemas"))
}

/// The entries of `schemas` named by `names`, in that order, each checked
/// to be a tool definition clients accept.
fn listing(names: Value, schemas: Value) -> Result<Vec<Value>, BundleError> {
    let Value::Array(names) = names else {
        return Err(shape("HOT_TOOLS is not an array"));
    };
    let Value::Object(mut schemas) = schemas else {
        return Err(shape("toolSchemas is not an object"));
    };
    if names.is_empty() || names.len() > MAX_TOOLS {
        return Err(shape(&format!(
            "HOT_TOOLS lists {} tools (1 to {MAX_TOOLS} expected)",
            names.len()
        )));
    }
    let mut tools = Vec::with_capacity(names.len());
    for name in names {
        let Value::String(name) = name else {
            return Err(shape("HOT_TOOLS holds something other than a name"));
        };
        let Some(entry) = schemas.remove(&name) else {
            return Err(shape(&format!(
                "{name} is listed but has no definition (or is listed twice)"
            )));
        };
        check_tool(&name, &entry)?;
        tools.push(entry);
    }
    Ok(tools)
}

/// A tool definition as MCP wants it: an object whose `name` is the name
/// it is listed under, with an object `inputSchema`; a `description` and
/// `annotations`, when given, of the right type.
fn check_tool(listed: &str, entry: &Value) -> Result<(), BundleError> {
    let Value::Object(entry) = entry else {
        return Err(shape(&format!("{listed}'s definition is not an object")));
    };
    let text = |key: &str| matches!(entry.get(key), None | Some(Value::String(_)));
    let object = |key: &str| matches!(entry.get(key), None | Some(Value::Object(_)));
    let named = entry.get("name").and_then(Value::as_str) == Some(listed);
    let valid = named
        && !listed.is_empty()
        && matches!(entry.get("inputSchema"), Some(Value::Object(_)))
        && text("description")
        && text("title")
        && object("outputSchema")
        && object("annotations")
        && annotations_are_booleans(entry);
    if valid {
        Ok(())
    } else {
        Err(shape(&format!(
            "{listed}'s definition is not a tool definition"
        )))
    }
}

fn annotations_are_booleans(entry: &Map<String, Value>) -> bool {
    let Some(Value::Object(annotations)) = entry.get("annotations") else {
        return true;
    };
    annotations
        .iter()
        .all(|(key, value)| key == "title" || value.is_boolean())
}

/// The version the bundle gives its server: the `version` string beside
/// `name: "iai-mcp"` in the first object after `new Server(`.
fn server_version(text: &str) -> Option<String> {
    let start = text.find("new Server(")? + "new Server(".len();
    let window = prefix_within(&text[start..], 512);
    let after = &window[window.find("version:")? + "version:".len()..];
    let quoted = after.trim_start().strip_prefix('"')?;
    let version = &quoted[..quoted.find('"')?];
    let plausible = !version.is_empty()
        && version.len() <= 64
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'));
    plausible.then(|| version.to_owned())
}

/// The longest start of `text` no longer than `max_bytes` that ends on a
/// character boundary (a bundle is any text: a byte count may fall inside
/// a character).
fn prefix_within(text: &str, max_bytes: usize) -> &str {
    let mut end = max_bytes.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn shape(what: &str) -> BundleError {
    BundleError::Shape(what.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A bundle of the releases' shape, in this project's own words.
    const SYNTHETIC: &str = include_str!("../../tests/fixtures/bundle.js");

    #[test]
    fn a_bundle_of_the_releases_shape_is_read_whole() {
        let surface = read(SYNTHETIC).expect("readable");
        let names: Vec<&str> = surface
            .tools
            .iter()
            .map(|t| t["name"].as_str().expect("name"))
            .collect();
        assert_eq!(names, ["alpha_read", "beta_write"], "HOT_TOOLS' order");
        assert_eq!(surface.tools[1]["description"], "Writes a note — once.");
        assert_eq!(
            surface.tools[1]["inputSchema"]["properties"]["limit"],
            json!({"type": "integer", "default": 2000})
        );
        assert_eq!(
            surface.instructions,
            "Read before you write.\n\nconfig: {\"context_editing\":{\"type\":\"clear_everything\",\"trigger\":{\"type\":\"input_tokens\",\"value\":30000}},\"hot_tools\":[\"alpha_read\",\"beta_write\"]}"
        );
        assert_eq!(surface.server_version.as_deref(), Some("9.8.7"));
    }

    #[test]
    fn a_bundle_of_another_shape_is_refused_with_its_reason() {
        let cases = [
            (
                SYNTHETIC.replace(
                    "HOT_TOOLS.map((n) => toolSchemas[n])",
                    "HOT_TOOLS.filter(Boolean)",
                ),
                "listHotTools",
            ),
            (
                SYNTHETIC.replace("\"beta_write\"\n];", "\"beta_write\",\n  \"gamma\"\n];"),
                "gamma is listed but has no definition",
            ),
            (
                SYNTHETIC.replace("name: \"alpha_read\",", "name: \"other\","),
                "alpha_read's definition",
            ),
            (
                SYNTHETIC.replace("var toolSchemas", "var schemas"),
                "toolSchemas",
            ),
            (
                SYNTHETIC.replace(
                    "var SERVER_INSTRUCTIONS = \"Read",
                    "var SERVER_INSTRUCTIONS = `Read",
                ),
                "SERVER_INSTRUCTIONS",
            ),
            (
                SYNTHETIC.replace("readOnlyHint: true", "readOnlyHint: \"yes\""),
                "alpha_read's definition",
            ),
            (SYNTHETIC[..SYNTHETIC.len() / 2].to_owned(), ""),
            (String::new(), "listHotTools"),
        ];
        for (bundle, reason) in cases {
            let error = read(&bundle).expect_err(reason).to_string();
            assert!(error.contains(reason), "{error:?} does not name {reason:?}");
        }
    }

    #[test]
    fn a_server_version_window_ending_inside_a_character_is_cut_before_it() {
        // 510 bytes after `new Server(`, then a three-byte character
        // across the 512-byte window's end.
        let text = format!("new Server({}\u{2014}x", " ".repeat(510));
        assert_eq!(server_version(&text), None);
        let named = format!(
            "new Server({{ version: \"1.2.3\" }}{}\u{2014}",
            " ".repeat(500)
        );
        assert_eq!(server_version(&named).as_deref(), Some("1.2.3"));
        assert_eq!(prefix_within("a\u{2014}", 2), "a");
        assert_eq!(prefix_within("ab", 5), "ab");
    }
}
