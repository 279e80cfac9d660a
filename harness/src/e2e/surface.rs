//! `cargo xtask surface`: what an iai-pme release's tool surface is beside
//! the wrapper's table, and, with `--write`, the table rewritten to it.
//!
//! [`run_surface`] installs the release alone in its own environment
//! ([`pyenv::Contents::ReleaseOnly`]), asks the release's own bundled Node
//! wrapper for its `tools/list` ([`release_listing`]), and compares it with
//! `wrapper/src/tools/surface.json` through [`listing::compare`], the
//! comparison the end-to-end kit's listing row makes too.
//!
//! [`rewrite`] makes the release's interface the table's (tools and their
//! order, every parameter's schema apart from its description, `required`,
//! annotations, result fields) and keeps this project's own words: titles
//! and descriptions of tools and parameters the table already has. A tool
//! or parameter new to the table gets a description starting with
//! [`PLACEHOLDER`], which the wrapper's unit tests refuse, so a table with
//! one cannot ship. The table is written in its own layout
//! ([`format_table`]); when nothing changed, no file is touched.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::checks::PROTOCOL;
use super::listing::{self, HINTS, ListingDiff};
use super::pyenv::{self, Contents, PyEnv};
use super::release::Release;
use crate::daemon::DaemonEndpoint;
use crate::error::HarnessError;
use crate::tempdir::short_tempdir;
use crate::wrapper::{WrapperCommand, WrapperOptions, WrapperProcess};

/// The tool table, relative to the workspace root.
pub const TABLE: &str = "wrapper/src/tools/surface.json";
/// The file declaring [`SURFACE_RELEASE`], relative to the workspace root.
pub const TOOLS_MOD: &str = "wrapper/src/tools/mod.rs";
/// The constant naming the release the table is.
pub const SURFACE_RELEASE: &str = "SURFACE_RELEASE";
/// The file declaring the harness's pinned release ([`PINNED`]).
///
/// [`PINNED`]: super::release::PINNED
pub const RELEASE_RS: &str = "harness/src/e2e/release.rs";
/// How every description `--write` could not take from the table begins.
pub const PLACEHOLDER: &str = "TODO(surface):";

/// The longest line the table's layout puts an object on.
const WIDTH: usize = 100;
/// Bound on the release wrapper's replies.
const REPLY: Duration = Duration::from_secs(30);
/// The open result field every table entry has (see `wrapper/src/tools`).
const VALUE_FIELD: &str = "The daemon's result when it is not a JSON object.";

/// How to run `surface`.
#[derive(Debug, Clone)]
pub struct SurfaceConfig {
    /// The release to compare with.
    pub release: Release,
    /// Where the release environments live (`<work_dir>/<VERSION>/venv`).
    pub work_dir: PathBuf,
    /// The workspace whose table is compared (and rewritten).
    pub root: PathBuf,
    /// The Python interpreter for the environment (default: the first
    /// supported one on `PATH`).
    pub python: Option<PathBuf>,
    /// The Node.js binary that runs the release's own wrapper.
    pub node: PathBuf,
    /// Rewrite the table (and the release constants) to the release.
    pub write: bool,
}

/// What `surface` found, and what it wrote.
#[derive(Debug, Clone)]
pub struct SurfaceReport {
    /// The release compared with.
    pub release: Release,
    /// The release the table said it was before (`SURFACE_RELEASE`).
    pub table_release: String,
    /// Tools in the table.
    pub table_tools: usize,
    /// Tools the release lists.
    pub release_tools: usize,
    /// The differences.
    pub diff: ListingDiff,
    /// The environment line.
    pub setup: String,
    /// What `--write` did (`None`: not asked).
    pub written: Option<Written>,
}

/// What `--write` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The files changed, relative to the workspace root (empty: none).
    pub files: Vec<String>,
    /// The placeholders left in the table to write.
    pub placeholders: usize,
}

