//! One iai-mcp server entry in a host file: which wrapper it runs, and the
//! value replacements that point it at this binary or back.

use std::ops::Range;
use std::path::Path;

use super::doc::{Format, Kind, Node};
use super::hosts::SERVER_NAMES;

/// An iai-mcp entry found in a file.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    /// Keys from the top of the file to the entry, for messages and for
    /// finding the same entry in another version of the file.
    pub path: Vec<String>,
    /// Its `command` value: a string, or (opencode) the whole argv.
    pub command: Option<&'a Node>,
    /// Its `args` value, if any.
    pub args: Option<&'a Node>,
}

/// What an entry starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runs {
    /// An `iai-mcp-wrapper` binary (this one or another build).
    Wrapper {
        /// The program as written in the entry.
        program: String,
    },
    /// iai-mcp's Node wrapper, started as `node <script>`.
    Node {
        /// The wrapper script (`.../index.js`).
        script: String,
    },
    /// iai-mcp's `iai-mcp-server` launcher, which starts the Node wrapper.
    Launcher {
        /// The program as written in the entry.
        program: String,
    },
    /// Something this command does not recognise as an iai-mcp wrapper.
    Other {
        /// The command line, for the message.
        command: String,
    },
}

/// A replacement of one value's text.
pub type Edit = (Range<usize>, String);

/// Every iai-mcp entry under the given server maps.
pub fn find<'a>(root: &'a Node, maps: &[&[&str]]) -> Vec<Entry<'a>> {
    let mut found = Vec::new();
    for pattern in maps {
        let mut containers = vec![(Vec::<String>::new(), root)];
        for segment in *pattern {
            containers = containers
                .into_iter()
                .flat_map(|(path, node)| children(node, segment, path))
                .collect();
        }
        for (path, map) in containers {
            for name in SERVER_NAMES {
                if let Some(node) = map.get(name)
                    && matches!(node.kind, Kind::Map(_))
                {
                    let mut path = path.clone();
                    path.push(name.to_owned());
                    found.push(Entry {
                        path,
                        command: node.get("command"),
                        args: node.get("args"),
                    });
                }
            }
        }
    }
    found
}

fn children<'a>(node: &'a Node, segment: &str, path: Vec<String>) -> Vec<(Vec<String>, &'a Node)> {
    let Kind::Map(entries) = &node.kind else {
        return Vec::new();
    };
    entries
        .iter()
        .filter(|(key, _)| segment == "*" || key == segment)
        .map(|(key, child)| {
            let mut path = path.clone();
            path.push(key.clone());
            (path, child)
        })
        .collect()
}

impl Entry<'_> {
    /// The entry's path written with dots, for messages.
    pub fn dotted(&self) -> String {
        self.path.join(".")
    }

    /// The argv the host would start, if the entry spells one out in strings.
    pub fn argv(&self) -> Option<Vec<String>> {
        let strings = |nodes: &[Node]| -> Option<Vec<String>> {
            nodes
                .iter()
                .map(|n| n.as_str().map(str::to_owned))
                .collect()
        };
        let mut argv = match &self.command?.kind {
            Kind::Str(program) => vec![program.clone()],
            Kind::List(items) => strings(items)?,
            _ => return None,
        };
        match self.args.map(|a| &a.kind) {
            None => {}
            Some(Kind::List(items)) => argv.extend(strings(items)?),
            Some(_) => return None,
        }
        (!argv.is_empty()).then_some(argv)
    }

    /// Which wrapper the entry starts.
    pub fn runs(&self) -> Runs {
        let Some(argv) = self.argv() else {
            return Runs::Other {
                command: "(no command)".to_owned(),
            };
        };
        let program = argv[0].clone();
        let base = Path::new(&program)
            .file_name()
            .map(|b| b.to_string_lossy().into_owned())
            .unwrap_or_default();
        let base = base.strip_suffix(".exe").unwrap_or(&base);
        // iai-mcp's installer writes a placeholder script when its wrapper
        // was not built: still its entry.
        let script = argv[1..]
            .iter()
            .find(|a| a.ends_with("index.js") || a.starts_with("<run: "));
        match (base, script) {
            ("iai-mcp-wrapper", _) => Runs::Wrapper { program },
            ("iai-mcp-server", _) => Runs::Launcher { program },
            ("node" | "nodejs", Some(script)) => Runs::Node {
                script: script.clone(),
            },
            _ => Runs::Other {
                command: argv.join(" "),
            },
        }
    }

    /// The replacements that make the entry start `exe`, keeping every other
    /// field: the program is replaced, and the Node script (or launcher)
    /// arguments are dropped. An `iai-mcp-wrapper` elsewhere keeps its
    /// arguments; one that is `exe` already (`is_exe`) needs nothing.
    /// `None` when the entry is not a known iai-mcp wrapper.
    pub fn switch(&self, format: Format, exe: &str, is_exe: bool) -> Option<Vec<Edit>> {
        let command = self.command?;
        let wrapper = match self.runs() {
            Runs::Wrapper { .. } if is_exe => return Some(Vec::new()),
            Runs::Wrapper { .. } => true,
            Runs::Node { .. } | Runs::Launcher { .. } => false,
            Runs::Other { .. } => return None,
        };
        let mut edits = Vec::new();
        match &command.kind {
            Kind::Str(_) => {
                edits.push((command.span.clone(), format.string(exe)));
                if let Some(args) = self.args
                    && !wrapper
                    && !matches!(&args.kind, Kind::List(items) if items.is_empty())
                {
                    edits.push((args.span.clone(), "[]".to_owned()));
                }
            }
            Kind::List(items) if wrapper => {
                edits.push((items.first()?.span.clone(), format.string(exe)));
            }
            Kind::List(_) => edits.push((command.span.clone(), format.list(&[exe]))),
            _ => return None,
        }
        Some(edits)
    }

    /// The replacements that give this entry back the `command` and `args`
    /// text of `saved` (the same entry in the backup, whose text is
    /// `saved_text`). `None` when the two differ in shape so that an exact
    /// restore is impossible.
    pub fn restore(&self, saved: &Entry<'_>, saved_text: &str) -> Option<Vec<Edit>> {
        let text = |node: &Node| saved_text[node.span.clone()].to_owned();
        let mut edits = vec![(self.command?.span.clone(), text(saved.command?))];
        match (self.args, saved.args) {
            (Some(now), Some(then)) => edits.push((now.span.clone(), text(then))),
            (None, None) => {}
            _ => return None,
        }
        Some(edits)
    }
}

