//! CPU hints that change no memory: a prefetch of the cache line holding a value.
//!
//! The graph kernels read adjacency lists at addresses they know a few steps ahead; asking for
//! those lines early overlaps the misses (and the page walks) that would otherwise stall each
//! step in turn.

/// Ask the CPU to bring the cache line holding `r` into all cache levels. A hint only: no
/// effect on values, never a fault; a no-op where the target has no prefetch instruction.
#[inline(always)]
pub fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 reads nothing architecturally and cannot fault, whatever the address;
    // here the address is that of a live reference. SSE is part of the x86-64 baseline.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(r as *const T as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetch_changes_nothing() {
        let v: Vec<u64> = (0..1024).collect();
        for x in &v {
            prefetch(x);
        }
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
    }
}
