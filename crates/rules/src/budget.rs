//! The huge-page budget a program started by `hugewise promote` shares with its daemon: how
//! much of each large allocation the preload library advises `MADV_HUGEPAGE` at its first
//! fault, so that the pages the budget has room for are huge from the start instead of
//! collapsed later (a collapse costs milliseconds a chunk; a huge fault costs less than the
//! 512 small ones it replaces).
//!
//! The library counts what it advised in a [`Ledger`]; the daemon never trusts that count and
//! reads the backing back from the kernel, but it computes its own budget on a basis at least
//! as large as the library's (see `hugewise_promote::daemon`), so it never splits what the
//! library advised within the budget.

use std::fmt;

/// 2 MiB: what one huge page covers.
pub const HUGE: u64 = 2 << 20;

/// How much may be huge: the same two forms as the daemon's `--budget`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    /// At most this many bytes.
    Bytes(u64),
    /// At most this share (0..=1) of the bytes of the large allocations alive.
    Share(f64),
}

impl Budget {
    /// The most bytes that may be huge when the large allocations alive hold `basis` bytes.
    pub fn cap(self, basis: u64) -> u64 {
        match self {
            Budget::Bytes(b) => b,
            Budget::Share(s) => (basis as f64 * s.clamp(0.0, 1.0)) as u64,
        }
    }

    /// Read back what [`fmt::Display`] wrote (`bytes:N` or `share:F`); None when malformed,
    /// and the library then advises nothing rather than guess.
    pub fn parse(s: &str) -> Option<Budget> {
        if let Some(n) = s.strip_prefix("bytes:") {
            return n.parse().ok().map(Budget::Bytes);
        }
        let f: f64 = s.strip_prefix("share:")?.parse().ok()?;
        (f.is_finite() && (0.0..=1.0).contains(&f)).then_some(Budget::Share(f))
    }
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Budget::Bytes(b) => write!(f, "bytes:{b}"),
            Budget::Share(s) => write!(f, "share:{s}"),
        }
    }
}

/// One large allocation the library took over or adopted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Item {
    start: u64,
    end: u64,
    /// Bytes of it still alive (counted in the basis).
    live: u64,
    /// The range advised `MADV_HUGEPAGE`, and how much of it is still alive.
    huge_start: u64,
    huge_end: u64,
    huge: u64,
}

/// What the library advised, allocation by allocation, in a table of fixed size: it lives
/// inside `malloc` and must not allocate. An allocation that finds the table full is given no
/// advice and is not counted (the daemon still sees it).
#[derive(Debug, Clone)]
pub struct Ledger<const N: usize> {
    items: [Item; N],
    len: usize,
    /// Bytes of the large allocations alive.
    live: u64,
    /// Bytes of them advised huge.
    huge: u64,
}

impl<const N: usize> Default for Ledger<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Ledger<N> {
    /// An empty ledger.
    pub const fn new() -> Self {
        Ledger {
            items: [Item {
                start: 0,
                end: 0,
                live: 0,
                huge_start: 0,
                huge_end: 0,
                huge: 0,
            }; N],
            len: 0,
            live: 0,
            huge: 0,
        }
    }

    /// Bytes of the large allocations alive.
    pub fn live_bytes(&self) -> u64 {
        self.live
    }

    /// Bytes of them advised huge.
    pub fn huge_bytes(&self) -> u64 {
        self.huge
    }

    /// How many bytes a new allocation of `len` bytes, of which `capable` are whole 2 MiB
    /// chunks, would be given now (a multiple of 2 MiB).
    pub fn room(&self, budget: Budget, len: u64, capable: u64) -> u64 {
        if self.len == N {
            return 0;
        }
        let cap = budget.cap(self.live + len);
        cap.saturating_sub(self.huge).min(capable) / HUGE * HUGE
    }

    /// Count a new allocation `[start, start + len)` whose whole chunks begin at `chunks_at`
    /// and hold `capable` bytes: the leading bytes of those chunks to advise huge, as much as
    /// the budget has room for (0: none). The first allocations get the room; the daemon may
    /// move it later.
    pub fn take(
        &mut self,
        budget: Budget,
        start: u64,
        len: u64,
        chunks_at: u64,
        capable: u64,
    ) -> u64 {
        let huge = self.room(budget, len, capable);
        self.record(start, len, chunks_at, huge);
        huge
    }

    /// Count an allocation whose leading `huge` bytes from `chunks_at` are advised already (a
    /// block reused whole). False when the table is full (then it is not counted).
    pub fn record(&mut self, start: u64, len: u64, chunks_at: u64, huge: u64) -> bool {
        if self.len == N {
            return false;
        }
        self.items[self.len] = Item {
            start,
            end: start + len,
            live: len,
            huge_start: chunks_at,
            huge_end: chunks_at + huge,
            huge,
        };
        self.len += 1;
        self.live += len;
        self.huge += huge;
        true
    }