impl fmt::Display for SurfaceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let release = &self.release;
        writeln!(
            f,
            "surface: iai-pme {release}'s own wrapper ({} tools) against the tool table {TABLE} ({}, {} tools)",
            self.release_tools, self.table_release, self.table_tools
        )?;
        if self.diff.is_empty() {
            writeln!(
                f,
                "no difference: the same tools in the same order; every parameter's type, default, enum, format and items, required lists, annotations and result fields equal"
            )?;
        } else {
            for line in self.diff.lines() {
                writeln!(f, "  {line}")?;
            }
            let n = self.diff.differences.len();
            writeln!(
                f,
                "{n} difference{} between {release} and the table",
                if n == 1 { "" } else { "s" }
            )?;
        }
        match &self.written {
            None => {}
            Some(w) if w.files.is_empty() => writeln!(f, "write: nothing to change")?,
            Some(w) => {
                writeln!(f, "write: rewrote {}", w.files.join(", "))?;
                if w.placeholders > 0 {
                    writeln!(
                        f,
                        "write: {} description{} to write (they start with {PLACEHOLDER}; the wrapper's tests refuse them)",
                        w.placeholders,
                        if w.placeholders == 1 { "" } else { "s" }
                    )?;
                }
            }
        }
        write!(f, "{}", self.setup)
    }
}

/// Installs the release (once), lists its tools, compares, and rewrites
/// when asked. An `Err` means the comparison could not run.
pub fn run_surface(cfg: &SurfaceConfig) -> Result<SurfaceReport, HarnessError> {
    let root = cfg.work_dir.join(cfg.release.as_str()).join("venv");
    let py = pyenv::ensure(
        &root,
        cfg.python.as_deref(),
        &cfg.release,
        Contents::ReleaseOnly,
    )?;
    let setup = format!(
        "environment: {} ({}; {:.1} MiB on disk)",
        py.root.display(),
        py.installed(Contents::ReleaseOnly),
        py.size as f64 / (1024.0 * 1024.0)
    );
    let theirs = release_listing(&py, &cfg.node)?;
    let table_path = cfg.root.join(TABLE);
    let table = read_table(&table_path)?;
    let table_release = read_const(&cfg.root.join(TOOLS_MOD), SURFACE_RELEASE)?;
    let diff = listing::compare(&table, &theirs, cfg.release.as_str());
    let written = if cfg.write {
        Some(write(cfg, &table, &theirs)?)
    } else {
        None
    };
    Ok(SurfaceReport {
        release: cfg.release.clone(),
        table_release,
        table_tools: table.len(),
        release_tools: theirs.len(),
        diff,
        setup,
        written,
    })
}

/// The `tools` array the release's own bundled Node wrapper lists in `py`:
/// started with `node` in a scratch `HOME`, pointed at a socket no daemon
/// listens on and at CLIs that do not exist (so it starts nothing), then
/// initialize, `notifications/initialized`, `tools/list`. The process is
/// killed and reaped when this returns, on every path.
pub fn release_listing(py: &PyEnv, node: &Path) -> Result<Vec<Value>, HarnessError> {
    let index = py.bundled_wrapper()?;
    let scratch = short_tempdir()?;
    let opts = WrapperOptions::at(DaemonEndpoint::Unix(scratch.path().join("none.sock")));
    let cmd = WrapperCommand {
        args: vec![index.into()],
        ..WrapperCommand::new(node)
    };
    let mut w = WrapperProcess::spawn(&cmd, &opts)?;
    w.initialize(PROTOCOL)?;
    let tools = listing::listed_tools(&mut w, REPLY)?;
    if tools.is_empty() {
        return Err(HarnessError::Scenario(format!(
            "iai-pme {}'s wrapper listed no tools; its stderr: {}",
            py.release,
            w.stderr_tail(800)
        )));
    }
    Ok(tools)
}

