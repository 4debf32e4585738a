//! The preload library of `hugewise exec` (`libhugewise_preload.so`). Loaded into a program
//! with `LD_PRELOAD`, it takes over every allocation at or above the run's minimum size: each
//! gets a 2 MiB-aligned mapping of its own with the page policy the rules choose
//! (`MADV_HUGEPAGE`, `MADV_NOHUGEPAGE`, or none), and is logged in shared memory where
//! `hugewise exec` reads what the kernel backed it with. Smaller allocations go to the
//! program's own allocator, unless the run asks otherwise: a profile run
//! (`hugewise profile`) puts each call site's small allocations in an arena of their own, whose
//! pages `hugewise` watches, and rules with policy `arena` put the small allocations of the
//! call sites they name into one hot arena backed by huge pages (see [`hugewise_sys::arena`]).
//! The exported `malloc`, `calloc` and `realloc` learn their call site from the return
//! address their caller pushed.
//!
//! A program may also link the library instead (`-lhugewise_preload`): it then follows the rules
//! in `HUGEWISE_EXEC_RULES` whenever they are set, with or without `hugewise exec`, and runs as
//! if it had not linked it when they are not.
//!
//! It never breaks the program: when the rules cannot be read, when the program brings its own
//! allocator (jemalloc, tcmalloc: their pointers cannot be told apart safely), or when a
//! mapping is refused, the allocation goes to the program's allocator and the log says why.
//!
//! Under `hugewise promote` the run has a huge-page budget (`HUGEWISE_EXEC_BUDGET`): `thp`
//! advice then covers, allocation by allocation, only what the budget has room for (the
//! leading whole chunks of the first large allocations; see [`hugewise_rules::budget`]), so
//! that those pages are huge from their first fault and the daemon has nothing to collapse
//! there. Mappings made without access (an allocator's reserved heap) get none.
//!
//! The exports carry the C library's contracts; each passes its caller's promises on to
//! [`hugewise_sys::interpose`], which holds the system calls. Rust's own allocations inside the
//! library go straight to the program's allocator, never back through these exports.
#![deny(unsafe_op_in_unsafe_fn)]

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::OnceLock;

use std::sync::atomic::AtomicUsize;

use hugewise_rules::budget::{Budget, Ledger, HUGE};
use hugewise_rules::protocol;
use hugewise_rules::sites::{Modules, Site};
use hugewise_rules::{Placement, Rules};
use hugewise_sys::alloclog::{
    name_of, pad, AllocLog, LogEntry, Origin, FLAG_BAD_RULES, FLAG_FOREIGN_ALLOCATOR,
    FLAG_SITES_MISSING, NAME_BYTES,
};
use hugewise_sys::arena;
use hugewise_sys::errno::Errno;
use hugewise_sys::interpose::{self as ip, Next, OwnBlock};
use hugewise_sys::mmap::Advice;

/// Alignment malloc promises on x86-64.
const MALLOC_ALIGN: usize = 16;

struct ToNext;

// SAFETY: every block comes from the program's allocator (or the bootstrap arena, which never
// frees), with the layout's alignment.
unsafe impl GlobalAlloc for ToNext {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        match ip::next() {
            Some(n) if l.align() <= MALLOC_ALIGN => n.malloc(l.size()).cast(),
            Some(n) => n.memalign(l.align(), l.size()).cast(),
            None if l.align() <= MALLOC_ALIGN => ip::bootstrap_alloc(l.size()).cast(),
            None => null_mut(),
        }
    }

    unsafe fn dealloc(&self, p: *mut u8, _: Layout) {
        if ip::is_bootstrap(p.cast()) {
            return;
        }
        if let Some(n) = ip::next() {
            // SAFETY: p came from alloc above, that is from this allocator.
            unsafe { n.free(p.cast()) }
        }
    }
}

#[global_allocator]
static GLOBAL: ToNext = ToNext;

/// The run's settings, read once from the environment.
struct Shim {
    rules: Rules,
    min_size: u64,
    /// The run's session: None for a program that linked the library itself and runs with
    /// rules in its environment but without `hugewise exec` (then nothing is logged).
    session: Option<String>,
    /// False when the program's allocator is not glibc's or the rules were refused: then
    /// no allocation is taken over (and foreign pointers are never looked behind).
    active: bool,
    /// False when the rules were refused: then no mapping is adopted either.
    rules_ok: bool,
    /// A profile run: each call site's small allocations go to an arena of their own.
    profile: bool,
    /// Most bytes of the hot arena.
    hot_arena: usize,
    /// The code address of every call site the rules name, sorted (sites whose module is not
    /// loaded when the program starts are left out).
    sites: Vec<(usize, Site)>,
    /// Whether some site the rules name was not found.
    sites_missing: bool,
    /// The huge-page budget `thp` advice is held to (`hugewise promote`); None: no limit.
    budget: Option<Budget>,
}