    /// `[start, start + len)` was freed or unmapped: what it covered no longer counts.
    pub fn release(&mut self, start: u64, len: u64) {
        let end = start.saturating_add(len);
        let overlap = |a: u64, b: u64| b.min(end).saturating_sub(a.max(start));
        let mut i = 0;
        while i < self.len {
            let it = &mut self.items[i];
            let gone = overlap(it.start, it.end).min(it.live);
            if gone == 0 {
                i += 1;
                continue;
            }
            let huge_gone = overlap(it.huge_start, it.huge_end).min(it.huge);
            it.live -= gone;
            it.huge -= huge_gone;
            self.live -= gone;
            self.huge -= huge_gone;
            if it.live == 0 {
                self.len -= 1;
                self.items[i] = self.items[self.len];
            } else {
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn a_byte_budget_goes_to_the_first_allocations_then_to_none() {
        // 10 MiB: a 4 MiB allocation gets all of it, a 5 MiB one (4 MiB of whole chunks) its
        // 4 MiB, a 64 MiB one the 2 MiB left, and the next nothing.
        let mut l = Ledger::<8>::new();
        let b = Budget::Bytes(10 * MIB);
        assert_eq!(l.take(b, 0, 4 * MIB, 0, 4 * MIB), 4 * MIB);
        assert_eq!(l.take(b, 100 * MIB, 5 * MIB, 100 * MIB, 4 * MIB), 4 * MIB);
        assert_eq!(l.take(b, 200 * MIB, 64 * MIB, 200 * MIB, 64 * MIB), 2 * MIB);
        assert_eq!(l.take(b, 300 * MIB, 8 * MIB, 300 * MIB, 8 * MIB), 0);
        assert_eq!((l.live_bytes(), l.huge_bytes()), (81 * MIB, 10 * MIB));
        // Freeing the first gives its 4 MiB back, to the next that asks.
        l.release(0, 4 * MIB);
        assert_eq!(l.huge_bytes(), 6 * MIB);
        assert_eq!(l.take(b, 400 * MIB, 16 * MIB, 400 * MIB, 16 * MIB), 4 * MIB);
    }

    #[test]
    fn a_share_counts_the_allocations_alive_this_one_included() {
        // 2 %: a 1 GiB allocation may have 20.48 MiB, so 20 MiB (ten chunks); a second 1 GiB
        // brings the cap to 40.96 MiB, so 20 MiB more; a 100 MiB one, 2 MiB more (cap 42.96).
        let mut l = Ledger::<8>::new();
        let b = Budget::Share(0.02);
        assert_eq!(l.take(b, 0, 1024 * MIB, 0, 1024 * MIB), 20 * MIB);
        assert_eq!(
            l.take(b, 2048 * MIB, 1024 * MIB, 2048 * MIB, 1024 * MIB),
            20 * MIB
        );
        assert_eq!(
            l.take(b, 4096 * MIB, 100 * MIB, 4096 * MIB, 100 * MIB),
            2 * MIB
        );
        // At 100 % everything whole is advised.
        let mut all = Ledger::<8>::new();
        assert_eq!(
            all.take(Budget::Share(1.0), 0, 256 * MIB + 4096, 0, 256 * MIB),
            256 * MIB
        );
    }

    #[test]
    fn a_partial_unmap_gives_back_only_what_it_covered() {
        let mut l = Ledger::<8>::new();
        let b = Budget::Bytes(6 * MIB);
        // 16 MiB mapped at 1 MiB past a boundary: chunks from 2 MiB, 6 MiB advised (2..8 MiB).
        assert_eq!(l.take(b, MIB, 16 * MIB, 2 * MIB, 14 * MIB), 6 * MIB);
        // Unmapping 1..5 MiB frees 3 MiB of the advised range.
        l.release(MIB, 4 * MIB);
        assert_eq!((l.live_bytes(), l.huge_bytes()), (12 * MIB, 3 * MIB));
        l.release(5 * MIB, 12 * MIB);
        assert_eq!((l.live_bytes(), l.huge_bytes()), (0, 0));
        assert_eq!(l.room(b, 2 * MIB, 2 * MIB), 2 * MIB);
    }

    #[test]
    fn a_full_table_advises_nothing_and_counts_nothing() {
        let mut l = Ledger::<1>::new();
        let b = Budget::Share(1.0);
        assert_eq!(l.take(b, 0, 4 * MIB, 0, 4 * MIB), 4 * MIB);
        assert_eq!(l.take(b, 8 * MIB, 4 * MIB, 8 * MIB, 4 * MIB), 0);
        assert_eq!(l.live_bytes(), 4 * MIB);
    }

    #[test]
    fn budgets_print_and_parse_back() {
        for b in [
            Budget::Bytes(512 * MIB),
            Budget::Share(0.02),
            Budget::Share(1.0),
        ] {
            assert_eq!(Budget::parse(&b.to_string()), Some(b));
        }
        for bad in ["", "2%", "share:1.5", "share:-0.1", "bytes:x", "share:NaN"] {
            assert_eq!(Budget::parse(bad), None, "{bad}");
        }
    }
}