/// Rewrites the table and the release constants in `cfg.root`.
fn write(cfg: &SurfaceConfig, table: &[Value], theirs: &[Value]) -> Result<Written, HarnessError> {
    let rewritten = rewrite(table, theirs, cfg.release.as_str());
    let mut files = Vec::new();
    if rewritten.as_slice() != table {
        let path = cfg.root.join(TABLE);
        let text = format_table(&Value::Array(rewritten.clone()));
        std::fs::write(&path, text)
            .map_err(|e| HarnessError::io(format!("writing {}", path.display()), e))?;
        files.push(TABLE.to_owned());
    }
    for (file, name) in [(TOOLS_MOD, SURFACE_RELEASE), (RELEASE_RS, "PINNED")] {
        if set_const(&cfg.root.join(file), name, cfg.release.as_str())? {
            files.push(format!("{file} ({name} = \"{}\")", cfg.release));
        }
    }
    Ok(Written {
        files,
        placeholders: placeholders(&Value::Array(rewritten)),
    })
}

/// The table parsed: its `tools` array.
pub fn read_table(path: &Path) -> Result<Vec<Value>, HarnessError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| HarnessError::io(format!("reading {}", path.display()), e))?;
    match serde_json::from_str(&text) {
        Ok(Value::Array(tools)) => Ok(tools),
        Ok(_) => Err(HarnessError::Scenario(format!(
            "{} is not a JSON array",
            path.display()
        ))),
        Err(e) => Err(HarnessError::Scenario(format!(
            "{} is not JSON: {e}",
            path.display()
        ))),
    }
}

/// The line declaring `pub const NAME: &str = "VALUE";`, split around the
/// value; an error unless `source` has exactly one.
fn const_line<'a>(source: &'a str, name: &str) -> Result<(usize, &'a str), String> {
    let head = format!("pub const {name}: &str = \"");
    let found: Vec<(usize, &str)> = source
        .lines()
        .enumerate()
        .filter_map(|(i, line)| {
            line.strip_prefix(&head)
                .and_then(|rest| rest.strip_suffix("\";"))
                .map(|value| (i, value))
        })
        .collect();
    match found.as_slice() {
        [one] => Ok(*one),
        _ => Err(format!(
            "{} lines `{head}...\";` (expected one)",
            found.len()
        )),
    }
}

/// The value of the string constant `name` declared in the file `path`.
pub fn read_const(path: &Path, name: &str) -> Result<String, HarnessError> {
    let source = std::fs::read_to_string(path)
        .map_err(|e| HarnessError::io(format!("reading {}", path.display()), e))?;
    const_line(&source, name)
        .map(|(_, value)| value.to_owned())
        .map_err(|why| HarnessError::Scenario(format!("{}: {why}", path.display())))
}

/// Sets the string constant `name` in the file `path` to `value`; whether
/// the file changed (it is not touched when the value is already `value`).
pub fn set_const(path: &Path, name: &str, value: &str) -> Result<bool, HarnessError> {
    let source = std::fs::read_to_string(path)
        .map_err(|e| HarnessError::io(format!("reading {}", path.display()), e))?;
    let updated = replace_const(&source, name, value)
        .map_err(|why| HarnessError::Scenario(format!("{}: {why}", path.display())))?;
    if updated == source {
        return Ok(false);
    }
    std::fs::write(path, updated)
        .map_err(|e| HarnessError::io(format!("writing {}", path.display()), e))?;
    Ok(true)
}

/// `source` with the string constant `name` set to `value`, every other
/// byte as it was.
fn replace_const(source: &str, name: &str, value: &str) -> Result<String, String> {
    let (index, _) = const_line(source, name)?;
    let mut out = String::with_capacity(source.len());
    for (i, line) in source.split_inclusive('\n').enumerate() {
        if i == index {
            let ending = &line[line.trim_end_matches(['\n', '\r']).len()..];
            out.push_str(&format!("pub const {name}: &str = \"{value}\";{ending}"));
        } else {
            out.push_str(line);
        }
    }
    Ok(out)
}

/// How many strings of `value` start with [`PLACEHOLDER`].
pub fn placeholders(value: &Value) -> usize {
    match value {
        Value::String(s) => usize::from(s.starts_with(PLACEHOLDER)),
        Value::Array(items) => items.iter().map(placeholders).sum(),
        Value::Object(map) => map.values().map(placeholders).sum(),
        _ => 0,
    }
}

