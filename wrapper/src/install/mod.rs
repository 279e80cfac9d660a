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
pub mod permissions;

use std::io::Write;
use std::path::{Path, PathBuf};

use describe::{brief, describe, is_this};
use doc::Node;
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
        let loaded = match file::load(&path) {
            Ok(Some(loaded)) => loaded,
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
        // What is said about the entries follows the file's line, which
        // ends in the parse error when there is one.
        let mut report = Vec::new();
        let backup_path = file::backup_of(&loaded.path);
        let backup = file::load(&backup_path);
        let host_file = HostFile {
            host,
            text: &loaded.text,
            backup_path: &backup_path,
            backup: match &backup {
                Ok(Some(backup)) => Backup::Text(&backup.text),
                Ok(None) => Backup::Absent,
                Err(e) => Backup::Unusable(e.to_string()),
            },
        };
        let outcome = match request.action {
            Action::Status => status(&host_file, &request.exe, &mut report).await?,
            Action::Install => rewrite(&host_file, Change::Install, &request.exe, &mut report)?,
            Action::Uninstall => rewrite(&host_file, Change::Uninstall, &request.exe, &mut report)?,
        };
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(refused) => {
                let e = FileError::Parse {
                    path: loaded.path.clone(),
                    message: refused.message,
                };
                writeln!(out, "\n  {e}")?;
                summary.done = false;
                continue;
            }
        };
        writeln!(out)?;
        out.write_all(&report)?;
        let written = match &outcome.rewrite {
            Some(rewrite) => commit(&loaded, &backup_path, rewrite, request.dry_run, out)?,
            None => true,
        };
        summary.done &= outcome.complete && written;
        summary.entries += outcome.entries;
        summary.elsewhere += outcome.elsewhere;
    }
    if request.action == Action::Status {
        summary.done &= summary.entries > 0 && summary.elsewhere == 0;
    }
    Ok(summary)
}

/// One host file as read, with its backup: all that deciding a change
/// needs (nothing here touches the disk).
#[derive(Debug, Clone)]
pub struct HostFile<'a> {
    /// Whose file it is (its format and where its entries are).
    pub host: Host,
    /// The file's text.
    pub text: &'a str,
    /// Where its backup is kept, for messages.
    pub backup_path: &'a Path,
    /// The backup, as read.
    pub backup: Backup<'a>,
}

/// A host file's backup, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backup<'a> {
    /// There is none.
    Absent,
    /// Its text.
    Text(&'a str),
    /// It is there but cannot be read; why (said when the file has
    /// entries, which then have no backup to go back to).
    Unusable(String),
}

/// The two changes [`rewrite`] makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Point every known iai-mcp entry at this binary.
    Install,
    /// Give switched entries back what they ran before.
    Uninstall,
}

/// The file's new text, and (install) its backup's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    /// The file as it is to be written.
    pub text: String,
    /// The backup as it is to be written first, if one is.
    pub backup: Option<String>,
}

/// What a change of one file comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The new texts; `None` when the file stays as it is.
    pub rewrite: Option<Rewrite>,
    /// Every entry that was to change could be changed.
    pub complete: bool,
    /// iai-mcp entries found.
    pub entries: usize,
    /// Of those, entries that (after the change) do not start this binary.
    pub elsewhere: usize,
}

/// The file does not parse in its host's format: nothing is changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The parser's words.
    pub message: String,
}

/// Decide what `change` makes of `file` when entries are to start `exe`,
/// saying what happens to each entry on `out`. Nothing is written here:
/// [`execute`] writes the outcome (whether an entry already starts `exe`
/// is found by following its program on disk and on `PATH`). A file that
/// does not parse is [`Refused`]; a backup that cannot be read or does not
/// parse is not used (and `out` says so when the file has entries).
pub fn rewrite(
    file: &HostFile<'_>,
    change: Change,
    exe: &Path,
    out: &mut impl Write,
) -> std::io::Result<Result<Outcome, Refused>> {
    let read = match Read::of(file) {
        Ok(read) => read,
        Err(refused) => return Ok(Err(refused)),
    };
    let work = read.work(file, exe, out)?;
    let outcome = match change {
        Change::Install => work.install(out)?,
        Change::Uninstall => work.uninstall(out)?,
    };
    Ok(Ok(outcome))
}

