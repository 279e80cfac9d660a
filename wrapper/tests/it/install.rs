//! `install`, `uninstall` and `status` through the real binary, on fixture
//! files for every host in a temporary HOME: the forms iai-mcp 3.3.0's
//! installer writes and the ones docs/hosts.md documents.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::str::contains;

const SCRIPT: &str = "/opt/venv/lib/python3.11/site-packages/iai_mcp/_wrapper/index.js";

/// Each host's file, relative to HOME, with an iai-mcp entry as written
/// for it, other servers and settings around it.
fn fixtures() -> Vec<(&'static str, String)> {
    vec![
        (
            ".claude.json",
            format!(
                r#"{{
  "numStartups": 12,
  "projects": {{
    "/home/u/repo": {{
      "mcpServers": {{
        "iai-mcp": {{ "type": "stdio", "command": "node", "args": ["{SCRIPT}"], "env": {{}} }}
      }}
    }}
  }},
  "mcpServers": {{
    "github": {{ "command": "gh-mcp" }},
    "iai-mcp": {{
      "command": "node",
      "args": [
        "{SCRIPT}"
      ],
      "env": {{
        "IAI_MCP_PYTHON": "/opt/venv/bin/python",
        "IAI_MCP_STORE": "/home/u/.iai-mcp",
        "TRANSFORMERS_VERBOSITY": "error",
        "TOKENIZERS_PARALLELISM": "false"
      }},
      "type": "stdio"
    }}
  }}
}}"#
            ),
        ),
        (
            ".config/Claude/claude_desktop_config.json",
            format!(
                "{{\n  \"mcpServers\": {{\n    \"iai-mcp\": {{\n      \"command\": \"node\",\n      \"args\": [\n        \"{SCRIPT}\"\n      ],\n      \"env\": {{\n        \"IAI_MCP_STORE\": \"/home/u/.iai-mcp\"\n      }}\n    }}\n  }}\n}}"
            ),
        ),
        (
            ".codex/config.toml",
            format!(
                "model = \"o3\"  # chosen\n\n[mcp_servers.iai-tools]\ncommand = \"node\"\nargs = [\"/opt/tools-index.js\"]\n\n[mcp_servers.iai-mcp]\ncommand = \"node\"   # released wrapper\nargs = [ '{SCRIPT}' ]\nenv = {{ IAI_MCP_STORE = \"/home/u/.iai-mcp\" }}\n"
            ),
        ),
        (
            ".cursor/mcp.json",
            "{\"mcpServers\":{\"iai-mcp\":{\"command\":\"iai-mcp-server\"}}}".to_owned(),
        ),
        (
            ".openclaw/openclaw.json",
            format!(
                "{{\n  \"mcp\": {{\n    \"servers\": {{\n      \"iai-pme\": {{\n        \"command\": \"node\",\n        \"args\": [\n          \"{SCRIPT}\"\n        ]\n      }}\n    }}\n  }}\n}}"
            ),
        ),
        (
            ".config/opencode/opencode.json",
            format!(
                "{{\n  // memory\n  \"$schema\": \"https://opencode.ai/config.json\",\n  \"mcp\": {{\n    \"iai-mcp\": {{\n      \"type\": \"local\",\n      \"command\": [\"node\", \"{SCRIPT}\"],\n      \"enabled\": true,\n    }},\n  }},\n}}\n"
            ),
        ),
    ]
}

/// The binary under test: the one `IAI_WRAPPER_BIN` names (an emulated
/// build, say), else the one cargo built.
fn this_binary() -> PathBuf {
    let binary = std::env::var_os(devkit::bins::WRAPPER.env_override)
        .filter(|v| !v.is_empty())
        .map_or_else(
            || assert_cmd::cargo::cargo_bin("iai-mcp-wrapper"),
            PathBuf::from,
        );
    fs::canonicalize(binary).expect("binary")
}

fn run(home: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    // The binary under test, behind IAI_WRAPPER_RUNNER's emulator if set.
    let built = assert_cmd::cargo::cargo_bin("iai-mcp-wrapper");
    Command::from_std(harness::WrapperCommand::under_test(built).std_command())
        .args(args)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CODEX_HOME")
        .env_remove("IAI_MCP_CODEX_HOME")
        .env_remove("IAI_MCP_OPENCLAW_HOME")
        .assert()
}

