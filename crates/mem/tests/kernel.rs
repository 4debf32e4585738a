//! Regions on the real kernel: policies, backing, collapse, split, hugetlb.
//!
//! Tests that need root or a kernel feature this machine lacks print why and return early.

use hugewise_mem::{BackingSource, Error, PagePolicy, Region, RegionOptions};
use hugewise_sys::mmap::Advice;
use hugewise_sys::sysfs::SysFs;

const MIB: usize = 1 << 20;

fn region(policy: &str, bytes: usize) -> Region<u64> {
    let p: PagePolicy = policy.parse().expect("policy");
    Region::new(policy, bytes / 8, RegionOptions::new(p)).expect("region")
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

fn thp_reason() -> String {
    let sys = SysFs::default();
    let thp = sys
        .thp()
        .map(|t| t.enabled.current)
        .unwrap_or_else(|e| e.to_string());
    let defrag = sys
        .read("kernel/mm/transparent_hugepage/defrag")
        .unwrap_or_else(|e| e.to_string());
    let vm = hugewise_sys::proc::ProcFs::default()
        .vmstat()
        .unwrap_or_default();
    format!(
        "THP enabled={thp}, defrag={defrag}, thp_fault_fallback={:?}, free memory {:?}",
        vm.get("thp_fault_fallback"),
        hugewise_sys::proc::ProcFs::default()
            .meminfo()
            .map(|m| m.free_bytes)
            .ok()
    )
}

#[test]
fn thp_region_is_mostly_huge() {
    let r = region("thp", 64 * MIB);
    let b = r.backing().expect("backing");
    let share = b.thp_2m_bytes as f64 / (64 * MIB) as f64;
    if share < 0.9 {
        panic!(
            "only {:.0}% in 2 MiB pages: {}",
            share * 100.0,
            thp_reason()
        );
    }
    assert_eq!(b.not_present_bytes, 0);
    if b.source == BackingSource::Pagemap {
        assert!(b.huge_chunks.iter().filter(|h| **h).count() >= 29);
    }
}

#[test]
fn base_region_has_no_huge_pages() {
    let r = region("base", 64 * MIB);
    let b = r.backing().expect("backing");
    assert_eq!(b.huge_bytes(), 0, "{b:?}");
    assert_eq!(b.base_bytes, 64 * MIB as u64);
    assert!(b.mthp_bytes.is_empty(), "{b:?}");
}

#[test]
fn thp_prefix_backs_the_first_quarter_only() {
    let r = region("thp-prefix:25%", 64 * MIB);
    assert_eq!(r.prefix_bytes(), 16 * MIB);
    let b = r.backing().expect("backing");
    assert!(
        b.thp_2m_bytes >= (14 * MIB) as u64,
        "{b:?} {}",
        thp_reason()
    );
    assert!(b.thp_2m_bytes <= (16 * MIB) as u64, "{b:?}");
    if b.source == BackingSource::Pagemap {
        assert!(
            b.huge_chunks[8..].iter().all(|h| !h),
            "huge page past the prefix"
        );
    }
}

#[test]
fn first_touch_region_is_not_present_until_touched() {
    let p: PagePolicy = "thp".parse().expect("policy");
    let mut r: Region<u64> =
        Region::new("lazy", 8 * MIB / 8, RegionOptions::new(p).first_touch()).expect("region");
    assert_eq!(
        r.backing().expect("backing").not_present_bytes,
        8 * MIB as u64
    );
    r[0] = 1;
    let b = r.backing().expect("backing");
    assert_eq!(b.not_present_bytes, 6 * MIB as u64, "{b:?}");
}

#[test]
fn values_round_trip_and_sizes_are_rounded() {
    let mut r: Region<u32> =
        Region::new("v", 1000, RegionOptions::new(PagePolicy::Base)).expect("region");
    assert_eq!(r.len(), 1000);
    assert_eq!(r.data_bytes(), 4000);
    assert_eq!(r.mapped_bytes(), 2 * MIB);
    assert_eq!(r.addr() % (2 * MIB), 0);
    for (i, x) in r.iter_mut().enumerate() {
        *x = i as u32 * 3;
    }
    assert_eq!(r[999], 2997);
    assert_eq!(r.iter().map(|&x| x as u64).sum::<u64>(), 3 * 999 * 1000 / 2);
}

#[test]
fn collapse_of_base_region_needs_nohugepage_lifted() {
    let r = region("base", 8 * MIB);
    let refused = r.collapse(0..8 * MIB).expect("collapse call");
    assert_eq!(refused.errno.as_deref(), Some("EINVAL"), "{refused:?}");
    assert_eq!(refused.huge_bytes_after, 0);
    r.advise(0..8 * MIB, Advice::HugePage)
        .expect("lift NOHUGEPAGE");
    let done = r.collapse(0..8 * MIB).expect("collapse call");
    assert_eq!(done.errno, None, "{done:?} {}", thp_reason());
    assert_eq!(done.asked_bytes, 8 * MIB as u64);
    // Once MADV_HUGEPAGE is set, khugepaged may collapse some of the range before the call
    // does (seen once in CI), so only the end state is certain.
    assert!(done.huge_bytes_before <= 8 * MIB as u64, "{done:?}");
    assert_eq!(done.huge_bytes_after, 8 * MIB as u64, "{done:?}");
    assert!(done.elapsed_ns > 0);
}

#[test]
fn collapse_widens_to_whole_huge_pages_and_rejects_bad_ranges() {
    let r = region("system", 4 * MIB);
    r.advise(0..4 * MIB, Advice::HugePage).expect("advise");
    let o = r.collapse(4096..8192).expect("collapse");
    assert_eq!(o.asked_bytes, 2 * MIB as u64);
    assert!(r.collapse(0..8 * MIB).is_err());
    assert!(r.collapse(5..5).is_err());
}

#[test]
fn split_turns_huge_pages_into_base_pages() {
    let mut r = region("thp", 8 * MIB);
    for (i, x) in r.iter_mut().enumerate() {
        *x = i as u64 ^ 0x5a5a;
    }
    let before = r.backing_of(0..4 * MIB).expect("backing").thp_2m_bytes;
    if before == 0 {
        hugewise_sys::testing::skip(format!("no THP to split ({})", thp_reason()));
        return;
    }
    let s = r.split(0..4 * MIB).expect("split");
    assert_eq!(s.huge_bytes_before, before);
    assert_eq!(s.huge_bytes_after, 0, "{s:?}");
    assert!(
        r.iter().enumerate().all(|(i, x)| *x == i as u64 ^ 0x5a5a),
        "contents kept"
    );
    let split = r.backing_of(0..4 * MIB).expect("backing");
    assert_eq!(split.base_bytes, 4 * MIB as u64, "{split:?}");
    let rest = r.backing_of(4 * MIB..8 * MIB).expect("backing");
    assert_eq!(rest.thp_2m_bytes, before, "the other half is untouched");
}

/// Grows the 2 MiB pool for the test and puts it back on drop, also on panic.
struct PoolGuard {
    old: String,
}

impl PoolGuard {
    fn grow_to(pages: u64) -> Option<PoolGuard> {
        let sys = SysFs::default();
        let rel = "kernel/mm/hugepages/hugepages-2048kB/nr_hugepages";
        let old = sys.write(rel, &pages.to_string()).ok()?;
        Some(PoolGuard { old })
    }
}

impl Drop for PoolGuard {
    fn drop(&mut self) {
        let _ = SysFs::default().write(
            "kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",
            &self.old,
        );
    }
}

#[test]
fn hugetlb_pool_empty_then_filled() {
    let pools = SysFs::default().hugetlb_pools().expect("pools");
    let p2m = pools
        .iter()
        .find(|p| p.size_kib == 2048)
        .expect("2 MiB pool");
    if p2m.pages == 0 {
        let e = Region::<u8>::new("prop", 4 * MIB, RegionOptions::new(PagePolicy::Hugetlb2M))
            .expect_err("empty pool");
        let msg = e.to_string();
        assert!(matches!(e, Error::HugetlbPool { .. }));
        assert!(
            msg.contains("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"),
            "{msg}"
        );
    }
    if !is_root() {
        hugewise_sys::testing::skip("growing the hugetlb pool needs root");
        return;
    }
    let Some(_guard) = PoolGuard::grow_to(p2m.pages + 2) else {
        hugewise_sys::testing::skip("could not grow the pool");
        return;
    };
    let r = Region::<u8>::new("prop", 4 * MIB, RegionOptions::new(PagePolicy::Hugetlb2M))
        .expect("hugetlb region");
    let b = r.backing().expect("backing");
    assert_eq!(b.hugetlb_bytes, 4 * MIB as u64, "{b:?}");
    assert_eq!(b.thp_2m_bytes + b.base_bytes, 0);
}

#[test]
fn truncate_gives_back_whole_pages() {
    let mut r: Region<u32> =
        Region::new("t", (6 * MIB) / 4, RegionOptions::new(PagePolicy::Base)).expect("region");
    r[100] = 7;
    r.truncate(1000).expect("truncate");
    assert_eq!(r.len(), 1000);
    assert_eq!(r.mapped_bytes(), 2 * MIB);
    assert_eq!(r[100], 7);
    assert_eq!(r.backing().expect("backing").total_bytes, 2 * MIB as u64);
    assert!(r.truncate(2000).is_err());
}

#[test]
fn a_locked_prefix_is_locked_and_the_rest_is_not() {
    if !is_root() {
        hugewise_sys::testing::skip("mlock of 8 MiB may pass RLIMIT_MEMLOCK without root");
        return;
    }
    let p: PagePolicy = "thp-prefix:25%".parse().expect("policy");
    let r: Region<u64> =
        Region::new("locked", 32 * MIB / 8, RegionOptions::new(p).locked(true)).expect("region");
    // Read back from the kernel (smaps): the prefix's VMA is locked, the rest's is not.
    assert_eq!(r.locked_bytes().expect("locked"), (8 * MIB) as u64);
    assert_eq!(r.policy_label(), "thp-prefix:25%+lock");
    let whole: Region<u64> = Region::new(
        "locked-all",
        4 * MIB / 8,
        RegionOptions::new(PagePolicy::Base).locked(true),
    )
    .expect("region");
    assert_eq!(whole.locked_bytes().expect("locked"), (4 * MIB) as u64);
    let plain = region("base", 4 * MIB);
    assert_eq!(plain.locked_bytes().expect("locked"), 0);
    // Made for its program to fault in: locked as it is touched, not before.
    let mut lazy: Region<u64> = Region::new(
        "locked-lazy",
        4 * MIB / 8,
        RegionOptions::new(PagePolicy::Base)
            .first_touch()
            .locked(true),
    )
    .expect("region");
    assert_eq!(lazy.locked_bytes().expect("locked"), 0);
    lazy[..MIB / 8].fill(1);
    assert_eq!(lazy.locked_bytes().expect("locked"), MIB as u64);
}

#[test]
fn two_adjacent_locked_regions_the_kernel_merged_each_count_their_own() {
    if !is_root() {
        hugewise_sys::testing::skip("mlock may pass RLIMIT_MEMLOCK without root");
        return;
    }
    // Regions made for their program to fault in and locked alike: when two land side by
    // side, mlock merges their mappings into one VMA that crosses both bounds.
    let lazy = || -> Region<u64> {
        Region::new(
            "locked-lazy",
            4 * MIB / 8,
            RegionOptions::new(PagePolicy::Base)
                .first_touch()
                .locked(true),
        )
        .expect("region")
    };
    let mut made = vec![lazy()];
    let pair = (0..16).find_map(|_| {
        made.push(lazy());
        let r = made.len() - 1;
        (0..r).find_map(|i| {
            let (a, b) = (&made[i], &made[r]);
            (a.addr() + a.mapped_bytes() == b.addr() || b.addr() + b.mapped_bytes() == a.addr())
                .then_some((i, r))
        })
    });
    let Some((i, j)) = pair else {
        hugewise_sys::testing::skip("no two regions landed side by side");
        return;
    };
    made[i][..MIB / 8].fill(1);
    made[j][..2 * MIB / 8].fill(1);
    let proc = hugewise_sys::proc::ProcFs::default();
    let vmas = proc.smaps(hugewise_sys::proc::Pid::Current).expect("smaps");
    let lo = made[i].addr().min(made[j].addr());
    let merged = vmas
        .iter()
        .any(|v| v.locked && v.start <= lo && v.end >= lo + 8 * MIB);
    assert!(merged, "adjacent regions locked alike share one VMA");
    // Each counts what was touched in it, not zero (what summing whole VMAs gave) nor both.
    assert_eq!(made[i].locked_bytes().expect("locked"), MIB as u64);
    assert_eq!(made[j].locked_bytes().expect("locked"), 2 * MIB as u64);
}
