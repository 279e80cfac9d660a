//! The newest glibc an ELF binary asks for: the highest `GLIBC_x.y[.z]`
//! among the symbol versions it needs (its `SHT_GNU_VERNEED` section, what
//! `objdump -T` shows). A binary that needs nothing newer than 2.17 runs on
//! every system a `manylinux2014` wheel promises to run on.
//!
//! Read with the `object` crate, so the check needs no binutils.

use std::fmt;
use std::path::Path;

use object::Endianness;
use object::elf::FileHeader64;
use object::read::elf::FileHeader;

use crate::error::HarnessError;

/// The prefix of glibc's symbol version names.
const PREFIX: &str = "GLIBC_";

/// A glibc version, as its numbers (`2.2.5` is `[2, 2, 5]`); ordered as
/// versions are.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct GlibcVersion {
    /// The dotted numbers, most significant first.
    pub parts: Vec<u32>,
}

impl GlibcVersion {
    /// A version from its numbers (`GlibcVersion::new(&[2, 17])`).
    pub fn new(parts: &[u32]) -> Self {
        GlibcVersion {
            parts: parts.to_vec(),
        }
    }

    /// The version a symbol version name stands for (`GLIBC_2.17`); `None`
    /// for other names (`GLIBC_PRIVATE`, `GCC_3.0`).
    pub fn from_symbol_version(name: &str) -> Option<Self> {
        let parts = name
            .strip_prefix(PREFIX)?
            .split('.')
            .map(|part| part.parse::<u32>().ok())
            .collect::<Option<Vec<u32>>>()?;
        Some(GlibcVersion { parts })
    }
}

impl fmt::Display for GlibcVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text: Vec<String> = self.parts.iter().map(u32::to_string).collect();
        write!(f, "{}", text.join("."))
    }
}

/// What [`needed_glibc`] found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GlibcNeeds {
    /// Not an ELF file (a Mach-O binary for macOS, say): glibc plays no part.
    NotElf,
    /// An ELF binary; the newest glibc version it asks for, if any.
    Elf(Option<GlibcVersion>),
}

/// The newest glibc version the binary at `path` needs.
pub fn needed_glibc(path: &Path) -> Result<GlibcNeeds, HarnessError> {
    let data = std::fs::read(path)
        .map_err(|e| HarnessError::io(format!("reading {}", path.display()), e))?;
    needed_glibc_in(&data)
        .map_err(|why| HarnessError::Scenario(format!("{}: {why}", path.display())))
}

/// [`needed_glibc`] of a binary's bytes; an error says what is malformed.
pub fn needed_glibc_in(data: &[u8]) -> Result<GlibcNeeds, String> {
    if !data.starts_with(b"\x7fELF") {
        return Ok(GlibcNeeds::NotElf);
    }
    let versions = needed_versions(data).map_err(|e| format!("cannot read its ELF: {e}"))?;
    let newest = versions
        .iter()
        .filter_map(|name| GlibcVersion::from_symbol_version(name))
        .max();
    Ok(GlibcNeeds::Elf(newest))
}

/// Every version name in a 64-bit ELF's version needs, of every library.
fn needed_versions(data: &[u8]) -> object::read::Result<Vec<String>> {
    let header = FileHeader64::<Endianness>::parse(data)?;
    let endian = header.endian()?;
    let sections = header.sections(endian, data)?;
    let mut names = Vec::new();
    let Some((mut needs, strings_index)) = sections.gnu_verneed(endian, data)? else {
        return Ok(names);
    };
    let strings = sections.strings(endian, data, strings_index)?;
    while let Some((_library, mut versions)) = needs.next()? {
        while let Some(version) = versions.next()? {
            let name = version.name(endian, strings)?;
            names.push(String::from_utf8_lossy(name).into_owned());
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_order_as_versions() {
        let v = |name| GlibcVersion::from_symbol_version(name).unwrap();
        assert_eq!(v("GLIBC_2.17"), GlibcVersion::new(&[2, 17]));
        assert!(v("GLIBC_2.2.5") < v("GLIBC_2.3"));
        assert!(v("GLIBC_2.9") < v("GLIBC_2.17"));
        assert!(v("GLIBC_2.17") < v("GLIBC_2.34"));
        assert_eq!(v("GLIBC_2.2.5").to_string(), "2.2.5");
        assert_eq!(GlibcVersion::from_symbol_version("GLIBC_PRIVATE"), None);
        assert_eq!(GlibcVersion::from_symbol_version("GCC_3.0"), None);
    }

    #[test]
    fn other_formats_need_no_glibc() {
        let mach_o = [0xcf, 0xfa, 0xed, 0xfe, 0, 0, 0, 0];
        assert_eq!(needed_glibc_in(&mach_o), Ok(GlibcNeeds::NotElf));
        assert!(needed_glibc_in(b"\x7fELF truncated").is_err());
    }

    /// The test binary itself is a glibc program wherever this runs on
    /// Linux with the GNU target.
    #[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
    #[test]
    fn finds_the_glibc_this_test_binary_needs() {
        let exe = std::env::current_exe().unwrap();
        let GlibcNeeds::Elf(Some(newest)) = needed_glibc(&exe).unwrap() else {
            panic!("no glibc version found in {}", exe.display());
        };
        assert!(newest >= GlibcVersion::new(&[2, 2, 5]), "{newest}");
    }
}
