//! The tool surface the model reads: the tool list and the server
//! instructions, as the iai-mcp release installed beside this wrapper
//! defines them.
//!
//! A release keeps its surface in its own Node wrapper's bundle. At start
//! the wrapper finds the release ([`locate`]), reads the bundle's
//! declarations without running it ([`bundle`], [`literal`]) through a
//! cache keyed by the file's identity ([`release`]), and serves what it
//! read word for word: the tool definitions in the release's order, the
//! instructions, the release's version. Output schemas get the few
//! additions this wrapper's own answers need ([`extend`]). Routing, and
//! whether a call may be sent twice, stay this wrapper's own
//! ([`crate::tools`]).
//!
//! When no release is found, or its bundle cannot be read, the wrapper
//! serves its built-in table (iai-mcp 3.3.0's tools, in this project's own
//! words) and says why, once, in the log and in `--check`.

pub mod bundle;
pub(crate) mod extend;
pub(crate) mod literal;
pub mod locate;
pub mod release;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use self::locate::Search;
use self::release::Release;
use crate::log_names as event;
use crate::platform::Platform;
use crate::programs::Installation;
use crate::tools::{self, Tool};

/// Where the served surface came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// An installed release's bundle.
    Release {
        /// The bundle it was read from.
        bundle: PathBuf,
        /// Whether it was taken from the cache rather than parsed anew.
        cached: bool,
    },
    /// The built-in table.
    BuiltIn {
        /// Why no release's surface is served (`None`: none was asked
        /// for).
        why: Option<String>,
    },
}

/// The tools and instructions served, and whose they are.
#[derive(Debug, Clone, PartialEq)]
pub struct Surface {
    origin: Origin,
    /// The release's version (`serverInfo.version`).
    version: String,
    tools: Vec<Tool>,
    /// The `tools/list` entries, in order, output schemas extended.
    listing: Value,
    instructions: String,
}

impl Surface {
    /// The built-in table; `why` says why no release's surface is served.
    pub fn builtin(why: Option<String>) -> Surface {
        let mut listing = tools::builtin_listing().clone();
        extend_all(&mut listing);
        Surface {
            origin: Origin::BuiltIn { why },
            version: tools::SURFACE_RELEASE.to_owned(),
            tools: tools::builtin_tools().to_vec(),
            listing,
            instructions: builtin_instructions(),
        }
    }

    /// The surface `release` defines.
    pub fn from_release(release: &Release) -> Surface {
        let tools = release
            .surface
            .tools
            .iter()
            .map(|entry| {
                let name = entry["name"].as_str().unwrap_or_default();
                Tool::for_release(name, entry.get("annotations"))
            })
            .collect();
        let mut listing = Value::Array(release.surface.tools.clone());
        extend_all(&mut listing);
        Surface {
            origin: Origin::Release {
                bundle: release.bundle.clone(),
                cached: release.cached,
            },
            version: release.version.clone(),
            tools,
            listing,
            instructions: release.surface.instructions.clone(),
        }
    }

    /// Where it came from.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// The iai-mcp release whose surface it is (the installed one's
    /// version when known, else the built-in table's).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Whether it is the built-in table.
    pub fn is_builtin(&self) -> bool {
        matches!(self.origin, Origin::BuiltIn { .. })
    }

