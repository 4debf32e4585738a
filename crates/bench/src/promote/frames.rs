//! The promotion bench's frames: a fresh region for each arm, faulted in address order or
//! chunk by chunk in an order of its own, or one region collapsed whole and split in place from
//! arm to arm so that every arm runs on the same physical pages; and how many chunks are huge,
//! read back from the kernel.

use std::time::Duration;

use hugewise_mem::{PagePolicy, Region, RegionOptions};
use hugewise_promote::target::Target;
use hugewise_promote::HUGE;
use hugewise_results::promote::Arm;

use super::stream::WORDS_PER_CHUNK;
use crate::{Error, Result};

/// A fresh region for `arm`, each word holding its own index, faulted chunk by chunk in
/// `order` when one is given (the first write decides which chunks THP at fault makes huge),
/// else populated in address order when created.
pub(super) fn make(arm: Arm, words: usize, order: Option<&[u32]>) -> Result<Region<u64>> {
    let policy = match arm {
        Arm::Ideal => PagePolicy::Thp,
        // No advice: with THP `madvise` or `never` the faults give 4 KiB pages, and (unlike
        // MADV_NOHUGEPAGE) collapse stays allowed for the plan and the daemon.
        Arm::Base | Arm::Plan | Arm::Daemon => PagePolicy::System,
    };
    let mut r = Region::new(arm.name(), words, fault_options(policy, order.is_some()))?;
    match order {
        Some(chunks) => {
            for &c in chunks {
                let at = c as usize * WORDS_PER_CHUNK;
                for (i, x) in r[at..at + WORDS_PER_CHUNK].iter_mut().enumerate() {
                    *x = (at + i) as u64;
                }
            }
        }
        None => {
            for (i, x) in r.iter_mut().enumerate() {
                *x = i as u64;
            }
        }
    }
    if arm != Arm::Ideal && r.backing()?.huge_bytes() > 0 {
        return Err(Error::Config(
            "the kernel gave huge pages at fault to memory without advice (THP `always`): run \
             with THP `madvise` (hugewise env thp --enabled madvise) so the base arm is 4 KiB"
                .into(),
        ));
    }
    Ok(r)
}

/// How a region is faulted: left to its first writes when they come in an order of their own
/// (populating on creation would fault it in address order first).
fn fault_options(policy: PagePolicy, ordered: bool) -> RegionOptions {
    let opts = RegionOptions::new(policy);
    if ordered {
        opts.first_touch()
    } else {
        opts
    }
}

/// A region faulted with 4 KiB pages and then collapsed whole, for a round on shared frames:
/// every arm's pages are then these, split in place or not.
pub(super) fn all_huge(words: usize) -> Result<Region<u64>> {
    let r = make(Arm::Base, words, None)?;
    let out = r.collapse(0..r.mapped_bytes())?;
    if out.huge_bytes_after < r.mapped_bytes() as u64 {
        return Err(Error::Config(format!(
            "MADV_COLLAPSE made only {} of the region's {} MiB huge ({}): on shared frames \
             every chunk must start huge; free memory or compact, or leave out --same-frames",
            out.huge_bytes_after >> 20,
            r.mapped_bytes() >> 20,
            out.errno.as_deref().unwrap_or("no error")
        )));
    }
    Ok(r)
}

/// Times a split that left huge pages is asked again.
const SPLIT_RETRIES: usize = 4;

/// Split in place the huge chunks of `r` marked in `which`, one call for each run of
/// neighbouring chunks, and check the kernel did.
pub(super) fn split_chunks(target: &Target, r: &Region<u64>, which: &[bool]) -> Result<()> {
    let mut c = 0;
    while c < which.len() {
        if !which[c] {
            c += 1;
            continue;
        }
        let end = c + which[c..].iter().take_while(|&&w| w).count();
        let a = r.addr() + c * HUGE;
        // The kernel gives up on a split it cannot make at once (a page still held by a
        // per-CPU batch, say) and says nothing: ask again, a little later, for what stayed.
        let span = c * HUGE..end * HUGE;
        let mut act = target.demote(a..a + (end - c) * HUGE)?;
        let mut left = r.backing_of(span.clone())?.huge_bytes();
        for _ in 0..SPLIT_RETRIES {
            if act.outcome != "ok" || left == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
            act = target.demote(a..a + (end - c) * HUGE)?;
            left = r.backing_of(span.clone())?.huge_bytes();
        }
        if act.outcome != "ok" || left != 0 {
            return Err(Error::Config(format!(
                "splitting chunks {c}..{end} in place left {} MiB huge ({}): the arms cannot \
                 share frames on this kernel; leave out --same-frames",
                left >> 20,
                act.outcome
            )));
        }
        c = end;
    }
    Ok(())
}

/// How many of `chunks` are huge, and how many are not, read back from the kernel.
pub(super) fn huge_chunks(r: &Region<u64>, chunks: &[u32]) -> Result<(u32, u32)> {
    let mut huge = 0;
    for &c in chunks {
        let off = c as usize * HUGE;
        if r.backing_of(off..off + HUGE)?.huge_bytes() == HUGE as u64 {
            huge += 1;
        }
    }
    Ok((huge, chunks.len() as u32 - huge))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::promote::stream::{Skew, Stream};

    #[test]
    fn a_region_faulted_coldest_first_holds_the_same_words() {
        let words = 4 * WORDS_PER_CHUNK;
        let stream = Stream::with_skew(4, Skew::Zipf(1.0), 5);
        let coldest: Vec<u32> = stream.hottest().iter().rev().copied().collect();
        let made = |order| match make(Arm::Base, words, order) {
            Err(Error::Config(m)) if m.contains("THP `always`") => None,
            other => Some(other.expect("region")),
        };
        let (Some(a), Some(b)) = (made(None), made(Some(&coldest))) else {
            return hugewise_sys::testing::skip("THP `always`: the base arm cannot be 4 KiB");
        };
        assert!(a.iter().eq(b.iter()));
        assert!(b.iter().enumerate().all(|(i, &x)| x == i as u64));
        // In an order of its own, the region is faulted by those writes, not on creation.
        let populate = |ordered| fault_options(PagePolicy::Thp, ordered).populate;
        assert_eq!(populate(true), hugewise_mem::Populate::FirstTouch);
        assert_eq!(populate(false), hugewise_mem::Populate::OnCreate);
    }
}
