//! Host configuration files: any text through `install` and then
//! `uninstall`, as `iai-mcp-wrapper install` edits Claude Code's and
//! OpenClaw's JSON, opencode's JSON with comments and Codex's TOML.
//!
//! Checked, for every input that is UTF-8 (the file reader refuses other
//! bytes before any parser sees them):
//! - text that does not parse is refused, and nothing is written;
//!   differentially, plain JSON is refused exactly when `serde_json`
//!   refuses it or a key is given twice in one object, and TOML exactly
//!   when the `toml` crate refuses it;
//! - text `install` writes parses again, every iai-mcp entry it switched
//!   now starts the wrapper, and read by a second reader (`serde_json`,
//!   the JSON-with-comments reader's own values, or `toml`) nothing
//!   outside the entries' `command` and `args` changed;
//! - `install` run again on its own output changes nothing;
//! - `uninstall` with the backup `install` wrote gives back the input byte
//!   for byte (when no entry ran a wrapper build before).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use iai_mcp_wrapper::install::doc::Format;
use iai_mcp_wrapper::install::entry::{self, Runs};
use iai_mcp_wrapper::install::hosts::Host;
use iai_mcp_wrapper::install::{Backup, Change, HostFile, Outcome, Rewrite, rewrite};
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// How far one input got through the checks: the seeds are held to
/// reaching the round trip, so a change that makes every input stop early
/// cannot pass unnoticed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reached {
    /// Not UTF-8: the file reader refuses it before any parser.
    NotText,
    /// The format's parser refused it (and nothing was written).
    Refused,
    /// It parsed, and install had nothing to change.
    Unchanged,
    /// Install rewrote it, but uninstall cannot give the same bytes back
    /// (an entry ran a wrapper build already, with no backup of before).
    Rewritten,
    /// Install rewrote it and uninstall gave back the same bytes.
    RoundTrip,
}

/// The JSON target: Claude Code's file (with its per-project servers) and
/// OpenClaw's.
pub fn check_json(data: &[u8]) {
    reach_json(data);
}

/// [`check_json`], saying how far the input got (the further of the two
/// hosts).
pub fn reach_json(data: &[u8]) -> Reached {
    check(Host::ClaudeCode, data).max(check(Host::Openclaw, data))
}

/// The JSON-with-comments target: opencode's file.
pub fn check_jsonc(data: &[u8]) {
    reach_jsonc(data);
}

/// [`check_jsonc`], saying how far the input got.
pub fn reach_jsonc(data: &[u8]) -> Reached {
    check(Host::Opencode, data)
}

/// The TOML target: Codex's file.
pub fn check_toml(data: &[u8]) {
    reach_toml(data);
}

/// [`check_toml`], saying how far the input got.
pub fn reach_toml(data: &[u8]) -> Reached {
    check(Host::Codex, data)
}

/// A file named `iai-mcp-wrapper` that entries are pointed at: it must
/// exist (an entry is "this wrapper" when it starts this very file), and
/// its folder's name needs escaping in every format. It lives in the
/// workspace's `target/`, made once and kept.
fn exe() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../target/fuzz-checks")
            .join("a \"quoted\\ folder\" ü");
        std::fs::create_dir_all(&dir).expect("a folder for the wrapper");
        let exe = dir.join("iai-mcp-wrapper");
        if !exe.exists() {
            std::fs::write(&exe, b"").expect("the wrapper's file");
        }
        std::fs::canonicalize(exe).expect("the wrapper's path")
    })
}

fn check(host: Host, data: &[u8]) -> Reached {
    let Ok(text) = std::str::from_utf8(data) else {
        return Reached::NotText;
    };
    let format = host.format();
    let installed = change(host, text, None, Change::Install);
    agrees_with_reference(format, text, &installed);
    let Ok(outcome) = installed else {
        return Reached::Refused;
    };
    let before = format.parse(text).expect("install read it");
    let entries = entry::find(&before, host.server_maps());
    let this = Runs::Wrapper {
        program: exe().to_string_lossy().into_owned(),
    };
    let Some(Rewrite {
        text: written,
        backup,
    }) = outcome.rewrite
    else {
        for found in &entries {
            let runs = found.runs();
            assert!(
                matches!(runs, Runs::Other { .. }) || runs == this,
                "{}: an iai-mcp wrapper entry was left as it was ({runs:?}): {text:?}",
                found.dotted()
            );
        }
        return Reached::Unchanged;
    };
    install_switched_only_its_entries(host, text, &entries, &written, &this);
    let backup = backup.expect("install writes a backup with the file");
    let wrapper_before = entries
        .iter()
        .any(|e| matches!(e.runs(), Runs::Wrapper { .. }));
    round_trip(host, text, &written, &backup, wrapper_before)
}