async fn status(
    file: &HostFile<'_>,
    exe: &Path,
    out: &mut impl Write,
) -> std::io::Result<Result<Outcome, Refused>> {
    let read = match Read::of(file) {
        Ok(read) => read,
        Err(refused) => return Ok(Err(refused)),
    };
    let work = read.work(file, exe, out)?;
    Ok(Ok(work.status(out).await?))
}

/// A host file and its backup, parsed.
struct Read<'a> {
    root: Node,
    saved: Saved<'a>,
}

impl<'a> Read<'a> {
    /// Parses `file` ([`Refused`] when it does not parse) and its backup.
    fn of(file: &HostFile<'a>) -> Result<Self, Refused> {
        let root = file
            .host
            .format()
            .parse(file.text)
            .map_err(|message| Refused { message })?;
        Ok(Read {
            root,
            saved: Saved::read(file),
        })
    }

    /// The work on the file, once `out` has been told whether the backup
    /// cannot be used.
    fn work<'w>(
        &'w self,
        file: &HostFile<'w>,
        exe: &'w Path,
        out: &mut impl Write,
    ) -> std::io::Result<FileWork<'w>> {
        let work = FileWork::new(file, &self.root, &self.saved, exe);
        work.say_if_backup_unusable(out)?;
        Ok(work)
    }
}

/// A backup's text, parsed, or why it cannot be used.
enum Saved<'a> {
    /// There is no backup.
    Absent,
    /// Its text and tree.
    Parsed(&'a str, Node),
    /// Why it cannot be used.
    Unusable(String),
}

impl<'a> Saved<'a> {
    fn read(file: &HostFile<'a>) -> Self {
        match &file.backup {
            Backup::Absent => Saved::Absent,
            Backup::Unusable(why) => Saved::Unusable(why.clone()),
            Backup::Text(text) => match file.host.format().parse(text) {
                Ok(root) => Saved::Parsed(text, root),
                Err(message) => Saved::Unusable(format!(
                    "{} does not parse ({message})",
                    file.backup_path.display()
                )),
            },
        }
    }
}

/// The backup of a file: its text and its iai-mcp entries.
struct SavedEntries<'a> {
    text: &'a str,
    entries: Vec<Entry<'a>>,
}

/// One host file being worked on.
struct FileWork<'a> {
    host: Host,
    text: &'a str,
    entries: Vec<Entry<'a>>,
    saved: Option<SavedEntries<'a>>,
    /// Why the backup there is cannot be used, if it cannot.
    unusable: Option<&'a str>,
    backup_path: &'a Path,
    exe: &'a Path,
}

impl<'a> FileWork<'a> {
    fn new(file: &HostFile<'a>, root: &'a Node, saved: &'a Saved<'a>, exe: &'a Path) -> Self {
        let maps = file.host.server_maps();
        FileWork {
            host: file.host,
            text: file.text,
            entries: entry::find(root, maps),
            saved: match saved {
                Saved::Parsed(text, root) => Some(SavedEntries {
                    text,
                    entries: entry::find(root, maps),
                }),
                Saved::Absent | Saved::Unusable(_) => None,
            },
            unusable: match saved {
                Saved::Unusable(why) => Some(why),
                Saved::Absent | Saved::Parsed(..) => None,
            },
            backup_path: file.backup_path,
            exe,
        }
    }

    /// Says why the backup cannot be used, when there is a backup, it
    /// cannot be, and the file has entries that may need it.
    fn say_if_backup_unusable(&self, out: &mut impl Write) -> std::io::Result<()> {
        match self.unusable {
            Some(why) if !self.entries.is_empty() => {
                writeln!(out, "  the backup cannot be used: {why}")
            }
            _ => Ok(()),
        }
    }

    /// The outcome of a change that left the file as it is.
    fn unchanged(&self, complete: bool, elsewhere: usize) -> Outcome {
        Outcome {
            rewrite: None,
            complete,
            entries: self.entries.len(),
            elsewhere,
        }
    }

