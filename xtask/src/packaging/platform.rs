//! The platforms a wheel is built for, and what each one's wheel must look
//! like.

use std::fmt;

use super::error::DistError;

/// A platform the wrapper's wheel is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Platform {
    /// x86_64 Linux, glibc 2.17 or newer (`manylinux2014`).
    LinuxX86_64,
    /// arm64 Linux, glibc 2.17 or newer (`manylinux2014`).
    LinuxAarch64,
    /// Apple silicon macOS 11 or newer.
    MacosArm64,
    /// Intel macOS 10.12 or newer.
    MacosX86_64,
    /// 64-bit Windows (built with the MinGW-w64 toolchain).
    WindowsX86_64,
}

/// The operating system a platform's binary is for, which says what its
/// binary format is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    /// ELF, linked against glibc.
    Linux,
    /// Mach-O.
    Macos,
    /// PE.
    Windows,
}

/// The processor a platform's binary is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// x86_64 (amd64).
    X86_64,
    /// arm64 (aarch64).
    Aarch64,
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "arm64",
        })
    }
}

/// A macOS version, as `major.minor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct MacosVersion {
    /// The major version (11 of 11.0).
    pub major: u16,
    /// The minor version (12 of 10.12).
    pub minor: u8,
}

impl MacosVersion {
    /// The version packed as Mach-O load commands hold it
    /// (`xxxx.yy.zz` in nibbles: major in the top 16 bits).
    pub fn from_packed(packed: u32) -> Self {
        MacosVersion {
            major: u16::try_from(packed >> 16).unwrap_or(u16::MAX),
            minor: u8::try_from((packed >> 8) & 0xff).unwrap_or(u8::MAX),
        }
    }
}

impl fmt::Display for MacosVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl Platform {
    /// Every platform, in the order `--target all` builds them.
    pub const ALL: [Platform; 5] = [
        Platform::LinuxX86_64,
        Platform::LinuxAarch64,
        Platform::MacosArm64,
        Platform::MacosX86_64,
        Platform::WindowsX86_64,
    ];

