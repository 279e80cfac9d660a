//! Where a sweep's report goes: `sweep.json` and the `sweep.svg` chart.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use devkit::bins;

use super::chart;
use crate::scenario::sweep::SweepReport;

/// Where [`SweepReport::write_files`] put the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportFiles {
    /// The JSON report (absolute path).
    pub json: PathBuf,
    /// The SVG chart (absolute path).
    pub svg: PathBuf,
}

/// The default report directory: `race-report` in the workspace's target
/// directory ([`bins::target_dir`]).
pub fn default_out_dir() -> PathBuf {
    bins::target_dir().join("race-report")
}

impl SweepReport {
    /// The SVG chart of the report: both panels and the legend.
    pub fn to_svg(&self) -> String {
        chart::chart(self)
    }

    /// Writes `sweep.json` and `sweep.svg` into `dir` (created if need be)
    /// and returns their absolute paths.
    pub fn write_files(&self, dir: &Path) -> io::Result<ReportFiles> {
        fs::create_dir_all(dir)?;
        let dir = dir.canonicalize()?;
        let files = ReportFiles {
            json: dir.join("sweep.json"),
            svg: dir.join("sweep.svg"),
        };
        write_replacing(&files.json, self.to_json().as_bytes())?;
        write_replacing(&files.svg, self.to_svg().as_bytes())?;
        Ok(files)
    }
}

/// Writes `bytes` to a temporary file beside `path`, then renames it over
/// `path`, so a reader never sees half a report.
fn write_replacing(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    fs::write(&tmp, bytes)?;
    fs::rename(&tmp, path)
}
