//! The fault settings the stdin commands change and the connections obey.
//!
//! Lasting settings (`HANG`, `DELAY`, `SLICE`) are plain atomics read on every
//! reply. One-shot faults (`CUT`, `OVERSIZE`, `DUPLICATE`) apply to the next
//! success reply on whichever connection writes one first; an `armed` flag
//! keeps the common case (nothing armed) to a single atomic load.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use crate::sync::lock;

/// Faults that apply to one reply only, taken by the reply they alter.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OneShots {
    /// Write only the first half of the reply, then close the connection.
    pub(crate) cut: bool,
    /// Write the reply twice.
    pub(crate) duplicate: bool,
    /// Pad the reply to more than this many bytes.
    pub(crate) oversize: Option<usize>,
}

impl OneShots {
    fn any(&self) -> bool {
        self.cut || self.duplicate || self.oversize.is_some()
    }
}

/// Shared fault settings.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    hang: AtomicBool,
    delay_ms: AtomicU64,
    slice: AtomicUsize,
    armed: AtomicBool,
    one_shots: Mutex<OneShots>,
}

impl Faults {
    /// Whether replies are being held (`HANG`).
    pub(crate) fn hanging(&self) -> bool {
        self.hang.load(Ordering::Acquire)
    }

    /// `HANG` (true) or `RESUME` (false).
    pub(crate) fn set_hang(&self, hang: bool) {
        self.hang.store(hang, Ordering::Release);
    }

    /// How long each reply waits (`DELAY`), if at all.
    pub(crate) fn delay(&self) -> Option<Duration> {
        match self.delay_ms.load(Ordering::Relaxed) {
            0 => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }

    /// `DELAY <ms>`; 0 turns delaying off.
    pub(crate) fn set_delay_ms(&self, ms: u64) {
        self.delay_ms.store(ms, Ordering::Relaxed);
    }

    /// The largest piece a connection writes at once (`SLICE`); 0 means
    /// whole buffers.
    pub(crate) fn slice(&self) -> usize {
        self.slice.load(Ordering::Relaxed)
    }

    /// `SLICE <bytes>`; 0 turns slicing off.
    pub(crate) fn set_slice(&self, bytes: usize) {
        self.slice.store(bytes, Ordering::Relaxed);
    }

    /// Whether a reply produced now would be held or delayed rather than
    /// written at once.
    pub(crate) fn deferring(&self) -> bool {
        self.delay_ms.load(Ordering::Relaxed) != 0 || self.hanging()
    }

    /// Arms one-shot faults for the next success reply (adds to what is
    /// already armed).
    pub(crate) fn arm(&self, add: OneShots) {
        let mut armed = lock(&self.one_shots);
        armed.cut |= add.cut;
        armed.duplicate |= add.duplicate;
        if add.oversize.is_some() {
            armed.oversize = add.oversize;
        }
        self.armed.store(armed.any(), Ordering::Release);
    }

    /// Takes the one-shot faults that apply to the success reply about to be
    /// written. A cut reply is never also duplicated (half of two copies
    /// would be one whole line), so an armed `DUPLICATE` then waits for the
    /// next reply.
    pub(crate) fn take(&self) -> OneShots {
        if !self.armed.load(Ordering::Acquire) {
            return OneShots::default();
        }
        let mut armed = lock(&self.one_shots);
        let taken = OneShots {
            cut: armed.cut,
            duplicate: armed.duplicate && !armed.cut,
            oversize: armed.oversize.take(),
        };
        armed.cut = false;
        armed.duplicate &= !taken.duplicate;
        self.armed.store(armed.any(), Ordering::Release);
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_shots_are_taken_once() {
        let faults = Faults::default();
        assert_eq!(faults.take(), OneShots::default());
        faults.arm(OneShots {
            oversize: Some(10),
            ..OneShots::default()
        });
        faults.arm(OneShots {
            duplicate: true,
            ..OneShots::default()
        });
        assert_eq!(
            faults.take(),
            OneShots {
                cut: false,
                duplicate: true,
                oversize: Some(10)
            }
        );
        assert_eq!(faults.take(), OneShots::default());
    }

    #[test]
    fn cut_leaves_duplicate_for_the_next_reply() {
        let faults = Faults::default();
        faults.arm(OneShots {
            cut: true,
            duplicate: true,
            oversize: None,
        });
        assert_eq!(
            faults.take(),
            OneShots {
                cut: true,
                duplicate: false,
                oversize: None
            }
        );
        assert_eq!(
            faults.take(),
            OneShots {
                cut: false,
                duplicate: true,
                oversize: None
            }
        );
        assert_eq!(faults.take(), OneShots::default());
    }

    #[test]
    fn lasting_settings() {
        let faults = Faults::default();
        assert!(!faults.deferring());
        faults.set_delay_ms(5);
        assert_eq!(faults.delay(), Some(Duration::from_millis(5)));
        assert!(faults.deferring());
        faults.set_delay_ms(0);
        faults.set_hang(true);
        assert!(faults.deferring() && faults.hanging());
        faults.set_slice(3);
        assert_eq!(faults.slice(), 3);
    }
}
