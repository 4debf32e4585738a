//! One simulated configuration: a TLB hierarchy per core, the page table, a policy and its
//! budget, fed the trace's accesses in order. Simulated time is counted in accesses.

use hugewise_sys::PageSize;
use hugewise_trace::Header;
use serde::Serialize;

use crate::config::TlbConfig;
use crate::pagemap::{PageMap, FRAME};
use crate::physmem::{PhysMem, PhysSpec};
use crate::policy::{share_of, Budget, Ctx, PlanEvent, Policy, Timing, Walk};
use crate::tlb::{Counts, Hierarchy, Outcome};
use crate::Result;

/// Pages remembered as having their accessed bit set (direct-mapped by page number).
const SET_BITS: usize = 512;

/// A configuration being simulated.
pub struct Machine {
    /// Pages whose accessed bit is known to be set since the policy last ticked
    /// (`u64::MAX`: none): setting it again is skipped. Policies clear bits only when they
    /// tick, so this is forgotten then.
    set_bits: [u64; SET_BITS],
    tlbs: Vec<Hierarchy>,
    map: PageMap,
    policy: Box<dyn Policy>,
    budget: Budget,
    plan: Vec<PlanEvent>,
    now: u64,
    next_tick: u64,
    interval: u64,
    precise: bool,
    started: bool,
    /// Accesses of stream 0 still to run as warm-up.
    warmup_left: u64,
    /// Stream 0's counts when its warm-up ended, left out of the totals.
    warm: Counts,
    /// Physical memory, when modelled.
    phys: Option<PhysMem>,
    /// Counted walks per trace region, and last those outside every region.
    walks_by_region: Vec<u64>,
}

/// What a configuration did over the whole trace.
#[derive(Debug, Clone, Serialize)]
pub struct Totals {
    /// TLB counts over all cores.
    pub counts: Counts,
    /// Huge-page use.
    pub budget: Budget,
    /// Bytes in huge pages at the end.
    pub huge_bytes: u64,
    /// Bytes the budget is a share of (the trace regions' 2 MiB frames).
    pub footprint_bytes: u64,
    /// Physical memory, when modelled.
    pub phys: Option<hugewise_results::sim::PhysRecord>,
    /// Counted walks per trace region, in the header's order, and last those outside every
    /// region.
    pub walks_by_region: Vec<u64>,
}

impl Machine {
    /// A machine for a trace with `header`, TLBs shaped by `tlb`, `policy`, and a budget of
    /// `share` of the footprint (`None`: unlimited).
    pub fn new(
        tlb: &TlbConfig,
        header: &Header,
        policy: Box<dyn Policy>,
        share: Option<f64>,
    ) -> Result<Machine> {
        policy.check(&header.regions)?;
        let map = PageMap::new(&header.regions);
        let frames = map.footprint() / FRAME;
        let interval = policy.interval().unwrap_or(0);
        Ok(Machine {
            set_bits: [u64::MAX; SET_BITS],
            tlbs: (0..header.streams.max(1))
                .map(|_| Hierarchy::new(tlb))
                .collect(),
            budget: Budget {
                limit_frames: share.map(|s| share_of(s, frames).floor() as u64),
                ..Budget::default()
            },
            precise: policy.precise_access_bits(),
            policy,
            map,
            plan: Vec::new(),
            now: 0,
            next_tick: if interval > 0 { interval } else { u64::MAX },
            interval,
            started: false,
            warmup_left: 0,
            warm: Counts::default(),
            phys: None,
            walks_by_region: vec![0; header.regions.len() + 1],
        })
    }

    /// Model physical memory as `spec` says: promotions then need a free 2 MiB block, and
    /// compaction makes them (see [`crate::physmem`]). Its clock is counted by `timing`.
    pub fn with_phys(mut self, spec: &PhysSpec, timing: &Timing) -> Result<Machine> {
        self.phys = Some(PhysMem::new(spec, self.map.footprint(), timing)?);
        Ok(self)
    }

