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

/// Ask the CPU to bring the cache line of `values[i]` into all cache levels, without checking
/// that `i` is in bounds: a prefetch of an address past the end is as harmless as any other,
/// and a kernel that prefetches a list a few steps ahead paid a compare and branch for a check
/// the hint does not need.
#[inline(always)]
pub fn prefetch_at<T>(values: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the pointer is only computed (with wrapping arithmetic, so no overflow) and
    // handed to PREFETCHT0, which reads nothing architecturally and cannot fault whatever the
    // address; nothing dereferences it.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(values.as_ptr().wrapping_add(i) as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (values, i);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefetch_past_the_end_changes_nothing() {
        let v: Vec<u32> = (0..64).collect();
        for i in [0, 63, 64, 1 << 20, usize::MAX] {
            prefetch_at(&v, i);
        }
        prefetch_at::<u64>(&[], 5);
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u32));
    }

    #[test]
    fn prefetch_changes_nothing() {
        let v: Vec<u64> = (0..1024).collect();
        for x in &v {
            prefetch(x);
        }
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
    }
}
