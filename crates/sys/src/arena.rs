//! Arenas for small objects, for the preload library's profile and hot-arena placement: each
//! arena holds the small allocations of one kind (one call site while profiling, the hot call
//! sites when placing) in a mapping of its own, so that its pages can be measured and advised
//! apart from the program's heap.
//!
//! All arenas live in one reservation made once (`SLOTS` slots of `SLOT_BYTES`, address space
//! only: `PROT_NONE`, `MAP_NORESERVE`), so telling an arena's pointer from anyone else's is one
//! range check. A slot is made readable and writable from its start in 2 MiB steps as it fills,
//! and never up to its end, so two slots' used parts are never one mapping (the kernel would
//! merge them, and their pages could no longer be told apart in smaps).
//!
//! Objects are carved from 64 KiB spans of one size class each (16-byte steps up to 1 KiB, four
//! classes per doubling above, up to 2 MiB); a span's first 16 bytes say its class, so `free`
//! needs no header per object. Freed objects go on their class's list and are handed out again;
//! an arena never gives memory back to the kernel, as the heap it stands in for seldom does.
//! Each slot has a spin lock, held across `fork` (see [`lock_all`]).

use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::errno::Errno;
use crate::mmap::Advice;

/// How many arenas one process can open.
pub const SLOTS: usize = 256;
/// Address space of one arena.
pub const SLOT_BYTES: usize = 4 << 30;
/// The largest object an arena holds.
pub const LARGEST: usize = 2 << 20;
const SPAN: usize = 64 << 10;
const SPAN_HEADER: usize = 16;
const GROW: usize = 2 << 20;
const SPAN_MAGIC: u64 = u64::from_le_bytes(*b"HWSPAN\0\0");
const SMALL_CLASSES: usize = 64;
const CLASSES: usize = SMALL_CLASSES + 11 * 4;

const fn class_sizes() -> [usize; CLASSES] {
    let mut out = [0usize; CLASSES];
    let mut i = 0;
    while i < SMALL_CLASSES {
        out[i] = (i + 1) * 16;
        i += 1;
    }
    let mut d = 0;
    while d < 11 {
        let mut q = 1;
        while q <= 4 {
            out[SMALL_CLASSES + d * 4 + q - 1] = (1024 << d) + q * ((1024 << d) / 4);
            q += 1;
        }
        d += 1;
    }
    out
}

static SIZES: [usize; CLASSES] = class_sizes();

/// The class of an object of `size` bytes; None above [`LARGEST`].
fn class_of(size: usize) -> Option<usize> {
    let size = size.max(1);
    if size <= SMALL_CLASSES * 16 {
        return Some(size.div_ceil(16) - 1);
    }
    let c = SMALL_CLASSES + SIZES[SMALL_CLASSES..].partition_point(|&s| s < size);
    (c < CLASSES).then_some(c)
}

/// Bytes a span (or run of spans) of class `c` takes.
fn run_bytes(c: usize) -> usize {
    (SIZES[c] + SPAN_HEADER).next_multiple_of(SPAN)
}

#[derive(Clone, Copy)]
struct Class {
    /// First freed object (0: none); each holds the next in its first word.
    free: usize,
    /// Next object to carve from the current span, and where that span ends.
    next: usize,
    end: usize,
}

struct Inner {
    /// Bytes of the slot carved into spans.
    top: usize,
    /// Bytes of the slot readable and writable.
    committed: usize,
    /// Most bytes the slot may carve.
    cap: usize,
    /// Bytes handed out and not freed.
    live: usize,
    classes: [Class; CLASSES],
}

struct Slot {
    lock: AtomicBool,
    inner: UnsafeCell<Inner>,
}

// SAFETY: `inner` is only reached under `lock` (see `with_slot`).
unsafe impl Sync for Slot {}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_SLOT: Slot = Slot {
    lock: AtomicBool::new(false),
    inner: UnsafeCell::new(Inner {
        top: 0,
        committed: 0,
        cap: 0,
        live: 0,
        classes: [Class {
            free: 0,
            next: 0,
            end: 0,
        }; CLASSES],
    }),
};

static TABLE: [Slot; SLOTS] = [EMPTY_SLOT; SLOTS];
/// Start of the reservation, 0 until it is made.
static BASE: AtomicUsize = AtomicUsize::new(0);
/// Slots opened so far.
static OPENED: AtomicUsize = AtomicUsize::new(0);
static RESERVING: AtomicBool = AtomicBool::new(false);
/// Slots whose locks [`lock_all`] holds.
static FORK_LOCKED: AtomicUsize = AtomicUsize::new(0);

fn spin(lock: &AtomicBool) {
    while lock
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::hint::spin_loop();
    }
}

fn with_slot<T>(slot: usize, f: impl FnOnce(&mut Inner) -> T) -> T {
    let s = &TABLE[slot];
    spin(&s.lock);
    // SAFETY: the slot's lock is held, so this is the only reference to its state.
    let out = f(unsafe { &mut *s.inner.get() });
    s.lock.store(false, Ordering::Release);
    out
}

