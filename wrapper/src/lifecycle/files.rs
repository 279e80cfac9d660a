//! Atomic, private file writes for the lifecycle files.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// Write `contents` to `path` so that readers see either the old file or
/// the whole new one: write a mode-0600 temporary file beside it, then
/// rename it over the target. Missing parent directories are created with
/// mode 0700.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("path has no parent directory"))?;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("path has no file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = dir.join(tmp_name);
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(contents)?;
        file.sync_data()?;
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn writes_private_files_and_replaces_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a/b/file.json");
        write_atomic(&path, b"one").expect("write");
        write_atomic(&path, b"two").expect("rewrite");
        assert_eq!(fs::read(&path).expect("read"), b"two");
        let mode = fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let leftovers = fs::read_dir(path.parent().expect("parent"))
            .expect("list")
            .count();
        assert_eq!(leftovers, 1, "no temporary file left behind");
    }
}
