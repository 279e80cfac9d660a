//! `install`, `uninstall` and `status`: point the iai-mcp entries that
//! iai-mcp's installer (`iai-mcp capture-hooks install`) writes into MCP
//! hosts' files at this binary, put them back, and say what each runs.
//!
//! Only the text of an entry's `command` and `args` values changes; every
//! other byte of the file is kept (other fields, `env`, comments, layout).
//! The file as it was before any entry was switched is kept beside it
//! ([`file::backup_of`]); `uninstall` copies each entry's values back from
//! there, so a round trip gives the same bytes. Files of hosts that are not
//! there, and entries that start something this command does not know, are
//! left alone.

pub mod describe;
pub mod doc;
pub mod entry;
pub mod file;
pub mod hosts;

use std::io::Write;
use std::path::{Path, PathBuf};

use describe::{brief, describe, is_this};
use entry::{Edit, Entry, Runs};
use file::{FileError, Loaded};
use hosts::{Host, Places};

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

/// What a run found and did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Everything asked for was done, and no file was refused.
    pub done: bool,
    /// iai-mcp entries found.
    pub entries: usize,
    /// Of those, entries that (after the run) do not start this binary.
    pub elsewhere: usize,
}

/// Carry out `request` on the hosts' files under `places`, reporting to
/// `out`.
pub async fn execute(
    request: &Request,
    places: &Places,
    out: &mut impl Write,
) -> std::io::Result<Summary> {
    let hosts = if request.hosts.is_empty() {
        Host::ALL.to_vec()
    } else {
        request.hosts.clone()
    };
    let mut summary = Summary {
        done: true,
        ..Summary::default()
    };
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
                summary.done = false;
                continue;
            }
        };
        writeln!(out)?;
        let entries = entry::find(&root, host.server_maps());
        if entries.is_empty() {
            writeln!(out, "  no iai-mcp entry")?;
            continue;
        }
        let backup = file::backup_of(&loaded.path);
        let saved = match read(host, &backup) {
            Ok(saved) => saved,
            Err(e) => {
                writeln!(out, "  the backup cannot be used: {e}")?;
                None
            }
        };
        let work = FileWork {
            host,
            loaded: &loaded,
            entries: &entries,
            saved: saved.as_ref().map(|(l, root)| Saved {
                text: &l.text,
                entries: entry::find(root, host.server_maps()),
            }),
            backup,
            request,
        };
        let (done, elsewhere) = match request.action {
            Action::Status => work.status(out).await?,
            Action::Install => work.install(out)?,
            Action::Uninstall => work.uninstall(out)?,
        };
        summary.done &= done;
        summary.entries += entries.len();
        summary.elsewhere += elsewhere;
    }
    if request.action == Action::Status {
        summary.done &= summary.entries > 0 && summary.elsewhere == 0;
    }
    Ok(summary)
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

/// The backup of a file: its text and its iai-mcp entries.
struct Saved<'a> {
    text: &'a str,
    entries: Vec<Entry<'a>>,
}

/// One host file being worked on.
struct FileWork<'a> {
    host: Host,
    loaded: &'a Loaded,
    entries: &'a [Entry<'a>],
    saved: Option<Saved<'a>>,
    backup: PathBuf,
    request: &'a Request,
}

