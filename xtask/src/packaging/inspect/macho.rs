//! A macOS wheel's Mach-O binary, read from its load commands: the
//! architecture, the minimum macOS (`LC_BUILD_VERSION`, or the older
//! `LC_VERSION_MIN_MACOSX`), the libraries it loads (system ones only:
//! nothing under /usr/local, no Homebrew, no `@rpath`), and its code
//! signature (`LC_CODE_SIGNATURE`), which arm64 macOS requires of every
//! binary it runs: the ad-hoc signature's code directory must hash every
//! page of the file as it is now.
//!
//! Nothing on a Linux machine runs a Mach-O; these rows are what can be
//! known of it without a Mac.

use devkit::rows::Row;
use object::Endianness;
use object::macho::MachHeader64;
use object::macho::{
    self, CPU_TYPE_ARM64, CPU_TYPE_X86_64, LC_CODE_SIGNATURE, LC_VERSION_MIN_MACOSX, PLATFORM_MACOS,
};
use object::read::macho::{LoadCommandVariant, MachHeader};
use sha2::{Digest, Sha256};

use crate::packaging::platform::{Arch, MacosVersion, Platform};

/// Where system libraries live: the dynamic loader finds them in its
/// shared cache on every Mac.
const SYSTEM_LIBRARY_DIRS: [&str; 2] = ["/usr/lib/", "/System/Library/"];

/// What the load commands say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MachOFacts {
    /// The CPU type of the header.
    pub cputype: u32,
    /// The minimum macOS, if a load command states one.
    pub minimum_macos: Option<MacosVersion>,
    /// The libraries it loads, in order.
    pub libraries: Vec<String>,
    /// The code signature's place in the file (offset, size), if any.
    pub signature: Option<(u32, u32)>,
}

/// Reads the facts of a 64-bit Mach-O.
pub fn facts(data: &[u8]) -> Result<MachOFacts, String> {
    let header = MachHeader64::<Endianness>::parse(data, 0)
        .map_err(|e| format!("not a 64-bit Mach-O: {e}"))?;
    let endian = header.endian().map_err(|e| e.to_string())?;
    let mut facts = MachOFacts {
        cputype: header.cputype(endian).0,
        ..MachOFacts::default()
    };
    let mut commands = header
        .load_commands(endian, data, 0)
        .map_err(|e| format!("cannot read its load commands: {e}"))?;
    while let Some(command) = commands.next().map_err(|e| e.to_string())? {
        match command.variant().map_err(|e| e.to_string())? {
            LoadCommandVariant::BuildVersion(build, _)
                if build.platform.get(endian) == PLATFORM_MACOS =>
            {
                facts.minimum_macos = Some(MacosVersion::from_packed(build.minos.get(endian).0));
            }
            LoadCommandVariant::VersionMin(min) if command.cmd() == LC_VERSION_MIN_MACOSX => {
                facts.minimum_macos = Some(MacosVersion::from_packed(min.version.get(endian).0));
            }
            LoadCommandVariant::Dylib(dylib) => {
                let name = command
                    .string(endian, dylib.dylib.name)
                    .map_err(|e| e.to_string())?;
                facts
                    .libraries
                    .push(String::from_utf8_lossy(name).into_owned());
            }
            LoadCommandVariant::LinkeditData(linkedit) if command.cmd() == LC_CODE_SIGNATURE => {
                facts.signature =
                    Some((linkedit.dataoff.get(endian), linkedit.datasize.get(endian)));
            }
            _ => {}
        }
    }
    Ok(facts)
}

