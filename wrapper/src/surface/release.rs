//! Loading an installed release's surface, through a cache on disk.
//!
//! Reading a bundle means reading half a megabyte, hashing it and parsing
//! its declarations: a few milliseconds, once per installation. What was
//! read is kept in this wrapper's own directory
//! ([`files::own_dir`](crate::files::own_dir)), one file per bundle path,
//! with the bundle's identity: its path, size, modification time and
//! SHA-256. A start whose bundle has the same path, size and modification
//! time takes the cache as it is (one `stat`); a bundle whose size or time
//! changed is hashed, and parsed again only if its content changed too. A
//! cache that cannot be read or written costs a parse, never the surface.
//!
//! A bundle the release's own `RECORD` lists with another hash is not the
//! file the package installed (an upgrade half done, a file edited by
//! hand): it is refused, and the built-in table is served until the files
//! agree.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::bundle::{self, BundleError, MAX_BUNDLE_BYTES, ReleaseSurface};
use super::locate::{self, Installed};
use crate::files;

/// Largest cache file read (a surface is about 40 KB).
const MAX_CACHE_BYTES: u64 = 4 * 1024 * 1024;

/// The version of the cache file's layout: a cache of another layout is a
/// miss.
const CACHE_LAYOUT: u32 = 1;

/// A release's surface, read from its files.
#[derive(Debug, Clone, PartialEq)]
pub struct Release {
    /// The release's version: its package metadata's, else the one its
    /// bundle gives its server.
    pub version: String,
    /// The bundle it was read from.
    pub bundle: PathBuf,
    /// What it serves.
    pub surface: ReleaseSurface,
    /// Whether it came from the cache without reading the bundle.
    pub cached: bool,
}

/// Why a release's surface could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The bundle cannot be read (missing, a symbolic link loop, no
    /// permission, ...).
    #[error("cannot read {path}: {error}")]
    Io {
        /// The bundle.
        path: PathBuf,
        /// What happened.
        error: std::io::Error,
    },
    /// The bundle is not a regular file (a directory, a FIFO, a device).
    #[error("{0} is not a regular file")]
    NotAFile(PathBuf),
    /// The bundle is larger than any release's.
    #[error("{path} is {size} bytes, more than the {MAX_BUNDLE_BYTES} a bundle may be")]
    TooLarge {
        /// The bundle.
        path: PathBuf,
        /// Its size.
        size: u64,
    },
    /// The bundle is not UTF-8 text.
    #[error("{0} is not UTF-8 text")]
    NotText(PathBuf),
    /// The bundle differs from the one its package's `RECORD` lists.
    #[error("{0} is not the file its package installed (its hash differs from RECORD's)")]
    NotAsRecorded(PathBuf),
    /// The bundle's content is not a surface this reader knows.
    #[error("{path}: {error}")]
    Unreadable {
        /// The bundle.
        path: PathBuf,
        /// What the reader found.
        error: BundleError,
    },
}

/// What identifies a bundle's content without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    size: u64,
    modified_secs: u64,
    modified_nanos: u32,
}

/// One cache file.
#[derive(Debug, Serialize, Deserialize)]
struct CacheEntry {
    layout: u32,
    bundle: PathBuf,
    stamp: Stamp,
    sha256: String,
    version: String,
    surface: ReleaseSurface,
}

/// Loads the surface of `installed`, through the cache in `cache_dir`
/// (none: no cache).
pub fn load(installed: &Installed, cache_dir: Option<&Path>) -> Result<Release, LoadError> {
    let path = &installed.bundle;
    let io = |error| LoadError::Io {
        path: path.clone(),
        error,
    };
    let metadata = std::fs::metadata(path).map_err(io)?;
    if !metadata.is_file() {
        return Err(LoadError::NotAFile(path.clone()));
    }
    if metadata.len() > MAX_BUNDLE_BYTES {
        return Err(LoadError::TooLarge {
            path: path.clone(),
            size: metadata.len(),
        });
    }
    let stamp = stamp(&metadata);
    let cache_file = cache_dir.map(|dir| cache_path(dir, path));
    let cached = cache_file.as_deref().and_then(read_cache);
    if let Some(entry) = &cached
        && entry.bundle == *path
        && entry.stamp == stamp
    {
        return Ok(Release {
            version: entry.version.clone(),
            bundle: path.clone(),
            surface: entry.surface.clone(),
            cached: true,
        });
    }

    let bytes = read_bounded(path).map_err(io)?;
    let sha256 = record_hash(&Sha256::digest(&bytes));
    if let Some(recorded) = recorded_hash(installed)
        && recorded != sha256
    {
        return Err(LoadError::NotAsRecorded(path.clone()));
    }
    let surface = match cached {
        Some(entry) if entry.sha256 == sha256 => entry.surface,
        _ => {
            let text = std::str::from_utf8(&bytes).map_err(|_| LoadError::NotText(path.clone()))?;
            bundle::read(text).map_err(|error| LoadError::Unreadable {
                path: path.clone(),
                error,
            })?
        }
    };
    let version = installed
        .dist_info
        .as_deref()
        .and_then(locate::version)
        .or_else(|| surface.server_version.clone())
        .unwrap_or_else(|| "unknown".to_owned());
    if let Some(file) = &cache_file {
        let entry = CacheEntry {
            layout: CACHE_LAYOUT,
            bundle: path.clone(),
            stamp,
            sha256,
            version: version.clone(),
            surface: surface.clone(),
        };
        write_cache(file, &entry);
    }
    Ok(Release {
        version,
        bundle: path.clone(),
        surface,
        cached: false,
    })
}

