//! `docs/settings.md` and the binary agree, both ways: every flag of
//! `iai-mcp-wrapper` (and of its commands) has its row, with the
//! environment variable and the default the flag declares, and every row
//! names a flag that exists. The variables read from the environment
//! alone are checked against the ones the source reads.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use iai_mcp_wrapper::config::Args;

/// What `docs/settings.md` or the binary says about one serving flag.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Setting {
    /// The environment variable (`None`: the flag has none).
    env: Option<String>,
    /// The default clap applies (`None`: no default value declared).
    default: Option<String>,
}

/// The page itself.
fn page() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/settings.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The rows of the table under the `## heading` of `page`, as cells with
/// their surrounding spaces removed (header and separator skipped).
fn table(page: &str, heading: &str) -> Vec<Vec<String>> {
    let section = page
        .split("\n## ")
        .find(|s| s.starts_with(heading))
        .unwrap_or_else(|| panic!("docs/settings.md has no section \"## {heading}\""));
    section
        .lines()
        .filter(|line| line.starts_with('|'))
        .skip(2)
        .map(|line| {
            line.trim_matches('|')
                .split(" | ")
                .map(|cell| cell.trim().to_owned())
                .collect()
        })
        .collect()
}

/// The text inside a cell's first pair of backticks, or `None` for `-`.
fn code(cell: &str) -> Option<String> {
    if cell == "-" {
        return None;
    }
    let inner = cell
        .strip_prefix('`')
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| panic!("cell {cell:?} is neither `code` nor -"));
    Some(inner.to_owned())
}

/// The serving flags as the page lists them.
fn documented_settings(page: &str) -> BTreeMap<String, Setting> {
    let mut settings = BTreeMap::new();
    for row in table(page, "Serving") {
        assert_eq!(row.len(), 4, "a Serving row needs 4 cells: {row:?}");
        let flag = code(&row[0]).unwrap_or_else(|| panic!("a row without a flag: {row:?}"));
        let setting = Setting {
            env: code(&row[1]),
            // Only a cell holding nothing but one code span is a value
            // clap could declare; prose such as "`warn` (text)" is not.
            default: code(&row[2]).filter(|d| row[2] == format!("`{d}`")),
        };
        assert!(
            settings.insert(flag.clone(), setting).is_none(),
            "{flag} has two rows"
        );
    }
    settings
}

/// Whether clap's argument is one every command has for free.
fn is_builtin(arg: &clap::Arg) -> bool {
    matches!(arg.get_id().as_str(), "help" | "version")
}

/// The serving flags as the binary declares them.
fn declared_settings() -> BTreeMap<String, Setting> {
    Args::command()
        .get_arguments()
        .filter(|arg| !is_builtin(arg))
        .filter_map(|arg| {
            let long = arg.get_long()?;
            let setting = Setting {
                env: arg.get_env().map(|e| e.to_string_lossy().into_owned()),
                default: arg
                    .get_default_values()
                    .first()
                    .map(|d| d.to_string_lossy().into_owned()),
            };
            Some((format!("--{long}"), setting))
        })
        .collect()
}

#[test]
fn every_serving_flag_has_its_row_and_every_row_its_flag() {
    let documented = documented_settings(&page());
    let declared = declared_settings();

    let undocumented: Vec<_> = declared
        .keys()
        .filter(|f| !documented.contains_key(*f))
        .collect();
    assert!(
        undocumented.is_empty(),
        "flags without a row in docs/settings.md (## Serving): {undocumented:?}"
    );
    let unknown: Vec<_> = documented
        .keys()
        .filter(|f| !declared.contains_key(*f))
        .collect();
    assert!(
        unknown.is_empty(),
        "rows in docs/settings.md naming no flag of the binary: {unknown:?}"
    );

    for (flag, declared) in &declared {
        let documented = &documented[flag];
        assert_eq!(
            documented.env, declared.env,
            "{flag}: docs/settings.md gives the variable {:?}, the binary {:?}",
            documented.env, declared.env
        );
        if let Some(default) = &declared.default {
            assert_eq!(
                documented.default.as_ref(),
                Some(default),
                "{flag}: docs/settings.md must give the default `{default}`"
            );
        }
    }
}

#[test]
fn every_command_flag_has_its_row_and_every_row_its_flag() {
    let documented: BTreeSet<(String, String)> = table(&page(), "Commands")
        .into_iter()
        .map(|row| {
            assert_eq!(row.len(), 3, "a Commands row needs 3 cells: {row:?}");
            let command = code(&row[0]).unwrap_or_else(|| panic!("no command: {row:?}"));
            let flag = code(&row[1]).unwrap_or_else(|| panic!("no flag: {row:?}"));
            (command, flag)
        })
        .collect();
    let declared: BTreeSet<(String, String)> = Args::command()
        .get_subcommands()
        .flat_map(|sub| {
            sub.get_arguments()
                .filter(|arg| !is_builtin(arg))
                .filter_map(|arg| {
                    assert!(
                        arg.get_env().is_none(),
                        "{} --{:?}: a command's flag with a variable needs a column for it",
                        sub.get_name(),
                        arg.get_long()
                    );
                    Some((sub.get_name().to_owned(), format!("--{}", arg.get_long()?)))
                })
                .collect::<Vec<_>>()
        })
        .collect();

    let undocumented: Vec<_> = declared.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "command flags without a row in docs/settings.md (## Commands): {undocumented:?}"
    );
    let unknown: Vec<_> = documented.difference(&declared).collect();
    assert!(
        unknown.is_empty(),
        "rows in docs/settings.md (## Commands) naming no flag of the binary: {unknown:?}"
    );
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("reading the source tree") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The names of the variables the source reads by name (`var("X")`,
/// `var_os("X")`), outside what clap reads for the flags.
fn variables_read() -> BTreeSet<String> {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let mut names = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("reading a source file");
        for opener in ["var(\"", "var_os(\""] {
            for (at, _) in text.match_indices(opener) {
                let rest = &text[at + opener.len()..];
                if let Some(end) = rest.find('"') {
                    let name = &rest[..end];
                    if !name.is_empty()
                        && name
                            .chars()
                            .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
                    {
                        names.insert(name.to_owned());
                    }
                }
            }
        }
    }
    names
}

#[test]
fn the_variables_read_directly_are_the_ones_documented() {
    let documented: BTreeSet<String> = table(&page(), "Variables read from the environment only")
        .into_iter()
        .flat_map(|row| {
            row[0]
                .split(", ")
                .map(|v| code(v).unwrap_or_else(|| panic!("no variable: {row:?}")))
                .collect::<Vec<_>>()
        })
        .collect();
    let read = variables_read();
    let undocumented: Vec<_> = read.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "variables the wrapper reads without a row in docs/settings.md: {undocumented:?}"
    );
    let unknown: Vec<_> = documented.difference(&read).collect();
    assert!(
        unknown.is_empty(),
        "variables in docs/settings.md the wrapper never reads: {unknown:?}"
    );
}
