//! The allocator primitives of hugewise's preload library (`crates/preload`), which takes over a
//! program's large allocations: finding the program's own allocator behind the library's
//! exports, a small bootstrap arena for the calls made while it is being found, and the
//! library's own 2 MiB-aligned mappings with a registry that tells them from everyone else's.
//!
//! Nothing here may allocate through the program's `malloc` while it runs inside `malloc`:
//! the registry is a fixed table under a spin lock (which `fork` handlers hold across a fork so
//! that a child never inherits it locked), and mappings are made with raw system calls so that
//! the library's own `mmap` export is not re-entered.

use std::cell::UnsafeCell;
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::errno::Errno;
use crate::mmap::Advice;

/// glibc's `RTLD_NEXT`: look a symbol up in the objects loaded after the caller.
const RTLD_NEXT: *mut c_void = -1isize as *mut c_void;

/// Huge-page size the library aligns its mappings to.
pub const CHUNK: usize = 2 << 20;
const PAGE: usize = 4096;
/// Bytes between a mapping's start and the pointer handed out, for alignments up to a page.
const HEADROOM: usize = 64;
/// The tag the library writes in the 16 bytes before each pointer it hands out, mixed with
/// the pointer so that copied memory does not look like a tag at another address.
const TAG: u64 = u64::from_le_bytes(*b"HWOWNBLK");

type MallocFn = unsafe extern "C" fn(usize) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void);
type CallocFn = unsafe extern "C" fn(usize, usize) -> *mut c_void;
type ReallocFn = unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void;
type AlignFn = unsafe extern "C" fn(usize, usize) -> *mut c_void;
type PosixAlignFn = unsafe extern "C" fn(*mut *mut c_void, usize, usize) -> i32;
type UsableFn = unsafe extern "C" fn(*mut c_void) -> usize;

extern "C" {
    fn __libc_malloc(size: usize) -> *mut c_void;
    fn __libc_free(p: *mut c_void);
    fn __libc_calloc(n: usize, size: usize) -> *mut c_void;
    fn __libc_realloc(p: *mut c_void, size: usize) -> *mut c_void;
    fn __libc_memalign(align: usize, size: usize) -> *mut c_void;
}

/// The program's own allocator: the functions the preload library's exports hide.
#[derive(Debug)]
pub struct Next {
    malloc: MallocFn,
    free: FreeFn,
    calloc: CallocFn,
    realloc: ReallocFn,
    memalign: AlignFn,
    aligned_alloc: AlignFn,
    posix_memalign: Option<PosixAlignFn>,
    usable: Option<UsableFn>,
    glibc: bool,
}

static NEXT: OnceLock<Next> = OnceLock::new();
static RESOLVING: AtomicBool = AtomicBool::new(false);

/// The program's allocator, found on first use. None while it is being found (the lookup
/// itself may allocate, and those calls come back here): the caller then serves the request
/// from the bootstrap arena.
pub fn next() -> Option<&'static Next> {
    if let Some(n) = NEXT.get() {
        return Some(n);
    }
    if RESOLVING.swap(true, Ordering::AcqRel) {
        return None;
    }
    let _ = NEXT.set(resolve());
    NEXT.get()
}

fn lookup(name: &CStr) -> *mut c_void {
    // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name only reads the loader's tables.
    unsafe { libc::dlsym(RTLD_NEXT, name.as_ptr()) }
}

fn resolve() -> Next {
    macro_rules! find {
        ($name:expr, $ty:ty, $fallback:expr) => {{
            let p = lookup($name);
            if p.is_null() {
                $fallback
            } else {
                // SAFETY: the symbol of that name in the C library has this C signature.
                unsafe { std::mem::transmute::<*mut c_void, $ty>(p) }
            }
        }};
    }
    let malloc = find!(c"malloc", MallocFn, __libc_malloc as MallocFn);
    let memalign = find!(c"memalign", AlignFn, __libc_memalign as AlignFn);
    Next {
        malloc,
        free: find!(c"free", FreeFn, __libc_free as FreeFn),
        calloc: find!(c"calloc", CallocFn, __libc_calloc as CallocFn),
        realloc: find!(c"realloc", ReallocFn, __libc_realloc as ReallocFn),
        memalign,
        aligned_alloc: find!(c"aligned_alloc", AlignFn, memalign),
        posix_memalign: find!(c"posix_memalign", Option<PosixAlignFn>, None),
        usable: find!(c"malloc_usable_size", Option<UsableFn>, None),
        glibc: in_libc(malloc as *const c_void),
    }
}

