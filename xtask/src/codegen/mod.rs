//! Code generation: the wrapper's tool table made an iai-pme release's
//! (`cargo xtask surface`, docs/surface.md).
//!
//! [`surface`] compares a release's tool listing with the table and, with
//! `--write`, rewrites the table ([`rewrite`]) and the release constants.
//! What it needs at run time from the end-to-end kit (installing a release,
//! asking its own wrapper for its listing, the comparison) stays in the
//! kits, which this module uses and which never use it.

mod error;
mod rewrite;
mod surface;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use devkit::bins::{self, error_chain};
use kits::e2e::Release;

use surface::{SurfaceConfig, run_surface};

/// Show how an iai-pme release's tool surface differs from the wrapper's
/// table (wrapper/src/tools/surface.json), as that release's own Node
/// wrapper lists it; --write makes the table that release's.
#[derive(Debug, Args)]
pub struct SurfaceArgs {
    /// The iai-pme release to compare with (installed alone, without its
    /// dependencies, in target/surface/VERSION/venv).
    #[arg(long, value_name = "VERSION")]
    iai_pme: Release,
    /// Rewrite the table to the release: its tools, order, parameter
    /// schemas, required lists, annotations and result fields, keeping
    /// this project's descriptions; new ones are marked TODO(surface):
    /// for a person to write. Also sets SURFACE_RELEASE (and the end-to-end
    /// kit's pinned release) to VERSION.
    #[arg(long)]
    write: bool,
    /// The workspace whose table is compared and rewritten (default: this
    /// one).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// The Python interpreter for the environment (default: the first
    /// Python 3.11 or 3.12 on PATH).
    #[arg(long)]
    python: Option<PathBuf>,
    /// The Node.js binary that runs the release's own wrapper.
    #[arg(long, default_value = "node")]
    node: PathBuf,
}

/// `cargo xtask surface`: prints the differences (and what --write
/// changed); exit 0 whenever the comparison ran, whatever it found, 2 when
/// it could not run.
pub fn surface_task(args: SurfaceArgs) -> ExitCode {
    let cfg = SurfaceConfig {
        release: args.iai_pme,
        work_dir: bins::target_dir().join("surface"),
        root: args.root.unwrap_or_else(bins::workspace_root),
        python: args.python,
        node: args.node,
        write: args.write,
    };
    match run_surface(&cfg) {
        Ok(report) => {
            println!("{report}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!(
                "cargo xtask surface: the surface comparison could not run: {}",
                error_chain(&e)
            );
            ExitCode::from(2)
        }
    }
}