    /// Every tool, in listing order.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The tool called `name`, or `None` for an unknown name (which
    /// `tools/call` answers with an `unknown tool` error result).
    pub fn find(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The `tools` array of the `tools/list` result.
    pub fn listing(&self) -> &Value {
        &self.listing
    }

    /// The server instructions.
    pub fn instructions(&self) -> &str {
        &self.instructions
    }

    /// What it is, in a line for people: `iai-mcp 3.2.3, read from <path>`
    /// or `the built-in table (...): <why>`.
    pub fn describe(&self) -> String {
        match &self.origin {
            Origin::Release { bundle, .. } => format!(
                "iai-mcp {}'s own, read from {}",
                self.version,
                bundle.display()
            ),
            Origin::BuiltIn { why: None } => format!(
                "the built-in table (iai-mcp {}'s tools, in this wrapper's words)",
                self.version
            ),
            Origin::BuiltIn { why: Some(why) } => format!(
                "the built-in table (iai-mcp {}'s tools, in this wrapper's words): {why}",
                self.version
            ),
        }
    }
}

fn extend_all(listing: &mut Value) {
    for entry in listing.as_array_mut().into_iter().flatten() {
        let name = entry["name"].as_str().unwrap_or_default().to_owned();
        if let Some(schema) = entry.get_mut("outputSchema") {
            extend::output_schema(&name, schema);
        }
    }
}

/// How the model should use the memory, in a few sentences of this
/// project's own: ask it first for decisions and their reasons, never
/// instead of reading the code, and treat what it returns as history.
const GUIDANCE: &str = "When a question is about what was decided, preferred or discussed before, \
or why something is the way it is, call memory_recall before searching the repository: that answer \
is in past conversations, not in the files, and one recall within its token budget saves a search of \
several steps. Recall comes before file search but never replaces it: for what the code does now, \
read the code. Memories carry timestamps and valid_from/valid_to; anything they say about the code \
is history until the current tree confirms it.";

/// The built-in instructions: the [`GUIDANCE`], then `config: ` and the
/// JSON document iai-mcp's client side reads for its context-editing
/// settings and the hot tool list, as 3.3.0 shapes it.
fn builtin_instructions() -> String {
    let names: Vec<&str> = tools::builtin_tools()
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    let config = json!({
        "context_editing": {
            "type": "clear_tool_uses_20250919",
            "trigger": { "type": "input_tokens", "value": 30000 }
        },
        "hot_tools": names,
    });
    format!("{GUIDANCE}\n\nconfig: {config}")
}

/// Which release's surface to serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// The release found beside this wrapper ([`Search::around`]).
    Installed,
    /// The release at this path (an environment, `site-packages`, the
    /// package or the bundle).
    At(PathBuf),
    /// The built-in table, whatever is installed.
    BuiltIn,
}

impl std::str::FromStr for Choice {
    type Err = std::convert::Infallible;

    /// `auto`, `builtin`, or a path.
    fn from_str(text: &str) -> Result<Choice, Self::Err> {
        Ok(match text {
            "auto" => Choice::Installed,
            "builtin" => Choice::BuiltIn,
            path => Choice::At(PathBuf::from(path)),
        })
    }
}

impl std::fmt::Display for Choice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Choice::Installed => f.write_str("auto"),
            Choice::BuiltIn => f.write_str("builtin"),
            Choice::At(path) => write!(f, "{}", path.display()),
        }
    }
}

/// Where to find the release and keep what is read of it.
#[derive(Debug, Clone)]
pub struct Finder {
    /// Which release.
    pub choice: Choice,
    /// The program directories the installed release is looked for
    /// around, in order (this binary's, the Python's, the `iai-mcp`
    /// program's).
    pub program_dirs: Vec<PathBuf>,
    /// Whose file layout applies.
    pub platform: Platform,
    /// Where the cache goes (none: no cache).
    pub cache_dir: Option<PathBuf>,
}

impl Finder {
    /// The finder for `choice`, looking around `installation`'s
    /// directories (the Python's, this binary's), then around the
    /// `admin_cli` program found on disk (its link followed, as pipx and
    /// `uv tool` make them), caching what is read in the wrapper's own
    /// directory inside `state_dir`.
    pub fn new(
        choice: Choice,
        installation: &Installation,
        admin_cli: &OsStr,
        state_dir: &Path,
    ) -> Finder {
        let admin_cli_dir = installation
            .locate(admin_cli)
            .and_then(|path| crate::real_path::canonicalize(&path).ok())
            .and_then(|path| path.parent().map(PathBuf::from));
        Finder {
            choice,
            program_dirs: installation
                .dirs()
                .iter()
                .cloned()
                .chain(admin_cli_dir)
                .collect(),
            platform: Platform::current(),
            cache_dir: Some(crate::files::own_dir(state_dir)),
        }
    }

    /// Where a release is looked for, or `None` for the built-in table.
    pub fn search(&self) -> Option<Search> {
        match &self.choice {
            Choice::Installed => Some(Search::around(self.program_dirs.iter().cloned())),
            Choice::At(place) => Some(Search::Given(place.clone())),
            Choice::BuiltIn => None,
        }
    }