/// Install refuses a text exactly when the reference parser of `format`
/// refuses it.
fn agrees_with_reference(format: Format, text: &str, installed: &Result<Outcome, String>) {
    match (installed, reference(format, text)) {
        (Err(refused), Judged::Reads) => {
            panic!("{format:?}: refused ({refused}) what the reference reads: {text:?}")
        }
        (Ok(_), Judged::Refuses(why)) => {
            panic!("{format:?}: the reference refuses ({why}) what install took: {text:?}")
        }
        _ => {}
    }
}

/// Install turned `text` into `written`: it parses, every entry stays
/// where it was, the switched ones (the iai-mcp entries of `entries`)
/// start `this`, and nothing else changed.
fn install_switched_only_its_entries(
    host: Host,
    text: &str,
    entries: &[entry::Entry<'_>],
    written: &str,
    this: &Runs,
) {
    let format = host.format();
    let after = format
        .parse(written)
        .unwrap_or_else(|e| panic!("install wrote text that does not parse ({e}): {written:?}"));
    let switched: Vec<_> = entries
        .iter()
        .filter(|e| !matches!(e.runs(), Runs::Other { .. }))
        .collect();
    let after_entries = entry::find(&after, host.server_maps());
    assert_eq!(
        after_entries.iter().map(|e| &e.path).collect::<Vec<_>>(),
        entries.iter().map(|e| &e.path).collect::<Vec<_>>(),
        "install keeps every entry where it was: {written:?}"
    );
    for found in &after_entries {
        if switched.iter().any(|e| e.path == found.path) {
            assert_eq!(
                &found.runs(),
                this,
                "{} starts the wrapper: {written:?}",
                found.dotted()
            );
        }
    }
    assert_bytes_outside(text, &switched, written, &after_entries);
    let paths: Vec<Vec<String>> = switched.iter().map(|e| e.path.clone()).collect();
    assert_same_outside(format, text, written, &paths);
}

/// A second install of `written` changes nothing, and uninstall gives
/// `text` back byte for byte from `backup` (when `text` ran no wrapper
/// already: one that did is restored only as far as it parses).
fn round_trip(
    host: Host,
    text: &str,
    written: &str,
    backup: &str,
    wrapper_before: bool,
) -> Reached {
    let again =
        change(host, written, Some(backup), Change::Install).expect("install reads what it wrote");
    assert_eq!(again.rewrite, None, "a second install changes nothing");

    let uninstalled = change(host, written, Some(backup), Change::Uninstall)
        .expect("uninstall reads what install wrote");
    if wrapper_before {
        if let Some(restored) = uninstalled.rewrite {
            host.format()
                .parse(&restored.text)
                .expect("uninstall writes text that parses");
        }
        return Reached::Rewritten;
    }
    assert_eq!(backup, text, "the backup is the file as it was");
    assert!(uninstalled.complete, "every switched entry is restored");
    let restored = uninstalled.rewrite.expect("uninstall restores").text;
    assert_eq!(restored, text, "uninstall gives back the same bytes");
    Reached::RoundTrip
}

/// Byte for byte, `written` is `text` but for the `command` and `args`
/// values of the switched entries: putting the old values' text back in
/// the new values' places gives `text` again.
fn assert_bytes_outside(
    text: &str,
    switched: &[&entry::Entry<'_>],
    written: &str,
    after: &[entry::Entry<'_>],
) {
    let mut edits = Vec::new();
    for old in switched {
        let new = entry::at(after, &old.path).expect("the entry is still there");
        for (then, now) in [(old.command, new.command), (old.args, new.args)] {
            match (then, now) {
                (Some(then), Some(now)) => {
                    edits.push((now.span.clone(), text[then.span.clone()].to_owned()))
                }
                (None, None) => {}
                _ => panic!("install added or removed a field of {}", old.dotted()),
            }
        }
    }
    let put_back = iai_mcp_wrapper::install::doc::splice(written, &edits);
    assert_eq!(
        put_back, text,
        "install changed bytes outside the entries: {written:?}"
    );
}

/// [`rewrite`] on `text` (and its backup), its report kept in memory.
fn change(host: Host, text: &str, backup: Option<&str>, change: Change) -> Result<Outcome, String> {
    let file = HostFile {
        host,
        text,
        backup_path: Path::new("/fuzz/host.json.iai-mcp-wrapper.bak"),
        backup: backup.map_or(Backup::Absent, Backup::Text),
    };
    let mut report = Vec::new();
    let outcome = rewrite(&file, change, exe(), &mut report).expect("a report in memory");
    outcome.map_err(|refused| refused.message)
}

/// What an independent reader makes of a whole file.
enum Judged {
    /// It reads the file.
    Reads,
    /// It refuses the file, for this reason.
    Refuses(String),
    /// It cannot judge: the format has no independent reader here, or the
    /// file is past a limit of the reader's own (nesting, or a number its
    /// values cannot hold, which JSON itself allows).
    CannotJudge,
}

/// The differential: plain JSON by `serde_json` with keys given twice
/// refused (as the wrapper refuses them: hosts disagree on which counts),
/// TOML by the `toml` crate. opencode's JSON with comments has no second
/// reader here.
fn reference(format: Format, text: &str) -> Judged {
    let judged = match format {
        Format::Json => strict_json(text).map(drop),
        Format::Jsonc => return Judged::CannotJudge,
        Format::Toml => toml::from_str::<toml::Table>(text)
            .map(drop)
            .map_err(|e| e.to_string()),
    };
    match judged {
        Ok(()) => Judged::Reads,
        Err(e) if e.contains("recursion limit") || e.contains("number out of range") => {
            Judged::CannotJudge
        }
        Err(e) => Judged::Refuses(e),
    }
}

/// The file as values, read by a second reader, for comparing a file before
/// and after a change; `None` when it cannot read it.
fn values(format: Format, text: &str) -> Option<Value> {
    match format {
        Format::Json => strict_json(text).ok(),
        // The same parser as install's, but read into values.
        Format::Jsonc => jsonc_value(text),
        Format::Toml => toml::from_str::<toml::Table>(text)
            .ok()
            .and_then(|table| serde_json::to_value(table).ok()),
    }
}

fn jsonc_value(text: &str) -> Option<Value> {
    jsonc_parser::parse_to_serde_value(text, &jsonc_parser::ParseOptions::default())
        .ok()
        .flatten()
}

/// Nothing outside the `command` and `args` of the entries at `paths`
/// differs between `before` and `after`, as the second reader sees them.
fn assert_same_outside(format: Format, before: &str, after: &str, paths: &[Vec<String>]) {
    let (mut before_value, mut after_value) = match (values(format, before), values(format, after))
    {
        (Some(before), Some(after)) => (before, after),
        (None, _) => return,
        (Some(_), None) => panic!(
            "{format:?}: the second reader read the file but not what install wrote: {after:?}"
        ),
    };
    for path in paths {
        for value in [&mut before_value, &mut after_value] {
            let entry = path
                .iter()
                .try_fold(&mut *value, |node, key| node.get_mut(key))
                .unwrap_or_else(|| panic!("the entry {path:?} is in both"));
            let fields = entry.as_object_mut().expect("an entry is a map");
            fields.remove("command");
            fields.remove("args");
        }
    }
    assert_eq!(
        before_value, after_value,
        "install changed something outside the entries: {after:?}"
    );
}

/// Plain JSON as `serde_json` reads it, refusing a key given twice in one
/// object (which the wrapper refuses too: hosts disagree on which counts).
fn strict_json(text: &str) -> Result<Value, String> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = StrictValue::read(&mut deserializer).map_err(|e| e.to_string())?;
    deserializer.end().map_err(|e| e.to_string())?;
    Ok(value)
}

/// A JSON value read by a visitor that refuses duplicate keys.
struct StrictValue(Value);

impl StrictValue {
    fn read<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
        serde::Deserialize::deserialize(deserializer).map(|StrictValue(v)| v)
    }
}

impl<'de> serde::Deserialize<'de> for StrictValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(StrictValue)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(StrictValue(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some((key, StrictValue(value))) = map.next_entry::<String, StrictValue>()? {
            if members.insert(key.clone(), value).is_some() {
                return Err(serde::de::Error::custom(format!(
                    "the key {key:?} appears twice"
                )));
            }
        }
        Ok(Value::Object(members))
    }
}
