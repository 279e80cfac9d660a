//! A file's real location (symbolic links followed), in the form people
//! and MCP hosts write paths.
//!
//! On Windows `std::fs::canonicalize` answers with a verbatim path
//! (`\\?\C:\Users\u\.claude.json`): right for the file system, but not
//! what a host configuration or a message should show, and not what a
//! path under the user's profile starts with. A verbatim path to a drive
//! letter is given back without its `\\?\`; any other (a network share, a
//! device) is kept whole.

use std::io;
use std::path::{Path, PathBuf};

/// `path` with symbolic links followed, made absolute; on Windows without
/// the verbatim prefix when it names a drive.
pub fn canonicalize(path: &Path) -> io::Result<PathBuf> {
    let real = std::fs::canonicalize(path)?;
    if cfg!(windows) {
        Ok(without_verbatim_drive_prefix(real))
    } else {
        Ok(real)
    }
}

/// `\\?\C:\dir` becomes `C:\dir`; everything else is returned as it is.
pub fn without_verbatim_drive_prefix(path: PathBuf) -> PathBuf {
    let Some(text) = path.to_str() else {
        return path;
    };
    let Some(rest) = text.strip_prefix(r"\\?\") else {
        return path;
    };
    let bytes = rest.as_bytes();
    let is_drive =
        bytes.len() >= 3 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' && bytes[2] == b'\\';
    if is_drive { PathBuf::from(rest) } else { path }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verbatim_drive_path_loses_its_prefix_and_nothing_else_changes() {
        let plain = |p: &str| without_verbatim_drive_prefix(PathBuf::from(p));
        assert_eq!(
            plain(r"\\?\C:\Users\u\.claude.json"),
            PathBuf::from(r"C:\Users\u\.claude.json")
        );
        assert_eq!(
            plain(r"\\?\UNC\server\share\f"),
            PathBuf::from(r"\\?\UNC\server\share\f")
        );
        assert_eq!(plain(r"\\?\C:"), PathBuf::from(r"\\?\C:"));
        assert_eq!(plain(r"C:\Users\u"), PathBuf::from(r"C:\Users\u"));
        assert_eq!(
            plain("/home/u/.claude.json"),
            PathBuf::from("/home/u/.claude.json")
        );
    }

    #[test]
    fn canonicalize_follows_links_to_the_real_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("f");
        std::fs::write(&file, "").expect("write");
        assert_eq!(
            canonicalize(&dir.path().join(".").join("f")).expect("exists"),
            without_verbatim_drive_prefix(std::fs::canonicalize(&file).expect("exists"))
        );
        assert!(canonicalize(&dir.path().join("absent")).is_err());
    }
}
