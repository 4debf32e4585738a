//! `hugewise bench pages`: one graph, one kernel, several page layouts for the kernel's own
//! arrays, alternated round by round (A B, B A, A B, ...), so that every ratio is measured in
//! the same process on the same graph from the same sources.
//!
//! The graph is loaded once (its arrays' policies come from `graph_pages`); each variant gets
//! its own copy of the kernel's arrays, created and warmed up before any timing. Before every
//! sample the machine's quietness is checked and recorded. Each variant's speedup is the median
//! over rounds of (first variant's time / this variant's time) within the round.

use std::time::{Duration, Instant};

use hugewise_graph::kernels::{pick_sources, Kernel, Spec, SpecExt};
use hugewise_graph::layout::KERNEL_REGIONS;
use hugewise_graph::load::{load, Input, LoadOptions};
use hugewise_graph::Layout;
use hugewise_mem::{AllocOrder, PolicyMap};
pub use hugewise_results::pagebench::{
    PagesReport as Report, PagesSample as Sample, PagesVariant as VariantSummary,
};

use crate::quiet;
use crate::stats::{median, summarize};
use crate::{Error, Progress, Result};

/// What to compare.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The graph.
    pub input: Input,
    /// How to load it.
    pub load: LoadOptions,
    /// Policies of the graph's arrays, shared by every variant.
    pub graph_pages: PolicyMap,
    /// The kernel.
    pub kernel: Spec,
    /// Policies of the kernel's arrays, one map per variant; the first is the baseline.
    pub variants: Vec<String>,
    /// Rounds; each runs every variant once.
    pub rounds: u32,
    /// Worker threads.
    pub threads: usize,
}

