//! A Linux wheel's ELF binary: its architecture, and the newest glibc it
//! asks for, the highest `GLIBC_x.y[.z]` among the symbol versions it needs
//! (its `SHT_GNU_VERNEED` section, what `objdump -T` shows). A binary that
//! needs nothing newer than 2.17 runs on every system a `manylinux2014`
//! wheel promises to run on.
//!
//! Read with the `object` crate, so the check needs no binutils.

use std::fmt;

use devkit::rows::Row;
use object::Endianness;
use object::elf::{EM_AARCH64, EM_X86_64, FileHeader64};
use object::read::elf::FileHeader;

use crate::packaging::platform::{Arch, Platform};

/// The newest glibc a `manylinux2014` binary may ask for.
pub const GLIBC_CEILING: [u32; 2] = [2, 17];

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

/// What [`needed_glibc_in`] found in a binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GlibcNeeds {
    /// Not an ELF file (a Mach-O binary for macOS, say): glibc plays no part.
    NotElf,
    /// An ELF binary; the newest glibc version it asks for, if any.
    Elf(Option<GlibcVersion>),
}

/// The rows of a Linux binary: its architecture, and its newest glibc
/// against [`GLIBC_CEILING`].
pub fn rows(platform: Platform, data: &[u8]) -> Vec<Row> {
    let arch_check = "ELF architecture";
    let glibc_check = "newest glibc the binary needs";
    let machine =
        match FileHeader64::<Endianness>::parse(data).and_then(|h| Ok(h.e_machine(h.endian()?))) {
            Ok(machine) => machine,
            Err(e) => {
                return vec![Row::judged(
                    arch_check,
                    false,
                    format!("not a 64-bit ELF: {e}"),
                )];
            }
        };
    let found = match machine {
        EM_X86_64 => Some(Arch::X86_64),
        EM_AARCH64 => Some(Arch::Aarch64),
        _ => None,
    };
    let arch_row = Row::judged(
        arch_check,
        found == Some(platform.arch()),
        format!(
            "e_machine {machine} ({}), expected {}",
            found.map_or_else(|| "unknown".to_owned(), |a| a.to_string()),
            platform.arch()
        ),
    );
    let ceiling = GlibcVersion::new(&GLIBC_CEILING);
    let glibc_row = match needed_glibc_in(data) {
        Ok(GlibcNeeds::Elf(Some(newest))) => Row::judged(
            glibc_check,
            newest <= ceiling,
            format!("GLIBC_{newest} (at most {ceiling} allowed)"),
        ),
        Ok(GlibcNeeds::Elf(None)) => {
            Row::judged(glibc_check, true, "none (no glibc symbol versions)")
        }
        Ok(GlibcNeeds::NotElf) => Row::judged(glibc_check, false, "not an ELF file"),
        Err(why) => Row::judged(glibc_check, false, why),
    };
    vec![arch_row, glibc_row]
}

/// The glibc symbol versions a binary (its bytes) needs; an error says what is malformed.
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
    #[cfg(all(target_os = "linux", target_env = "gnu", target_arch = "x86_64"))]
    #[test]
    fn finds_the_glibc_this_test_binary_needs() {
        let exe = std::env::current_exe().unwrap();
        let data = std::fs::read(&exe).unwrap();
        let GlibcNeeds::Elf(Some(newest)) = needed_glibc_in(&data).unwrap() else {
            panic!("no glibc version found in {}", exe.display());
        };
        assert!(newest >= GlibcVersion::new(&[2, 2, 5]), "{newest}");
        let rows = rows(Platform::LinuxX86_64, &data);
        assert_eq!(
            rows[0].verdict,
            devkit::rows::Verdict::Pass,
            "{:?}",
            rows[0]
        );
        let arm = rows_for_arm(&data);
        assert_eq!(arm.verdict, devkit::rows::Verdict::Fail, "{arm:?}");
    }

    /// The architecture row of `data` judged as an arm64 Linux binary.
    #[cfg(all(target_os = "linux", target_env = "gnu", target_arch = "x86_64"))]
    fn rows_for_arm(data: &[u8]) -> Row {
        rows(Platform::LinuxAarch64, data).remove(0)
    }
}
