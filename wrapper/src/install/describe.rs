//! What an entry starts, in words: this binary and its version, another
//! build, or iai-mcp's Node wrapper and the release it came with.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::entry::Runs;
use crate::platform::Platform;
use crate::process::{self, CliCommand};
use crate::real_path::canonicalize;

/// Whether `runs` starts the very file `exe` is (symbolic links and `PATH`
/// followed on both sides).
pub fn is_this(runs: &Runs, exe: &Path) -> bool {
    let Runs::Wrapper { program } = runs else {
        return false;
    };
    resolve(program).is_some_and(|p| canonicalize(exe).is_ok_and(|e| e == p))
}

/// A short name for what an entry starts, for one-line messages.
pub fn brief(runs: &Runs) -> String {
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
/// it has no directory separator, with `.exe` added on Windows), symbolic
/// links followed.
pub fn resolve(program: &str) -> Option<PathBuf> {
    let path = Path::new(program);
    if program.chars().any(std::path::is_separator) {
        return canonicalize(path).ok();
    }
    let file_name = Platform::current().program_file_name(path.as_os_str());
    let dirs = std::env::var_os("PATH")?;
    std::env::split_paths(&dirs).find_map(|dir| canonicalize(&dir.join(&file_name)).ok())
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