impl FileWork<'_> {
    /// The edits that give `entry` back the version the backup holds from
    /// before it was switched: `Err` says why there are none.
    fn restore(&self, entry: &Entry<'_>) -> Result<Vec<Edit>, String> {
        let Some(saved) = &self.saved else {
            return Err(format!("there is no backup ({})", self.backup.display()));
        };
        let earlier = entry::at(&saved.entries, &entry.path)
            .filter(|e| !matches!(e.runs(), Runs::Wrapper { .. }))
            .ok_or_else(|| format!("{} holds no earlier entry", self.backup.display()))?;
        entry.restore(earlier, saved.text).ok_or_else(|| {
            format!(
                "its fields changed shape since it was switched; restore it by hand from {}",
                self.backup.display()
            )
        })
    }

    async fn status(&self, out: &mut impl Write) -> std::io::Result<(bool, usize)> {
        let exe = &self.request.exe;
        let mut elsewhere = 0;
        for entry in self.entries {
            let runs = entry.runs();
            let here = is_this(&runs, exe);
            elsewhere += usize::from(!here);
            let mut line = describe(&runs, exe).await;
            if !here && self.saved.is_some() && !matches!(runs, Runs::Other { .. }) {
                line.push_str(
                    "; switched before, then put back (by iai-mcp's installer?): run `iai-mcp-wrapper install` again",
                );
            }
            writeln!(out, "  {}: {line}", entry.dotted())?;
        }
        Ok((true, elsewhere))
    }

    fn install(&self, out: &mut impl Write) -> std::io::Result<(bool, usize)> {
        let exe = self.request.exe.to_string_lossy();
        let mut edits = Vec::new();
        let mut elsewhere = 0;
        for entry in self.entries {
            let runs = entry.runs();
            let name = entry.dotted();
            match entry.switch(self.host.format(), &exe, is_this(&runs, &self.request.exe)) {
                None => {
                    elsewhere += 1;
                    writeln!(out, "  {name}: starts {}; left alone", brief(&runs))?;
                }
                Some(e) if e.is_empty() => writeln!(out, "  {name}: already this wrapper")?,
                Some(e) => {
                    writeln!(out, "  {name}: {} -> this wrapper", brief(&runs))?;
                    if matches!(runs, Runs::Launcher { .. }) {
                        writeln!(
                            out,
                            "      note: iai-mcp-server set IAI_MCP_PYTHON itself; if `iai` is not on the host's PATH, add IAI_MCP_CLI to the entry's env"
                        )?;
                    }
                    show_edits(&self.loaded.text, &e, out)?;
                    edits.extend(e);
                }
            }
        }
        // The backup keeps every entry as it was before its first switch:
        // entries switched by an earlier install are taken from the old
        // backup, not from this file.
        let kept: Vec<Edit> = self
            .entries
            .iter()
            .filter(|e| matches!(e.runs(), Runs::Wrapper { .. }))
            .filter_map(|e| self.restore(e).ok())
            .flatten()
            .collect();
        let backup_text = doc::splice(&self.loaded.text, &kept);
        let done = self.commit(&edits, Some(&backup_text), out)?;
        Ok((done, elsewhere))
    }

    fn uninstall(&self, out: &mut impl Write) -> std::io::Result<(bool, usize)> {
        let mut done = true;
        let mut edits = Vec::new();
        for entry in self.entries {
            let name = entry.dotted();
            let runs = entry.runs();
            if !matches!(runs, Runs::Wrapper { .. }) {
                writeln!(out, "  {name}: starts {}; nothing to restore", brief(&runs))?;
                continue;
            }
            match self.restore(entry) {
                Ok(restore) => {
                    writeln!(out, "  {name}: {} -> as it was", brief(&runs))?;
                    show_edits(&self.loaded.text, &restore, out)?;
                    edits.extend(restore);
                }
                Err(why) => {
                    writeln!(out, "  {name}: {why}; left as is")?;
                    done = false;
                }
            }
        }
        let done = self.commit(&edits, None, out)? && done;
        Ok((done, self.entries.len()))
    }

    /// Writes the edited file (unless there is nothing to do or this is a
    /// dry run), and first the backup when one is given; says what
    /// happened.
    fn commit(
        &self,
        edits: &[Edit],
        backup: Option<&str>,
        out: &mut impl Write,
    ) -> std::io::Result<bool> {
        if edits.is_empty() {
            return Ok(true);
        }
        if self.request.dry_run {
            writeln!(out, "  dry run: nothing written")?;
            return Ok(true);
        }
        let text = doc::splice(&self.loaded.text, edits);
        match file::replace(self.loaded, &text, backup) {
            Ok(()) if backup.is_some() => {
                writeln!(
                    out,
                    "  written; the file as it was is in {}",
                    self.backup.display()
                )?;
                Ok(true)
            }
            Ok(()) => {
                writeln!(out, "  written")?;
                Ok(true)
            }
            Err(e) => {
                writeln!(out, "  {e}")?;
                Ok(false)
            }
        }
    }
}

fn show_edits(text: &str, edits: &[Edit], out: &mut impl Write) -> std::io::Result<()> {
    // Values spread over lines are shown on one.
    let one_line = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    for (span, new) in edits {
        writeln!(
            out,
            "      {}  ->  {}",
            one_line(&text[span.clone()]),
            one_line(new)
        )?;
    }
    Ok(())
}