/// A placeholder description for something `release` describes as
/// `theirs` (kept after the marker, on one line, as a starting point).
fn placeholder(what: &str, release: &str, theirs: &Value) -> Value {
    let said = theirs
        .as_str()
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| !s.is_empty());
    Value::String(match said {
        Some(said) => format!("{PLACEHOLDER} describe {what}; {release} says: {said}"),
        None => format!("{PLACEHOLDER} describe {what}"),
    })
}

/// The table with `theirs`' interface and the table's own words.
///
/// Tools come in the release's order; a tool the release lacks is dropped.
/// A tool whose interface is unchanged is kept as it is. Otherwise its
/// annotations and `required` list become the release's, its parameters
/// the release's in the release's order (a parameter whose interface is
/// unchanged kept as it is, a changed one the release's schema with the
/// table's description), and result fields the release lists are added to
/// its open `outputSchema`. A new tool or parameter gets a [`PLACEHOLDER`]
/// description; a new tool also a placeholder title and an open
/// `outputSchema` with the release's fields.
pub fn rewrite(table: &[Value], theirs: &[Value], release: &str) -> Vec<Value> {
    theirs
        .iter()
        .map(|tool| {
            let ours = table.iter().find(|t| t["name"] == tool["name"]);
            match ours {
                Some(ours) => {
                    let name = tool["name"].as_str().unwrap_or("?");
                    if listing::compare_tool(name, ours, tool).is_empty() {
                        ours.clone()
                    } else {
                        rewrite_tool(ours, tool, release)
                    }
                }
                None => new_tool(tool, release),
            }
        })
        .collect()
}

/// A tool both list, with the release's interface and the table's words.
fn rewrite_tool(ours: &Value, theirs: &Value, release: &str) -> Value {
    let mut tool = ours.clone();
    let name = theirs["name"].as_str().unwrap_or("?");
    tool["inputSchema"] = input_schema(Some(&ours["inputSchema"]), theirs, name, release);
    let mut output = ours["outputSchema"].clone();
    if !output["properties"].is_object() {
        output["properties"] = json!({});
    }
    for (field, schema) in listing::properties(&theirs["outputSchema"]) {
        if output["properties"].get(&field).is_none() {
            output["properties"][&field] = schema;
        }
    }
    tool["outputSchema"] = output;
    tool["annotations"] = annotations(Some(&ours["annotations"]), theirs);
    tool
}

/// A tool new to the table.
fn new_tool(theirs: &Value, release: &str) -> Value {
    let name = theirs["name"].as_str().unwrap_or("?");
    let mut output = Map::new();
    for (field, schema) in listing::properties(&theirs["outputSchema"]) {
        output.insert(field, schema);
    }
    output.insert("value".into(), json!({ "description": VALUE_FIELD }));
    json!({
        "name": name,
        "title": format!("{PLACEHOLDER} title {name}"),
        "description": placeholder(&format!("tool {name}"), release, &theirs["description"]),
        "inputSchema": input_schema(None, theirs, name, release),
        "outputSchema": { "type": "object", "properties": output },
        "annotations": annotations(None, theirs),
    })
}

/// The release's annotations; the table's object (and key order) kept
/// where it has one.
fn annotations(ours: Option<&Value>, theirs: &Value) -> Value {
    let mut out = ours.and_then(Value::as_object).cloned().unwrap_or_default();
    for hint in HINTS {
        match &theirs["annotations"][hint] {
            Value::Null => {
                out.remove(hint);
            }
            value => {
                out.insert(hint.to_owned(), value.clone());
            }
        }
    }
    Value::Object(out)
}