/// Whether `f` lies in the C library (glibc's `libc.so`).
fn in_libc(f: *const c_void) -> bool {
    // SAFETY: Dl_info is plain data that dladdr fills; a zeroed one is a valid start.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the loader's tables and writes info.
    if unsafe { libc::dladdr(f, &mut info) } == 0 || info.dli_fname.is_null() {
        return false;
    }
    // SAFETY: dli_fname is a NUL-terminated path owned by the loader.
    let name = unsafe { CStr::from_ptr(info.dli_fname) }.to_bytes();
    name.rsplit(|&b| b == b'/')
        .next()
        .is_some_and(|base| base.starts_with(b"libc.so") || base.starts_with(b"libc-"))
}

impl Next {
    /// Whether the program allocates with glibc's malloc (not jemalloc, tcmalloc, ...).
    pub fn is_glibc(&self) -> bool {
        self.glibc
    }

    /// `malloc`.
    pub fn malloc(&self, size: usize) -> *mut c_void {
        // SAFETY: the program's malloc accepts any size.
        unsafe { (self.malloc)(size) }
    }

    /// `calloc`.
    pub fn calloc(&self, n: usize, size: usize) -> *mut c_void {
        // SAFETY: the program's calloc accepts any counts and checks their product.
        unsafe { (self.calloc)(n, size) }
    }

    /// `memalign` (also `valloc` and `pvalloc` with a page's alignment).
    pub fn memalign(&self, align: usize, size: usize) -> *mut c_void {
        // SAFETY: the program's memalign checks the alignment itself.
        unsafe { (self.memalign)(align, size) }
    }

    /// `aligned_alloc`.
    pub fn aligned_alloc(&self, align: usize, size: usize) -> *mut c_void {
        // SAFETY: as for memalign.
        unsafe { (self.aligned_alloc)(align, size) }
    }

    /// `free`.
    ///
    /// # Safety
    /// `p` is null or came from this allocator and was not freed.
    pub unsafe fn free(&self, p: *mut c_void) {
        // SAFETY: the caller's contract is free's.
        unsafe { (self.free)(p) }
    }

    /// `realloc`.
    ///
    /// # Safety
    /// As for [`Next::free`].
    pub unsafe fn realloc(&self, p: *mut c_void, size: usize) -> *mut c_void {
        // SAFETY: the caller's contract is realloc's.
        unsafe { (self.realloc)(p, size) }
    }

    /// `posix_memalign`, or memalign when the program's allocator has none.
    ///
    /// # Safety
    /// `out` is valid for one pointer write.
    pub unsafe fn posix_memalign(&self, out: *mut *mut c_void, align: usize, size: usize) -> i32 {
        match self.posix_memalign {
            // SAFETY: the caller's contract is posix_memalign's.
            Some(f) => unsafe { f(out, align, size) },
            None => {
                let p = self.memalign(align, size);
                if p.is_null() {
                    return libc::ENOMEM;
                }
                // SAFETY: out is valid for a write (the caller's contract).
                unsafe { out.write(p) };
                0
            }
        }
    }