fn stamp(metadata: &std::fs::Metadata) -> Stamp {
    let modified = metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .unwrap_or_default();
    Stamp {
        size: metadata.len(),
        modified_secs: modified.as_secs(),
        modified_nanos: modified.subsec_nanos(),
    }
}

/// The bundle's bytes, at most [`MAX_BUNDLE_BYTES`] (a file that grew past
/// it since its `stat` is cut there, and then fails to parse).
fn read_bounded(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_BUNDLE_BYTES)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A digest as `RECORD` writes it: URL-safe base64 without padding.
fn record_hash(digest: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
}

/// The bundle's hash as its package's `RECORD` lists it, if it does.
fn recorded_hash(installed: &Installed) -> Option<String> {
    let record = locate::read_small(&installed.dist_info.as_ref()?.join("RECORD"))?;
    locate::recorded_bundle(&record)?.sha256
}

/// The cache file of the bundle at `bundle`: named by a hash of its path,
/// so that the environments sharing a state directory keep one each.
fn cache_path(cache_dir: &Path, bundle: &Path) -> PathBuf {
    let digest = Sha256::digest(bundle.as_os_str().as_encoded_bytes());
    let name: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    cache_dir.join(format!("surface-{name}.json"))
}

fn read_cache(file: &Path) -> Option<CacheEntry> {
    let text = locate::read_small(file).filter(|t| t.len() as u64 <= MAX_CACHE_BYTES)?;
    let entry: CacheEntry = serde_json::from_str(&text).ok()?;
    (entry.layout == CACHE_LAYOUT).then_some(entry)
}