/// The input schema of tool `name`: the release's parameters with the
/// table's descriptions, and the release's `required` list unless the
/// table's is the same set.
fn input_schema(ours: Option<&Value>, theirs: &Value, name: &str, release: &str) -> Value {
    let ours_props = ours.map(listing::properties).unwrap_or_default();
    let mut props = Map::new();
    for (param, schema) in listing::properties(&theirs["inputSchema"]) {
        let kept = ours_props.get(&param);
        let value = match kept {
            Some(kept) if listing::interface(kept) == listing::interface(&schema) => kept.clone(),
            _ => {
                let mut value = listing::interface(&schema);
                if value.get("type").is_none() {
                    // Every parameter states its type (some clients rewrite
                    // an untyped one to a string).
                    value.insert("type".into(), json!(listing::ANY));
                }
                let description = match kept {
                    Some(kept) => kept["description"].clone(),
                    None => placeholder(
                        &format!("parameter {name}.{param}"),
                        release,
                        &schema["description"],
                    ),
                };
                value.insert("description".into(), description);
                Value::Object(value)
            }
        };
        props.insert(param, value);
    }
    let base = ours.unwrap_or(&theirs["inputSchema"]);
    let mut schema = base.as_object().cloned().unwrap_or_default();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(props));
    let same = ours.is_some_and(|o| listing::required_names(o) == listing::required(theirs));
    let required = match &theirs["inputSchema"]["required"] {
        _ if same => base["required"].clone(),
        Value::Array(names) => Value::Array(names.clone()),
        _ => json!([]),
    };
    schema.insert("required".into(), required);
    Value::Object(schema)
}

/// `table` in the table's layout: two-space indentation; an array of
/// scalars on one line; an object on one line (`{ "k": v, ... }`) when it
/// holds no arrays of objects, is not a description beside other keys,
/// and its line stays within 100 characters; anything else one member a
/// line. Ends with a newline.
pub fn format_table(table: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, table, 0, 0);
    out.push('\n');
    out
}

/// Writes `value` at `indent`, on a line that already holds `prefix`
/// characters.
fn write_value(out: &mut String, value: &Value, indent: usize, prefix: usize) {
    match value {
        Value::Array(items) if !items.iter().all(is_scalar) => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                out.push_str(&" ".repeat(indent + 2));
                write_value(out, item, indent + 2, indent + 2);
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            out.push_str(&" ".repeat(indent));
            out.push(']');
        }
        Value::Object(map) if !map.is_empty() && !fits_on_a_line(map, prefix) => {
            out.push_str("{\n");
            for (i, (key, item)) in map.iter().enumerate() {
                let head = format!("{}{}: ", " ".repeat(indent + 2), Value::from(key.as_str()));
                out.push_str(&head);
                write_value(out, item, indent + 2, head.chars().count());
                out.push_str(if i + 1 < map.len() { ",\n" } else { "\n" });
            }
            out.push_str(&" ".repeat(indent));
            out.push('}');
        }
        other => out.push_str(&inline(other)),
    }
}

/// Whether `map` goes on one line after `prefix` characters (and a comma).
fn fits_on_a_line(map: &Map<String, Value>, prefix: usize) -> bool {
    let described = map.contains_key("description") && map.len() > 1;
    let nested_rows = map
        .values()
        .any(|v| matches!(v, Value::Array(items) if !items.iter().all(is_scalar)));
    !described
        && !nested_rows
        && prefix + inline(&Value::Object(map.clone())).chars().count() < WIDTH
}

fn is_scalar(value: &Value) -> bool {
    !matches!(value, Value::Array(_) | Value::Object(_))
}

