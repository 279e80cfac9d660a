//! Every command described once, for people: its word, its argument, what
//! it does and what the daemon answers. The parser finds command words
//! here, `fake-daemon --help` lists the table, and `docs/fake-daemon.md`
//! holds it as Markdown ([`markdown_table`], kept current by this crate's
//! tests).

use std::fmt::Write as _;

use crate::stats::STATS_FORM;

/// What a command takes after its word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Argument {
    /// Nothing.
    None,
    /// One word, always: its placeholder, e.g. `<ms>`.
    Required(&'static str),
    /// One word or nothing: its placeholder, e.g. `<order>`.
    Optional(&'static str),
}

/// What the daemon answers a command with, on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// `OK ` and the command as given, once its effect has taken place.
    Done,
    /// `DROPPED`, once every connection is closed.
    Dropped,
    /// Nothing: the process exits.
    Exits,
    /// The counters ([`STATS_FORM`]).
    Stats,
    /// A JSON report on one line, like this example.
    Report(&'static str),
}

/// One command, for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandSpec {
    /// The command word, as written in capitals (any case is read).
    pub name: &'static str,
    /// What it takes after the word.
    pub argument: Argument,
    /// What it does.
    pub effect: &'static str,
    /// What the daemon answers.
    pub answer: Answer,
}

impl CommandSpec {
    /// The word with its argument's placeholder: `DELAY <ms>`, `UP [<order>]`.
    pub fn usage(&self) -> String {
        match self.argument {
            Argument::None => self.name.to_owned(),
            Argument::Required(what) => format!("{} {what}", self.name),
            Argument::Optional(what) => format!("{} [{what}]", self.name),
        }
    }

    /// The answer, as documentation: `OK DELAY <ms>`, `DROPPED`, a report's
    /// example.
    pub fn answer_text(&self) -> String {
        match self.answer {
            Answer::Done => format!("OK {}", self.usage()),
            Answer::Dropped => "DROPPED".to_owned(),
            Answer::Exits => "(none: the process exits)".to_owned(),
            Answer::Stats => STATS_FORM.to_owned(),
            Answer::Report(example) => example.to_owned(),
        }
    }
}

/// The command whose word is `word`, in any case.
pub fn find(word: &str) -> Option<&'static CommandSpec> {
    COMMANDS
        .iter()
        .find(|spec| spec.name.eq_ignore_ascii_case(word))
}

