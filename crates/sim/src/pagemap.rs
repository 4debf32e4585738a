//! The simulated process's page table at 2 MiB granularity: which page size maps each 2 MiB
//! frame, which of its 4 KiB pages are mapped (touched) and which have their accessed bit set.
//!
//! Frames inside the trace's regions get dense ids in address order; frames outside them
//! (an imported trace's stray addresses) get ids on first sight.

use hugewise_sys::PageSize;
use hugewise_trace::Region;

/// Bytes of a 2 MiB frame.
pub const FRAME: u64 = 2 << 20;
/// 4 KiB pages in a frame.
pub const PAGES: usize = 512;

/// A frame's id (index into the map's tables).
pub type FrameId = u32;

#[derive(Debug, Clone, Copy)]
struct Span {
    base: u64,
    len: u64,
    first: FrameId,
}

/// Frame number to id: open addressing with linear probing, at most half full, so that a
/// lookup is a multiply, a load and a compare whatever region the address is in.
#[derive(Debug, Clone)]
pub(crate) struct FrameTable {
    keys: Vec<u64>,
    ids: Vec<FrameId>,
    len: usize,
    shift: u32,
}

impl Default for FrameTable {
    fn default() -> Self {
        FrameTable {
            keys: vec![u64::MAX; 16],
            ids: vec![0; 16],
            len: 0,
            shift: 64 - 4,
        }
    }
}