/// Allocations the budget ledger can hold at once; later ones get no advice until some are
/// freed (a program with more large allocations than this alive is rare, and the daemon still
/// sees them).
const LEDGER_ITEMS: usize = 1024;

struct LedgerCell(std::cell::UnsafeCell<Ledger<LEDGER_ITEMS>>);

// SAFETY: the ledger is reached only through `with_ledger`, under the side lock.
unsafe impl Sync for LedgerCell {}

/// What the budget has given so far. Behind the interposer's side lock, which is held across
/// `fork` (a child never inherits it locked); the work under it is a few comparisons and never
/// allocates or maps.
static LEDGER: LedgerCell = LedgerCell(std::cell::UnsafeCell::new(Ledger::new()));

fn with_ledger<T>(f: impl FnOnce(&mut Ledger<LEDGER_ITEMS>) -> T) -> T {
    ip::with_side_lock(|| {
        // SAFETY: the side lock is held, so this is the only reference to the ledger.
        f(unsafe { &mut *LEDGER.0.get() })
    })
}

/// The kind of a block only part of which was advised huge: never asked for, so such a block
/// is never handed out again as if it were wholly one policy.
const KIND_PART_HUGE: u8 = 0xf0;

/// Where the whole 2 MiB chunks of `[start, start + len)` begin, and their bytes: only those
/// can be huge (a block aligned for more than a page starts a page before a boundary; an
/// adopted mapping anywhere).
fn whole_chunks(start: usize, len: usize) -> (u64, u64) {
    let (start, end) = (start as u64, (start + len) as u64);
    let at = start.next_multiple_of(HUGE);
    (at, (end / HUGE * HUGE).saturating_sub(at))
}

static SHIM: OnceLock<Option<Shim>> = OnceLock::new();

thread_local! {
    /// Set while this thread is inside the library's own work, so that an allocation or a
    /// mapping the work itself causes (the program's allocator mapping memory for the log's
    /// bookkeeping) passes straight through instead of coming back in.
    static BUSY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run `f` unless this thread is already inside the library's work.
fn guarded<T>(f: impl FnOnce() -> Option<T>) -> Option<T> {
    if BUSY.with(|b| b.replace(true)) {
        return None;
    }
    let out = f();
    BUSY.with(|b| b.set(false));
    out
}
static AFTER_INIT: AtomicBool = AtomicBool::new(false);

fn shim(next: &Next) -> Option<&'static Shim> {
    // Only reading the environment happens inside the one-time initialisation: anything that
    // might allocate through the exports (registering fork handlers, creating the log) comes
    // after it, so that such an allocation finds the settings instead of re-entering it.
    let shim = SHIM
        .get_or_init(|| {
            let session = std::env::var(protocol::ENV_SESSION).ok();
            let rules_text = std::env::var(protocol::ENV_RULES).ok();
            // Neither: a program that linked the library runs as if it had not.
            if session.is_none() && rules_text.is_none() {
                return None;
            }
            let parsed = rules_text.and_then(|r| Rules::parse(&r).ok());
            let number = |key: &str, default: u64| {
                std::env::var(key)
                    .ok()
                    .and_then(|m| m.parse().ok())
                    .unwrap_or(default)
            };
            let rules = parsed.clone().unwrap_or_default();
            let named = rules.0.iter().filter(|r| r.site.is_some()).count();
            let sites = if named > 0 {
                let modules = Modules::of_self();
                let mut v: Vec<(usize, Site)> = rules
                    .0
                    .iter()
                    .filter_map(|r| r.site.clone())
                    .filter_map(|s| Some((modules.address(&s)?, s)))
                    .collect();
                v.sort();
                v
            } else {
                Vec::new()
            };
            Some(Shim {
                active: parsed.is_some() && next.is_glibc(),
                rules_ok: parsed.is_some(),
                rules,
                min_size: number(protocol::ENV_MIN_SIZE, protocol::DEFAULT_MIN_SIZE),
                session,
                profile: std::env::var_os(protocol::ENV_PROFILE).is_some(),
                hot_arena: number(protocol::ENV_HOT_ARENA, protocol::DEFAULT_HOT_ARENA) as usize,
                sites_missing: sites.len() < named,
                sites,
                // A budget that cannot be read gives no advice rather than a guess.
                budget: std::env::var(protocol::ENV_BUDGET)
                    .ok()
                    .map(|b| Budget::parse(&b).unwrap_or(Budget::Bytes(0))),
            })
        })
        .as_ref();
    if let Some(s) = shim {
        if !AFTER_INIT.swap(true, Ordering::AcqRel) {
            ip::install_fork_handlers();
            // A process that takes nothing over keeps no log, unless it has something to say.
            let flags = if s.rules_ok { 0 } else { FLAG_BAD_RULES }
                | if next.is_glibc() {
                    0
                } else {
                    FLAG_FOREIGN_ALLOCATOR
                }
                | if s.sites_missing {
                    FLAG_SITES_MISSING
                } else {
                    0
                };
            if flags != 0 {
                if let Some(log) = log_of(s) {
                    log.flag(flags);
                }
            }
        }
    }
    shim
}