    /// The Rust target triple.
    pub fn triple(self) -> &'static str {
        match self {
            Platform::LinuxX86_64 => "x86_64-unknown-linux-gnu",
            Platform::LinuxAarch64 => "aarch64-unknown-linux-gnu",
            Platform::MacosArm64 => "aarch64-apple-darwin",
            Platform::MacosX86_64 => "x86_64-apple-darwin",
            Platform::WindowsX86_64 => "x86_64-pc-windows-gnu",
        }
    }

    /// The platform of a target triple.
    pub fn from_triple(triple: &str) -> Result<Self, DistError> {
        Platform::ALL
            .into_iter()
            .find(|p| p.triple() == triple)
            .ok_or_else(|| DistError::UnknownTarget {
                given: triple.to_owned(),
                known: Platform::ALL.map(Platform::triple).join(", "),
            })
    }

    /// The operating system.
    pub fn os(self) -> Os {
        match self {
            Platform::LinuxX86_64 | Platform::LinuxAarch64 => Os::Linux,
            Platform::MacosArm64 | Platform::MacosX86_64 => Os::Macos,
            Platform::WindowsX86_64 => Os::Windows,
        }
    }

    /// The processor.
    pub fn arch(self) -> Arch {
        match self {
            Platform::LinuxAarch64 | Platform::MacosArm64 => Arch::Aarch64,
            Platform::LinuxX86_64 | Platform::MacosX86_64 | Platform::WindowsX86_64 => Arch::X86_64,
        }
    }

    /// The platform tags the wheel's file name must carry, in order.
    pub fn wheel_tags(self) -> &'static [&'static str] {
        match self {
            Platform::LinuxX86_64 => &["manylinux2014_x86_64", "manylinux_2_17_x86_64"],
            Platform::LinuxAarch64 => &["manylinux2014_aarch64", "manylinux_2_17_aarch64"],
            Platform::MacosArm64 => &["macosx_11_0_arm64"],
            Platform::MacosX86_64 => &["macosx_10_12_x86_64"],
            Platform::WindowsX86_64 => &["win_amd64"],
        }
    }

    /// The oldest macOS the binary may require (the wheel tag's), for the
    /// macOS platforms.
    pub fn minimum_macos(self) -> Option<MacosVersion> {
        match self {
            Platform::MacosArm64 => Some(MacosVersion {
                major: 11,
                minor: 0,
            }),
            Platform::MacosX86_64 => Some(MacosVersion {
                major: 10,
                minor: 12,
            }),
            _ => None,
        }
    }

    /// The executable's file name in the wheel.
    pub fn executable(self) -> &'static str {
        match self.os() {
            Os::Windows => "iai-mcp-wrapper.exe",
            Os::Linux | Os::Macos => "iai-mcp-wrapper",
        }
    }

    /// Whether zig links the binary (through maturin's `--zig`): every
    /// Linux and macOS target. Windows is linked by MinGW-w64's gcc.
    pub fn linked_by_zig(self) -> bool {
        self.os() != Os::Windows
    }

    /// The Debian packages building this platform's wheel needs besides
    /// the Rust compiler (zig comes from the package registry).
    pub fn build_packages(self) -> &'static [&'static str] {
        match self {
            Platform::WindowsX86_64 => &["gcc-mingw-w64-x86-64"],
            _ => &[],
        }
    }

    /// The Debian packages running this platform's binary here needs, if
    /// it can run here at all: qemu-user with arm64 glibc, or Wine with
    /// MinGW-w64 for the test-only DLL.
    pub fn run_packages(self) -> Option<&'static [&'static str]> {
        match self {
            Platform::LinuxX86_64 => Some(&[]),
            Platform::LinuxAarch64 => Some(&["qemu-user-static", "gcc-aarch64-linux-gnu"]),
            Platform::WindowsX86_64 => Some(&["wine64", "gcc-mingw-w64-x86-64"]),
            Platform::MacosArm64 | Platform::MacosX86_64 => None,
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.triple())
    }
}

/// The platforms `--target` values name: triples, or `all`; none given is
/// `host` alone.
pub fn platforms_of(targets: &[String], host: Platform) -> Result<Vec<Platform>, DistError> {
    if targets.is_empty() {
        return Ok(vec![host]);
    }
    let mut chosen = Vec::new();
    for target in targets {
        let named = if target == "all" {
            Platform::ALL.to_vec()
        } else {
            vec![Platform::from_triple(target)?]
        };
        for platform in named {
            if !chosen.contains(&platform) {
                chosen.push(platform);
            }
        }
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_triple_names_its_platform() {
        for platform in Platform::ALL {
            assert_eq!(Platform::from_triple(platform.triple()).unwrap(), platform);
        }
        let err = Platform::from_triple("riscv64gc-unknown-linux-gnu").unwrap_err();
        assert!(err.to_string().contains("aarch64-apple-darwin"), "{err}");
    }

    #[test]
    fn all_expands_and_repeats_collapse() {
        let host = Platform::LinuxX86_64;
        assert_eq!(platforms_of(&[], host).unwrap(), [host]);
        let all = platforms_of(&["all".to_owned()], host).unwrap();
        assert_eq!(all, Platform::ALL);
        let two = [
            "aarch64-apple-darwin".to_owned(),
            "aarch64-apple-darwin".to_owned(),
            "x86_64-pc-windows-gnu".to_owned(),
        ];
        assert_eq!(
            platforms_of(&two, host).unwrap(),
            [Platform::MacosArm64, Platform::WindowsX86_64]
        );
    }

    #[test]
    fn packed_macos_versions_read_as_major_minor() {
        assert_eq!(
            MacosVersion::from_packed(0x000b_0000),
            MacosVersion {
                major: 11,
                minor: 0
            }
        );
        assert_eq!(MacosVersion::from_packed(0x000a_0c00).to_string(), "10.12");
        assert!(MacosVersion::from_packed(0x000a_0c00) < MacosVersion::from_packed(0x000b_0000));
    }
}