/// Every command, in the order `--help` and the documentation list them.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "DROP",
        argument: Argument::None,
        effect: "shut down and close every accepted connection (on TCP also those still to send their token); the listener stays bound",
        answer: Answer::Dropped,
    },
    CommandSpec {
        name: "QUIT",
        argument: Argument::None,
        effect: "close everything, remove the socket file (on TCP the port and token files), exit 0",
        answer: Answer::Exits,
    },
    CommandSpec {
        name: "STATS",
        argument: Argument::None,
        effect: "report live accepted connections, connections accepted, JSON-RPC requests answered, control messages seen, TCP connections refused for their token and those still to send it",
        answer: Answer::Stats,
    },
    CommandSpec {
        name: "ACCEPTS",
        argument: Argument::None,
        effect: "report when the most recent connections (up to 10000) were accepted, in microseconds since the Unix epoch, oldest first",
        answer: Answer::Report("{\"accepted_at_us\":[1764564000000000,...]}"),
    },
    CommandSpec {
        name: "SEEN",
        argument: Argument::None,
        effect: "report the request methods and control message types received, in order",
        answer: Answer::Report("{\"seen\":[\"session_open\",\"topology\",...]}"),
    },
    CommandSpec {
        name: "LOG",
        argument: Argument::None,
        effect: "report every JSON-RPC request received, in order (params null when absent, id left out for notifications)",
        answer: Answer::Report("{\"requests\":[{\"method\":..,\"params\":..,\"id\":..},...]}"),
    },
    CommandSpec {
        name: "DOWN",
        argument: Argument::None,
        effect: "close and unlink the listener (on TCP remove the port and token files) and close every connection (a stopped daemon); no-op when already down",
        answer: Answer::Done,
    },
    CommandSpec {
        name: "UP",
        argument: Argument::Optional("<order>"),
        effect: "bind again after DOWN, in the start-up order <order> (at-once, listen-after=<ms>, token-then-port=<ms>), else in --start-up's; no-op when already up; ERR <reason> when it cannot bind",
        answer: Answer::Done,
    },
    CommandSpec {
        name: "HANG",
        argument: Argument::None,
        effect: "stop answering: keep connections, keep reading and holding requests",
        answer: Answer::Done,
    },
    CommandSpec {
        name: "RESUME",
        argument: Argument::None,
        effect: "answer again; held requests are answered now",
        answer: Answer::Done,
    },
    CommandSpec {
        name: "DELAY",
        argument: Argument::Required("<ms>"),
        effect: "send every reply <ms> after its request arrived, without blocking anything else (0 = off)",
        answer: Answer::Done,
    },
    CommandSpec {
        name: "GARBAGE",
        argument: Argument::Required("<n>"),
        effect: "write <n> non-JSON lines (\"garbage line 1\", ...) to every live connection now",
        answer: Answer::Done,
    },
    CommandSpec {
        name: "SLICE",
        argument: Argument::Required("<bytes>"),
        effect: "write output in pieces of at most <bytes>, yielding between pieces (0 = off)",
        answer: Answer::Done,
    },
    CommandSpec {
        name: "CUT",
        argument: Argument::None,
        effect: "write the first half of the next success reply on any connection, then close that connection",
        answer: Answer::Done,
    },
    CommandSpec {
        name: "OVERSIZE",
        argument: Argument::Required("<bytes>"),
        effect: "give the next success reply an extra result member \"padding\" that makes the line (newline excluded) longer than <bytes>",
        answer: Answer::Done,
    },
    CommandSpec {
        name: "DUPLICATE",
        argument: Argument::None,
        effect: "write the next success reply twice",
        answer: Answer::Done,
    },
    CommandSpec {
        name: "STRAY",
        argument: Argument::None,
        effect: "write a well-formed response with id 999999999 (asked for by nobody) to every live connection now",
        answer: Answer::Done,
    },
];

/// The command table as Markdown: one row per command, its usage, effect
/// and answer; placeholders such as `<ms>` set as code, so no Markdown
/// reader takes them for HTML.
pub fn markdown_table() -> String {
    let mut table = String::from("| command | effect | acknowledgement |\n|---|---|---|\n");
    for spec in COMMANDS {
        let _ = writeln!(
            table,
            "| `{}` | {} | `{}` |",
            spec.usage(),
            placeholders_as_code(spec.effect),
            spec.answer_text()
        );
    }
    table
}

/// `text` with each placeholder (`<ms>`) and quoted example (`"padding"`)
/// set as code.
fn placeholders_as_code(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(start) = rest.find(['<', '"']) {
        let close = if rest[start..].starts_with('<') {
            '>'
        } else {
            '"'
        };
        let Some(length) = rest[start + 1..].find(close) else {
            break;
        };
        let end = start + 1 + length + 1;
        out.push_str(&rest[..start]);
        out.push('`');
        out.push_str(&rest[start..end]);
        out.push('`');
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_examples_become_code() {
        assert_eq!(
            placeholders_as_code("send every reply <ms> after (\"padding\"), <n> <"),
            "send every reply `<ms>` after (`\"padding\"`), `<n>` <"
        );
    }

    #[test]
    fn words_are_found_in_any_case() {
        assert_eq!(find("delay").map(|s| s.name), Some("DELAY"));
        assert_eq!(
            find("Up").map(CommandSpec::usage).as_deref(),
            Some("UP [<order>]")
        );
        assert_eq!(find("DELAYS"), None);
    }
}