fn syscall_result(r: i64) -> Result<usize, Errno> {
    if r < 0 {
        Err(Errno::last())
    } else {
        Ok(r as usize)
    }
}

/// The reservation's start, made on first use.
fn base() -> Result<usize, Errno> {
    let b = BASE.load(Ordering::Acquire);
    if b != 0 {
        return Ok(b);
    }
    spin(&RESERVING);
    let out = (|| {
        let b = BASE.load(Ordering::Acquire);
        if b != 0 {
            return Ok(b);
        }
        let len = SLOTS * SLOT_BYTES + GROW;
        // SAFETY: a fresh inaccessible mapping at an address of the kernel's choice overlaps
        // nothing; the raw syscall keeps the preload library's own mmap export out of the way.
        let raw = syscall_result(unsafe {
            libc::syscall(
                libc::SYS_mmap,
                0usize,
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1i32,
                0usize,
            )
        })?;
        let start = raw.next_multiple_of(GROW);
        // SAFETY: both ends lie in the mapping just made, which nothing uses yet.
        unsafe {
            libc::syscall(libc::SYS_munmap, raw, start - raw);
            libc::syscall(
                libc::SYS_munmap,
                start + SLOTS * SLOT_BYTES,
                raw + GROW - start,
            );
        }
        BASE.store(start, Ordering::Release);
        Ok(start)
    })();
    RESERVING.store(false, Ordering::Release);
    out
}

/// Open a new arena that may grow to `cap` bytes (rounded down to 2 MiB, at most
/// `SLOT_BYTES` less 2 MiB), advised as given before anything touches it. Its number, or
/// `ENOSPC` when all [`SLOTS`] are open, or the errno of the reservation or the advice.
pub fn open(advice: Option<Advice>, cap: usize) -> Result<usize, Errno> {
    let base = base()?;
    let slot = OPENED.fetch_add(1, Ordering::AcqRel);
    if slot >= SLOTS {
        OPENED.store(SLOTS, Ordering::Release);
        return Err(Errno(libc::ENOSPC));
    }
    if let Some(a) = advice {
        // SAFETY: the range is this slot of the reservation, untouched; huge-page hints never
        // change memory contents.
        let r = unsafe {
            libc::syscall(
                libc::SYS_madvise,
                base + slot * SLOT_BYTES,
                SLOT_BYTES,
                a.raw(),
            )
        };
        syscall_result(r)?;
    }
    with_slot(slot, |s| {
        s.cap = (cap.min(SLOT_BYTES - GROW) / GROW) * GROW;
    });
    Ok(slot)
}

/// The address range of arena `slot`: `(start, length)`.
pub fn range(slot: usize) -> (usize, usize) {
    (BASE.load(Ordering::Acquire) + slot * SLOT_BYTES, SLOT_BYTES)
}

/// The arena that handed out `p`, if one did.
pub fn slot_of(p: *const c_void) -> Option<usize> {
    let base = BASE.load(Ordering::Acquire);
    let a = p as usize;
    (base != 0 && a >= base && a < base + SLOTS * SLOT_BYTES).then(|| (a - base) / SLOT_BYTES)
}

/// Bytes of arena `slot` handed out and not freed.
pub fn live_bytes(slot: usize) -> usize {
    with_slot(slot, |s| s.live)
}

/// An object of `size` bytes (16-byte aligned, contents undefined) from arena `slot`; None when
/// it is larger than [`LARGEST`], the arena is full, or the kernel refused more memory.
pub fn alloc(slot: usize, size: usize) -> Option<*mut c_void> {
    let c = class_of(size)?;
    let base = BASE.load(Ordering::Acquire) + slot * SLOT_BYTES;
    if slot >= OPENED.load(Ordering::Acquire).min(SLOTS) {
        return None;
    }
    with_slot(slot, |s| {
        let size = SIZES[c];
        let k = &mut s.classes[c];
        let p = if k.free != 0 {
            let p = k.free;
            // SAFETY: a freed object of this arena holds the next freed one in its first word.
            k.free = unsafe { (p as *const usize).read() };
            p
        } else {
            if k.next == 0 || k.next + size > k.end {
                let run = run_bytes(c);
                if s.top + run > s.cap {
                    return None;
                }
                if s.top + run > s.committed {
                    let want = (s.top + run).next_multiple_of(GROW).min(s.cap);
                    // SAFETY: the range lies in this slot of the reservation, past everything
                    // handed out; making it writable changes nothing anyone holds.
                    let r = unsafe {
                        libc::syscall(
                            libc::SYS_mprotect,
                            base + s.committed,
                            want - s.committed,
                            libc::PROT_READ | libc::PROT_WRITE,
                        )
                    };
                    syscall_result(r).ok()?;
                    s.committed = want;
                }
                let span = base + s.top;
                // SAFETY: the span was just made writable and is handed to no one yet.
                unsafe { (span as *mut u64).write(SPAN_MAGIC ^ c as u64) };
                s.top += run;
                s.classes[c] = Class {
                    free: 0,
                    next: span + SPAN_HEADER,
                    end: span + run,
                };
            }
            let k = &mut s.classes[c];
            let p = k.next;
            k.next += size;
            p
        };
        s.live += size;
        Some(p as *mut c_void)
    })
}