    /// Run the first `accesses` of stream 0 as warm-up: they fill the TLBs, map pages and let
    /// the policy act (a trace's first-touch prologue, as the program's loading did). Their
    /// TLB counts are left out of [`Machine::totals`], which then count the kernel alone; what
    /// the policy did meanwhile (promotions, huge bytes, the budget) stays, as the machine's
    /// state when the kernel starts. Other streams have no warm-up. A warm-up longer than
    /// stream 0 leaves nothing of it counted. Call before the first [`Machine::feed`].
    pub fn with_warmup(mut self, accesses: u64) -> Machine {
        self.warmup_left = accesses;
        self
    }

    /// The policy's label.
    pub fn label(&self) -> String {
        self.policy.label()
    }

    /// Feed `accesses` (packed, [`hugewise_trace::Access::pack`]) of core `stream`.
    pub fn feed(&mut self, stream: u16, accesses: &[u64]) {
        if !self.started {
            self.started = true;
            self.with_policy(true, |p, cx| p.start(cx));
        }
        let s = (stream as usize).min(self.tlbs.len() - 1) as u16;
        if s == 0 && self.warmup_left > 0 {
            let k = self.warmup_left.min(accesses.len() as u64) as usize;
            self.run(0, &accesses[..k]);
            self.warmup_left -= k as u64;
            if self.warmup_left > 0 {
                return;
            }
            self.warm = self.tlbs[0].counts;
            self.run(0, &accesses[k..]);
            return;
        }
        self.run(s, accesses);
    }

    fn run(&mut self, stream: u16, accesses: &[u64]) {
        let mut rest = accesses;
        while !rest.is_empty() {
            // The next tick (the policy's or physical memory's) fires just before the access
            // that makes `now` reach it; the accesses before it run without looking at the
            // clock.
            let next = self.next_event();
            let before_tick = next.saturating_sub(self.now + 1);
            let k = (before_tick.min(rest.len() as u64)) as usize;
            self.run_between_ticks(stream, &rest[..k]);
            rest = &rest[k..];
            if let Some((&p, tail)) = rest.split_first() {
                // The ticks happen at that access's time, then the access runs.
                self.now += 1;
                if self.now >= self.next_tick {
                    self.tick();
                }
                if let Some(phys) = self.phys.as_mut().filter(|m| self.now >= m.next_at()) {
                    let wanted = match self.policy.promotes() {
                        true => self.budget.left(),
                        false => 0,
                    };
                    phys.tick(&self.map, wanted, self.now);
                }
                self.now -= 1;
                self.run_between_ticks(stream, std::slice::from_ref(&p));
                rest = tail;
            }
        }
    }

    fn next_event(&self) -> u64 {
        match &self.phys {
            Some(m) => self.next_tick.min(m.next_at()),
            None => self.next_tick,
        }
    }

    /// Accesses with no tick among them. `now` is the time before the first; it is
    /// brought up to date before the policy hears a walk, and at the end.
    #[inline]
    fn run_between_ticks(&mut self, stream: u16, accesses: &[u64]) {
        let s = stream as usize;
        let start = self.now;
        if self.precise {
            self.set_accessed_bits(accesses);
        }
        self.tlbs[s].counts.accesses += accesses.len() as u64;
        let mut j = 0;
        while j < accesses.len() {
            // Most accesses hit an L1 structure probed without the page table: a tight loop
            // runs them.
            j += self.tlbs[s].l1_hits(&accesses[j..]);
            let Some(&p) = accesses.get(j) else {
                break;
            };
            let addr = p >> 1;
            let map = &mut self.map;
            let out = self.tlbs[s].translate_past_l1(addr, || {
                let id = map.id(addr);
                map.size(id)
            });
            if let Outcome::Walk(_) = out {
                self.now = start + j as u64 + 1;
                let id = self.map.id(addr);
                let size = self.map.size(id);
                self.walked(stream, id, addr, size);
            }
            j += 1;
        }
        self.now = start + accesses.len() as u64;
    }

