//! Atomic views of plain integer slices, for kernels that update shared arrays in parallel.

use std::sync::atomic::{AtomicU32, AtomicU64};

/// View `v` as atomics. Exclusive access in, shared atomic access out.
pub fn u32s(v: &mut [u32]) -> &[AtomicU32] {
    // SAFETY: AtomicU32 has the same size and alignment as u32 (documented by std); the &mut
    // borrow guarantees no other reference observes the memory for the returned lifetime.
    unsafe { &*(v as *mut [u32] as *const [AtomicU32]) }
}

/// View `v` as atomics.
pub fn u64s(v: &mut [u64]) -> &[AtomicU64] {
    // SAFETY: as in u32s: same size and alignment on every platform with 64-bit atomics.
    unsafe { &*(v as *mut [u64] as *const [AtomicU64]) }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    #[test]
    fn views_share_memory() {
        let mut v = vec![1u32, 2, 3];
        let a = super::u32s(&mut v);
        a[1].fetch_add(5, Ordering::Relaxed);
        assert_eq!(v, [1, 7, 3]);
        let mut w = vec![0u64; 2];
        super::u64s(&mut w)[0].store(9, Ordering::Relaxed);
        assert_eq!(w[0], 9);
    }
}
