//! `install`, `uninstall` and `status`: point the iai-mcp entries that
//! iai-mcp's installer (`iai-mcp capture-hooks install`) writes into MCP
//! hosts' files at this binary, put them back, and say what each runs.
//!
//! Only the text of an entry's `command` and `args` values changes; every
//! other byte of the file is kept (other fields, `env`, comments, layout).
//! The file as it was before is kept beside it ([`file::backup_of`]), and
//! `uninstall` copies the entry's values back from there, so a round trip
//! gives the same bytes. Files of hosts that are not there, and entries
//! that start something this command does not know, are left alone.

pub mod doc;
pub mod entry;
pub mod file;
pub mod hosts;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use entry::{Entry, Runs};
use file::{FileError, Loaded};
use hosts::{Host, Places};

use crate::process::{self, CliCommand};

/// What to do with the hosts' entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Point every known iai-mcp entry at this binary.
    Install,
    /// Give switched entries back what they ran before.
    Uninstall,
    /// Say what each entry runs.
    Status,
}

/// One run of the command.
#[derive(Debug, Clone)]
pub struct Request {
    /// What to do.
    pub action: Action,
    /// The hosts to look at (all when empty).
    pub hosts: Vec<Host>,
    /// Print the changes without writing anything.
    pub dry_run: bool,
    /// This binary, by absolute path: what entries are pointed at.
    pub exe: PathBuf,
}

/// Carry out `request` on the hosts' files under `places`, reporting to
/// `out`. Returns whether everything asked for was done: for `status`,
/// whether at least one entry exists and all of them run this binary.
pub async fn execute(
    request: &Request,
    places: &Places,
    out: &mut impl Write,
) -> std::io::Result<bool> {
    let hosts = if request.hosts.is_empty() {
        Host::ALL.to_vec()
    } else {
        request.hosts.clone()
    };
    let mut ok = true;
    let mut entries_seen = 0;
    for host in hosts {
        let path = host.config_file(places);
        write!(out, "{:<15} {}", host.name(), places.show(&path))?;
        let (loaded, root) = match read(host, &path) {
            Ok(Some(read)) => read,
            Ok(None) => {
                writeln!(out, ": no such file")?;
                continue;
            }
            Err(e) => {
                writeln!(out, "\n  {e}")?;
                ok = false;
                continue;
            }
        };
        writeln!(out)?;
        let entries = entry::find(&root, host.server_maps());
        entries_seen += entries.len();
        if entries.is_empty() {
            writeln!(out, "  no iai-mcp entry")?;
            continue;
        }
        let done = match request.action {
            Action::Status => status(&entries, &request.exe, out).await?,
            Action::Install => install(host, &loaded, &entries, request, out)?,
            Action::Uninstall => uninstall(host, &loaded, &entries, request, out)?,
        };
        ok &= done;
    }
    if request.action == Action::Status && entries_seen == 0 {
        ok = false;
    }
    Ok(ok)
}

fn read(host: Host, path: &Path) -> Result<Option<(Loaded, doc::Node)>, FileError> {
    let Some(loaded) = file::load(path)? else {
        return Ok(None);
    };
    let root = host
        .format()
        .parse(&loaded.text)
        .map_err(|message| FileError::Parse {
            path: loaded.path.clone(),
            message,
        })?;
    Ok(Some((loaded, root)))
}