impl FrameTable {
    #[inline]
    fn slot(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    #[inline]
    pub(crate) fn get(&self, key: u64) -> Option<FrameId> {
        let mask = self.keys.len() - 1;
        let mut i = self.slot(key);
        loop {
            let k = self.keys[i];
            if k == key {
                return Some(self.ids[i]);
            }
            if k == u64::MAX {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    pub(crate) fn insert(&mut self, key: u64, id: FrameId) {
        if (self.len + 1) * 2 > self.keys.len() {
            let old: Vec<(u64, FrameId)> = self
                .keys
                .iter()
                .zip(&self.ids)
                .filter(|(k, _)| **k != u64::MAX)
                .map(|(k, v)| (*k, *v))
                .collect();
            let cap = self.keys.len() * 2;
            self.keys = vec![u64::MAX; cap];
            self.ids = vec![0; cap];
            self.shift = 64 - cap.trailing_zeros();
            self.len = 0;
            for (k, v) in old {
                self.insert(k, v);
            }
        }
        let mask = self.keys.len() - 1;
        let mut i = self.slot(key);
        while self.keys[i] != u64::MAX && self.keys[i] != key {
            i = (i + 1) & mask;
        }
        if self.keys[i] == u64::MAX {
            self.len += 1;
        }
        self.keys[i] = key;
        self.ids[i] = id;
    }
}

/// Per-frame state other than its page size.
#[derive(Debug, Clone, Default)]
pub struct Frame {
    /// First address.
    pub base: u64,
    /// 4 KiB pages ever touched (a promoted frame counts all 512).
    pub mapped: [u64; 8],
    /// Accessed bits, set by walks (or by every access when the policy asks for precise
    /// bits) and cleared by the policy that scans them.
    pub accessed: [u64; 8],
    /// Pages in `mapped`.
    pub n_mapped: u16,
    /// The span (trace region) holding the frame, if any.
    pub span: Option<u32>,
}

impl Frame {
    /// Accessed bits set.
    pub fn n_accessed(&self) -> u32 {
        self.accessed.iter().map(|w| w.count_ones()).sum()
    }
}

/// The page table.
#[derive(Debug, Clone)]
pub struct PageMap {
    spans: Vec<Span>,
    table: FrameTable,
    /// Page size code (0 = 4 KiB, 1 = 2 MiB, 2 = 1 GiB) per frame: the per-access lookup.
    sizes: Vec<u8>,
    frames: Vec<Frame>,
    footprint: u64,
    regions: Vec<Region>,
}

impl PageMap {
    /// The frames of `regions`, all mapped by 4 KiB pages and untouched.
    pub fn new(regions: &[Region]) -> PageMap {
        let mut m = PageMap {
            spans: Vec::new(),
            table: FrameTable::default(),
            sizes: Vec::new(),
            frames: Vec::new(),
            footprint: 0,
            regions: regions.to_vec(),
        };
        for (i, r) in regions.iter().enumerate() {
            if r.size == 0 {
                continue;
            }
            let mut base = r.base & !(FRAME - 1);
            let end = (r.base + r.size).div_ceil(FRAME) * FRAME;
            // Regions share no frame in a hugewise capture; if an imported trace's do, the
            // later one starts at the next frame.
            if let Some(prev) = m.spans.last() {
                base = base.max(prev.base + prev.len);
            }
            if end <= base {
                continue;
            }
            let first = m.frames.len() as FrameId;
            for k in 0..(end - base) / FRAME {
                m.frames.push(Frame {
                    base: base + k * FRAME,
                    span: Some(i as u32),
                    ..Frame::default()
                });
                m.sizes.push(0);
            }
            m.spans.push(Span {
                base,
                len: end - base,
                first,
            });
        }
        m.footprint = m.frames.len() as u64 * FRAME;
        for (id, f) in m.frames.iter().enumerate() {
            m.table.insert(f.base >> 21, id as FrameId);
        }
        m
    }

    /// The trace's regions.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// Bytes of the regions' frames: what a budget is a share of.
    pub fn footprint(&self) -> u64 {
        self.footprint
    }

    /// The frame holding `addr`.
    #[inline]
    pub fn id(&mut self, addr: u64) -> FrameId {
        match self.table.get(addr >> 21) {
            Some(id) => id,
            None => self.id_slow(addr),
        }
    }

    #[inline(never)]
    fn id_slow(&mut self, addr: u64) -> FrameId {
        let f = addr >> 21;
        let id = self.frames.len() as FrameId;
        self.frames.push(Frame {
            base: f << 21,
            ..Frame::default()
        });
        self.sizes.push(0);
        self.table.insert(f, id);
        id
    }

    /// Page size mapping frame `id`.
    #[inline]
    pub fn size(&self, id: FrameId) -> PageSize {
        match self.sizes[id as usize] {
            0 => PageSize::Size4K,
            1 => PageSize::Size2M,
            _ => PageSize::Size1G,
        }
    }

    /// Change the page size of frame `id` (the caller keeps budgets and TLBs right).
    pub fn set_size(&mut self, id: FrameId, size: PageSize) {
        self.sizes[id as usize] = crate::tlb::size_code(size) as u8;
        if size != PageSize::Size4K {
            let f = &mut self.frames[id as usize];
            f.mapped = [u64::MAX; 8];
            f.n_mapped = PAGES as u16;
        }
    }

    /// A frame's state.
    #[inline]
    pub fn frame(&self, id: FrameId) -> &Frame {
        &self.frames[id as usize]
    }

    /// A frame's state, to change.
    #[inline]
    pub fn frame_mut(&mut self, id: FrameId) -> &mut Frame {
        &mut self.frames[id as usize]
    }

    /// Frames known so far (the regions' and any outside seen).
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Whether no frame is known.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// The 512 frames of the 1 GiB page holding frame `id`, if they are all in one region
    /// (a 1 GiB page cannot straddle mappings).
    pub fn gigabyte_of(&self, id: FrameId) -> Option<std::ops::Range<FrameId>> {
        let f = &self.frames[id as usize];
        let span = self.spans.get(f.span? as usize).or_else(|| {
            self.spans
                .iter()
                .find(|s| f.base.wrapping_sub(s.base) < s.len)
        })?;
        let g = f.base & !((1u64 << 30) - 1);
        if g < span.base || g + (1 << 30) > span.base + span.len {
            return None;
        }
        let first = span.first + ((g - span.base) >> 21) as FrameId;
        Some(first..first + PAGES as FrameId)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(name: &str, base: u64, size: u64) -> Region {
        Region {
            name: name.into(),
            base,
            size,
        }
    }

    #[test]
    fn dense_ids_by_region_then_outside() {
        let mut m = PageMap::new(&[
            region("a", 0x4000_0000, 3 * FRAME + 5),
            region("b", 0x8000_0000, 1 << 30),
        ]);
        assert_eq!(m.len(), 4 + 512);
        assert_eq!(m.footprint(), (4 + 512) * FRAME);
        assert_eq!(m.id(0x4000_0000), 0);
        assert_eq!(m.id(0x4000_0000 + 3 * FRAME + 4), 3);
        assert_eq!(m.id(0x8000_0000 + FRAME), 5);
        let out = m.id(0x1234_5678);
        assert_eq!(out, 516);
        assert_eq!(m.id(0x1234_0000), 516);
        assert_eq!(m.frame(out).base, 0x1220_0000);
        assert_eq!(m.gigabyte_of(5), Some(4..516));
        assert_eq!(m.gigabyte_of(0), None);
        m.set_size(5, PageSize::Size2M);
        assert_eq!(m.size(5), PageSize::Size2M);
        assert_eq!(m.frame(5).n_mapped, 512);
    }
}
