//! Reading a wheel's binary as its platform's loader would: one module per
//! executable format, each giving the rows of the wheel check.

pub mod elf;
pub mod macho;
pub mod pe;

use devkit::rows::Row;

use super::platform::{Os, Platform};

/// The rows of the binary `data`, built for `platform`.
pub fn binary_rows(platform: Platform, data: &[u8]) -> Vec<Row> {
    match platform.os() {
        Os::Linux => elf::rows(platform, data),
        Os::Macos => macho::rows(platform, data),
        Os::Windows => pe::rows(platform, data),
    }
}
