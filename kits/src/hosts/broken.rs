//! Wrappers broken on purpose, to check the kit's own strictness: each
//! sits between a host and a real wrapper (`broken-wrapper NAME --
//! WRAPPER...`, the `broken-wrapper` binary of this crate) and spoils the
//! conversation one way. `cargo xtask hosts --broken-wrappers` runs them
//! beside this workspace's wrapper; each must fail at least one check in
//! every host, or the kit is not strict enough.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};

use devkit::bins::WorkspaceBin;
use devkit::sync::lock;
use serde_json::{Value, json};

/// The `broken-wrapper` binary.
pub const BROKEN_WRAPPER: WorkspaceBin = WorkspaceBin {
    package: "kits",
    bin: "broken-wrapper",
    env_override: "KITS_BROKEN_WRAPPER_BIN",
};

/// The record id the offline capture makes up.
pub const MADE_UP_RECORD: &str = "11111111-2222-4333-8444-555555555555";

/// One way of being broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Breakage {
    /// Answers `memory_capture` itself, with a made-up record, without
    /// reaching the daemon.
    CaptureOffline,
    /// Never answers the third tool call.
    MuteThirdCall,
    /// Turns every tool call's answer after the first into an error.
    ErrorsAfterFirst,
}

impl Breakage {
    /// Every way, in the report's order.
    pub const ALL: [Breakage; 3] = [
        Breakage::CaptureOffline,
        Breakage::MuteThirdCall,
        Breakage::ErrorsAfterFirst,
    ];

    /// Its name on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Breakage::CaptureOffline => "capture-offline",
            Breakage::MuteThirdCall => "mute-third-call",
            Breakage::ErrorsAfterFirst => "errors-after-first",
        }
    }

    /// The breakage called `name`.
    pub fn named(name: &str) -> Option<Self> {
        Breakage::ALL.into_iter().find(|b| b.name() == name)
    }
}

/// What the filter does with one line from the host.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// Pass it on to the wrapper.
    Forward,
    /// Pass it on; the answer to this id is to be turned into an error.
    ForwardSpoiled(Value),
    /// Answer it with this line instead; the wrapper never sees it.
    AnswerWith(Value),
    /// Drop it: never passed on, never answered.
    Drop,
}

/// The decisions of one broken wrapper, line by line.
#[derive(Debug)]
pub struct Filter {
    breakage: Breakage,
    calls: usize,
}

impl Filter {
    /// A filter broken `breakage`'s way.
    pub fn new(breakage: Breakage) -> Self {
        Filter { breakage, calls: 0 }
    }

    /// What to do with a line the host sent.
    pub fn inbound(&mut self, line: &str) -> Inbound {
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            return Inbound::Forward;
        };
        if message["method"] != "tools/call" {
            return Inbound::Forward;
        }
        self.calls += 1;
        let id = message["id"].clone();
        match self.breakage {
            Breakage::CaptureOffline if message["params"]["name"] == "memory_capture" => {
                Inbound::AnswerWith(made_up_capture(&id))
            }
            Breakage::MuteThirdCall if self.calls == 3 => Inbound::Drop,
            Breakage::ErrorsAfterFirst if self.calls > 1 => Inbound::ForwardSpoiled(id),
            _ => Inbound::Forward,
        }
    }
}

/// A successful capture result with a made-up record.
fn made_up_capture(id: &Value) -> Value {
    let record = json!({"record_id": MADE_UP_RECORD, "stored": true});
    json!({"jsonrpc": "2.0", "id": id, "result": {
        "content": [{"type": "text", "text": record.to_string()}],
        "structuredContent": record
    }})
}

/// An error result in place of the answer to `id`.
fn spoiled(id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {
        "content": [{"type": "text", "text": "error: broken on purpose"}],
        "isError": true
    }})
}