    /// The release's surface, or the built-in table with the reason.
    pub fn load(&self) -> Surface {
        let Some(search) = self.search() else {
            return Surface::builtin(None);
        };
        let installed = match search.locate(self.platform) {
            Ok(installed) => installed,
            Err(e) => return Surface::builtin(Some(e.to_string())),
        };
        match release::load(&installed, self.cache_dir.as_deref()) {
            Ok(release) => Surface::from_release(&release),
            Err(e) => Surface::builtin(Some(e.to_string())),
        }
    }
}

/// Logs which surface is served (`surface`): at `info` for a release's, at
/// `warn` for the built-in table when a release was looked for and not
/// served.
pub fn log(surface: &Surface) {
    let text = surface.describe();
    match surface.origin() {
        Origin::Release { bundle, cached } => tracing::info!(
            event = event::SURFACE,
            release = surface.version(),
            bundle = %bundle.display(),
            cached,
            tools = surface.tools().len(),
            "serving the tool surface of {text}"
        ),
        Origin::BuiltIn { why: None } => tracing::info!(
            event = event::SURFACE,
            release = surface.version(),
            tools = surface.tools().len(),
            "serving {text}"
        ),
        Origin::BuiltIn { why: Some(why) } => tracing::warn!(
            event = event::SURFACE,
            release = surface.version(),
            tools = surface.tools().len(),
            reason = why.as_str(),
            "serving {text}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::Access;

    const SYNTHETIC: &str = include_str!("../../tests/fixtures/bundle.js");

    #[test]
    fn a_release_is_served_word_for_word_with_the_extensions_only() {
        let read = bundle::read(SYNTHETIC).expect("readable");
        let release = Release {
            version: "9.8.7".into(),
            bundle: PathBuf::from("/env/index.js"),
            surface: read.clone(),
            cached: false,
        };
        let surface = Surface::from_release(&release);
        assert_eq!(surface.version(), "9.8.7");
        assert_eq!(surface.instructions(), read.instructions);
        let listing = surface.listing().as_array().expect("array");
        assert_eq!(listing.len(), 2);
        // No output schema: none is made up.
        assert_eq!(listing[0], read.tools[0]);
        let mut expected = read.tools[1].clone();
        expected["outputSchema"]["properties"]["value"] =
            json!({"description": "The daemon's result, when it is not a JSON object."});
        assert_eq!(listing[1], expected);
        // Unknown to the built-in table: both are writes.
        assert!(surface.tools().iter().all(|t| t.access() == Access::Write));
        assert!(surface.find("beta_write").is_some());
        assert!(surface.find("memory_recall").is_none());
        assert!(
            surface
                .describe()
                .starts_with("iai-mcp 9.8.7's own, read from ")
        );
    }

    #[test]
    fn the_builtin_table_says_why_it_is_served() {
        let surface = Surface::builtin(Some("no iai-mcp release in /x".into()));
        assert!(surface.is_builtin());
        assert_eq!(surface.version(), tools::SURFACE_RELEASE);
        assert_eq!(surface.tools().len(), 15);
        assert!(surface.describe().ends_with(": no iai-mcp release in /x"));
        let config = surface
            .instructions()
            .rsplit_once("config: ")
            .and_then(|(_, c)| serde_json::from_str::<Value>(c).ok())
            .expect("a config block");
        assert_eq!(config["hot_tools"].as_array().map(Vec::len), Some(15));
    }

    #[test]
    fn a_finder_falls_back_to_the_builtin_table() {
        let dir = tempfile::tempdir().expect("tempdir");
        let finder = Finder {
            choice: Choice::Installed,
            program_dirs: vec![dir.path().join("bin")],
            platform: Platform::Linux,
            cache_dir: None,
        };
        let surface = finder.load();
        assert!(surface.is_builtin());
        assert!(surface.describe().contains("no iai-mcp release in"));
        let builtin = Finder {
            choice: Choice::BuiltIn,
            ..finder
        };
        assert_eq!(builtin.load(), Surface::builtin(None));
    }
}