/// This process's log and its pid; a child after `fork` makes its own.
static LOG: AtomicPtr<(u32, Option<AllocLog>)> = AtomicPtr::new(null_mut());

fn log_of(shim: &Shim) -> Option<&'static AllocLog> {
    let session = shim.session.as_deref()?;
    let pid = std::process::id();
    let current = LOG.load(Ordering::Acquire);
    // SAFETY: LOG only ever holds null or a leaked box, never freed.
    if let Some((owner, log)) = unsafe { current.as_ref() } {
        if *owner == pid {
            return log.as_ref();
        }
    }
    ip::with_side_lock(|| {
        // SAFETY: as above.
        let again = unsafe { LOG.load(Ordering::Acquire).as_ref() };
        match again {
            Some((owner, log)) if *owner == pid => log.as_ref(),
            _ => {
                let log =
                    AllocLog::create(&protocol::log_path(session, pid), protocol::LOG_CAPACITY)
                        .ok();
                let leaked: &'static (u32, Option<AllocLog>) = Box::leak(Box::new((pid, log)));
                LOG.store(std::ptr::from_ref(leaked).cast_mut(), Ordering::Release);
                leaked.1.as_ref()
            }
        }
    })
}

impl Shim {
    /// Take over an allocation of `size` bytes aligned to `align`: its own mapping, advised as
    /// the rules say, registered and logged. None: leave it to the program's allocator.
    /// `zeroed`: the caller promised zeros (calloc), which a reused block must be cleared for.
    /// `site`: the caller's return address (0: unknown).
    fn take(&self, size: usize, align: usize, zeroed: bool, site: usize) -> Option<*mut c_void> {
        if !self.active {
            return None;
        }
        if (size as u64) < self.min_size {
            if !self.profile && self.sites.is_empty() || align > MALLOC_ALIGN {
                return None;
            }
            return guarded(|| self.small(size, zeroed, site));
        }
        guarded(|| self.take_now(size, align, zeroed, site))
    }