    /// The edits that give `entry` back the version the backup holds from
    /// before it was switched: `Err` says why there are none.
    fn restore(&self, entry: &Entry<'_>) -> Result<Vec<Edit>, String> {
        let backup = self.backup_path.display();
        let Some(saved) = &self.saved else {
            return Err(format!("there is no backup ({backup})"));
        };
        let earlier = entry::at(&saved.entries, &entry.path)
            .filter(|e| !matches!(e.runs(), Runs::Wrapper { .. }))
            .ok_or_else(|| format!("{backup} holds no earlier entry"))?;
        entry.restore(earlier, saved.text).ok_or_else(|| {
            format!(
                "its fields changed shape since it was switched; restore it by hand from {backup}"
            )
        })
    }

    async fn status(&self, out: &mut impl Write) -> std::io::Result<Outcome> {
        if self.entries.is_empty() {
            writeln!(out, "  no iai-mcp entry")?;
        }
        let mut elsewhere = 0;
        for entry in &self.entries {
            let runs = entry.runs();
            let here = is_this(&runs, self.exe);
            elsewhere += usize::from(!here);
            let mut line = describe(&runs, self.exe).await;
            if !here && self.saved.is_some() && !matches!(runs, Runs::Other { .. }) {
                line.push_str(
                    "; switched before, then put back (by iai-mcp's installer?): run `iai-mcp-wrapper install` again",
                );
            }
            writeln!(out, "  {}: {line}", entry.dotted())?;
        }
        Ok(self.unchanged(true, elsewhere))
    }

    fn install(&self, out: &mut impl Write) -> std::io::Result<Outcome> {
        if self.entries.is_empty() {
            writeln!(out, "  no iai-mcp entry")?;
        }
        let exe = self.exe.to_string_lossy();
        let mut edits = Vec::new();
        let mut elsewhere = 0;
        for entry in &self.entries {
            let runs = entry.runs();
            let name = entry.dotted();
            match entry.switch(self.host.format(), &exe, is_this(&runs, self.exe)) {
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
                    show_edits(self.text, &e, out)?;
                    edits.extend(e);
                }
            }
        }
        if edits.is_empty() {
            return Ok(self.unchanged(true, elsewhere));
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
        Ok(Outcome {
            rewrite: Some(Rewrite {
                text: doc::splice(self.text, &edits),
                backup: Some(doc::splice(self.text, &kept)),
            }),
            ..self.unchanged(true, elsewhere)
        })
    }

    fn uninstall(&self, out: &mut impl Write) -> std::io::Result<Outcome> {
        if self.entries.is_empty() {
            writeln!(out, "  no iai-mcp entry")?;
        }
        let mut complete = true;
        let mut edits = Vec::new();
        for entry in &self.entries {
            let name = entry.dotted();
            let runs = entry.runs();
            if !matches!(runs, Runs::Wrapper { .. }) {
                writeln!(out, "  {name}: starts {}; nothing to restore", brief(&runs))?;
                continue;
            }
            match self.restore(entry) {
                Ok(restore) => {
                    writeln!(out, "  {name}: {} -> as it was", brief(&runs))?;
                    show_edits(self.text, &restore, out)?;
                    edits.extend(restore);
                }
                Err(why) => {
                    writeln!(out, "  {name}: {why}; left as is")?;
                    complete = false;
                }
            }
        }
        let rewrite = (!edits.is_empty()).then(|| Rewrite {
            text: doc::splice(self.text, &edits),
            backup: None,
        });
        Ok(Outcome {
            rewrite,
            ..self.unchanged(complete, self.entries.len())
        })
    }
}

/// Writes a file's new text (unless this is a dry run), and first its
/// backup when there is one; says what happened, and whether it was
/// written.
fn commit(
    loaded: &Loaded,
    backup_path: &Path,
    rewrite: &Rewrite,
    dry_run: bool,
    out: &mut impl Write,
) -> std::io::Result<bool> {
    if dry_run {
        writeln!(out, "  dry run: nothing written")?;
        return Ok(true);
    }
    match file::replace(loaded, &rewrite.text, rewrite.backup.as_deref()) {
        Ok(()) if rewrite.backup.is_some() => {
            writeln!(
                out,
                "  written; the file as it was is in {}",
                backup_path.display()
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
