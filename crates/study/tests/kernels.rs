//! Every kernel, in every variant, verifies on generated and real graphs of several sizes under
//! every page policy, and each array is backed as its policy says (read from the kernel).

use hugewise_graph::kernels::{bfs, cc, pr, Spec, SpecExt};
use hugewise_graph::load::{load, Input, LoadOptions};
use hugewise_graph::{Csr, Layout};
use hugewise_mem::PagePolicy;
use hugewise_sys::sysfs::SysFs;

const POOL_2M: &str = "kernel/mm/hugepages/hugepages-2048kB/nr_hugepages";
const POOL_1G: &str = "kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages";

/// Grows a hugetlb pool for the test and puts the old size back, also on panic.
struct PoolGuard {
    pool: &'static str,
    old: String,
}

impl PoolGuard {
    fn grow_to(pool: &'static str, pages: u64) -> Option<PoolGuard> {
        let old = SysFs::default().write(pool, &pages.to_string()).ok()?;
        let guard = PoolGuard { pool, old };
        let now = SysFs::default().read_u64(pool).ok()??;
        (now >= pages).then_some(guard)
    }
}

impl Drop for PoolGuard {
    fn drop(&mut self) {
        let _ = SysFs::default().write(self.pool, &self.old);
    }
}

fn specs() -> Vec<Spec> {
    let mut v: Vec<Spec> = ["bfs", "sssp", "pr", "cc", "bc", "tc"]
        .iter()
        .map(|k| Spec::default_for(k).expect("kernel"))
        .collect();
    v.push(Spec::Bfs {
        mode: bfs::BfsMode::TopDown,
    });
    v.push(Spec::Pr {
        mode: pr::PrMode::Push,
        tolerance: 1e-4,
        max_iters: 1000,
    });
    v.push(Spec::Cc {
        algo: cc::CcAlgo::ShiloachVishkin,
    });
    v
}

fn cnr() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/cnr-2000.el.zst").to_string()
}

/// Load, then run and verify every kernel variant that suits the graph; `policy` is a page
/// policy for every array, or a whole `--pages` value when it holds a `=`.
fn check_all(input: &str, symmetrize: bool, policy: &str) {
    let pages = if policy.contains('=') {
        policy.to_string()
    } else {
        format!("all={policy}")
    };
    let layout = Layout::parse(&pages, "natural").expect("layout");
    let opts = LoadOptions {
        seed: 7,
        weighted: true,
        symmetrize,
        fit: Default::default(),
    };
    let input = Input::parse(input).expect("input");
    let (g, _) = load(&input, opts, &layout, &mut |_| Ok(())).expect("load");
    for spec in specs() {
        if let Err(e) = spec.check(&g) {
            assert!(spec == Spec::Tc && g.directed(), "{spec}: {e}");
            continue;
        }
        run_one(&g, spec, &layout, &format!("{input} {policy} {spec}"));
    }
    check_backing(&g, policy);
}

fn run_one(g: &Csr, spec: Spec, layout: &Layout, what: &str) {
    let sources = hugewise_graph::kernels::pick_sources(g, 11, spec.sources_per_trial().max(1))
        .expect("sources");
    let sources = &sources[..spec.sources_per_trial()];
    let mut k = spec.create(layout, g.n()).expect("create");
    // Twice: the second run reuses arrays the first one left dirty.
    for _ in 0..2 {
        k.run(g, sources).expect("run");
        k.verify(g, sources)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
    }
    for r in k.regions().expect("regions") {
        check_region(&r, what);
    }
}

fn check_region(r: &hugewise_graph::csr::RegionReport, what: &str) {
    let b = &r.backing;
    let present = b.total_bytes - b.not_present_bytes;
    match r.policy.parse::<PagePolicy>().expect("policy") {
        PagePolicy::Base => assert_eq!(b.huge_bytes(), 0, "{what}: {r:?}"),
        PagePolicy::Thp => assert_eq!(b.base_bytes, 0, "{what}: {r:?}"),
        PagePolicy::Hugetlb2M | PagePolicy::Hugetlb1G => {
            assert_eq!(b.hugetlb_bytes, b.total_bytes, "{what}: {r:?}")
        }
        PagePolicy::ThpPrefix(_) => assert!(b.huge_bytes() <= present, "{what}: {r:?}"),
        _ => {}
    }
}

fn check_backing(g: &Csr, policy: &str) {
    for r in g.regions().expect("regions") {
        check_region(&r, &format!("graph array under {policy}"));
    }
}

#[test]
fn every_kernel_verifies_on_every_graph_under_every_policy() {
    let mut policies = vec!["system", "base", "thp", "thp-prefix:10%"];
    let root = is_root();
    let _pool = if root {
        PoolGuard::grow_to(POOL_2M, 160)
    } else {
        None
    };
    if _pool.is_some() {
        policies.push("hugetlb-2m");
    } else {
        hugewise_sys::testing::skip(
            "hugetlb-2m: the pool could not be grown (needs root and free memory)",
        );
    }
    let graphs: Vec<(String, bool)> = ["kron:10", "kron:13", "urand:10", "urand:13"]
        .iter()
        .map(|s| (s.to_string(), true))
        .collect();
    for policy in &policies {
        for (graph, symmetrize) in &graphs {
            let t = std::time::Instant::now();
            check_all(graph, *symmetrize, policy);
            eprintln!(
                "{graph} (symmetrized: {symmetrize}) under {policy}: {:?}",
                t.elapsed()
            );
        }
    }
}

/// The real web graph, directed and symmetrized, under the system's default pages: every
/// kernel verifies on a real degree distribution. The page policies above do not change what a
/// kernel computes, so they run on the generated graphs, where a run takes a second, not a
/// minute.
#[test]
fn every_kernel_verifies_on_the_real_web_graph() {
    for symmetrize in [false, true] {
        check_all(&cnr(), symmetrize, "system");
    }
}

/// 1 GiB pages for the kernels' property arrays, the ones that matter (every region of this
/// policy takes at least one page, so not `all=`: betweenness centrality alone holds four).
#[test]
fn every_kernel_verifies_with_1g_pages_for_its_property_arrays() {
    const PAGES: u64 = 4;
    if !is_root() {
        hugewise_sys::testing::skip("hugetlb-1g: needs root to grow the pool");
        return;
    }
    let pool = PoolGuard::grow_to(POOL_1G, PAGES).or_else(|| {
        // Free 1 GiB blocks are rarer than free memory: compact once (no setting changes) and
        // try again.
        let _ = std::fs::write("/proc/sys/vm/compact_memory", "1");
        PoolGuard::grow_to(POOL_1G, PAGES)
    });
    let Some(_pool) = pool else {
        hugewise_sys::testing::skip(format!(
            "hugetlb-1g: the 1 GiB pool could not be grown to {PAGES} pages"
        ));
        return;
    };
    let mut graphs = vec![("kron:13".to_string(), true)];
    graphs.push((cnr(), false));
    for (graph, symmetrize) in &graphs {
        check_all(graph, *symmetrize, "all=base,property=hugetlb-1g");
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}