/// The entry at `path` among `entries`.
pub fn at<'e, 'a>(entries: &'e [Entry<'a>], path: &[String]) -> Option<&'e Entry<'a>> {
    entries.iter().find(|e| e.path == path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::install::doc::splice;

    const EXE: &str = "/opt/bin/iai-mcp-wrapper";

    fn switched(format: Format, text: &str, maps: &[&[&str]]) -> String {
        let root = format.parse(text).expect("parses");
        let entries = find(&root, maps);
        assert_eq!(entries.len(), 1, "one entry in {text}");
        let edits = entries[0]
            .switch(format, EXE, false)
            .expect("known wrapper");
        splice(text, &edits)
    }

    #[test]
    fn node_entries_switch_and_keep_every_other_field() {
        let text = r#"{"mcpServers": {"iai-mcp": {"type": "stdio", "command": "node", "args": ["/s/iai_mcp/_wrapper/index.js"], "env": {"IAI_MCP_STORE": "/h/.iai-mcp"}}}}"#;
        let out = switched(Format::Json, text, &[&["mcpServers"]]);
        assert_eq!(
            out,
            r#"{"mcpServers": {"iai-mcp": {"type": "stdio", "command": "/opt/bin/iai-mcp-wrapper", "args": [], "env": {"IAI_MCP_STORE": "/h/.iai-mcp"}}}}"#
        );
    }

    #[test]
    fn opencode_argv_is_replaced_whole_and_another_build_keeps_its_flags() {
        let text = r#"{"mcp": {"iai-mcp": {"type": "local", "command": ["node", "/x/index.js"]}}}"#;
        let out = switched(Format::Jsonc, text, &[&["mcp"]]);
        assert!(
            out.contains(r#""command": ["/opt/bin/iai-mcp-wrapper"]"#),
            "{out}"
        );
        let text =
            r#"{"mcp": {"iai-mcp": {"command": ["/old/iai-mcp-wrapper", "--log", "debug"]}}}"#;
        let out = switched(Format::Jsonc, text, &[&["mcp"]]);
        assert!(
            out.contains(r#"["/opt/bin/iai-mcp-wrapper", "--log", "debug"]"#),
            "{out}"
        );
    }

    #[test]
    fn entries_are_classified_by_what_they_start() {
        let runs = |text: &str| {
            let root = Format::Json.parse(text).expect("parses");
            find(&root, &[&["mcpServers"]])[0].runs()
        };
        assert!(matches!(
            runs(r#"{"mcpServers": {"iai-mcp": {"command": "/usr/bin/node", "args": ["/w/dist/index.js"]}}}"#),
            Runs::Node { script } if script == "/w/dist/index.js"
        ));
        assert!(matches!(
            runs(r#"{"mcpServers": {"iai-pme": {"command": "iai-mcp-server"}}}"#),
            Runs::Launcher { .. }
        ));
        assert!(matches!(
            runs(r#"{"mcpServers": {"iai-mcp": {"command": "uvx", "args": ["x"]}}}"#),
            Runs::Other { command } if command == "uvx x"
        ));
        let root = Format::Json
            .parse(r#"{"mcpServers": {"iai-mcp": {"command": "python3", "args": ["-m", "x"]}}}"#)
            .expect("parses");
        assert!(
            find(&root, &[&["mcpServers"]])[0]
                .switch(Format::Json, EXE, false)
                .is_none()
        );
    }

    #[test]
    fn per_project_entries_are_found_under_any_project() {
        let text = r#"{"projects": {"/a": {"mcpServers": {}}, "/b": {"mcpServers": {"iai-mcp": {"command": "node", "args": ["/i/index.js"]}}}}}"#;
        let root = Format::Json.parse(text).expect("parses");
        let entries = find(&root, &[&["mcpServers"], &["projects", "*", "mcpServers"]]);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].dotted(), "projects./b.mcpServers.iai-mcp");
    }

    #[test]
    fn restore_gives_back_the_saved_bytes() {
        let before = "[mcp_servers.iai-mcp]\ncommand = 'node'   # the released one\nargs = [ \"/i/index.js\" ]\n";
        let after = switched(Format::Toml, before, &[&["mcp_servers"]]);
        assert!(after.contains("command = \"/opt/bin/iai-mcp-wrapper\"   # the released one"));
        let now = Format::Toml.parse(&after).expect("parses");
        let then = Format::Toml.parse(before).expect("parses");
        let (now, then) = (
            find(&now, &[&["mcp_servers"]]),
            find(&then, &[&["mcp_servers"]]),
        );
        let edits = now[0].restore(&then[0], before).expect("same shape");
        assert_eq!(splice(&after, &edits), before);
    }
}