/// The binary's main: `broken-wrapper NAME -- WRAPPER [ARG]...`.
pub fn main(args: &[OsString]) -> ExitCode {
    let usage = || {
        let names: Vec<&str> = Breakage::ALL.iter().map(|b| b.name()).collect();
        eprintln!(
            "usage: broken-wrapper {{{}}} -- WRAPPER [ARG]...",
            names.join("|")
        );
        ExitCode::from(2)
    };
    let (Some(name), Some(separator)) = (args.first(), args.get(1)) else {
        return usage();
    };
    let Some(breakage) = name.to_str().and_then(Breakage::named) else {
        return usage();
    };
    if separator != "--" || args.len() < 3 {
        return usage();
    }
    match run(breakage, &args[2..]) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("broken-wrapper: {e}");
            ExitCode::from(1)
        }
    }
}

/// Runs `wrapper` behind the filter until the host closes its side.
fn run(breakage: Breakage, wrapper: &[OsString]) -> std::io::Result<ExitCode> {
    let mut child = Command::new(&wrapper[0])
        .args(&wrapper[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut to_wrapper = child.stdin.take().expect("piped");
    let from_wrapper = child.stdout.take().expect("piped");
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let spoil: Arc<Mutex<HashSet<String>>> = Arc::default();
    let (host_out, spoiling) = (Arc::clone(&out), Arc::clone(&spoil));
    let inbound = std::thread::spawn(move || {
        let mut filter = Filter::new(breakage);
        for line in std::io::stdin().lock().lines().map_while(Result::ok) {
            let sent = match filter.inbound(&line) {
                Inbound::Forward => writeln!(to_wrapper, "{line}"),
                Inbound::ForwardSpoiled(id) => {
                    lock(&spoiling).insert(id.to_string());
                    writeln!(to_wrapper, "{line}")
                }
                Inbound::AnswerWith(answer) => writeln!(lock(&host_out), "{answer}"),
                Inbound::Drop => Ok(()),
            };
            if sent.is_err() {
                break;
            }
        }
        // Dropping the pipe tells the wrapper the host is gone.
    });
    for line in BufReader::new(from_wrapper).lines().map_while(Result::ok) {
        let id = serde_json::from_str::<Value>(&line)
            .ok()
            .map(|message| message["id"].clone())
            .filter(|id| lock(&spoil).remove(&id.to_string()));
        let mut out = lock(&out);
        let written = match id {
            Some(id) => writeln!(out, "{}", spoiled(&id)),
            None => writeln!(out, "{line}"),
        };
        if written.and_then(|()| out.flush()).is_err() {
            break;
        }
    }
    let _ = inbound.join();
    let status = child.wait()?;
    Ok(ExitCode::from(
        status
            .code()
            .and_then(|c| u8::try_from(c).ok())
            .unwrap_or(1),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: u64, tool: &str) -> String {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": tool, "arguments": {}}})
        .to_string()
    }

    #[test]
    fn each_breakage_spoils_its_own_calls_only() {
        let list = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}).to_string();
        let mut offline = Filter::new(Breakage::CaptureOffline);
        assert_eq!(offline.inbound(&list), Inbound::Forward);
        assert!(matches!(
            offline.inbound(&call(1, "memory_capture")),
            Inbound::AnswerWith(answer) if answer["id"] == 1
        ));
        assert_eq!(offline.inbound(&call(2, "memory_search")), Inbound::Forward);

        let mut mute = Filter::new(Breakage::MuteThirdCall);
        let decided: Vec<Inbound> = (1..=4)
            .map(|i| mute.inbound(&call(i, "topology")))
            .collect();
        assert_eq!(
            decided,
            [
                Inbound::Forward,
                Inbound::Forward,
                Inbound::Drop,
                Inbound::Forward
            ]
        );

        let mut errors = Filter::new(Breakage::ErrorsAfterFirst);
        assert_eq!(errors.inbound(&call(1, "topology")), Inbound::Forward);
        assert_eq!(errors.inbound(&list), Inbound::Forward);
        assert_eq!(
            errors.inbound(&call(2, "topology")),
            Inbound::ForwardSpoiled(json!(2))
        );
    }
}
