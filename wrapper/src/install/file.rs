//! Reading and rewriting a host's file without ever leaving it half
//! written, with other permissions, or over a change made meanwhile.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use thiserror::Error;

use super::permissions::Kept;

/// Why a host file was not read or not changed; nothing was written.
#[derive(Debug, Error)]
pub enum FileError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a regular file of UTF-8 text.
    #[error("{path} is not a regular file of UTF-8 text; not changed")]
    NotText {
        /// The file.
        path: PathBuf,
    },
    /// The file does not parse in its host's format.
    #[error("{path} does not parse ({message}); not changed — fix it, then run this again")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's words.
        message: String,
    },
    /// The file is read-only for this user.
    #[error("{path} is read-only; not changed")]
    ReadOnly {
        /// The file.
        path: PathBuf,
    },
    /// Someone else changed the file between reading and writing.
    #[error("{path} changed while it was being edited; not changed — run this again")]
    Changed {
        /// The file.
        path: PathBuf,
    },
    /// Writing the new version (or the backup) failed.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// A host file as read: its real location (symbolic links followed, so a
/// linked dotfile is edited where it lives) and its text.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Where the file's bytes are.
    pub path: PathBuf,
    /// Its content.
    pub text: String,
}

/// Read `path`; `None` when there is no such file.
pub fn load(path: &Path) -> Result<Option<Loaded>, FileError> {
    let real = match crate::real_path::canonicalize(path) {
        Ok(real) => real,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(FileError::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    // A directory, FIFO or device is never a host's file (and reading a
    // FIFO would block).
    let regular = fs::metadata(&real).is_ok_and(|m| m.is_file());
    if !regular {
        return Err(FileError::NotText { path: real });
    }
    let text = read_text(&real)?;
    Ok(Some(Loaded { path: real, text }))
}

fn read_text(path: &Path) -> Result<String, FileError> {
    let bytes = fs::read(path).map_err(|source| FileError::Read {
        path: path.to_owned(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|_| FileError::NotText {
        path: path.to_owned(),
    })
}

/// Where the copy of a file taken before it was switched is kept: beside
/// it, so it goes wherever the file goes.
pub fn backup_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".iai-mcp-wrapper.bak");
    PathBuf::from(name)
}

/// Replace the file's content with `text`. With `backup`, that text is
/// first written to [`backup_of`] the file. Refuses a read-only file and a
/// file whose content is no longer what was read. Each new content is
/// written to a temporary file in the same directory with the original's
/// permissions (see [`Kept`]), flushed, and renamed over its target (an
/// atomic replacement on Windows too).
pub fn replace(loaded: &Loaded, text: &str, backup: Option<&str>) -> Result<(), FileError> {
    let path = &loaded.path;
    let meta = fs::metadata(path).map_err(|source| FileError::Read {
        path: path.clone(),
        source,
    })?;
    let kept = Kept::of(&meta);
    if !kept.writable(path) {
        return Err(FileError::ReadOnly { path: path.clone() });
    }
    let unchanged = || {
        if read_text(path)? == loaded.text {
            Ok(())
        } else {
            Err(FileError::Changed { path: path.clone() })
        }
    };
    unchanged()?;
    if let Some(saved) = backup {
        write_beside(&backup_of(path), saved, kept, || Ok(()))?;
    }
    // Last look before the rename: a host that rewrote the file meanwhile
    // keeps its version.
    write_beside(path, text, kept, unchanged)
}

/// Write `text` to a temporary file in `path`'s directory with the
/// permissions `kept`, flush it, run `check`, and only then rename it over
/// `path` (the temporary file is removed on every other path).
fn write_beside(
    path: &Path,
    text: &str,
    kept: Kept,
    check: impl FnOnce() -> Result<(), FileError>,
) -> Result<(), FileError> {
    let write_err = |source| FileError::Write {
        path: path.to_owned(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".iai-mcp-wrapper.")
        .tempfile_in(dir)
        .map_err(write_err)?;
    kept.apply_to(tmp.as_file()).map_err(write_err)?;
    tmp.write_all(text.as_bytes()).map_err(write_err)?;
    tmp.as_file().sync_all().map_err(write_err)?;
    check()?;
    tmp.persist(path).map_err(|e| write_err(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_changed_after_reading_is_refused_and_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("host.json");
        fs::write(&path, "{}").expect("write");
        let loaded = load(&path).expect("read").expect("exists");
        fs::write(&path, "{\"host\": 1}").expect("the host writes meanwhile");
        let refused = replace(&loaded, "{\"ours\": 1}", Some("{}"));
        assert!(
            matches!(refused, Err(FileError::Changed { .. })),
            "{refused:?}"
        );
        assert_eq!(fs::read_to_string(&path).expect("read"), "{\"host\": 1}");
        let left: Vec<_> = fs::read_dir(dir.path()).expect("list").flatten().collect();
        assert_eq!(left.len(), 1, "no backup and no temporary file: {left:?}");
    }

    #[test]
    fn a_missing_file_is_none_and_a_binary_one_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(
            load(&dir.path().join("absent.json"))
                .expect("fine")
                .is_none()
        );
        let path = dir.path().join("bin.json");
        fs::write(&path, [0xff, 0xfe]).expect("write");
        assert!(matches!(load(&path), Err(FileError::NotText { .. })));
    }
}
