//! A Windows wheel's PE binary: its machine, and the DLLs it imports,
//! which must all come with Windows (a MinGW runtime DLL such as
//! `libgcc_s_seh-1.dll` or `libwinpthread-1.dll` would be missing on a
//! user's machine, and the test-only `bcryptprimitives.dll` stand-in must
//! never be what a shipped binary expects beside it).

use devkit::rows::Row;
use object::LittleEndian;
use object::pe::IMAGE_FILE_MACHINE_AMD64;
use object::read::pe::PeFile64;

use crate::packaging::platform::{Arch, Platform};

/// DLLs every supported Windows has in its system directory (compared
/// without case). The API sets (`api-ms-win-*`) are system ones too.
const SYSTEM_DLLS: [&str; 16] = [
    "advapi32.dll",
    "bcrypt.dll",
    "bcryptprimitives.dll",
    "crypt32.dll",
    "iphlpapi.dll",
    "kernel32.dll",
    "kernelbase.dll",
    "msvcrt.dll",
    "ntdll.dll",
    "ole32.dll",
    "secur32.dll",
    "shell32.dll",
    "ucrtbase.dll",
    "user32.dll",
    "userenv.dll",
    "ws2_32.dll",
];

/// The machine and imported DLLs of a 64-bit PE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeFacts {
    /// The COFF header's machine.
    pub machine: u16,
    /// The DLLs of its import table, in order.
    pub dlls: Vec<String>,
}

/// Reads the facts of a 64-bit PE.
pub fn facts(data: &[u8]) -> Result<PeFacts, String> {
    let file = PeFile64::parse(data).map_err(|e| format!("not a 64-bit PE: {e}"))?;
    let machine = file.nt_headers().file_header.machine.get(LittleEndian).0;
    let mut dlls = Vec::new();
    if let Some(table) = file.import_table().map_err(|e| e.to_string())? {
        let mut descriptors = table.descriptors().map_err(|e| e.to_string())?;
        while let Some(descriptor) = descriptors.next().map_err(|e| e.to_string())? {
            let name = table
                .name(descriptor.name.get(LittleEndian))
                .map_err(|e| e.to_string())?;
            dlls.push(String::from_utf8_lossy(name).into_owned());
        }
    }
    Ok(PeFacts { machine, dlls })
}

/// Whether Windows itself provides `dll`.
pub fn is_system_dll(dll: &str) -> bool {
    let lower = dll.to_ascii_lowercase();
    lower.starts_with("api-ms-win-") || SYSTEM_DLLS.contains(&lower.as_str())
}

/// The rows of a Windows binary.
pub fn rows(platform: Platform, data: &[u8]) -> Vec<Row> {
    let facts = match facts(data) {
        Ok(facts) => facts,
        Err(why) => return vec![Row::judged("PE machine", false, why)],
    };
    let found = (facts.machine == IMAGE_FILE_MACHINE_AMD64.0).then_some(Arch::X86_64);
    let foreign: Vec<&str> = facts
        .dlls
        .iter()
        .map(String::as_str)
        .filter(|d| !is_system_dll(d))
        .collect();
    vec![
        Row::judged(
            "PE machine",
            found == Some(platform.arch()),
            format!("{:#06x}, expected {}", facts.machine, platform.arch()),
        ),
        Row::judged(
            "DLLs imported: system ones only",
            !facts.dlls.is_empty() && foreign.is_empty(),
            if foreign.is_empty() {
                facts.dlls.join(", ")
            } else {
                format!("not system DLLs: {}", foreign.join(", "))
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_dlls_are_known_and_mingw_runtimes_are_not() {
        assert!(is_system_dll("KERNEL32.dll"));
        assert!(is_system_dll("api-ms-win-core-synch-l1-2-0.dll"));
        assert!(is_system_dll("bcryptprimitives.dll"));
        assert!(!is_system_dll("libgcc_s_seh-1.dll"));
        assert!(!is_system_dll("libwinpthread-1.dll"));
    }

    #[test]
    fn what_is_not_a_pe_fails_its_row() {
        let rows = rows(Platform::WindowsX86_64, b"\x7fELF\x02\x01\x01");
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].verdict, devkit::rows::Verdict::Fail);
    }
}