/// Writes the cache, best effort: a state directory that cannot be
/// written costs the next start a parse, nothing more.
fn write_cache(file: &Path, entry: &CacheEntry) {
    let written = serde_json::to_vec(entry)
        .map_err(std::io::Error::other)
        .and_then(|bytes| files::write_atomic(file, &bytes));
    if let Err(e) = written {
        tracing::debug!(
            path = %file.display(),
            error = %e,
            "the surface cache could not be written"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYNTHETIC: &str = include_str!("../../tests/fixtures/bundle.js");

    /// A release of the synthetic bundle under `site_packages`, its RECORD
    /// listing the bundle's true hash when `record` is set.
    fn install(site_packages: &Path, version: &str, record: bool) -> Installed {
        let wrapper = site_packages.join("iai_mcp/_wrapper");
        std::fs::create_dir_all(&wrapper).expect("mkdir");
        let bundle = wrapper.join("index.js");
        std::fs::write(&bundle, SYNTHETIC).expect("write");
        let dist_info = site_packages.join(format!("iai_pme-{version}.dist-info"));
        std::fs::create_dir_all(&dist_info).expect("mkdir");
        std::fs::write(dist_info.join("METADATA"), format!("Version: {version}\n")).expect("write");
        if record {
            let hash = record_hash(&Sha256::digest(SYNTHETIC.as_bytes()));
            std::fs::write(
                dist_info.join("RECORD"),
                format!(
                    "iai_mcp/_wrapper/index.js,sha256={hash},{}\n",
                    SYNTHETIC.len()
                ),
            )
            .expect("write");
        }
        Installed {
            bundle,
            dist_info: Some(dist_info),
        }
    }

    #[test]
    fn the_first_load_reads_the_bundle_and_the_next_one_the_cache() {
        let dir = tempfile::tempdir().expect("tempdir");
        let installed = install(&dir.path().join("sp"), "3.2.3", true);
        let cache = dir.path().join("cache");
        let first = load(&installed, Some(&cache)).expect("loaded");
        assert!(!first.cached);
        assert_eq!(
            first.version, "3.2.3",
            "the package's version, not the bundle's"
        );
        let second = load(&installed, Some(&cache)).expect("loaded");
        assert!(second.cached);
        assert_eq!(second.surface, first.surface);
        assert_eq!(std::fs::read_dir(&cache).expect("list").count(), 1);

        // Without a cache, the same surface.
        let uncached = load(&installed, None).expect("loaded");
        assert_eq!(uncached.surface, first.surface);
    }

    #[test]
    fn a_changed_bundle_is_read_again_and_a_broken_cache_is_a_miss() {
        let dir = tempfile::tempdir().expect("tempdir");
        let installed = install(&dir.path().join("sp"), "3.2.3", false);
        let cache = dir.path().join("cache");
        load(&installed, Some(&cache)).expect("loaded");
        let edited = SYNTHETIC.replace("Reads notes.", "Reads the notes, all of them.");
        std::fs::write(&installed.bundle, edited).expect("write");
        let again = load(&installed, Some(&cache)).expect("loaded");
        assert!(!again.cached);
        assert_eq!(
            again.surface.tools[0]["description"],
            "Reads the notes, all of them."
        );

        for entry in std::fs::read_dir(&cache).expect("list") {
            std::fs::write(entry.expect("entry").path(), "{ not json").expect("write");
        }
        let after_garbage = load(&installed, Some(&cache)).expect("loaded");
        assert_eq!(after_garbage.surface, again.surface);
    }

    #[test]
    fn a_bundle_that_is_not_what_its_record_says_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let installed = install(&dir.path().join("sp"), "3.3.0", true);
        std::fs::write(&installed.bundle, SYNTHETIC.replace("Reads", "Rewrites")).expect("write");
        assert!(matches!(
            load(&installed, None),
            Err(LoadError::NotAsRecorded(_))
        ));
    }

    #[test]
    fn what_is_not_a_bundle_is_refused_without_hanging() {
        let dir = tempfile::tempdir().expect("tempdir");
        let installed = install(&dir.path().join("sp"), "3.3.0", false);
        let at = |bundle: PathBuf| Installed {
            bundle,
            dist_info: installed.dist_info.clone(),
        };
        // A directory where the file should be.
        let directory = dir.path().join("index.js");
        std::fs::create_dir(&directory).expect("mkdir");
        assert!(matches!(
            load(&at(directory), None),
            Err(LoadError::NotAFile(_))
        ));
        // Missing.
        assert!(matches!(
            load(&at(dir.path().join("gone.js")), None),
            Err(LoadError::Io { .. })
        ));
        // A truncated bundle, and bytes that are not text.
        std::fs::write(&installed.bundle, &SYNTHETIC[..SYNTHETIC.len() / 3]).expect("write");
        assert!(matches!(
            load(&installed, None),
            Err(LoadError::Unreadable { .. })
        ));
        std::fs::write(&installed.bundle, [0xff, 0xfe, 0x00]).expect("write");
        assert!(matches!(load(&installed, None), Err(LoadError::NotText(_))));
        // Too large to be a bundle: refused from its size alone.
        let file = std::fs::File::create(&installed.bundle).expect("create");
        file.set_len(MAX_BUNDLE_BYTES + 1).expect("grow");
        assert!(matches!(
            load(&installed, None),
            Err(LoadError::TooLarge { .. })
        ));
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_loop_and_a_fifo_are_refused_without_hanging() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = dir.path().join("a.js");
        let b = dir.path().join("b.js");
        std::os::unix::fs::symlink(&b, &a).expect("symlink");
        std::os::unix::fs::symlink(&a, &b).expect("symlink");
        let looped = Installed {
            bundle: a,
            dist_info: None,
        };
        assert!(matches!(load(&looped, None), Err(LoadError::Io { .. })));
        let fifo = dir.path().join("fifo.js");
        nix::unistd::mkfifo(
            &fifo,
            nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
        )
        .expect("mkfifo");
        let fifo = Installed {
            bundle: fifo,
            dist_info: None,
        };
        assert!(matches!(load(&fifo, None), Err(LoadError::NotAFile(_))));
    }
}