    /// A small allocation for an arena: its call site's (profile) or the hot one (a rule with
    /// policy `arena` names its site). None: the program's allocator takes it.
    fn small(&self, size: usize, zeroed: bool, site: usize) -> Option<*mut c_void> {
        let slot = if self.profile {
            self.site_arena(site)?
        } else {
            let at = self.sites.binary_search_by_key(&site, |s| s.0).ok()?;
            let name = NAME.with(|n| n.get());
            let (placement, _) =
                self.rules
                    .place(size as u64, name_of(&name), Some(&self.sites[at].1));
            if placement != Placement::Arena {
                return None;
            }
            self.hot_arena()?
        };
        let p = arena::alloc(slot, size)?;
        if zeroed {
            // SAFETY: the object is at least `size` bytes and handed to no one else yet.
            unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, size) };
        }
        Some(p)
    }

    /// The arena of call site `site` in a profile run, opened (and logged) at its first
    /// allocation. None once every arena is taken: later sites stay with the program.
    fn site_arena(&self, site: usize) -> Option<usize> {
        const EMPTY: usize = 0;
        let mut i = site.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (usize::BITS - SITE_BITS);
        for _ in 0..SITE_TABLE {
            match SITE_KEYS[i].compare_exchange(EMPTY, site, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    let slot = self.open_arena(site, None).unwrap_or(NO_ARENA);
                    SITE_ARENAS[i].store(slot, Ordering::Release);
                    return (slot != NO_ARENA).then_some(slot);
                }
                Err(k) if k == site => return opened(&SITE_ARENAS[i]),
                Err(_) => i = (i + 1) % SITE_TABLE,
            }
        }
        None
    }

    /// The hot arena, opened (and logged) at its first allocation.
    fn hot_arena(&self) -> Option<usize> {
        match HOT.compare_exchange(UNOPENED, OPENING, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                let slot = self.open_arena(0, Some(self.hot_arena)).unwrap_or(NO_ARENA);
                HOT.store(slot, Ordering::Release);
                (slot != NO_ARENA).then_some(slot)
            }
            Err(_) => opened(&HOT),
        }
    }

    /// Open an arena and log it: a call site's (4 KiB pages, so that its accesses are counted
    /// page by page) or, with a size, the hot one (huge pages).
    fn open_arena(&self, site: usize, hot: Option<usize>) -> Option<usize> {
        let (advice, cap, placement) = match hot {
            Some(cap) => (Advice::HugePage, cap, Placement::Arena),
            None => (Advice::NoHugePage, arena::SLOT_BYTES, Placement::Base),
        };
        let log = log_of(self);
        let slot = match arena::open(Some(advice), cap) {
            Ok(s) => s,
            Err(e) => {
                if let Some(l) = log {
                    l.fallback(e.0);
                }
                return None;
            }
        };
        if let Some(l) = log {
            let (start, len) = arena::range(slot);
            let mut e = entry(start, len, 0, placement, None, Origin::Arena, Ok(()));
            if hot.is_some() {
                e.name = pad("hot-arena");
            } else {
                e.site = site_label(site);
            }
            l.append(&e);
        }
        Some(slot)
    }

    fn take_now(
        &self,
        size: usize,
        align: usize,
        zeroed: bool,
        site: usize,
    ) -> Option<*mut c_void> {
        let log = log_of(self);
        let name = NAME.with(|n| n.get());
        let site_of = (site != 0 && (self.profile || !self.sites.is_empty()))
            .then(|| modules_site(site))
            .flatten();
        let (placement, rule) = self
            .rules
            .place(size as u64, name_of(&name), site_of.as_ref());
        let placement = match placement {
            Placement::Arena => Placement::Thp,
            p => p,
        };
        // Under a budget `thp` covers what it has room for: a block kept for reuse is taken only
        // when it is wholly what the budget gives now (all huge, or none).
        let budget = self.budget.filter(|_| placement == Placement::Thp);
        let reuse_kind = match budget {
            None => Some(placement.code()),
            Some(bud) => {
                let whole = size as u64 / HUGE * HUGE;
                match with_ledger(|l| l.room(bud, size as u64, whole)) {
                    0 => Some(Placement::System.code()),
                    r if r >= whole => Some(Placement::Thp.code()),
                    _ => None,
                }
            }
        };
        let mut kind = placement.code();
        let (b, advice) = match reuse_kind.and_then(|k| ip::own_reuse(size, align, k)) {
            // Advised when it was first mapped.
            Some(b) => {
                if zeroed {
                    // SAFETY: the block is this library's, mapped for `requested` bytes from
                    // `user`, and handed to no one else yet.
                    unsafe { std::ptr::write_bytes(b.user as *mut u8, 0, size) };
                }
                if budget.is_some() {
                    kind = b.kind;
                    let (at, whole) = whole_chunks(b.start, b.len);
                    let huge = if kind == Placement::Thp.code() {
                        whole
                    } else {
                        0
                    };
                    with_ledger(|l| l.record(b.start as u64, b.len as u64, at, huge));
                }
                (b, Ok(()))
            }
            None if budget.is_some() => {
                let (mut huge, mut advice) = (0, Ok(()));
                let b = match ip::own_map_then(size, align, |b| {
                    let (start, len) = (b.start as u64, b.len as u64);
                    let (at, whole) = whole_chunks(b.start, b.len);
                    huge =
                        budget.map_or(0, |bud| with_ledger(|l| l.take(bud, start, len, at, whole)));
                    if huge > 0 {
                        advice = ip::advise_range(at as usize, huge as usize, Advice::HugePage);
                    }
                }) {
                    Ok(b) => b,
                    Err(e) => {
                        if let Some(l) = log {
                            l.fallback(e.0);
                        }
                        return None;
                    }
                };
                kind = match huge {
                    0 => Placement::System.code(),
                    h if h == whole_chunks(b.start, b.len).1 => Placement::Thp.code(),
                    _ => KIND_PART_HUGE,
                };
                (b, advice)
            }
            None => {
                let mut advice = Ok(());
                let b = match ip::own_map_then(size, align, |b| {
                    advice = match placement {
                        Placement::Thp | Placement::Arena => ip::own_advise(b, Advice::HugePage),
                        Placement::Base => ip::own_advise(b, Advice::NoHugePage),
                        Placement::System => Ok(()),
                    }
                }) {
                    Ok(b) => b,
                    Err(e) => {
                        if let Some(l) = log {
                            l.fallback(e.0);
                        }
                        return None;
                    }
                };
                (b, advice)
            }
        };
        let b = OwnBlock { kind, ..b };
        // What the log says it was given: `system` when the budget had no room.
        let placement = if kind == Placement::System.code() {
            Placement::System
        } else {
            placement
        };
        if let Err(e) = ip::own_register(b) {
            if budget.is_some() {
                with_ledger(|l| l.release(b.start as u64, b.len as u64));
            }
            ip::own_unmap(b);
            if let Some(l) = log {
                l.fallback(e.0);
            }
            return None;
        }
        if let Some(l) = log {
            let e = LogEntry {
                name,
                site: site_of.map_or([0; NAME_BYTES], |s| pad(&s.to_string())),
                ..entry(
                    b.start,
                    b.len,
                    size,
                    placement,
                    rule,
                    Origin::Malloc,
                    advice,
                )
            };
            if let Some(slot) = l.append(&e) {
                ip::own_set_slot(b.user, slot);
            }
        }
        Some(b.user as *mut c_void)
    }

    /// Adopt an anonymous mapping the program (or its allocator) made: advise it as the
    /// rules say and log it, without moving it.
    /// `reserved`: mapped without access (`PROT_NONE`), a reservation such as an allocator's
    /// heap, not memory; under a budget it gets no advice.
    fn adopt(&self, start: usize, len: usize, reserved: bool) {
        if !self.rules_ok || (len as u64) < self.min_size {
            return;
        }
        guarded(|| {
            let (mut placement, rule) = self.rules.place(len as u64, None, None);
            let budget = self
                .budget
                .filter(|_| matches!(placement, Placement::Thp | Placement::Arena));
            let advice = match (budget, placement) {
                (Some(_), _) if reserved => {
                    placement = Placement::System;
                    Ok(())
                }
                (Some(bud), _) => {
                    let (at, whole) = whole_chunks(start, len);
                    let huge = with_ledger(|l| l.take(bud, start as u64, len as u64, at, whole));
                    if huge == 0 {
                        placement = Placement::System;
                        Ok(())
                    } else {
                        ip::advise_range(at as usize, huge as usize, Advice::HugePage)
                    }
                }
                (None, _) => match placement {
                    Placement::Thp | Placement::Arena => {
                        ip::advise_range(start, len, Advice::HugePage)
                    }
                    Placement::Base => ip::advise_range(start, len, Advice::NoHugePage),
                    Placement::System => Ok(()),
                },
            };
            let log = log_of(self);
            let slot = log
                .and_then(|l| {
                    l.append(&entry(
                        start,
                        len,
                        len,
                        placement,
                        rule,
                        Origin::Mmap,
                        advice,
                    ))
                })
                .unwrap_or(u32::MAX);
            if !ip::adopt(start, len, slot) {
                if let Some(l) = log {
                    l.fallback(libc::ENOSPC);
                }
            }
            Some(())
        });
    }

    /// The program unmapped a range: log the end of every adopted mapping it removed. Whether
    /// it touched one.
    fn unmapped(&self, start: usize, len: usize) -> bool {
        guarded(|| {
            if self.budget.is_some() {
                with_ledger(|l| l.release(start as u64, len as u64));
            }
            Some(ip::unadopt(start, len, |slot| {
                if let (Some(l), true) = (log_of(self), slot != u32::MAX) {
                    l.freed(slot, ip::monotonic_ns());
                }
            }))
        })
        .unwrap_or(false)
    }

    /// Release a block taken over (kept for reuse when small enough) and log its end.
    fn release(&self, block: &OwnBlock) {
        if self.budget.is_some() {
            // Skipped (the budget stays spent) only when a signal handler frees a block while
            // its thread is inside the library's work.
            guarded(|| {
                with_ledger(|l| l.release(block.start as u64, block.len as u64));
                Some(())
            });
        }
        if let Some(b) = ip::own_release(block.user as *const c_void) {
            if b.slot != u32::MAX {
                if let Some(l) = log_of(self) {
                    l.freed(b.slot, ip::monotonic_ns());
                }
            }
        }
    }
}