    /// `malloc_usable_size`, None when the allocator does not say.
    ///
    /// # Safety
    /// As for [`Next::free`], and `p` is not null.
    pub unsafe fn usable_size(&self, p: *mut c_void) -> Option<usize> {
        // SAFETY: the caller's contract is malloc_usable_size's.
        self.usable.map(|f| unsafe { f(p) })
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the clock of the allocation log's times, the same in every
/// process of the machine.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which ts is.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The bootstrap arena: memory for the few allocations made while the program's allocator is
/// being looked up. Never freed; each block carries its size in the 16 bytes before it.
#[repr(C, align(4096))]
struct Arena(UnsafeCell<[u8; ARENA]>);
const ARENA: usize = 256 << 10;
// SAFETY: blocks are handed out once each by an atomic bump, so no two threads share a byte.
unsafe impl Sync for Arena {}
static BOOT: Arena = Arena(UnsafeCell::new([0; ARENA]));
static BOOT_USED: AtomicUsize = AtomicUsize::new(0);

/// A zeroed block of `size` bytes from the bootstrap arena, aligned to 16; null when it is
/// exhausted.
pub fn bootstrap_alloc(size: usize) -> *mut c_void {
    let need = match size.checked_add(16 + 15) {
        Some(n) => n & !15,
        None => return std::ptr::null_mut(),
    };
    let at = BOOT_USED.fetch_add(need, Ordering::Relaxed);
    if at + need > ARENA {
        return std::ptr::null_mut();
    }
    let base = BOOT.0.get().cast::<u8>();
    // SAFETY: [at, at + need) lies inside the arena and was handed to no one else; its first
    // 8 bytes hold the size (8-aligned since `at` is a multiple of 16).
    unsafe {
        base.add(at).cast::<usize>().write(size);
        base.add(at + 16).cast()
    }
}

/// Whether `p` came from the bootstrap arena.
pub fn is_bootstrap(p: *const c_void) -> bool {
    let base = BOOT.0.get() as usize;
    (base..base + ARENA).contains(&(p as usize))
}

/// The size asked for a bootstrap block.
///
/// # Safety
/// `p` came from [`bootstrap_alloc`].
pub unsafe fn bootstrap_size(p: *const c_void) -> usize {
    // SAFETY: bootstrap_alloc wrote the size 16 bytes before each block it handed out.
    unsafe { p.cast::<u8>().sub(16).cast::<usize>().read() }
}

/// One of the library's own mappings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnBlock {
    /// First byte of the mapping.
    pub start: usize,
    /// Its length.
    pub len: usize,
    /// The pointer handed to the program.
    pub user: usize,
    /// Bytes the program asked for.
    pub requested: usize,
    /// Its entry in the allocation log (`u32::MAX`: not logged).
    pub slot: u32,
    /// The caller's kind of block (its page policy): a freed block is reused for its kind only.
    pub kind: u8,
}

fn raw_mmap(len: usize) -> Result<usize, Errno> {
    // SAFETY: a fresh private anonymous mapping at an address of the kernel's choice overlaps
    // nothing; the raw syscall keeps the library's own mmap export out of the way.
    let p = unsafe {
        libc::syscall(
            libc::SYS_mmap,
            0usize,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1i32,
            0usize,
        )
    };
    if p < 0 {
        Err(Errno::last())
    } else {
        Ok(p as usize)
    }
}

fn raw_munmap(start: usize, len: usize) {
    if len > 0 {
        // SAFETY: only ever called on ranges of mappings this module made and no longer hands
        // out (the trimmed ends of a fresh mapping, or a released block).
        unsafe {
            libc::syscall(libc::SYS_munmap, start, len);
        }
    }
}

/// Map `requested` bytes with the given alignment (a power of two up to [`CHUNK`]) in a mapping
/// of its own whose huge-page-sized chunks line up with 2 MiB: for alignments up to a page the
/// mapping starts on a 2 MiB boundary and the data 64 bytes (or `align`) later; for larger ones
/// the data starts on a 2 MiB boundary. The block is not yet registered (see [`own_register`]).
pub fn own_map(requested: usize, align: usize) -> Result<OwnBlock, Errno> {
    own_map_then(requested, align, |_| {})
}

/// [`own_map`], calling `advise` with the block before its first byte is written: advice on
/// huge pages must come before the first fault of a chunk, or that chunk gets a page table of
/// 4 KiB entries and stays on them (the tag this module writes is such a fault).
pub fn own_map_then(
    requested: usize,
    align: usize,
    advise: impl FnOnce(&OwnBlock),
) -> Result<OwnBlock, Errno> {
    if !align.is_power_of_two() || align > CHUNK {
        return Err(Errno(libc::EINVAL));
    }
    let over = requested
        .checked_add(2 * CHUNK + PAGE)
        .ok_or(Errno(libc::ENOMEM))?;
    let raw = raw_mmap(over)?;
    let (start, user) = if align <= PAGE {
        let start = raw.next_multiple_of(CHUNK);
        (start, start + align.max(HEADROOM))
    } else {
        let user = (raw + PAGE).next_multiple_of(CHUNK);
        (user - PAGE, user)
    };
    let end = (user + requested).next_multiple_of(PAGE).max(user + PAGE);
    raw_munmap(raw, start - raw);
    raw_munmap(end, raw + over - end);
    let b = OwnBlock {
        start,
        len: end - start,
        user,
        requested,
        slot: u32::MAX,
        kind: 0,
    };
    advise(&b);
    // SAFETY: user - 16 lies inside [start, end), mapped read-write just above, 8-aligned.
    unsafe { (user as *mut u64).sub(2).write(TAG ^ user as u64) };
    Ok(b)
}

/// Give advice on a block's whole mapping.
pub fn own_advise(b: &OwnBlock, advice: Advice) -> Result<(), Errno> {
    // SAFETY: the range is one of this module's own mappings; this advice (huge-page hints)
    // never changes memory contents.
    if unsafe { libc::madvise(b.start as *mut c_void, b.len, advice.raw()) } == 0 {
        Ok(())
    } else {
        Err(Errno::last())
    }
}

/// Unmap a block that was never registered (or was just released).
pub fn own_unmap(b: OwnBlock) {
    raw_munmap(b.start, b.len);
}

/// Record a block so that [`own_find`] knows it; `ENOSPC` when the registry is full.
pub fn own_register(b: OwnBlock) -> Result<(), Errno> {
    with_registry(|r| r.insert(b))
}

/// Note the allocation-log slot of the registered block at `user`.
pub fn own_set_slot(user: usize, slot: u32) {
    with_registry(|r| {
        if let Some(i) = r.index(user) {
            r.slots[i].slot = slot;
        }
    })
}

/// The block handed out at `p`, if this library handed it out.
///
/// # Safety
/// `p` is not null and the 16 bytes before it are readable: true of every pointer a malloc
/// hands out (glibc keeps a chunk header there; this library keeps its tag there).
pub unsafe fn own_find(p: *const c_void) -> Option<OwnBlock> {
    // SAFETY: the caller promises the 16 bytes before p are readable.
    let tag = unsafe { p.cast::<u64>().sub(2).read_unaligned() };
    if tag != TAG ^ p as u64 {
        return None;
    }
    with_registry(|r| r.find(p as usize))
}

/// Forget the block at `p`; None when `p` is not one of the library's. A block of at most
/// [`CACHE_BLOCK_MAX`] bytes is kept mapped for the next allocation of its kind that fits
/// (as glibc keeps freed memory in its heap instead of unmapping it); others are unmapped.
pub fn own_release(p: *const c_void) -> Option<OwnBlock> {
    let (b, cached) = with_state(|s| {
        let b = s.blocks.remove(p as usize)?;
        Some((b, s.cache.put(b)))
    })?;
    if !cached {
        own_unmap(b);
    }
    Some(b)
}

/// A kept block of `kind` that holds `requested` bytes at alignment `align` without wasting
/// more than half of it, ready to hand out again (its data is whatever was left in it).
pub fn own_reuse(requested: usize, align: usize, kind: u8) -> Option<OwnBlock> {
    with_state(|s| s.cache.take(requested, align, kind))
}

/// Largest block kept for reuse once freed: glibc too maps anything larger afresh each time.
pub const CACHE_BLOCK_MAX: usize = 32 << 20;
/// Most bytes kept for reuse at once.
pub const CACHE_BYTES_MAX: usize = 128 << 20;
const CACHE_SLOTS: usize = 16;

/// Freed blocks kept mapped for reuse, newest last.
struct Cache {
    blocks: [OwnBlock; CACHE_SLOTS],
    len: usize,
    bytes: usize,
}

impl Cache {
    fn put(&mut self, b: OwnBlock) -> bool {
        if b.len > CACHE_BLOCK_MAX {
            return false;
        }
        // Make room by dropping the oldest blocks; the caller unmaps only `b`, so dropped ones
        // are unmapped here.
        while self.len > 0 && (self.len == CACHE_SLOTS || self.bytes + b.len > CACHE_BYTES_MAX) {
            let old = self.blocks[0];
            self.blocks.copy_within(1..self.len, 0);
            self.len -= 1;
            self.bytes -= old.len;
            own_unmap(old);
        }
        self.blocks[self.len] = b;
        self.len += 1;
        self.bytes += b.len;
        true
    }

