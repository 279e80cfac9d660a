//! The permissions a host file's new version is given: those of the file
//! it replaces, so that replacing it changes its content only.
//!
//! On Unix that is the mode and the owner (an owner differs only when run
//! by root for another user, whose host must still read its file). On
//! Windows a new file in the same directory gets the directory's
//! inherited access rules, as the original did; what is read from the
//! original is only its read-only attribute, which is honoured.

use std::fs::{File, Metadata};
use std::io;
use std::path::Path;

/// What a host file's replacement keeps of it (Unix: mode and owner).
#[cfg(unix)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kept {
    mode: u32,
    uid: u32,
    gid: u32,
}

#[cfg(unix)]
impl Kept {
    /// What the file with this metadata has.
    pub fn of(meta: &Metadata) -> Self {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        Kept {
            mode: meta.permissions().mode() & 0o7777,
            uid: meta.uid(),
            gid: meta.gid(),
        }
    }

    /// Whether this user may change the file at `path`: its mode lets its
    /// owner write, and this user may write it.
    pub fn writable(&self, path: &Path) -> bool {
        self.mode & 0o200 != 0 && nix::unistd::access(path, nix::unistd::AccessFlags::W_OK).is_ok()
    }

    /// Give `file`, the new version, the same mode and owner.
    pub fn apply_to(&self, file: &File) -> io::Result<()> {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        file.set_permissions(std::fs::Permissions::from_mode(self.mode))?;
        let made = file.metadata()?;
        if (made.uid(), made.gid()) != (self.uid, self.gid) {
            std::os::unix::fs::fchown(file, Some(self.uid), Some(self.gid))?;
        }
        Ok(())
    }
}

/// What a host file's replacement keeps of it (Windows: nothing but the
/// access rules its directory passes on; the read-only attribute is
/// honoured by refusing to replace the file).
#[cfg(windows)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kept {
    read_only: bool,
}

#[cfg(windows)]
impl Kept {
    /// What the file with this metadata has.
    pub fn of(meta: &Metadata) -> Self {
        Kept {
            read_only: meta.permissions().readonly(),
        }
    }

    /// Whether the file may be changed: it is not marked read-only (a
    /// file this user may not write makes the replacement fail instead).
    pub fn writable(&self, _path: &Path) -> bool {
        !self.read_only
    }

    /// Nothing to give `file`: it already has its directory's rules.
    pub fn apply_to(&self, _file: &File) -> io::Result<()> {
        Ok(())
    }
}
