//! `fake-iai`: a stand-in for the `iai` and `iai-mcp` CLIs; see
//! `fake_daemon::fake_cli`.

use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;

use fake_daemon::fake_cli::{self, Behaviour};

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let env: HashMap<String, String> = std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    if let Some(path) = env.get("FAKE_IAI_LOG") {
        let logged = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| writeln!(f, "{}", fake_cli::log_line(&argv, &env)));
        if let Err(e) = logged {
            eprintln!("fake-iai: cannot log to {path}: {e}");
        }
    }
    match fake_cli::behaviour(&argv, &env) {
        Behaviour::Hang => loop {
            std::thread::park();
        },
        Behaviour::Exit {
            stdout,
            stderr,
            code,
        } => {
            print!("{stdout}");
            eprint!("{stderr}");
            ExitCode::from(u8::try_from(code).unwrap_or(1))
        }
    }
}