    fn take(&mut self, requested: usize, align: usize, kind: u8) -> Option<OwnBlock> {
        let i = (0..self.len).rev().find(|&i| {
            let b = self.blocks[i];
            let room = b.start + b.len - b.user;
            b.kind == kind
                && b.user.is_multiple_of(align.max(1))
                && room >= requested
                && room / 2 <= requested
        })?;
        let mut b = self.blocks[i];
        self.blocks.copy_within(i + 1..self.len, i);
        self.len -= 1;
        self.bytes -= b.len;
        b.requested = requested;
        b.slot = u32::MAX;
        Some(b)
    }
}

/// Live blocks the registry can hold.
pub const REGISTRY_CAPACITY: usize = 1 << 16;

struct Registry<const N: usize> {
    slots: [OwnBlock; N],
    live: usize,
}

const VACANT: OwnBlock = OwnBlock {
    start: 0,
    len: 0,
    user: 0,
    requested: 0,
    slot: 0,
    kind: 0,
};

fn home<const N: usize>(user: usize) -> usize {
    // Each block's data lies in its own 2 MiB-aligned mapping, so user >> 21 is nearly unique.
    ((user >> 21).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) % N
}

impl<const N: usize> Registry<N> {
    fn insert(&mut self, b: OwnBlock) -> Result<(), Errno> {
        if self.live + 1 >= N {
            return Err(Errno(libc::ENOSPC));
        }
        let mut i = home::<N>(b.user);
        while self.slots[i].user != 0 {
            i = (i + 1) % N;
        }
        self.slots[i] = b;
        self.live += 1;
        Ok(())
    }

