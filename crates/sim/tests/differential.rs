//! The TLB hierarchy against a deliberately naive model on random traces: every structure a
//! list of (page, size, last use) scanned in full, LRU by timestamp, no bit tricks shared
//! with the real model.

use hugewise_sim::config::{PwcSpec, SizeName, TlbConfig, TlbSpec};
use hugewise_sim::tlb::{Hierarchy, Outcome};
use hugewise_sys::PageSize;

struct NaiveTlb {
    sets: u64,
    ways: usize,
    sizes: Vec<PageSize>,
    /// (set, page number, size, last use)
    entries: Vec<(u64, u64, PageSize, u64)>,
}

impl NaiveTlb {
    fn page(addr: u64, size: PageSize) -> u64 {
        addr / size.bytes() as u64
    }

    fn lookup(&mut self, addr: u64, size: PageSize, now: u64) -> bool {
        let p = Self::page(addr, size);
        for e in &mut self.entries {
            if e.1 == p && e.2 == size {
                e.3 = now;
                return true;
            }
        }
        false
    }

    fn fill(&mut self, addr: u64, size: PageSize, now: u64) {
        let p = Self::page(addr, size);
        let set = p % self.sets;
        let in_set: Vec<usize> = (0..self.entries.len())
            .filter(|&i| self.entries[i].0 == set)
            .collect();
        if in_set.len() == self.ways {
            let lru = *in_set
                .iter()
                .min_by_key(|&&i| self.entries[i].3)
                .expect("full set");
            self.entries.remove(lru);
        }
        self.entries.push((set, p, size, now));
    }
}

fn build(specs: &[TlbSpec]) -> Vec<NaiveTlb> {
    specs
        .iter()
        .map(|s| NaiveTlb {
            sets: u64::from(s.entries / s.ways),
            ways: s.ways as usize,
            sizes: s.sizes.iter().map(|z| z.size()).collect(),
            entries: Vec::new(),
        })
        .collect()
}

fn naive_access(
    l1: &mut [NaiveTlb],
    l2: &mut [NaiveTlb],
    addr: u64,
    size: PageSize,
    now: u64,
) -> Outcome {
    let a = l1
        .iter_mut()
        .position(|t| t.sizes.contains(&size))
        .expect("an L1 for each size");
    if l1[a].lookup(addr, size, now) {
        return Outcome::L1Hit;
    }
    let b = l2.iter_mut().position(|t| t.sizes.contains(&size));
    if let Some(b) = b {
        if l2[b].lookup(addr, size, now) {
            l1[a].fill(addr, size, now);
            return Outcome::L2Hit;
        }
        l2[b].fill(addr, size, now);
    }
    l1[a].fill(addr, size, now);
    Outcome::Walk(match size {
        PageSize::Size4K => 4,
        PageSize::Size2M => 3,
        PageSize::Size1G => 2,
    })
}

#[test]
fn hierarchy_matches_the_naive_model() {
    use SizeName::*;
    let configs = [
        TlbConfig::preset("haswell").expect("preset"),
        TlbConfig::preset("golden-cove").expect("preset"),
        TlbConfig::preset("zen4").expect("preset"),
        TlbConfig {
            name: "odd".into(),
            l1: vec![
                TlbSpec {
                    entries: 8,
                    ways: 2,
                    sizes: vec![K4, G1],
                },
                TlbSpec {
                    entries: 4,
                    ways: 4,
                    sizes: vec![M2],
                },
            ],
            l2: vec![TlbSpec {
                entries: 32,
                ways: 4,
                sizes: vec![K4, M2, G1],
            }],
            pwc: None,
        },
    ];
    for c in configs {
        let mut fast = Hierarchy::new(&c);
        // The engine's path: the page size is read only when the first probes miss.
        let mut engine = Hierarchy::new(&c);
        let mut l1 = build(&c.l1);
        let mut l2 = build(&c.l2);
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut trace = Vec::new();
        for now in 1..=60_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Pages from a few GiB with a hot subset, sizes fixed per 1 GiB area (as a page
            // map would give them).
            let span = if x.is_multiple_of(4) {
                64 << 20
            } else {
                8u64 << 30
            };
            let addr = (x >> 8) % span;
            let size = match (addr >> 30) % 4 {
                0 | 1 => PageSize::Size4K,
                2 => PageSize::Size2M,
                _ => PageSize::Size1G,
            };
            let want = naive_access(&mut l1, &mut l2, addr, size, now);
            let got = fast.access(addr, size);
            assert_eq!(got, want, "{}: access {now} at {addr:#x} ({size})", c.name);
            let got = engine.translate(addr, || size);
            assert_eq!(got, want, "{}: translate {now} at {addr:#x}", c.name);
            trace.push((addr, size, want));
        }
        engine.counts.accesses = fast.counts.accesses;
        assert_eq!(engine.counts, fast.counts, "{}", c.name);

        // The engine's batched path: runs of L1 hits found without the page table, then
        // one translation past them.
        let mut batched = Hierarchy::new(&c);
        let packed: Vec<u64> = trace.iter().map(|&(a, _, _)| a << 1).collect();
        let mut j = 0;
        while j < packed.len() {
            let run = batched.l1_hits(&packed[j..]);
            for (k, &(addr, _, want)) in trace[j..j + run].iter().enumerate() {
                assert_eq!(
                    want,
                    Outcome::L1Hit,
                    "{}: batched hit {} at {addr:#x}",
                    c.name,
                    j + k + 1
                );
            }
            j += run;
            let Some(&(addr, size, want)) = trace.get(j) else {
                break;
            };
            let got = batched.translate_past_l1(addr, || size);
            assert_eq!(got, want, "{}: batched {} at {addr:#x}", c.name, j + 1);
            j += 1;
        }
        batched.counts.accesses = fast.counts.accesses;
        assert_eq!(batched.counts, fast.counts, "{}", c.name);
        assert!(fast.counts.walks > 1000 && fast.counts.l1_misses > fast.counts.walks);
    }
}

#[test]
fn page_walk_cache_never_reads_more_than_the_full_walk() {
    let mut c = TlbConfig::preset("haswell").expect("preset");
    let mut plain = Hierarchy::new(&c);
    c.pwc = Some(PwcSpec {
        pml4: 2,
        pdpt: 4,
        pd: 32,
    });
    let mut cached = Hierarchy::new(&c);
    let mut x = 88172645463325252u64;
    for _ in 0..50_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let addr = (x >> 4) % (16u64 << 30);
        plain.access(addr, PageSize::Size4K);
        cached.access(addr, PageSize::Size4K);
    }
    assert_eq!(plain.counts.walks, cached.counts.walks);
    assert_eq!(plain.counts.walk_reads, 4 * plain.counts.walks);
    assert!(cached.counts.walk_reads < plain.counts.walk_reads);
    assert!(cached.counts.walk_reads >= cached.counts.walks);
}