async fn status(entries: &[Entry<'_>], exe: &Path, out: &mut impl Write) -> std::io::Result<bool> {
    let mut all_here = true;
    for entry in entries {
        let runs = entry.runs();
        all_here &= is_this(&runs, exe);
        writeln!(out, "  {}: {}", entry.dotted(), describe(&runs, exe).await)?;
    }
    Ok(all_here)
}

fn install(
    host: Host,
    loaded: &Loaded,
    entries: &[Entry<'_>],
    request: &Request,
    out: &mut impl Write,
) -> std::io::Result<bool> {
    let exe = request.exe.to_string_lossy();
    let mut edits = Vec::new();
    for entry in entries {
        let runs = entry.runs();
        match entry.switch(host.format(), &exe) {
            None => writeln!(
                out,
                "  {}: starts {}; left alone",
                entry.dotted(),
                brief(&runs)
            )?,
            Some(e) if e.is_empty() => writeln!(out, "  {}: already this wrapper", entry.dotted())?,
            Some(e) => {
                writeln!(
                    out,
                    "  {}: {} -> this wrapper",
                    entry.dotted(),
                    brief(&runs)
                )?;
                show_edits(&loaded.text, &e, out)?;
                edits.extend(e);
            }
        }
    }
    let backup = file::backup_of(&loaded.path);
    commit(loaded, &edits, request.dry_run, Some(&backup), out)
}

fn uninstall(
    host: Host,
    loaded: &Loaded,
    entries: &[Entry<'_>],
    request: &Request,
    out: &mut impl Write,
) -> std::io::Result<bool> {
    let backup_path = file::backup_of(&loaded.path);
    let saved = match read(host, &backup_path) {
        Ok(saved) => saved,
        Err(e) => {
            writeln!(out, "  backup unusable: {e}")?;
            None
        }
    };
    let saved_entries = saved
        .as_ref()
        .map(|(_, root)| entry::find(root, host.server_maps()))
        .unwrap_or_default();
    let mut ok = true;
    let mut edits = Vec::new();
    for entry in entries {
        let name = entry.dotted();
        if !matches!(entry.runs(), Runs::Wrapper { .. }) {
            writeln!(
                out,
                "  {name}: starts {}; nothing to restore",
                brief(&entry.runs())
            )?;
            continue;
        }
        let earlier = entry::at(&saved_entries, &entry.path)
            .filter(|e| !matches!(e.runs(), Runs::Wrapper { .. }));
        let restore = match (&saved, earlier) {
            (Some((backup, _)), Some(earlier)) => entry.restore(earlier, &backup.text),
            _ => {
                writeln!(
                    out,
                    "  {name}: {} holds no earlier entry to restore; left as is",
                    backup_path.display()
                )?;
                ok = false;
                continue;
            }
        };
        let Some(restore) = restore else {
            writeln!(
                out,
                "  {name}: its fields changed since it was switched; restore it by hand from {}",
                backup_path.display()
            )?;
            ok = false;
            continue;
        };
        let runs = earlier.map(Entry::runs).unwrap_or(Runs::Other {
            command: String::new(),
        });
        writeln!(out, "  {name}: this wrapper -> {}", brief(&runs))?;
        show_edits(&loaded.text, &restore, out)?;
        edits.extend(restore);
    }
    Ok(commit(loaded, &edits, request.dry_run, None, out)? && ok)
}

/// Write the edited file (unless there is nothing to do or this is a dry
/// run) and say what happened.
fn commit(
    loaded: &Loaded,
    edits: &[entry::Edit],
    dry_run: bool,
    backup: Option<&Path>,
    out: &mut impl Write,
) -> std::io::Result<bool> {
    if edits.is_empty() {
        return Ok(true);
    }
    if dry_run {
        writeln!(out, "  dry run: nothing written")?;
        return Ok(true);
    }
    let text = doc::splice(&loaded.text, edits);
    match file::replace(loaded, &text, backup.is_some()) {
        Ok(()) => {
            match backup {
                Some(b) => writeln!(out, "  written; the previous file is in {}", b.display())?,
                None => writeln!(out, "  written")?,
            }
            Ok(true)
        }
        Err(e) => {
            writeln!(out, "  {e}")?;
            Ok(false)
        }
    }
}

fn show_edits(text: &str, edits: &[entry::Edit], out: &mut impl Write) -> std::io::Result<()> {
    for (span, new) in edits {
        // Values spread over lines are shown on one.
        let one_line = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        writeln!(
            out,
            "      {}  ->  {}",
            one_line(&text[span.clone()]),
            one_line(new)
        )?;
    }
    Ok(())
}

/// Whether `runs` is this very binary.
pub fn is_this(runs: &Runs, exe: &Path) -> bool {
    matches!(runs, Runs::Wrapper { program } if resolve(program).as_deref() == Some(exe))
}

/// A short name for what an entry starts, for one-line messages.
fn brief(runs: &Runs) -> String {
    match runs {
        Runs::Wrapper { program } => format!("iai-mcp-wrapper ({program})"),
        Runs::Node { .. } | Runs::Launcher { .. } => "the Node wrapper".to_owned(),
        Runs::Other { command } => {
            format!("`{command}`, not an iai-mcp wrapper this command knows")
        }
    }
}

/// What an entry starts, with versions where they can be found.
pub async fn describe(runs: &Runs, exe: &Path) -> String {
    match runs {
        Runs::Wrapper { program } if is_this(runs, exe) => {
            format!("this wrapper, {} ({program})", env!("CARGO_PKG_VERSION"))
        }
        Runs::Wrapper { program } => {
            let version = version_of(program)
                .await
                .unwrap_or_else(|| "version unknown".into());
            format!(
                "another iai-mcp-wrapper, {version} ({program}), not this one ({})",
                exe.display()
            )
        }
        Runs::Node { script } => match node_release(Path::new(script)) {
            Some(release) => format!("the Node wrapper of {release} ({script})"),
            None => format!("the Node wrapper ({script})"),
        },
        Runs::Launcher { program } => format!("the Node wrapper, through {program}"),
        Runs::Other { .. } => brief(runs),
    }
}

/// The absolute path a program name stands for (searched on `PATH` when
/// it has no slash), symbolic links followed.
fn resolve(program: &str) -> Option<PathBuf> {
    let path = Path::new(program);
    if program.contains('/') {
        return std::fs::canonicalize(path).ok();
    }
    let dirs = std::env::var_os("PATH")?;
    std::env::split_paths(&dirs).find_map(|dir| std::fs::canonicalize(dir.join(path)).ok())
}

/// The `--version` line of another build, asked with a short limit.
async fn version_of(program: &str) -> Option<String> {
    let command = CliCommand {
        program: program.into(),
        args: vec!["--version".into()],
        env: Vec::new(),
        limit: Duration::from_secs(2),
    };
    let output = process::run(&command).await.ok()?;
    let line = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let version = line.rsplit(' ').next()?.to_owned();
    (output.status.success() && !version.is_empty()).then_some(version)
}

/// Which iai-mcp release a Node wrapper script belongs to: the installed
/// `iai_pme` distribution beside the package (3.x wheels), or the
/// `package.json` of a source build (`mcp-wrapper/dist/index.js`).
fn node_release(script: &Path) -> Option<String> {
    let package_dir = script.parent()?.parent()?;
    if let Ok(listing) = std::fs::read_dir(package_dir.parent()?) {
        for item in listing.flatten() {
            let name = item.file_name().to_string_lossy().into_owned();
            if let Some(rest) = name.strip_prefix("iai_pme-")
                && let Some(version) = rest.strip_suffix(".dist-info")
            {
                return Some(format!("iai-pme {version}"));
            }
        }
    }
    let manifest = std::fs::read_to_string(package_dir.join("package.json")).ok()?;
    let manifest: serde_json::Value = serde_json::from_str(&manifest).ok()?;
    let version = manifest.get("version")?.as_str()?;
    Some(format!("iai-mcp {version}"))
}
