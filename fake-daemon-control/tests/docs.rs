//! `docs/fake-daemon.md` holds the command table of `spec::COMMANDS`, as
//! `spec::markdown_table` writes it. When the declaration changes, this
//! test rewrites the table in the document and fails once, so that the
//! change is seen and committed with the declaration.

use std::path::PathBuf;

use fake_daemon_control::spec::markdown_table;

/// The line before the table in the document.
const BEGIN: &str = "<!-- The table below is generated from fake-daemon-control/src/spec.rs; `cargo test -p fake-daemon-control` rewrites it. -->\n";
/// The line after it.
const END: &str = "<!-- End of the generated table. -->\n";

#[test]
fn the_documented_command_table_is_the_declared_one() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/fake-daemon.md");
    let text = std::fs::read_to_string(&path).expect("docs/fake-daemon.md is readable");
    let (before, rest) = text
        .split_once(BEGIN)
        .expect("docs/fake-daemon.md marks where the command table begins");
    let (table, after) = rest
        .split_once(END)
        .expect("docs/fake-daemon.md marks where the command table ends");
    let declared = markdown_table();
    if table != declared {
        std::fs::write(&path, format!("{before}{BEGIN}{declared}{END}{after}"))
            .expect("docs/fake-daemon.md is writable");
        panic!(
            "docs/fake-daemon.md held another command table than fake-daemon-control/src/spec.rs declares; it now holds the declared one: commit it"
        );
    }
}