/// The log entry of an allocation or mapping made now.
fn entry(
    start: usize,
    len: usize,
    requested: usize,
    placement: Placement,
    rule: Option<usize>,
    origin: Origin,
    advice: Result<(), Errno>,
) -> LogEntry {
    LogEntry {
        start: start as u64,
        len: len as u64,
        requested: requested as u64,
        policy: placement.code(),
        rule: rule.map_or(u16::MAX, |r| r.min(usize::from(u16::MAX - 1)) as u16),
        origin,
        advice_errno: advice.err().map_or(0, |e| e.0 as u16),
        born_ns: ip::monotonic_ns(),
        freed_ns: None,
        tag: 0,
        name: [0; NAME_BYTES],
        site: [0; NAME_BYTES],
    }
}

/// The arena in `cell` once another thread has opened it. A process forked while another
/// thread was opening it never sees it opened: after a while it stops waiting, marks it
/// missing, and the allocation goes to the program's allocator.
fn opened(cell: &AtomicUsize) -> Option<usize> {
    for spins in 0..100_000u32 {
        match cell.load(Ordering::Acquire) {
            OPENING => {
                if spins < 64 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            NO_ARENA => return None,
            slot => return Some(slot),
        }
    }
    // Given up on: later calls need not wait (the opener, if there is one, still stores it).
    let _ = cell.compare_exchange(OPENING, NO_ARENA, Ordering::AcqRel, Ordering::Acquire);
    None
}

/// Sites' arenas of a profile run: an open-addressing table keyed by return address.
const SITE_BITS: u32 = 10;
const SITE_TABLE: usize = 1 << SITE_BITS;
static SITE_KEYS: [AtomicUsize; SITE_TABLE] = [const { AtomicUsize::new(0) }; SITE_TABLE];
static SITE_ARENAS: [AtomicUsize; SITE_TABLE] = [const { AtomicUsize::new(OPENING) }; SITE_TABLE];
/// The hot arena's slot, or one of the markers below.
static HOT: AtomicUsize = AtomicUsize::new(UNOPENED);
const UNOPENED: usize = usize::MAX;
const OPENING: usize = usize::MAX - 1;
const NO_ARENA: usize = usize::MAX - 2;

/// The program's modules as last read, re-read (a bounded number of times) when an address
/// falls outside them (a library loaded later).
static MODULES: AtomicPtr<Modules> = AtomicPtr::new(null_mut());
static MODULE_READS: AtomicUsize = AtomicUsize::new(0);

fn modules_site(addr: usize) -> Option<Site> {
    let current = MODULES.load(Ordering::Acquire);
    // SAFETY: MODULES only ever holds null or a leaked box, never freed.
    if let Some(site) = unsafe { current.as_ref() }.and_then(|m| m.site(addr)) {
        return Some(site);
    }
    if MODULE_READS.fetch_add(1, Ordering::AcqRel) >= 64 {
        return None;
    }
    let fresh: &'static Modules = Box::leak(Box::new(Modules::of_self()));
    MODULES.store(std::ptr::from_ref(fresh).cast_mut(), Ordering::Release);
    fresh.site(addr)
}

/// A call site's label for the log (all zeros when unknown).
fn site_label(addr: usize) -> [u8; NAME_BYTES] {
    modules_site(addr).map_or([0; NAME_BYTES], |s| pad(&s.to_string()))
}

thread_local! {
    /// The name this thread gives its next allocations (`hugewise_exec_name`), NUL-padded.
    static NAME: std::cell::Cell<[u8; NAME_BYTES]> = const { std::cell::Cell::new([0; NAME_BYTES]) };
}

/// Name the allocations this thread makes from now on (`hugewise_exec.h`), for rules
/// `name:NAME=POLICY`; null clears it. Names longer than 31 bytes are cut.
///
/// # Safety
/// `name` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn hugewise_exec_name(name: *const std::ffi::c_char) {
    let mut n = [0u8; NAME_BYTES];
    if !name.is_null() {
        // SAFETY: the caller's contract: a NUL-terminated string.
        let given = unsafe { std::ffi::CStr::from_ptr(name) }.to_bytes();
        let len = given.len().min(NAME_BYTES - 1);
        n[..len].copy_from_slice(&given[..len]);
    }
    NAME.with(|c| c.set(n));
}

