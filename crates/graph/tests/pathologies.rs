//! Every kernel, in every variant, verified on the graphs that break kernels tuned for
//! Kronecker inputs: meshes and roads (high diameter, metre-like weights), a long chain, a
//! star (one huge hub), a graph that is mostly isolated vertices, and directed graphs where
//! reachability runs one way. Each graph is small, so the whole file runs in a second or two.

use hugewise_graph::build::{build_default, Edge, VecSource};
use hugewise_graph::kernels::{bc, bfs, cc, pr, Kernel, Outcome, Spec, SpecExt};
use hugewise_graph::shapes::Shaped;
use hugewise_graph::{Csr, Layout};

fn specs() -> Vec<Spec> {
    let mut v: Vec<Spec> = ["bfs", "sssp", "pr", "cc", "bc", "tc"]
        .iter()
        .map(|k| Spec::default_for(k).expect("kernel"))
        .collect();
    v.extend([
        Spec::Bfs {
            mode: bfs::BfsMode::TopDown,
        },
        Spec::Sssp { delta: Some(1) },
        Spec::Sssp { delta: Some(2) },
        Spec::Sssp {
            delta: Some(1 << 20),
        },
        // Capped: on a star, f32 rounding of the hub's sum keeps push's change above 1e-4, so
        // it runs to the cap (the verifier's bound follows the last change).
        Spec::Pr {
            mode: pr::PrMode::Push,
            tolerance: 1e-4,
            max_iters: 100,
        },
        Spec::Cc {
            algo: cc::CcAlgo::ShiloachVishkin,
        },
    ]);
    v
}

fn shape(spec: &str) -> Csr {
    let mut s = Shaped::new(spec.parse().expect("spec"), 9, true);
    build_default(&mut s, true).expect("build")
}

fn from_edges(n: usize, edges: impl IntoIterator<Item = (u32, u32, u32)>, sym: bool) -> Csr {
    let mut src = VecSource {
        edges: edges
            .into_iter()
            .map(|(u, v, w)| Edge { u, v, w })
            .collect(),
        weighted: true,
        vertices: Some(n),
    };
    build_default(&mut src, sym).expect("build")
}

/// Run every kernel that suits `g` from `starts` (used in turn), twice each (the second run
/// reuses arrays the first left dirty), and verify; returns each kernel's last outcome.
fn check_all(what: &str, g: &Csr, starts: &[u32]) -> Vec<(Spec, Outcome)> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("pool");
    let mut found = Vec::new();
    for spec in specs() {
        if let Err(e) = spec.check(g) {
            assert!(spec == Spec::Tc && g.directed(), "{what} {spec}: {e}");
            continue;
        }
        let per = spec.sources_per_trial();
        let mut k: Box<dyn Kernel> = spec.create(&Layout::default(), g.n()).expect("create");
        for round in 0..2 {
            let sources: Vec<u32> = (0..per)
                .map(|i| starts[(round * per + i) % starts.len()])
                .collect();
            pool.install(|| k.run(g, &sources)).expect("run");
            k.verify(g, &sources)
                .unwrap_or_else(|e| panic!("{what} {spec} from {sources:?}: {e}"));
        }
        found.push((spec, k.outcome(g)));
    }
    found
}

/// The outcome of the kernel `spec` in `found`.
fn outcome(found: &[(Spec, Outcome)], spec: Spec) -> &Outcome {
    found
        .iter()
        .find(|(s, _)| *s == spec)
        .map(|(_, o)| o)
        .unwrap_or_else(|| panic!("{spec} ran"))
}

fn bfs(found: &[(Spec, Outcome)]) -> &bfs::BfsStats {
    match outcome(found, Spec::default_for("bfs").expect("bfs")) {
        Outcome::Bfs(s) => s,
        o => panic!("{o:?}"),
    }
}

#[test]
fn meshes_and_roads() {
    for spec in ["grid:40x30", "road:60x40", "grid:1x500"] {
        let g = shape(spec);
        let n = g.n() as u32;
        check_all(spec, &g, &[0, n / 2 + 7, n - 1, n / 3]);
    }
}

#[test]
fn a_long_chain_widens_the_buckets_instead_of_taking_a_round_per_vertex() {
    let g = shape("chain:20000");
    let found = check_all("chain", &g, &[10_000, 19_999, 0, 3]);
    // Buckets chosen from the weights hold a vertex or two on a chain; widened, the run takes
    // a few hundred rounds, not tens of thousands.
    let Outcome::Sssp { rounds, .. } = outcome(&found, Spec::Sssp { delta: None }) else {
        panic!("sssp");
    };
    assert!(*rounds < 1000, "{rounds} rounds");
    let s = bfs(&found);
    // The last run started at an end of the chain.
    assert_eq!(s.reached, 20_000);
    assert!(s.levels >= 19_999, "{s:?}");
}

/// A hub's 30 000 nearly equal shares, summed in f32, once moved PageRank's scores further
/// from the fixed point than its convergence bound allows.
#[test]
fn a_star_with_a_huge_hub() {
    let g = shape("star:30000");
    let found = check_all("star", &g, &[0, 17, 29_999, 5]);
    let tc = outcome(&found, Spec::Tc);
    assert!(matches!(tc, Outcome::Tc { triangles: 0, .. }), "{tc:?}");
}

#[test]
fn mostly_isolated_vertices() {
    // 600 vertices in a path, spread over 50 000 ids.
    let n = 50_000u32;
    let id = |i: u32| (i * 83) % n;
    let edges = (0..300).map(|i| (id(2 * i), id(2 * i + 1), 1 + i % 7));
    let mut edges: Vec<_> = edges.collect();
    edges.extend((0..299).map(|i| (id(2 * i + 1), id(2 * i + 2), 3)));
    let g = from_edges(n as usize, edges, true);
    let found = check_all("isolated", &g, &[id(0), id(301), id(599)]);
    assert_eq!(
        outcome(&found, Spec::default_for("cc").expect("cc")),
        &Outcome::Cc {
            components: n as u64 - 599,
            largest: 600
        }
    );
}

#[test]
fn directed_graphs_reachable_one_way() {
    // A directed path with forward skips: from vertex i only i and later are reachable.
    let n = 5000u32;
    let path = (0..n - 1).map(|i| (i, i + 1, 1 + i % 13));
    let skips = (0..n - 9).step_by(7).map(|i| (i, i + 9, 40));
    let g = from_edges(n as usize, path.chain(skips), false);
    let found = check_all("one-way path", &g, &[0, n / 2, n - 2, 17]);
    let s = bfs(&found);
    assert_eq!(s.reached, 2500, "from the middle, the vertices after it");

    // An inward star and an outward one joined at their hubs: leaves of the first reach
    // every vertex, leaves of the second none but themselves.
    let leaves = 3000u32;
    let inward = (1..=leaves).map(|v| (v, 0, v % 200 + 1));
    let bridge = [(0, leaves + 1, 5)];
    let outward = (leaves + 2..2 * leaves + 2).map(|v| (leaves + 1, v, v % 50 + 1));
    let g = from_edges(
        2 * leaves as usize + 2,
        inward.chain(bridge).chain(outward),
        false,
    );
    check_all("stars joined one way", &g, &[1, 0, leaves + 1, leaves]);
    // Betweenness from a leaf of the inward star: the two hubs carry every path on.
    let mut k = bc::Bc::new(&Layout::default(), g.n()).expect("bc");
    k.run(&g, &[1]).expect("run");
    k.verify(&g, &[1]).expect("verifies");
}