/// Run the comparison; `progress` counts samples (0 once loading and warm-up are over).
pub fn run(cfg: &Config, progress: Progress<'_>) -> Result<Report> {
    if cfg.variants.len() < 2 || cfg.rounds == 0 {
        return Err(Error::Config(
            "compare at least two layouts over at least one round".into(),
        ));
    }
    let layouts: Vec<Layout> = cfg
        .variants
        .iter()
        .map(|v| {
            PolicyMap::parse(v, KERNEL_REGIONS)
                .map(|pages| Layout {
                    pages,
                    order: AllocOrder::Natural,
                })
                .map_err(|e| {
                    Error::Config(format!(
                        "variant '{v}': {e} (variants set the kernel's arrays only; the graph's \
                         come from --graph-pages)"
                    ))
                })
        })
        .collect::<Result<_>>()?;
    let pool = crate::thread_pool(cfg.threads)?;
    let graph_layout = Layout {
        pages: cfg.graph_pages.clone(),
        order: AllocOrder::Natural,
    };
    let mut load_opts = cfg.load;
    load_opts.weighted |= cfg.kernel.needs_weights();
    let (g, load_stats) =
        pool.install(|| load(&cfg.input, load_opts, &graph_layout, &mut |_| Ok(())))?;
    cfg.kernel.check(&g)?;
    let per_trial = cfg.kernel.sources_per_trial();
    let sources = pick_sources(&g, cfg.load.seed, per_trial * cfg.rounds as usize)?;
    let mut kernels: Vec<Box<dyn Kernel>> = Vec::new();
    for layout in &layouts {
        let mut k = pool.install(|| cfg.kernel.create(layout, g.n()))?;
        // Warm-up: creates edge-sized arrays and takes first-touch costs out of the timing.
        pool.install(|| k.run(&g, &sources[..per_trial]))?;
        kernels.push(k);
    }
    let total = cfg.rounds as u64 * kernels.len() as u64;
    let mut samples = Vec::new();
    // Loading and warm-up are over: the count of samples starts.
    progress(0, total);
    for round in 0..cfg.rounds {
        let src = &sources[round as usize * per_trial..(round as usize + 1) * per_trial];
        let mut order: Vec<usize> = (0..kernels.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for v in order {
            let quiet = quiet::wait_quiet(
                hugewise_results::stats::BUSY_SHARE,
                Duration::from_millis(200),
                5,
            );
            let k = &mut kernels[v];
            let kernel_ns = pool.install(|| -> Result<u64> {
                let t = Instant::now();
                k.run(&g, src)?;
                Ok(t.elapsed().as_nanos() as u64)
            })?;
            samples.push(Sample {
                round,
                variant: v,
                kernel_ns,
                sources: src.to_vec(),
                quiet,
            });
            progress(samples.len() as u64, total);
        }
    }
    let graph_regions = g.regions()?;
    let graph_mapped: u64 = graph_regions.iter().map(|r| r.backing.total_bytes).sum();
    let graph_huge: u64 = graph_regions.iter().map(|r| r.backing.huge_bytes()).sum();
    let time = |v: usize, round: u32| {
        samples
            .iter()
            .find(|s| s.variant == v && s.round == round)
            .map(|s| s.kernel_ns as f64)
    };
    let mut summary = Vec::new();
    for (v, k) in kernels.iter().enumerate() {
        let ns: Vec<f64> = (0..cfg.rounds).filter_map(|r| time(v, r)).collect();
        let ratios: Vec<f64> = (0..cfg.rounds)
            .filter_map(|r| Some(time(0, r)? / time(v, r)?))
            .collect();
        let regions = k.regions()?;
        let mapped: u64 = regions.iter().map(|r| r.backing.total_bytes).sum::<u64>() + graph_mapped;
        let huge: u64 = regions.iter().map(|r| r.backing.huge_bytes()).sum::<u64>() + graph_huge;
        summary.push(VariantSummary {
            pages: layouts[v].pages.to_string(),
            kernel_ns: summarize(&ns).ok_or_else(|| Error::Config("no samples".into()))?,
            speedup_vs_first: if v == 0 { None } else { median(&ratios) },
            regions,
            huge_footprint_share: if mapped == 0 {
                0.0
            } else {
                huge as f64 / mapped as f64
            },
        });
    }
    Ok(Report {
        graph_spec: cfg.input.to_string(),
        graph: g.info(),
        graph_pages: cfg.graph_pages.to_string(),
        graph_regions,
        kernel: cfg.kernel,
        threads: cfg.threads,
        rounds: cfg.rounds,
        load: load_stats,
        samples,
        summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hugewise_graph::layout::ALL_REGIONS;

    fn cfg(variants: &[&str]) -> Config {
        Config {
            input: Input::parse("kron:12").expect("spec"),
            load: LoadOptions {
                seed: 1,
                weighted: false,
                symmetrize: true,
                fit: Default::default(),
            },
            graph_pages: PolicyMap::parse("all=base", ALL_REGIONS).expect("pages"),
            kernel: Spec::default_for("bfs").expect("bfs"),
            variants: variants.iter().map(|s| s.to_string()).collect(),
            rounds: 3,
            threads: 2,
        }
    }

    #[test]
    fn alternates_and_backs_each_variant_as_asked() {
        let r = run(&cfg(&["all=base", "all=base,property=thp"]), &mut |_, _| {}).expect("run");
        assert_eq!(r.samples.len(), 6);
        let order: Vec<usize> = r.samples.iter().map(|s| s.variant).collect();
        assert_eq!(order, [0, 1, 1, 0, 0, 1]);
        assert!(r.summary[0].speedup_vs_first.is_none());
        assert!(r.summary[1].speedup_vs_first.expect("ratio") > 0.0);
        let prop = |v: usize| {
            r.summary[v]
                .regions
                .iter()
                .find(|x| x.name == "property")
                .expect("property")
                .backing
                .huge_bytes()
        };
        assert_eq!(prop(0), 0);
        assert!(prop(1) > 0);
        // The same source in both variants of a round.
        assert_eq!(r.samples[0].sources, r.samples[1].sources);
    }

    #[test]
    fn variants_name_kernel_arrays_only() {
        let e = run(&cfg(&["all=base", "edges=thp"]), &mut |_, _| {})
            .expect_err("graph array in a variant");
        assert!(e.to_string().contains("variant 'edges=thp'"), "{e}");
        assert!(run(&cfg(&["all=base"]), &mut |_, _| {}).is_err());
    }
}