/// The program's allocator and the run's settings; None while the allocator is being found.
fn parts() -> Option<(&'static Next, Option<&'static Shim>)> {
    let next = ip::next()?;
    Some((next, shim(next)))
}

/// The block at `p` if this library handed it out.
///
/// # Safety
/// `p` is not null and came from an allocation function (its 16 leading bytes are readable).
unsafe fn own(shim: Option<&Shim>, p: *const c_void) -> Option<OwnBlock> {
    if !shim.is_some_and(|s| s.active) {
        return None;
    }
    // SAFETY: the caller's contract.
    unsafe { ip::own_find(p) }
}

fn usable(b: &OwnBlock) -> usize {
    b.start + b.len - b.user
}

/// `malloc(3)`: passes its caller's return address on to `malloc_at`.
///
/// # Safety
/// The C library's contract.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    // The return address is on top of the stack at entry; it becomes the second argument, and
    // the jump leaves the stack as the caller made it.
    core::arch::naked_asm!("mov rsi, [rsp]", "jmp {f}@PLT", f = sym malloc_at)
}

/// `malloc(3)`, without call sites.
///
/// # Safety
/// The C library's contract.
#[cfg(not(target_arch = "x86_64"))]
#[no_mangle]
pub unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    malloc_at(size, 0)
}

/// `malloc` called from `site`.
extern "C" fn malloc_at(size: usize, site: usize) -> *mut c_void {
    let Some((next, shim)) = parts() else {
        return ip::bootstrap_alloc(size);
    };
    shim.and_then(|s| s.take(size, MALLOC_ALIGN, false, site))
        .unwrap_or_else(|| next.malloc(size))
}

/// `free(3)`.
///
/// # Safety
/// The C library's contract: `p` is null or a live allocation.
#[no_mangle]
pub unsafe extern "C" fn free(p: *mut c_void) {
    if p.is_null() || ip::is_bootstrap(p) {
        return;
    }
    if arena::slot_of(p).is_some() {
        // SAFETY: an arena handed p out, and the caller gives it up.
        unsafe { arena::free(p) };
        return;
    }
    let Some((next, shim)) = parts() else {
        return;
    };
    // SAFETY: p is a live allocation (the caller's contract).
    if let Some(b) = unsafe { own(shim, p) } {
        if let Some(s) = shim {
            s.release(&b);
        }
        return;
    }
    // SAFETY: p is not ours, so it came from the program's allocator.
    unsafe { next.free(p) }
}

/// `calloc(3)`: passes its caller's return address on to `calloc_at`.
///
/// # Safety
/// The C library's contract.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    core::arch::naked_asm!("mov rdx, [rsp]", "jmp {f}@PLT", f = sym calloc_at)
}

/// `calloc(3)`, without call sites.
///
/// # Safety
/// The C library's contract.
#[cfg(not(target_arch = "x86_64"))]
#[no_mangle]
pub unsafe extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    calloc_at(n, size, 0)
}

