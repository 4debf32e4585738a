//! The default: act on what each target offers. A target that publishes access samples (its
//! own kernels sampled, the C API, `hugewise run --sample-every`) is ranked by the software
//! PCC on the page walks they show; one that publishes none is judged as MEGA judges it, by
//! its mapped pages (and, under `hugewise exec`, with the allocations its rules keep on 4 KiB
//! pages left alone). A PCC with no samples would rank nothing and promote nothing, however
//! long it ran.
//!
//! Each interval the chunks are split by whether their target samples, each part decided by
//! its own policy, and the answers merged. The two policies' scores are on different scales
//! (walks against a utilization share): with targets of both kinds under one budget, share it
//! round-robin to give each its turn.

use crate::policies::{mega::Mega, pcc::Pcc};
use crate::policy::{ChunkInfo, Decision, Policy};

/// PCC where there are samples, MEGA where there are none.
#[derive(Debug, Clone, Default)]
pub struct Auto {
    pcc: Pcc,
    mega: Mega,
}

/// Decide on the chunks at `idx` only, with indices of the answer mapped back.
fn decide_on(p: &mut dyn Policy, chunks: &[ChunkInfo], idx: &[usize], dt: f64) -> Decision {
    let part: Vec<ChunkInfo> = idx.iter().map(|&i| chunks[i]).collect();
    let d = p.decide(&part, dt);
    let back = |v: Vec<(usize, f64)>| v.into_iter().map(|(i, s)| (idx[i], s)).collect();
    Decision {
        promote: back(d.promote),
        demote: d.demote.into_iter().map(|i| idx[i]).collect(),
        keep: back(d.keep),
        lasting: back(d.lasting),
    }
}

impl Policy for Auto {
    fn name(&self) -> &'static str {
        "auto"
    }

    fn decide(&mut self, chunks: &[ChunkInfo], interval_s: f64) -> Decision {
        let (sampled, unsampled): (Vec<usize>, Vec<usize>) =
            (0..chunks.len()).partition(|&i| chunks[i].sampled);
        if unsampled.is_empty() {
            return self.pcc.decide(chunks, interval_s);
        }
        if sampled.is_empty() {
            return self.mega.decide(chunks, interval_s);
        }
        let mut d = decide_on(&mut self.pcc, chunks, &sampled, interval_s);
        let m = decide_on(&mut self.mega, chunks, &unsampled, interval_s);
        d.promote.extend(m.promote);
        d.demote.extend(m.demote);
        d.keep.extend(m.keep);
        d.lasting.extend(m.lasting);
        d
    }

    fn budget_chunks(&mut self, chunks: usize) {
        self.pcc.budget_chunks(chunks);
        self.mega.budget_chunks(chunks);
    }

    fn looks_every(&mut self, interval_s: f64) {
        self.pcc.looks_every(interval_s);
        self.mega.looks_every(interval_s);
    }

    // As the PCC: the daemon waits for enough samples only while some target publishes them,
    // and thins only targets that do.
    fn ranks_by_samples(&self) -> bool {
        true
    }

    fn weighs_walks(&self) -> bool {
        true
    }

    fn signal(&self, sampled: bool) -> String {
        if sampled {
            format!(
                "it publishes access samples, so auto ranks it as pcc: {}",
                self.pcc.signal(true)
            )
        } else {
            format!(
                "it publishes no access samples, so auto judges it as mega: {}",
                self.mega.signal(false)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(pid: i32, k: usize, mapped: u16, samples: u32, sampled: bool) -> ChunkInfo {
        ChunkInfo {
            pid,
            addr: k << 21,
            mapped_pages: mapped,
            huge: false,
            samples,
            sampled_pages: samples.min(512) as u16,
            walks: samples,
            sampled,
        }
    }

    #[test]
    fn without_samples_it_promotes_the_chunks_nearly_all_mapped() {
        // Four chunks: 512, 470 (91.8 %), 460 (89.8 %) and 100 pages mapped; no samples.
        let chunks: Vec<ChunkInfo> = [512, 470, 460, 100]
            .iter()
            .enumerate()
            .map(|(k, &m)| chunk(7, k, m, 0, false))
            .collect();
        let d = Auto::default().decide(&chunks, 1.0);
        let mut picked: Vec<usize> = d.promote.iter().map(|p| p.0).collect();
        picked.sort_unstable();
        assert_eq!(picked, vec![0, 1], "MEGA's 90 % mapped rule");
        // The PCC alone would have promoted none of them.
        assert!(Pcc::default().decide(&chunks, 1.0).promote.is_empty());
    }

    #[test]
    fn with_samples_it_ranks_as_the_pcc_does() {
        let chunks: Vec<ChunkInfo> = (0..4)
            .map(|k| chunk(7, k, 512, [5, 200, 0, 60][k], true))
            .collect();
        let auto = Auto::default().decide(&chunks, 1.0);
        let pcc = Pcc::default().decide(&chunks, 1.0);
        assert_eq!(auto, pcc);
        assert_eq!(
            auto.promote.first().map(|p| p.0),
            Some(1),
            "the hottest first"
        );
    }

    #[test]
    fn each_target_gets_the_policy_its_signal_allows() {
        // pid 1 samples (chunk 1 hot); pid 2 does not (chunk 3 fully mapped).
        let chunks = vec![
            chunk(1, 0, 512, 1, true),
            chunk(1, 1, 512, 300, true),
            chunk(2, 2, 10, 0, false),
            chunk(2, 3, 512, 0, false),
        ];
        let d = Auto::default().decide(&chunks, 1.0);
        let picked: std::collections::BTreeSet<usize> = d.promote.iter().map(|p| p.0).collect();
        assert!(picked.contains(&1) && picked.contains(&3), "{picked:?}");
        assert!(!picked.contains(&2), "10 pages mapped: not MEGA's");
    }
}