    /// Precise accessed bits for accesses with no tick among them, set before they run.
    /// Policies read and clear accessed bits only when they tick, and walks set the same
    /// bits, so setting them all at the start of the stretch changes nothing they see.
    fn set_accessed_bits(&mut self, accesses: &[u64]) {
        for &p in accesses {
            let addr = p >> 1;
            let page = addr >> 12;
            let slot = page as usize % SET_BITS;
            if self.set_bits[slot] != page {
                self.set_bits[slot] = page;
                let id = self.map.id(addr);
                let bit = (page & 511) as usize;
                self.map.frame_mut(id).accessed[bit >> 6] |= 1 << (bit & 63);
            }
        }
    }

    #[inline(never)]
    fn walked(&mut self, stream: u16, id: u32, addr: u64, size: PageSize) {
        let page = ((addr >> 12) & 511) as usize;
        let (w, bit) = (page >> 6, 1u64 << (page & 63));
        let f = self.map.frame_mut(id);
        // Stream 0's warm-up walks are not counted, as its TLB counts are not.
        if stream != 0 || self.warmup_left == 0 {
            let last = self.walks_by_region.len() - 1;
            let r = f.span.map_or(last, |s| (s as usize).min(last));
            self.walks_by_region[r] += 1;
        }
        let frame_seen = f.n_mapped > 0;
        let first_touch = f.mapped[w] & bit == 0;
        if first_touch {
            f.mapped[w] |= bit;
            f.n_mapped += 1;
        }
        f.accessed[w] |= bit;
        let walk = Walk {
            stream,
            frame: id,
            addr,
            size,
            frame_seen,
            first_touch,
        };
        self.with_policy(false, |p, cx| p.on_walk(cx, &walk));
        // A first touch the policy did not make huge (THP at fault) takes a base page.
        if first_touch && self.map.size(id) == PageSize::Size4K {
            if let Some(m) = self.phys.as_mut() {
                m.touch(id, page, self.now);
            }
        }
    }

    #[inline(never)]
    fn tick(&mut self) {
        self.with_policy(true, |p, cx| p.on_tick(cx));
        if self.precise {
            self.set_bits = [u64::MAX; SET_BITS];
        }
        self.next_tick = self.next_tick.saturating_add(self.interval);
    }

    /// Let the policy act on the machine at the current time (`ticking`: at its start or a
    /// tick, where it may demote).
    fn with_policy(&mut self, ticking: bool, act: impl FnOnce(&mut dyn Policy, &mut Ctx<'_>)) {
        let mut cx = Ctx {
            now: self.now,
            map: &mut self.map,
            tlbs: &mut self.tlbs,
            budget: &mut self.budget,
            plan: &mut self.plan,
            phys: self.phys.as_mut(),
            ticking,
        };
        act(self.policy.as_mut(), &mut cx);
    }

    /// Counts so far, the warm-up's left out.
    pub fn totals(&self) -> Totals {
        let mut counts = Counts::default();
        for t in &self.tlbs {
            counts.add(&t.counts);
        }
        if self.warmup_left == 0 {
            counts.sub(&self.warm);
        } else {
            // Still warming up: nothing counted yet.
            counts.sub(&self.tlbs[0].counts);
        }
        Totals {
            counts,
            budget: self.budget,
            huge_bytes: self.budget.used_frames * FRAME,
            footprint_bytes: self.map.footprint(),
            phys: self.phys.as_ref().map(|m| m.record(self.now)),
            walks_by_region: self.walks_by_region.clone(),
        }
    }

    /// The promotions and demotions made, in order.
    pub fn plan(&self) -> &[PlanEvent] {
        &self.plan
    }
}