/// `calloc` called from `site`.
extern "C" fn calloc_at(n: usize, size: usize, site: usize) -> *mut c_void {
    let Some((next, shim)) = parts() else {
        return n.checked_mul(size).map_or(null_mut(), ip::bootstrap_alloc);
    };
    // A fresh mapping reads as zeros: only a reused block is cleared.
    n.checked_mul(size)
        .and_then(|total| shim.and_then(|s| s.take(total, MALLOC_ALIGN, true, site)))
        .unwrap_or_else(|| next.calloc(n, size))
}

/// `realloc(3)`: passes its caller's return address on to `realloc_at`.
///
/// # Safety
/// The C library's contract: `p` is null or a live allocation.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    core::arch::naked_asm!("mov rdx, [rsp]", "jmp {f}@PLT", f = sym realloc_at)
}

/// `realloc(3)`, without call sites.
///
/// # Safety
/// The C library's contract: `p` is null or a live allocation.
#[cfg(not(target_arch = "x86_64"))]
#[no_mangle]
pub unsafe extern "C" fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: the caller's contract.
    unsafe { realloc_at(p, size, 0) }
}

/// `realloc` called from `site`.
///
/// # Safety
/// The C library's contract: `p` is null or a live allocation.
unsafe extern "C" fn realloc_at(p: *mut c_void, size: usize, site: usize) -> *mut c_void {
    if p.is_null() {
        return malloc_at(size, site);
    }
    let Some((next, shim)) = parts() else {
        return null_mut();
    };
    let moved = |new: *mut c_void, old_len: usize| {
        if !new.is_null() {
            // SAFETY: both blocks are live, distinct, and at least min(old_len, size) long.
            unsafe { std::ptr::copy_nonoverlapping(p.cast::<u8>(), new.cast(), old_len.min(size)) };
        }
        new
    };
    if ip::is_bootstrap(p) {
        // SAFETY: p came from the bootstrap arena.
        let old = unsafe { ip::bootstrap_size(p) };
        return moved(malloc_at(size, site), old);
    }
    if arena::slot_of(p).is_some() {
        // SAFETY: an arena handed p out and it is live.
        let old = unsafe { arena::usable_size(p) };
        if size <= old && size > old / 2 {
            return p;
        }
        let new = moved(malloc_at(size, site), old);
        if !new.is_null() || size == 0 {
            // SAFETY: p is the arena's, and its data now lives in `new` (or size 0 frees it).
            unsafe { arena::free(p) };
        }
        return new;
    }
    // SAFETY: p is a live allocation (the caller's contract).
    if let Some(b) = unsafe { own(shim, p) } {
        if size == 0 {
            // SAFETY: p is live.
            unsafe { free(p) };
            return null_mut();
        }
        if size <= usable(&b) && size as u64 >= shim.map_or(0, |s| s.min_size) {
            return p;
        }
        let new = shim
            .and_then(|s| s.take(size, MALLOC_ALIGN, false, site))
            .unwrap_or_else(|| next.malloc(size));
        if new.is_null() {
            return new;
        }
        let new = moved(new, b.requested.min(usable(&b)));
        if let Some(s) = shim {
            s.release(&b);
        }
        return new;
    }
    if let Some(s) = shim.filter(|s| s.active && size as u64 >= s.min_size) {
        // SAFETY: p is the program allocator's and live.
        if let Some(old) = unsafe { next.usable_size(p) } {
            if let Some(new) = s.take(size, MALLOC_ALIGN, false, site) {
                let new = moved(new, old);
                // SAFETY: p is the program allocator's, and its data now lives in `new`.
                unsafe { next.free(p) };
                return new;
            }
        }
    }
    // SAFETY: p is the program allocator's and live.
    unsafe { next.realloc(p, size) }
}

fn aligned(align: usize, size: usize, fallback: impl FnOnce(&Next) -> *mut c_void) -> *mut c_void {
    let Some((next, shim)) = parts() else {
        return if align <= MALLOC_ALIGN {
            ip::bootstrap_alloc(size)
        } else {
            null_mut()
        };
    };
    shim.and_then(|s| s.take(size, align.max(MALLOC_ALIGN), false, 0))
        .unwrap_or_else(|| fallback(next))
}

/// `posix_memalign(3)`.
///
/// # Safety
/// The C library's contract: `out` is valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> i32 {
    if !align.is_power_of_two() || !align.is_multiple_of(std::mem::size_of::<usize>()) {
        return libc::EINVAL;
    }
    if let Some((next, shim)) = parts() {
        if let Some(p) = shim.and_then(|s| s.take(size, align.max(MALLOC_ALIGN), false, 0)) {
            // SAFETY: out is valid for a write (the caller's contract).
            unsafe { out.write(p) };
            return 0;
        }
        // SAFETY: as above.
        return unsafe { next.posix_memalign(out, align, size) };
    }
    libc::ENOMEM
}

/// `aligned_alloc(3)`.
///
/// # Safety
/// The C library's contract.
#[no_mangle]
pub unsafe extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
    aligned(align, size, |n| n.aligned_alloc(align, size))
}