fn home_with(files: &[(&str, String)]) -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("tempdir");
    for (rel, text) in files {
        let path = home.path().join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(&path, text).expect("write");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    home
}

/// Every file under `dir`, with its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for item in fs::read_dir(&d).expect("list").flatten() {
            let path = item.path();
            if path.is_dir() {
                todo.push(path);
            } else {
                files.push((path.clone(), fs::read(&path).expect("read")));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn install_switches_every_host_and_uninstall_gives_back_the_same_bytes() {
    let fixtures = fixtures();
    let home = home_with(&fixtures);
    let exe = this_binary();
    run(home.path(), &["status"])
        .code(1)
        .stdout(contains("the Node wrapper"));

    run(home.path(), &["install"]).success();
    for (rel, before) in &fixtures {
        let path = home.path().join(rel);
        let after = fs::read_to_string(&path).expect("read");
        assert_ne!(&after, before, "{rel} was switched");
        assert!(
            after.contains(&*exe.to_string_lossy()),
            "{rel} names this binary:\n{after}"
        );
        assert!(
            !after.contains(SCRIPT) && !after.contains("iai-mcp-server"),
            "{rel} no longer starts the Node wrapper:\n{after}"
        );
        let mode = fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{rel} keeps its permissions");
        let backup_path = home.path().join(format!("{rel}.iai-mcp-wrapper.bak"));
        let backup = fs::read_to_string(&backup_path).expect("backup");
        assert_eq!(&backup, before, "{rel}'s backup is the file as it was");
        let mode = fs::metadata(&backup_path)
            .expect("meta")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600, "{rel}'s backup has the file's permissions");
    }
    let codex = fs::read_to_string(home.path().join(".codex/config.toml")).expect("read");
    assert!(
        codex.contains("[mcp_servers.iai-tools]\ncommand = \"node\""),
        "iai-tools left alone"
    );
    assert!(
        codex.contains("\"   # released wrapper\nargs = []\nenv = { IAI_MCP_STORE"),
        "{codex}"
    );
    let claude = fs::read_to_string(home.path().join(".claude.json")).expect("read");
    assert!(
        claude.contains("\"github\": { \"command\": \"gh-mcp\" }"),
        "{claude}"
    );
    assert!(
        claude.contains("\"IAI_MCP_PYTHON\": \"/opt/venv/bin/python\""),
        "env kept"
    );
    run(home.path(), &["status"]).success().stdout(contains(
        "projects./home/u/repo.mcpServers.iai-mcp: this wrapper",
    ));

    run(home.path(), &["install"])
        .success()
        .stdout(contains("already this wrapper"));
    run(home.path(), &["uninstall"]).success();
    for (rel, before) in &fixtures {
        let after = fs::read_to_string(home.path().join(rel)).expect("read");
        assert_eq!(&after, before, "{rel} is back, byte for byte");
    }
}

#[test]
fn dry_run_shows_the_change_and_writes_nothing() {
    let home = home_with(&fixtures());
    let before = snapshot(home.path());
    run(home.path(), &["install", "--dry-run"])
        .success()
        .stdout(contains("\"node\"  ->  \""))
        .stdout(contains("dry run: nothing written"));
    assert_eq!(snapshot(home.path()), before);
    run(home.path(), &["install"]).success();
    let installed = snapshot(home.path());
    run(home.path(), &["uninstall", "--dry-run"]).success();
    assert_eq!(snapshot(home.path()), installed);
}

#[test]
fn only_the_hosts_named_are_touched_and_absent_hosts_get_no_files() {
    let all = fixtures();
    let home = home_with(&all[..1]);
    run(
        home.path(),
        &["install", "--host", "codex", "--host", "cursor"],
    )
    .success()
    .stdout(contains("no such file"));
    assert_eq!(
        fs::read_to_string(home.path().join(".claude.json")).expect("read"),
        all[0].1
    );
    run(home.path(), &["install"]).success();
    let files: Vec<_> = snapshot(home.path()).into_iter().map(|(p, _)| p).collect();
    assert_eq!(files.len(), 2, "the file and its backup only: {files:?}");
}