    fn index(&self, user: usize) -> Option<usize> {
        let mut i = home::<N>(user);
        loop {
            match self.slots[i].user {
                0 => return None,
                u if u == user => return Some(i),
                _ => i = (i + 1) % N,
            }
        }
    }

    fn find(&self, user: usize) -> Option<OwnBlock> {
        self.index(user).map(|i| self.slots[i])
    }

    /// Linear probing's backward-shift deletion: no tombstones, so lookups stay short.
    fn remove(&mut self, user: usize) -> Option<OwnBlock> {
        let mut hole = self.index(user)?;
        let found = self.slots[hole];
        let mut j = hole;
        loop {
            j = (j + 1) % N;
            let u = self.slots[j].user;
            if u == 0 {
                break;
            }
            let h = home::<N>(u);
            // Move j into the hole unless its home lies cyclically in (hole, j].
            let stays = if hole <= j {
                hole < h && h <= j
            } else {
                hole < h || h <= j
            };
            if !stays {
                self.slots[hole] = self.slots[j];
                hole = j;
            }
        }
        self.slots[hole] = VACANT;
        self.live -= 1;
        Some(found)
    }
}

/// Anonymous mappings the program made itself that the library adopted (advised and logged
/// without moving them): sorted, not overlapping, each with its log slot.
struct Ranges<const N: usize> {
    items: [(usize, usize, u32); N],
    len: usize,
}

/// Mappings adopted at once, at most.
pub const ADOPTED_CAPACITY: usize = 1 << 12;

impl<const N: usize> Ranges<N> {
    fn insert(&mut self, start: usize, end: usize, slot: u32) -> bool {
        if self.len == N {
            return false;
        }
        let at = self.items[..self.len].partition_point(|r| r.0 < start);
        self.items.copy_within(at..self.len, at + 1);
        self.items[at] = (start, end, slot);
        self.len += 1;
        true
    }

