//! LEB128 varints and zigzag, the inner encoding of a block.

/// Map a signed value to an unsigned one with small magnitudes small: 0, -1, 1, -2 → 0, 1, 2, 3.
#[inline]
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Inverse of [`zigzag`].
#[inline]
pub fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

/// Append `v` as a LEB128 varint (1 to 10 bytes).
#[inline]
pub fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Write `v` as a LEB128 varint into `buf` at `at` and return where it ends. Kept apart from
/// [`put`] so that an encoding loop can keep its position in a register: a byte stored
/// through a `Vec` may alias its length, which the compiler then reloads after every byte.
///
/// # Panics
/// When `buf` has fewer than 10 bytes from `at` and `v` needs them.
#[inline]
pub fn put_at(buf: &mut [u8], mut at: usize, mut v: u64) -> usize {
    while v >= 0x80 {
        buf[at] = (v as u8) | 0x80;
        at += 1;
        v >>= 7;
    }
    buf[at] = v as u8;
    at + 1
}

/// Read a varint at `*at`, advancing it; `None` when the bytes end first or it is longer than
/// 10 bytes. Always inlined: left to the compiler it stayed a call, which perf showed as a
/// separate function in the reader's loop, and reading was about 15 % slower.
#[inline(always)]
pub fn get(buf: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0u32;
    loop {
        let b = *buf.get(*at)?;
        *at += 1;
        if shift == 63 && b > 1 {
            return None;
        }
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_edges() {
        for v in [0i64, 1, -1, 63, -64, 64, i64::MAX, i64::MIN, 1 << 40] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
        let mut b = Vec::new();
        for v in [0u64, 127, 128, 300, u64::MAX] {
            put(&mut b, v);
        }
        let mut at = 0;
        for v in [0u64, 127, 128, 300, u64::MAX] {
            assert_eq!(get(&b, &mut at), Some(v));
        }
        assert_eq!(at, b.len());
        let mut a = [0u8; 20];
        let mid = put_at(&mut a, 0, 300);
        let end = put_at(&mut a, mid, u64::MAX);
        assert_eq!(&a[..end], &b[4..]);
        assert_eq!(get(&[0x80], &mut 0), None);
        assert_eq!(get(&[0xff; 11], &mut 0), None);
    }
}
