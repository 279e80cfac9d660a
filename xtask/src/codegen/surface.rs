//! `cargo xtask surface`: what an iai-pme release's tool surface is beside
//! the wrapper's table, and, with `--write`, the table rewritten to it.
//!
//! [`run_surface`] installs the release alone in its own environment
//! ([`Contents::ReleaseOnly`]), asks the release's own bundled Node
//! wrapper for its `tools/list` (the end-to-end kit's [`release_listing`]), and
//! compares it with `wrapper/src/tools/surface.json` through
//! [`listing::compare`], the comparison the end-to-end kit's listing row
//! makes too.
//!
//! `--write` rewrites the table with [`rewrite`](super::rewrite), keeping
//! this project's words and marking what it cannot take from the table,
//! and sets the release constants; when nothing changed, no file is
//! touched.

use std::fmt;
use std::path::{Path, PathBuf};

use kits::e2e::listing::{self, ListingDiff, release_listing};
use kits::e2e::pyenv::{self, Contents};
use kits::e2e::release::Release;
use serde_json::Value;

use super::error::CodegenError;
use super::rewrite::{PLACEHOLDER, format_table, placeholders, rewrite};

/// The tool table, relative to the workspace root.
pub const TABLE: &str = "wrapper/src/tools/surface.json";
/// The file declaring [`SURFACE_RELEASE`], relative to the workspace root.
pub const TOOLS_MOD: &str = "wrapper/src/tools/mod.rs";
/// The constant naming the release the table is.
pub const SURFACE_RELEASE: &str = "SURFACE_RELEASE";
/// The file declaring the end-to-end kit's pinned release
/// ([`kits::e2e::release::PINNED`]).
pub const RELEASE_RS: &str = "kits/src/e2e/release.rs";
/// The constant naming the end-to-end kit's pinned release.
pub const PINNED: &str = "PINNED";

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
                        "write: {} {} still to write (they start with {PLACEHOLDER}; the wrapper's tests refuse them)",
                        w.placeholders,
                        if w.placeholders == 1 {
                            "title or description"
                        } else {
                            "titles and descriptions"
                        }
                    )?;
                }
            }
        }
        write!(f, "{}", self.setup)
    }
}

/// Installs the release (once), lists its tools, compares, and rewrites
/// when asked. An `Err` means the comparison could not run.
pub fn run_surface(cfg: &SurfaceConfig) -> Result<SurfaceReport, CodegenError> {
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

/// Rewrites the table and the release constants in `cfg.root`. Every new
/// text is made before the first file is written, so a constant that
/// cannot be found leaves every file as it was.
fn write(cfg: &SurfaceConfig, table: &[Value], theirs: &[Value]) -> Result<Written, CodegenError> {
    let release = cfg.release.as_str();
    let rewritten = rewrite(table, theirs, release);
    let mut changes: Vec<(String, PathBuf, String)> = Vec::new();
    if rewritten.as_slice() != table {
        let text = format_table(&Value::Array(rewritten.clone()));
        changes.push((TABLE.to_owned(), cfg.root.join(TABLE), text));
    }
    for (file, name) in [(TOOLS_MOD, SURFACE_RELEASE), (RELEASE_RS, PINNED)] {
        let path = cfg.root.join(file);
        let source = read_source(&path)?;
        let updated = replace_const(&source, name, release)
            .map_err(|why| CodegenError::source_file(&path, why))?;
        if updated != source {
            changes.push((format!("{file} ({name} = \"{release}\")"), path, updated));
        }
    }
    for (_, path, text) in &changes {
        std::fs::write(path, text).map_err(|e| CodegenError::io("writing", path, e))?;
    }
    Ok(Written {
        files: changes.into_iter().map(|(what, _, _)| what).collect(),
        placeholders: placeholders(&Value::Array(rewritten)),
    })
}

/// The text of the file `path`.
fn read_source(path: &Path) -> Result<String, CodegenError> {
    std::fs::read_to_string(path).map_err(|e| CodegenError::io("reading", path, e))
}

/// The table parsed: its `tools` array.
pub fn read_table(path: &Path) -> Result<Vec<Value>, CodegenError> {
    let text = read_source(path)?;
    match serde_json::from_str(&text) {
        Ok(Value::Array(tools)) => Ok(tools),
        Ok(_) => Err(CodegenError::source_file(path, "is not a JSON array")),
        Err(e) => Err(CodegenError::source_file(path, format!("is not JSON: {e}"))),
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
pub fn read_const(path: &Path, name: &str) -> Result<String, CodegenError> {
    let source = read_source(path)?;
    const_line(&source, name)
        .map(|(_, value)| value.to_owned())
        .map_err(|why| CodegenError::source_file(path, why))
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        let root = devkit::bins::workspace_root();
        let table = read_const(&root.join(TOOLS_MOD), SURFACE_RELEASE).expect("SURFACE_RELEASE");
        let pinned = read_const(&root.join(RELEASE_RS), PINNED).expect("PINNED");
        assert_eq!(table, pinned);
        assert_eq!(pinned, kits::e2e::release::PINNED);
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
        let table = [json!({"name": "t"})];
        let listing = [json!({"name": "u"})];
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
        assert!(
            text.contains("write: 2 titles and descriptions still to write"),
            "{text}"
        );
    }
}