    /// Forget `[start, end)`: ranges it covers go, ranges it cuts shrink or split. Returns the
    /// slots no remaining range holds any more.
    fn remove(&mut self, start: usize, end: usize, gone: &mut [u32; 8]) -> usize {
        let mut kept = [(0usize, 0usize, 0u32); 2];
        let mut out = 0;
        let mut i = self.items[..self.len].partition_point(|r| r.1 <= start);
        while i < self.len && self.items[i].0 < end {
            let (s, e, slot) = self.items[i];
            let mut k = 0;
            if s < start {
                kept[k] = (s, start, slot);
                k += 1;
            }
            if e > end {
                kept[k] = (end, e, slot);
                k += 1;
            }
            match k {
                0 => {
                    self.items.copy_within(i + 1..self.len, i);
                    self.len -= 1;
                    if !self.items[..self.len].iter().any(|r| r.2 == slot) && out < gone.len() {
                        gone[out] = slot;
                        out += 1;
                    }
                }
                1 => {
                    self.items[i] = kept[0];
                    i += 1;
                }
                _ => {
                    self.items[i] = kept[0];
                    if self.len < N {
                        self.items.copy_within(i + 1..self.len, i + 2);
                        self.items[i + 1] = kept[1];
                        self.len += 1;
                    }
                    i += 2;
                }
            }
        }
        out
    }
}

struct State {
    blocks: Registry<REGISTRY_CAPACITY>,
    ranges: Ranges<ADOPTED_CAPACITY>,
    cache: Cache,
}

struct Locked(UnsafeCell<State>);
// SAFETY: the state is only reached through with_state, under LOCK.
unsafe impl Sync for Locked {}
static REGISTRY: Locked = Locked(UnsafeCell::new(State {
    blocks: Registry {
        slots: [VACANT; REGISTRY_CAPACITY],
        live: 0,
    },
    ranges: Ranges {
        items: [(0, 0, 0); ADOPTED_CAPACITY],
        len: 0,
    },
    cache: Cache {
        blocks: [VACANT; CACHE_SLOTS],
        len: 0,
        bytes: 0,
    },
}));
static LOCK: AtomicBool = AtomicBool::new(false);

fn lock() {
    let mut spins = 0u32;
    while LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        spins += 1;
        if spins < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

fn unlock() {
    LOCK.store(false, Ordering::Release);
}

thread_local! {
    /// This thread holds LOCK: a signal handler that interrupts it and calls `mmap` or
    /// `munmap` (both async-signal-safe) must not wait for it.
    static HOLDING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn with_state<T>(f: impl FnOnce(&mut State) -> T) -> T {
    lock();
    HOLDING.with(|h| h.set(true));
    // SAFETY: LOCK is held, so this is the only reference to the state.
    let out = f(unsafe { &mut *REGISTRY.0.get() });
    HOLDING.with(|h| h.set(false));
    unlock();
    out
}

/// [`with_state`], or None when this thread already holds the lock (a signal handler run
/// inside the library's own work).
fn try_with_state<T>(f: impl FnOnce(&mut State) -> T) -> Option<T> {
    if HOLDING.with(|h| h.get()) {
        return None;
    }
    Some(with_state(f))
}

fn with_registry<T>(f: impl FnOnce(&mut Registry<REGISTRY_CAPACITY>) -> T) -> T {
    with_state(|s| f(&mut s.blocks))
}

/// Note an anonymous mapping the program made, adopted with log slot `slot`; false when
/// [`ADOPTED_CAPACITY`] mappings are already adopted, or when a signal handler maps memory
/// while its thread is inside the registry (the mapping is then left unadopted).
pub fn adopt(start: usize, len: usize, slot: u32) -> bool {
    try_with_state(|s| s.ranges.insert(start, start + len, slot)).unwrap_or(false)
}

/// The program unmapped `[start, start + len)`: forget what it covered, and call `freed` with
/// each log slot whose mapping is now wholly gone. Whether the range touched an adopted one.
pub fn unadopt(start: usize, len: usize, mut freed: impl FnMut(u32)) -> bool {
    let mut gone = [0u32; 8];
    let end = start.saturating_add(len);
    let Some((touched, n)) = try_with_state(|s| {
        let r = &mut s.ranges;
        let at = r.items[..r.len].partition_point(|x| x.1 <= start);
        if at == r.len || r.items[at].0 >= end {
            return (false, 0);
        }
        (true, r.remove(start, end, &mut gone))
    }) else {
        return false;
    };
    for &slot in &gone[..n] {
        freed(slot);
    }
    touched
}

/// A mapping the program asked for, made with a raw system call (the library's own `mmap`
/// export is what calls this). The address, or the errno.
///
/// # Safety
/// `mmap(2)`'s contract: with `MAP_FIXED` the caller gives up whatever was mapped there.
pub unsafe fn raw_mmap_any(
    addr: *mut c_void,
    len: usize,
    prot: i32,
    flags: i32,
    fd: i32,
    off: i64,
) -> Result<usize, Errno> {
    // SAFETY: the caller's contract is mmap's.
    let p = unsafe { libc::syscall(libc::SYS_mmap, addr, len, prot, flags, fd, off) };
    if p < 0 {
        Err(Errno::last())
    } else {
        Ok(p as usize)
    }
}

/// `munmap(2)` with a raw system call.
///
/// # Safety
/// `munmap(2)`'s contract: nothing refers into the range any more.
pub unsafe fn raw_munmap_any(addr: *mut c_void, len: usize) -> Result<(), Errno> {
    // SAFETY: the caller's contract is munmap's.
    if unsafe { libc::syscall(libc::SYS_munmap, addr, len) } < 0 {
        Err(Errno::last())
    } else {
        Ok(())
    }
}

/// `mremap(2)` with a raw system call; `new_addr` is read only with `MREMAP_FIXED`.
///
/// # Safety
/// `mremap(2)`'s contract.
pub unsafe fn raw_mremap_any(
    old: *mut c_void,
    old_len: usize,
    new_len: usize,
    flags: i32,
    new_addr: *mut c_void,
) -> Result<usize, Errno> {
    // SAFETY: the caller's contract is mremap's.
    let p = unsafe { libc::syscall(libc::SYS_mremap, old, old_len, new_len, flags, new_addr) };
    if p < 0 {
        Err(Errno::last())
    } else {
        Ok(p as usize)
    }
}

/// Give advice on a mapping the program made.
pub fn advise_range(start: usize, len: usize, advice: Advice) -> Result<(), Errno> {
    // SAFETY: huge-page hints never change memory contents; the kernel checks the range.
    if unsafe { libc::madvise(start as *mut c_void, len, advice.raw()) } == 0 {
        Ok(())
    } else {
        Err(Errno::last())
    }
}

/// Set the calling thread's errno (what a C function reports failure with).
pub fn set_errno(e: Errno) {
    // SAFETY: __errno_location returns this thread's errno, always valid for a write.
    unsafe { *libc::__errno_location() = e.0 };
}

static SIDE_LOCK: AtomicBool = AtomicBool::new(false);

/// Run `f` under a second spin lock for the caller's own one-time work (the preload library
/// creates a process's log under it), held across `fork` like the registry's so that a child
/// never inherits it locked. Code under it must not take the registry's lock.
pub fn with_side_lock<T>(f: impl FnOnce() -> T) -> T {
    while SIDE_LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::hint::spin_loop();
    }
    let out = f();
    SIDE_LOCK.store(false, Ordering::Release);
    out
}

extern "C" fn before_fork() {
    // The side lock first: work under it never takes the registry's.
    while SIDE_LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::hint::spin_loop();
    }
    lock();
    crate::arena::lock_all();
}

extern "C" fn after_fork_parent() {
    crate::arena::unlock_all();
    unlock();
    SIDE_LOCK.store(false, Ordering::Release);
}

extern "C" fn after_fork_child() {
    // The child's blocks are copies of the parent's, but their log slots are the parent's log:
    // the child keeps a log of its own.
    // SAFETY: LOCK is held since before_fork, and the child has only this thread.
    let s = unsafe { &mut *REGISTRY.0.get() };
    // Most forks happen in programs that took nothing over: skip the 2.6 MB table then.
    if s.blocks.live > 0 {
        for b in s.blocks.slots.iter_mut().filter(|b| b.user != 0) {
            b.slot = u32::MAX;
        }
    }
    for r in &mut s.ranges.items[..s.ranges.len] {
        r.2 = u32::MAX;
    }
    crate::arena::unlock_all();
    unlock();
    SIDE_LOCK.store(false, Ordering::Release);
}

/// Hold the registry's lock across `fork` so that a child never inherits it locked by a thread
/// it does not have, and forget the parent's log slots in the child. Call once.
pub fn install_fork_handlers() {
    // SAFETY: the handlers are plain functions that take and release a spin lock.
    unsafe {
        libc::pthread_atfork(
            Some(before_fork),
            Some(after_fork_parent),
            Some(after_fork_child),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_blocks_are_aligned_registered_found_and_released() {
        let b = OwnBlock {
            kind: 1,
            ..own_map(3 << 20, 16).expect("map")
        };
        assert_eq!(b.start % CHUNK, 0);
        assert_eq!(b.user, b.start + HEADROOM);
        assert!(b.len >= (3 << 20) + HEADROOM && b.len.is_multiple_of(PAGE));
        // SAFETY: the block is mapped read-write for `requested` bytes from `user`.
        unsafe { std::ptr::write_bytes(b.user as *mut u8, 7, b.requested) };
        // SAFETY: the tag lies in the block.
        assert_eq!(
            unsafe { own_find(b.user as *const c_void) },
            None,
            "not yet registered"
        );
        own_register(b).expect("register");
        // SAFETY: as above.
        assert_eq!(unsafe { own_find(b.user as *const c_void) }, Some(b));
        assert_eq!(own_release(b.user as *const c_void), Some(b));
        assert_eq!(own_release(b.user as *const c_void), None, "released once");
        // Kept for the next allocation of its kind that fits it without waste.
        assert_eq!(own_reuse(3 << 20, 16, 2), None, "another kind");
        assert_eq!(own_reuse(1 << 20, 16, 1), None, "would waste most of it");
        let again = own_reuse((3 << 20) - 100, 16, 1).expect("reused");
        assert_eq!((again.user, again.requested), (b.user, (3 << 20) - 100));
        assert_eq!(own_reuse((3 << 20) - 100, 16, 1), None, "handed out once");
        own_unmap(again);

        let big = own_map(5 << 20, 1 << 20).expect("map aligned");
        assert_eq!(big.user % CHUNK, 0);
        assert_eq!(big.start, big.user - PAGE);
        own_unmap(big);
        assert_eq!(own_map(1, 3), Err(Errno(libc::EINVAL)));
    }

    #[test]
    fn backward_shift_deletion_keeps_every_colliding_key_findable() {
        let mut r = Registry::<1024> {
            slots: [VACANT; 1024],
            live: 0,
        };
        // Keys one 2 MiB apart spread; keys sharing user >> 21 collide on purpose.
        let keys: Vec<usize> = (1..400usize)
            .map(|k| ((k % 37) << 21) + 64 + (k / 37) * 4096)
            .collect();
        for &u in &keys {
            r.insert(OwnBlock { user: u, ..VACANT }).expect("insert");
        }
        for (n, &u) in keys.iter().enumerate().filter(|(n, _)| n % 3 == 0) {
            assert_eq!(r.remove(u).map(|b| b.user), Some(u), "remove #{n}");
        }
        for (n, &u) in keys.iter().enumerate() {
            assert_eq!(r.find(u).is_some(), n % 3 != 0, "key #{n}");
        }
        assert_eq!(r.live, keys.len() - keys.len().div_ceil(3));
    }

    #[test]
    fn unmapping_part_of_an_adopted_mapping_trims_splits_and_frees_it() {
        let mut r = Ranges::<8> {
            items: [(0, 0, 0); 8],
            len: 0,
        };
        assert!(r.insert(100, 200, 1) && r.insert(300, 400, 2) && r.insert(0, 50, 3));
        let mut gone = [0u32; 8];
        // A cut in the middle splits; nothing is freed.
        assert_eq!(r.remove(120, 130, &mut gone), 0);
        assert_eq!(
            &r.items[..r.len],
            &[(0, 50, 3), (100, 120, 1), (130, 200, 1), (300, 400, 2)]
        );
        // Cuts that trim the head of one and the tail of another free nothing.
        assert_eq!(r.remove(20, 110, &mut gone), 0);
        assert_eq!(
            &r.items[..r.len],
            &[(0, 20, 3), (110, 120, 1), (130, 200, 1), (300, 400, 2)]
        );
        // Both pieces of slot 1 go: its mapping is freed once, after the second.
        assert_eq!(r.remove(110, 200, &mut gone), 1);
        assert_eq!(gone[0], 1);
        assert_eq!(&r.items[..r.len], &[(0, 20, 3), (300, 400, 2)]);
        assert_eq!(r.remove(0, 1000, &mut gone), 2);
        assert_eq!(&gone[..2], &[3, 2]);
        assert_eq!(r.len, 0);
    }

    #[test]
    fn the_program_allocator_is_found_and_is_glibc_here() {
        let n = next().expect("resolved");
        assert!(n.is_glibc());
        let p = n.malloc(100);
        assert!(!p.is_null());
        // SAFETY: p came from this allocator.
        unsafe {
            assert!(n.usable_size(p).expect("glibc says") >= 100);
            n.free(p);
        }
        let b = bootstrap_alloc(40);
        assert!(is_bootstrap(b) && !is_bootstrap(p));
        // SAFETY: b came from bootstrap_alloc.
        assert_eq!(unsafe { bootstrap_size(b) }, 40);
    }
}