/// The class of the live object `p` of an arena.
///
/// # Safety
/// `p` was handed out by [`alloc`] and not freed since.
unsafe fn class_at(p: *const c_void) -> usize {
    let base = BASE.load(Ordering::Acquire);
    let span = base + ((p as usize - base) & !(SPAN - 1));
    // SAFETY: every object lies in a span (or run) whose first word alloc wrote.
    let c = unsafe { (span as *const u64).read() } ^ SPAN_MAGIC;
    debug_assert!((c as usize) < CLASSES);
    (c as usize).min(CLASSES - 1)
}

/// Bytes usable at `p`.
///
/// # Safety
/// `p` was handed out by [`alloc`] and not freed since.
pub unsafe fn usable_size(p: *const c_void) -> usize {
    // SAFETY: the caller's contract.
    SIZES[unsafe { class_at(p) }]
}

/// Give `p` back to its arena.
///
/// # Safety
/// `p` was handed out by [`alloc`] and not freed since; nothing uses it afterwards.
pub unsafe fn free(p: *mut c_void) {
    let Some(slot) = slot_of(p) else {
        return;
    };
    // SAFETY: the caller's contract.
    let c = unsafe { class_at(p) };
    with_slot(slot, |s| {
        let k = &mut s.classes[c];
        // SAFETY: the object is the caller's no more, and at least 16 bytes long.
        unsafe { (p as *mut usize).write(k.free) };
        k.free = p as usize;
        s.live -= SIZES[c];
    });
}

/// Take every open arena's lock (before `fork`, so that a child never inherits one held by a
/// thread it does not have).
pub fn lock_all() {
    let n = OPENED.load(Ordering::Acquire).min(SLOTS);
    for s in &TABLE[..n] {
        spin(&s.lock);
    }
    FORK_LOCKED.store(n, Ordering::Release);
}

/// Release what [`lock_all`] took (only those: a slot opened meanwhile is someone else's).
pub fn unlock_all() {
    for s in &TABLE[..FORK_LOCKED.swap(0, Ordering::AcqRel)] {
        s.lock.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_grow_by_a_quarter_at_most_and_cover_every_size() {
        assert_eq!(SIZES[0], 16);
        assert_eq!(SIZES[SMALL_CLASSES - 1], 1024);
        assert_eq!(SIZES[CLASSES - 1], LARGEST);
        for w in SIZES.windows(2) {
            assert!(w[1] > w[0] && w[1] * 4 <= w[0] * 5 + 16 * 4, "{w:?}");
            assert_eq!(w[1] % 16, 0);
        }
        for size in [
            1,
            16,
            17,
            1024,
            1025,
            1280,
            1281,
            65536,
            LARGEST - 1,
            LARGEST,
        ] {
            let c = class_of(size).expect("fits");
            assert!(
                SIZES[c] >= size && (c == 0 || SIZES[c - 1] < size),
                "{size}"
            );
        }
        assert_eq!(class_of(LARGEST + 1), None);
        assert_eq!(run_bytes(0), SPAN);
        assert_eq!(run_bytes(CLASSES - 1), LARGEST + SPAN);
    }

    #[test]
    fn objects_are_carved_reused_and_kept_apart_by_arena() {
        let a = open(Some(Advice::NoHugePage), 8 << 20).expect("open a");
        let b = open(None, 64 << 20).expect("open b");
        let (start, len) = range(a);
        assert_eq!(start % GROW, 0);
        assert_eq!(len, SLOT_BYTES);
        let p = alloc(a, 24).expect("p");
        let q = alloc(a, 24).expect("q");
        assert_eq!((p as usize) % 16, 0);
        assert_eq!(q as usize - p as usize, 32, "same class, same span");
        assert_eq!((slot_of(p), slot_of(q)), (Some(a), Some(a)));
        // SAFETY: p and q are live objects of arena a.
        unsafe {
            assert_eq!(usable_size(p), 32);
            std::ptr::write_bytes(p.cast::<u8>(), 0xab, 32);
            free(p);
        }
        assert_eq!(alloc(a, 20), Some(p), "the freed object comes back first");
        let big = alloc(b, 300 << 10).expect("big");
        // SAFETY: big is live in arena b.
        unsafe {
            assert!(usable_size(big) >= 300 << 10);
            std::ptr::write_bytes(big.cast::<u8>(), 1, 300 << 10);
        }
        assert_eq!(slot_of(big), Some(b));
        assert_eq!(live_bytes(a), 64);
        // The cap holds: after the first 64 KiB span, 8 MiB fit seven 1 MiB objects (each
        // run is 1 MiB + 64 KiB).
        let fits = (0..20).filter_map(|_| alloc(a, 1 << 20)).count();
        assert_eq!(fits, 7);
        assert_eq!(alloc(a, LARGEST + 1), None);
        let x = 0u64;
        assert_eq!(slot_of(std::ptr::from_ref(&x).cast()), None);
    }
}