/// The rows of a macOS binary.
pub fn rows(platform: Platform, data: &[u8]) -> Vec<Row> {
    let facts = match facts(data) {
        Ok(facts) => facts,
        Err(why) => return vec![Row::judged("Mach-O architecture", false, why)],
    };
    let found = match macho::CpuType(facts.cputype) {
        CPU_TYPE_X86_64 => Some(Arch::X86_64),
        CPU_TYPE_ARM64 => Some(Arch::Aarch64),
        _ => None,
    };
    let mut rows = vec![Row::judged(
        "Mach-O architecture",
        found == Some(platform.arch()),
        format!(
            "cputype {:#x} ({}), expected {}",
            facts.cputype,
            found.map_or_else(|| "unknown".to_owned(), |a| a.to_string()),
            platform.arch()
        ),
    )];
    let wanted = platform.minimum_macos();
    rows.push(Row::judged(
        "minimum macOS",
        facts.minimum_macos.is_some() && facts.minimum_macos == wanted,
        format!(
            "{} (the wheel tag's: {})",
            facts
                .minimum_macos
                .map_or_else(|| "not stated".to_owned(), |v| v.to_string()),
            wanted.map_or_else(|| "none".to_owned(), |v| v.to_string())
        ),
    ));
    let foreign: Vec<&String> = facts
        .libraries
        .iter()
        .filter(|l| !SYSTEM_LIBRARY_DIRS.iter().any(|dir| l.starts_with(dir)))
        .collect();
    rows.push(Row::judged(
        "libraries loaded: system ones only",
        !facts.libraries.is_empty() && foreign.is_empty(),
        if foreign.is_empty() {
            facts.libraries.join(", ")
        } else {
            format!(
                "not system libraries: {}",
                foreign
                    .iter()
                    .map(|l| l.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
    ));
    rows.push(signature_row(platform, &facts, data));
    rows
}

/// The code signature: present and valid on arm64 (which runs nothing
/// unsigned), for information on x86_64.
fn signature_row(platform: Platform, facts: &MachOFacts, data: &[u8]) -> Row {
    let check = "code signature";
    let required = platform.arch() == Arch::Aarch64;
    let verdict = match facts.signature {
        None => Err("no LC_CODE_SIGNATURE".to_owned()),
        Some((offset, size)) => verify_signature(data, offset, size),
    };
    match (verdict, required) {
        (Ok(what), _) => Row::judged(check, true, what),
        (Err(why), true) => Row::judged(check, false, why),
        (Err(why), false) => Row::info(check, format!("{why} (not required on x86_64)")),
    }
}

/// Magic numbers and slots of a code signature (big-endian in the file).
const SUPERBLOB_MAGIC: u32 = 0xfade_0cc0;
const CODE_DIRECTORY_MAGIC: u32 = 0xfade_0c02;
const CODE_DIRECTORY_SLOT: u32 = 0;
/// The code directory's flag for an ad-hoc signature (no certificate).
const CS_ADHOC: u32 = 0x2;
/// The code directory's hash type for SHA-256.
const HASH_SHA256: u8 = 2;

/// Checks the signature at `offset`: a SuperBlob holding a CodeDirectory
/// whose SHA-256 page hashes match the file's pages up to its code limit.
/// Returns what it found.
pub fn verify_signature(data: &[u8], offset: u32, size: u32) -> Result<String, String> {
    let start = usize::try_from(offset).map_err(|e| e.to_string())?;
    let end = start
        .checked_add(usize::try_from(size).map_err(|e| e.to_string())?)
        .filter(|&end| end <= data.len())
        .ok_or("the signature lies outside the file")?;
    let blob = &data[start..end];
    if be32(blob, 0)? != SUPERBLOB_MAGIC {
        return Err("the signature is not a code-signing SuperBlob".to_owned());
    }
    let count = be32(blob, 8)?;
    let directory = (0..count)
        .map(|i| {
            let entry = 12 + 8 * usize::try_from(i).unwrap_or(usize::MAX);
            Ok((be32(blob, entry)?, be32(blob, entry + 4)?))
        })
        .collect::<Result<Vec<(u32, u32)>, String>>()?
        .into_iter()
        .find(|&(slot, _)| slot == CODE_DIRECTORY_SLOT)
        .ok_or("the SuperBlob holds no code directory")?;
    let cd = blob
        .get(usize::try_from(directory.1).map_err(|e| e.to_string())?..)
        .ok_or("the code directory lies outside the signature")?;
    if be32(cd, 0)? != CODE_DIRECTORY_MAGIC {
        return Err("the code directory's magic is wrong".to_owned());
    }
    let flags = be32(cd, 12)?;
    let hash_offset = to_usize(be32(cd, 16)?);
    let ident_offset = to_usize(be32(cd, 20)?);
    let code_slots = to_usize(be32(cd, 28)?);
    let code_limit = to_usize(be32(cd, 32)?);
    let hash_size = usize::from(*cd.get(36).ok_or("truncated code directory")?);
    let hash_type = *cd.get(37).ok_or("truncated code directory")?;
    let page_shift = *cd.get(39).ok_or("truncated code directory")?;
    if hash_type != HASH_SHA256 || hash_size != 32 {
        return Err(format!(
            "hash type {hash_type} of {hash_size} bytes, expected SHA-256"
        ));
    }
    if page_shift == 0 || page_shift > 20 || code_limit > data.len() {
        return Err(format!(
            "page size 2^{page_shift} or code limit {code_limit} out of range"
        ));
    }
    let page = 1usize << page_shift;
    if code_slots != code_limit.div_ceil(page) {
        return Err(format!(
            "{code_slots} page hashes for {code_limit} bytes of {page}-byte pages"
        ));
    }
    for slot in 0..code_slots {
        let from = slot * page;
        let to = (from + page).min(code_limit);
        let expected = cd
            .get(hash_offset + slot * hash_size..hash_offset + (slot + 1) * hash_size)
            .ok_or("the page hashes lie outside the code directory")?;
        if Sha256::digest(&data[from..to]).as_slice() != expected {
            return Err(format!(
                "page {slot} (bytes {from}..{to}) does not match its hash"
            ));
        }
    }
    let identifier = cd
        .get(ident_offset..)
        .and_then(|rest| rest.split(|&b| b == 0).next())
        .map(String::from_utf8_lossy)
        .unwrap_or_default();
    let kind = if flags & CS_ADHOC != 0 {
        "ad-hoc"
    } else {
        "not ad-hoc"
    };
    Ok(format!(
        "{kind}, identifier {identifier:?}, {code_slots} SHA-256 page hashes of {page} bytes over {code_limit} bytes: all match"
    ))
}

/// The big-endian `u32` at `at` in `bytes`.
fn be32(bytes: &[u8], at: usize) -> Result<u32, String> {
    bytes
        .get(at..at + 4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map(u32::from_be_bytes)
        .ok_or_else(|| format!("truncated signature at byte {at}"))
}

fn to_usize(n: u32) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use devkit::rows::Verdict;

    /// A minimal arm64 Mach-O: a header, `LC_BUILD_VERSION` (macOS 11.0),
    /// `LC_LOAD_DYLIB` of `library`, and `LC_CODE_SIGNATURE` over an
    /// ad-hoc signature of the bytes before it (or a broken one).
    fn tiny_macho(library: &str, break_hash: bool) -> Vec<u8> {
        let name = format!("{library}\0\0\0\0\0\0\0\0");
        let name = &name.as_bytes()[..(library.len() + 8) & !7];
        let dylib_size = 24 + name.len();
        let commands = [24usize, dylib_size, 16];
        let sizeofcmds: usize = commands.iter().sum();
        let mut data = Vec::new();
        // The header: magic, cputype, cpusubtype, filetype, ncmds,
        // sizeofcmds, flags, reserved.
        for word in [
            macho::MH_MAGIC_64,
            CPU_TYPE_ARM64.0,
            0,
            macho::MH_EXECUTE.0,
            3,
            u32::try_from(sizeofcmds).unwrap(),
            0,
            0,
        ] {
            data.extend_from_slice(&word.to_le_bytes());
        }
        for word in [
            macho::LC_BUILD_VERSION.0,
            24,
            PLATFORM_MACOS.0,
            0x000b_0000,
            0x000b_0000,
            0,
        ] {
            data.extend_from_slice(&word.to_le_bytes());
        }
        for word in [
            macho::LC_LOAD_DYLIB.0,
            u32::try_from(dylib_size).unwrap(),
            24,
            0,
            0,
            0,
        ] {
            data.extend_from_slice(&word.to_le_bytes());
        }
        data.extend_from_slice(name);
        let code_limit = data.len() + 16;
        // The signature: a SuperBlob with one CodeDirectory slot.
        let page_shift = 12u8;
        let ident = b"tiny\0";
        let cd_header = 44usize;
        let hash_offset = cd_header + ident.len();
        let cd_len = hash_offset + 32;
        let sig_len = 20 + cd_len;
        for word in [
            LC_CODE_SIGNATURE.0,
            16,
            u32::try_from(code_limit).unwrap(),
            u32::try_from(sig_len).unwrap(),
        ] {
            data.extend_from_slice(&word.to_le_bytes());
        }
        let mut hash = Sha256::digest(&data[..code_limit]).to_vec();
        if break_hash {
            hash[0] ^= 1;
        }
        let mut sig = Vec::new();
        for word in [SUPERBLOB_MAGIC, u32::try_from(sig_len).unwrap(), 1, 0, 20] {
            sig.extend_from_slice(&word.to_be_bytes());
        }
        for word in [
            CODE_DIRECTORY_MAGIC,
            u32::try_from(cd_len).unwrap(),
            0x20400,
            CS_ADHOC,
            u32::try_from(hash_offset).unwrap(),
            u32::try_from(cd_header).unwrap(),
            0,
            1,
            u32::try_from(code_limit).unwrap(),
        ] {
            sig.extend_from_slice(&word.to_be_bytes());
        }
        sig.extend_from_slice(&[32, HASH_SHA256, 0, page_shift]);
        sig.extend_from_slice(&0u32.to_be_bytes());
        sig.extend_from_slice(ident);
        sig.extend_from_slice(&hash);
        data.extend_from_slice(&sig);
        data
    }

    #[test]
    fn a_signed_system_only_arm64_binary_passes() {
        let data = tiny_macho("/usr/lib/libSystem.B.dylib", false);
        let facts = facts(&data).unwrap();
        assert_eq!(facts.libraries, ["/usr/lib/libSystem.B.dylib"]);
        assert_eq!(facts.minimum_macos.unwrap().to_string(), "11.0");
        let rows = rows(Platform::MacosArm64, &data);
        for row in &rows {
            assert_eq!(row.verdict, Verdict::Pass, "{row:?}");
        }
        assert!(rows[3].detail.contains("ad-hoc"), "{:?}", rows[3]);
    }

    #[test]
    fn a_foreign_library_a_wrong_arch_and_a_bad_hash_fail() {
        let homebrew = tiny_macho("/opt/homebrew/lib/libfoo.dylib", false);
        assert_eq!(
            rows(Platform::MacosArm64, &homebrew)[2].verdict,
            Verdict::Fail
        );
        let data = tiny_macho("/usr/lib/libSystem.B.dylib", false);
        let intel = rows(Platform::MacosX86_64, &data);
        assert_eq!(intel[0].verdict, Verdict::Fail);
        assert_eq!(intel[1].verdict, Verdict::Fail, "11.0 is not 10.12");
        let tampered = tiny_macho("/usr/lib/libSystem.B.dylib", true);
        let row = &rows(Platform::MacosArm64, &tampered)[3];
        assert_eq!(row.verdict, Verdict::Fail);
        assert!(row.detail.contains("page 0"), "{row:?}");
        assert!(facts(b"\x7fELF").is_err());
    }
}