#[test]
fn unparseable_and_read_only_files_are_refused_untouched() {
    let home = home_with(&[
        (
            ".claude.json",
            "{\"mcpServers\": {\"iai-mcp\": {\"command\": \"node\",}}}".to_owned(),
        ),
        (".cursor/mcp.json", fixtures()[3].1.clone()),
    ]);
    let cursor = home.path().join(".cursor/mcp.json");
    fs::set_permissions(&cursor, fs::Permissions::from_mode(0o444)).expect("chmod");
    let before = snapshot(home.path());
    run(home.path(), &["install"])
        .code(1)
        .stdout(contains(".claude.json does not parse"))
        .stdout(contains("mcp.json is read-only; not changed"));
    assert_eq!(snapshot(home.path()), before);
}

#[test]
fn unknown_commands_are_left_alone_and_a_linked_file_is_edited_where_it_lives() {
    let home = home_with(&[(
        "dotfiles/claude.json",
        "{\"mcpServers\": {\"iai-mcp\": {\"command\": \"node\", \"args\": [\"/x/index.js\"]}, \"iai-pme\": {\"command\": \"uvx\", \"args\": [\"iai\"]}}}".to_owned(),
    )]);
    std::os::unix::fs::symlink("dotfiles/claude.json", home.path().join(".claude.json"))
        .expect("link");
    run(home.path(), &["install"]).success().stdout(contains(
        "mcpServers.iai-pme: starts `uvx iai`, not an iai-mcp wrapper",
    ));
    let link = fs::symlink_metadata(home.path().join(".claude.json")).expect("meta");
    assert!(link.file_type().is_symlink(), "the link is kept");
    let target = fs::read_to_string(home.path().join("dotfiles/claude.json")).expect("read");
    assert!(target.contains("\"command\": \"uvx\""), "{target}");
    assert!(!target.contains("\"node\""), "{target}");
}

#[test]
fn a_host_reinstalled_by_iai_mcp_shows_in_status_and_check() {
    let fixtures = fixtures();
    let home = home_with(&fixtures[..2]);
    run(home.path(), &["install"]).success();
    // What `iai-mcp capture-hooks install` does to Claude Desktop again.
    let desktop = home.path().join(fixtures[1].0);
    fs::write(&desktop, &fixtures[1].1).expect("rewrite");
    run(home.path(), &["status"])
        .code(1)
        .stdout(contains("mcpServers.iai-mcp: this wrapper"))
        .stdout(contains("mcpServers.iai-mcp: the Node wrapper"))
        .stdout(contains("switched before, then put back"));
    let socket = home.path().join("none.sock");
    run(
        home.path(),
        &["--check", "--socket-path", &socket.to_string_lossy()],
    )
    .code(1)
    .stdout(contains("host configurations:"))
    .stdout(contains(
        "[warn] 1 of 3 iai-mcp entries above do not start this binary",
    ));
    // Nothing to restore where iai-mcp already put its wrapper back.
    run(home.path(), &["uninstall"])
        .success()
        .stdout(contains("starts the Node wrapper; nothing to restore"));
    assert_eq!(
        fs::read_to_string(home.path().join(".claude.json")).expect("read"),
        fixtures[0].1
    );
}

#[test]
fn uninstall_without_a_backup_says_so_and_changes_nothing() {
    let exe = this_binary();
    let text = format!(
        "{{\"mcpServers\": {{\"iai-mcp\": {{\"command\": \"{}\"}}}}}}",
        exe.display()
    );
    let home = home_with(&[(".cursor/mcp.json", text.clone())]);
    run(home.path(), &["uninstall"])
        .code(1)
        .stdout(contains("there is no backup"));
    assert_eq!(
        fs::read_to_string(home.path().join(".cursor/mcp.json")).expect("read"),
        text
    );
}