/// `memalign(3)`.
///
/// # Safety
/// The C library's contract.
#[no_mangle]
pub unsafe extern "C" fn memalign(align: usize, size: usize) -> *mut c_void {
    aligned(align, size, |n| n.memalign(align, size))
}

/// `valloc(3)`.
///
/// # Safety
/// The C library's contract.
#[no_mangle]
pub unsafe extern "C" fn valloc(size: usize) -> *mut c_void {
    aligned(4096, size, |n| n.memalign(4096, size))
}

/// `pvalloc(3)`.
///
/// # Safety
/// The C library's contract.
#[no_mangle]
pub unsafe extern "C" fn pvalloc(size: usize) -> *mut c_void {
    let size = size.next_multiple_of(4096);
    aligned(4096, size, |n| n.memalign(4096, size))
}

/// `malloc_usable_size(3)`.
///
/// # Safety
/// The C library's contract: `p` is null or a live allocation.
#[no_mangle]
pub unsafe extern "C" fn malloc_usable_size(p: *mut c_void) -> usize {
    if p.is_null() {
        return 0;
    }
    if ip::is_bootstrap(p) {
        // SAFETY: p came from the bootstrap arena.
        return unsafe { ip::bootstrap_size(p) };
    }
    if arena::slot_of(p).is_some() {
        // SAFETY: an arena handed p out and it is live.
        return unsafe { arena::usable_size(p) };
    }
    let Some((next, shim)) = parts() else {
        return 0;
    };
    // SAFETY: p is a live allocation.
    if let Some(b) = unsafe { own(shim, p) } {
        return usable(&b);
    }
    // SAFETY: p is the program allocator's and live.
    unsafe { next.usable_size(p) }.unwrap_or(0)
}

/// Whether a mapping with these flags is one the library adopts: private, anonymous, at an
/// address of the kernel's choice, not a stack and not hugetlb.
fn adoptable(flags: i32) -> bool {
    flags & (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS) == libc::MAP_PRIVATE | libc::MAP_ANONYMOUS
        && flags
            & (libc::MAP_FIXED
                | libc::MAP_FIXED_NOREPLACE
                | libc::MAP_STACK
                | libc::MAP_GROWSDOWN
                | libc::MAP_HUGETLB)
            == 0
}

/// `mmap(2)`: made as asked; a large private anonymous mapping is then adopted.
///
/// # Safety
/// The C library's contract.
#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: usize,
    prot: i32,
    flags: i32,
    fd: i32,
    off: i64,
) -> *mut c_void {
    // SAFETY: the caller's contract is mmap's.
    match unsafe { ip::raw_mmap_any(addr, len, prot, flags, fd, off) } {
        Ok(p) => {
            // Only once the settings are read: the reading itself may map memory.
            if let Some(Some(s)) = SHIM.get() {
                if adoptable(flags) {
                    s.adopt(p, len, prot == libc::PROT_NONE);
                }
            }
            p as *mut c_void
        }
        Err(e) => {
            ip::set_errno(e);
            libc::MAP_FAILED
        }
    }
}

/// `mmap64(2)`: the same as [`mmap`] on 64-bit Linux.
///
/// # Safety
/// The C library's contract.
#[no_mangle]
pub unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: usize,
    prot: i32,
    flags: i32,
    fd: i32,
    off: i64,
) -> *mut c_void {
    // SAFETY: the same contract.
    unsafe { mmap(addr, len, prot, flags, fd, off) }
}

/// `munmap(2)`: unmapped as asked; adopted mappings it removes are logged as freed.
///
/// # Safety
/// The C library's contract.
#[no_mangle]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: usize) -> i32 {
    // SAFETY: the caller's contract is munmap's.
    match unsafe { ip::raw_munmap_any(addr, len) } {
        Ok(()) => {
            if let Some(Some(s)) = SHIM.get() {
                s.unmapped(addr as usize, len);
            }
            0
        }
        Err(e) => {
            ip::set_errno(e);
            -1
        }
    }
}

/// `mremap(2)`: moved or resized as asked; an adopted mapping is logged as freed and the result
/// adopted anew.
///
/// # Safety
/// The C library's contract (`new_addr` is read only with `MREMAP_FIXED`).
#[no_mangle]
pub unsafe extern "C" fn mremap(
    old: *mut c_void,
    old_len: usize,
    new_len: usize,
    flags: i32,
    new_addr: *mut c_void,
) -> *mut c_void {
    // SAFETY: the caller's contract is mremap's.
    match unsafe { ip::raw_mremap_any(old, old_len, new_len, flags, new_addr) } {
        Ok(p) => {
            if let Some(Some(s)) = SHIM.get() {
                if s.unmapped(old as usize, old_len) {
                    s.adopt(p, new_len, false);
                }
            }
            p as *mut c_void
        }
        Err(e) => {
            ip::set_errno(e);
            libc::MAP_FAILED
        }
    }
}