/// `value` on one line: `{ "k": v }`, `[a, b]`, `{}`.
fn inline(value: &Value) -> String {
    match value {
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(inline).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) if map.is_empty() => "{}".to_owned(),
        Value::Object(map) => {
            let members: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::from(k.as_str()), inline(v)))
                .collect();
            format!("{{ {} }}", members.join(", "))
        }
        scalar => scalar.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REAL_TABLE: &str = include_str!("../../../wrapper/src/tools/surface.json");

    fn table(text: &str) -> Vec<Value> {
        match serde_json::from_str(text) {
            Ok(Value::Array(tools)) => tools,
            other => panic!("not a table: {other:?}"),
        }
    }

    fn hints(read: bool) -> Value {
        json!({"readOnlyHint": read, "destructiveHint": false,
               "idempotentHint": read, "openWorldHint": false})
    }

    /// A table entry: our words, an open output schema.
    fn ours(name: &str, props: Value, required: Value) -> Value {
        json!({
            "name": name,
            "title": format!("Our {name}"),
            "description": format!("Our words for {name}."),
            "inputSchema": {"type": "object", "properties": props, "required": required},
            "outputSchema": {"type": "object", "properties": {
                "hits": {"type": "array"},
                "value": {"description": VALUE_FIELD}}},
            "annotations": hints(true),
        })
    }

    /// A release's listing entry: its words, no title.
    fn theirs(name: &str, props: Value, required: Value) -> Value {
        json!({
            "name": name,
            "description": format!("Their words for {name}."),
            "inputSchema": {"type": "object", "properties": props, "required": required},
            "outputSchema": {"type": "object", "properties": {"hits": {"type": "array"}}},
            "annotations": hints(true),
        })
    }

    #[test]
    fn the_layout_reproduces_the_real_table_byte_for_byte() {
        let parsed: Value = serde_json::from_str(REAL_TABLE).expect("JSON");
        assert_eq!(format_table(&parsed), REAL_TABLE);
    }

    #[test]
    fn rewriting_to_an_equal_listing_changes_nothing() {
        let table = table(REAL_TABLE);
        // The release's own words and layout: descriptions differ, no
        // titles, "any" spelled as no type.
        let listing: Vec<Value> = table
            .iter()
            .map(|tool| {
                let mut tool = tool.clone();
                let tool_map = tool.as_object_mut().expect("object");
                tool_map.remove("title");
                tool_map.insert("description".into(), json!("theirs"));
                if let Some(props) = tool["inputSchema"]["properties"].as_object_mut() {
                    for schema in props.values_mut() {
                        schema["description"] = json!("theirs");
                        if schema["type"] == json!(listing::ANY) {
                            schema.as_object_mut().expect("object").remove("type");
                        }
                    }
                }
                tool
            })
            .collect();
        assert!(listing::compare(&table, &listing, "3.3.0").is_empty());
        let rewritten = rewrite(&table, &listing, "3.3.0");
        assert_eq!(rewritten, table);
        assert_eq!(format_table(&Value::Array(rewritten)), REAL_TABLE);
    }

    #[test]
    fn rewriting_takes_the_interface_and_keeps_our_words() {
        let table = [
            ours("gone", json!({}), json!([])),
            ours(
                "kept",
                json!({
                    "cue": {"type": "string", "description": "Our cue."},
                    "k": {"type": "integer", "default": 8, "description": "Our k."},
                    "old": {"type": "string", "description": "Our old."}
                }),
                json!(["cue"]),
            ),
        ];
        let mut changed = theirs(
            "kept",
            json!({
                "k": {"type": "integer", "default": 5, "description": "Their k."},
                "cue": {"type": "string", "description": "Their cue."},
                "level": {"type": "string", "enum": ["a", "b"], "description": "Their\nlevel."},
                "v": {"description": "Anything."}
            }),
            json!(["cue", "level"]),
        );
        changed["annotations"] = hints(false);
        changed["outputSchema"]["properties"]["total"] = json!({"type": "integer"});
        let listing = [
            theirs("new_tool", json!({"q": {"type": "string"}}), json!(["q"])),
            changed,
        ];

        let rewritten = rewrite(&table, &listing, "3.0.0");
        assert!(listing::compare(&rewritten, &listing, "3.0.0").is_empty());
        let names = listing::tool_names(&rewritten);
        assert_eq!(names, ["new_tool", "kept"]);

        let kept = &rewritten[1];
        assert_eq!(kept["title"], "Our kept");
        assert_eq!(kept["description"], "Our words for kept.");
        let props = kept["inputSchema"]["properties"]
            .as_object()
            .expect("props");
        let keys: Vec<&str> = props.keys().map(String::as_str).collect();
        assert_eq!(keys, ["k", "cue", "level", "v"]);
        assert_eq!(
            props["cue"],
            json!({"type": "string", "description": "Our cue."})
        );
        assert_eq!(
            props["k"],
            json!({"type": "integer", "default": 5, "description": "Our k."})
        );
        assert_eq!(
            props["level"]["description"],
            "TODO(surface): describe parameter kept.level; 3.0.0 says: Their level."
        );
        assert_eq!(props["v"]["type"], json!(listing::ANY));
        assert_eq!(kept["inputSchema"]["required"], json!(["cue", "level"]));
        assert_eq!(kept["annotations"], hints(false));
        let out = kept["outputSchema"]["properties"].as_object().expect("out");
        assert!(out.contains_key("total") && out.contains_key("value"));

        let new = &rewritten[0];
        assert!(
            new["title"]
                .as_str()
                .expect("title")
                .starts_with(PLACEHOLDER)
        );
        assert_eq!(
            new["description"],
            "TODO(surface): describe tool new_tool; 3.0.0 says: Their words for new_tool."
        );
        assert!(new["outputSchema"]["properties"]["value"].is_object());
        assert_eq!(placeholders(&Value::Array(rewritten.clone())), 5);
        assert_eq!(
            format_table(&Value::Array(rewritten.clone()))
                .parse::<Value>()
                .ok(),
            Some(Value::Array(rewritten))
        );
    }

    #[test]
    fn a_required_list_in_another_order_is_kept() {
        let table = [ours(
            "t",
            json!({"a": {"type": "string", "description": "A."},
                   "b": {"type": "string", "description": "B."}}),
            json!(["b", "a"]),
        )];
        let mut listing = [theirs(
            "t",
            json!({"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "number"}}),
            json!(["a", "b"]),
        )];
        let rewritten = rewrite(&table, &listing, "1.0");
        assert_eq!(rewritten[0]["inputSchema"]["required"], json!(["b", "a"]));
        listing[0]["inputSchema"]
            .as_object_mut()
            .expect("schema")
            .remove("required");
        let rewritten = rewrite(&table, &listing, "1.0");
        assert_eq!(rewritten[0]["inputSchema"]["required"], json!([]));
    }

    #[test]
    fn constants_are_read_and_set_in_place() {
        let source = "//! x\npub const SURFACE_RELEASE: &str = \"3.3.0\";\nconst Y: u8 = 1;\n";
        let (_, value) = const_line(source, "SURFACE_RELEASE").expect("found");
        assert_eq!(value, "3.3.0");
        let set = replace_const(source, "SURFACE_RELEASE", "3.0.0").expect("set");
        assert_eq!(
            set,
            "//! x\npub const SURFACE_RELEASE: &str = \"3.0.0\";\nconst Y: u8 = 1;\n"
        );
        assert_eq!(
            replace_const(source, "SURFACE_RELEASE", "3.3.0").as_deref(),
            Ok(source)
        );
        assert!(const_line(source, "PINNED").is_err());
        let twice = format!("{source}{source}");
        assert!(const_line(&twice, "SURFACE_RELEASE").is_err());
    }

    #[test]
    fn the_constants_write_changes_are_in_the_workspace() {
        let root = crate::bins::workspace_root();
        let table = read_const(&root.join(TOOLS_MOD), SURFACE_RELEASE).expect("SURFACE_RELEASE");
        let pinned = read_const(&root.join(RELEASE_RS), "PINNED").expect("PINNED");
        assert_eq!(table, pinned);
        assert_eq!(pinned, super::super::release::PINNED);
    }

    #[test]
    fn the_report_says_no_difference_or_lists_them() {
        let report = |diff: ListingDiff, written| SurfaceReport {
            release: "3.3.0".parse().expect("release"),
            table_release: "3.3.0".into(),
            table_tools: 15,
            release_tools: 15,
            diff,
            setup: "environment: x (reused)".into(),
            written,
        };
        let same = report(ListingDiff::default(), None).to_string();
        assert!(same.contains("\nno difference: "), "{same}");
        let table = [ours("t", json!({}), json!([]))];
        let listing = [theirs("u", json!({}), json!([]))];
        let diff = listing::compare(&table, &listing, "3.3.0");
        let written = Written {
            files: vec![TABLE.into()],
            placeholders: 2,
        };
        let text = report(diff, Some(written)).to_string();
        assert!(
            text.contains("  3.3.0 adds tool u (not in the table)"),
            "{text}"
        );
        assert!(
            text.contains("2 differences between 3.3.0 and the table"),
            "{text}"
        );
        assert!(text.contains("write: 2 descriptions to write"), "{text}");
    }
}