#[test]
fn installing_again_after_iai_mcp_put_one_entry_back_still_restores_every_entry() {
    let fixtures = fixtures();
    let home = home_with(&fixtures[..1]);
    let claude = home.path().join(".claude.json");
    run(home.path(), &["install"]).success();
    // `iai-mcp capture-hooks install` rewrites the user-scope entry only;
    // the per-project one still starts this wrapper.
    let switched = fs::read_to_string(&claude).expect("read");
    let user_entry_back = fixtures[0]
        .1
        .replace("\"numStartups\": 12", "\"numStartups\": 13");
    let project_still_switched: String = {
        let at = switched
            .find("\"mcpServers\": {\n    \"github\"")
            .expect("user scope");
        let original_at = user_entry_back
            .find("\"mcpServers\": {\n    \"github\"")
            .expect("user scope");
        format!("{}{}", &switched[..at], &user_entry_back[original_at..])
            .replace("\"numStartups\": 12", "\"numStartups\": 13")
    };
    fs::write(&claude, &project_still_switched).expect("rewrite");
    run(home.path(), &["install"]).success();
    run(home.path(), &["uninstall"]).success();
    assert_eq!(fs::read_to_string(&claude).expect("read"), user_entry_back);

    // The same after installs by two builds at different paths.
    let other = home.path().join("bin/iai-mcp-wrapper");
    fs::create_dir_all(other.parent().expect("dir")).expect("mkdir");
    fs::copy(this_binary(), &other).expect("copy");
    run(home.path(), &["install"]).success();
    let by_other = |args: &[&str]| {
        // Behind IAI_WRAPPER_RUNNER's emulator too, if one is set.
        let copy = harness::WrapperCommand::with_runner(&other).expect("runner");
        Command::from_std(copy.std_command())
            .args(args)
            .env("HOME", home.path())
            .env_remove("XDG_CONFIG_HOME")
            .assert()
    };
    by_other(&["install"])
        .success()
        .stdout(contains("iai-mcp-wrapper ("));
    by_other(&["uninstall"]).success();
    assert_eq!(fs::read_to_string(&claude).expect("read"), user_entry_back);
}

#[test]
fn a_key_given_twice_is_refused_untouched() {
    let text = "{\"mcpServers\": {\"iai-mcp\": {\"command\": \"node\", \"args\": [\"/x/index.js\"]}, \"iai-mcp\": {\"command\": \"node\"}}}";
    let home = home_with(&[(".claude.json", text.to_owned())]);
    run(home.path(), &["install"])
        .code(1)
        .stdout(contains("appears twice in one object"));
    assert_eq!(
        fs::read_to_string(home.path().join(".claude.json")).expect("read"),
        text
    );
}

#[test]
fn crlf_lines_and_dotted_toml_keys_round_trip() {
    let toml = format!(
        "mcp_servers.other.command = \"x\"\r\n[mcp_servers.iai-mcp]\r\ncommand = \"node\"\r\nargs = [\"{SCRIPT}\"]\r\n"
    );
    let json = format!(
        "{{\r\n  \"mcpServers\": {{\r\n    \"iai-mcp\": {{ \"command\": \"node\", \"args\": [\"{SCRIPT}\"] }}\r\n  }}\r\n}}\r\n"
    );
    let files = [(".codex/config.toml", toml), (".cursor/mcp.json", json)];
    let home = home_with(&files);
    run(home.path(), &["install"]).success();
    run(home.path(), &["status"]).success();
    run(home.path(), &["uninstall"]).success();
    for (rel, before) in &files {
        assert_eq!(
            &fs::read_to_string(home.path().join(rel)).expect("read"),
            before
        );
    }
}

#[test]
fn run_by_root_for_a_user_the_files_keep_their_owner() {
    if !nix::unistd::geteuid().is_root() {
        println!("skipped: changing a file's owner needs root");
        return;
    }
    let home = home_with(&fixtures()[..1]);
    let claude = home.path().join(".claude.json");
    std::os::unix::fs::chown(&claude, Some(4242), Some(4343)).expect("chown");
    run(home.path(), &["install"]).success();
    for path in [
        claude.clone(),
        home.path().join(".claude.json.iai-mcp-wrapper.bak"),
    ] {
        use std::os::unix::fs::MetadataExt;
        let meta = fs::metadata(&path).expect("meta");
        assert_eq!((meta.uid(), meta.gid()), (4242, 4343), "{}", path.display());
    }
}
