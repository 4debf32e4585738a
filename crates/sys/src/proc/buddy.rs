//! `/proc/buddyinfo` and the kernel's fragmentation indices computed from it.

use std::path::Path;

use serde::Serialize;

use crate::{Error, Result};

/// Free blocks of one zone, by order (index 0 = 4 KiB blocks, 9 = 2 MiB, 10 = 4 MiB).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BuddyZone {
    /// NUMA node.
    pub node: u32,
    /// Zone name (DMA, DMA32, Normal, Movable).
    pub zone: String,
    /// Free block count per order.
    pub free_blocks: Vec<u64>,
}

impl BuddyZone {
    /// Free 4 KiB pages in the zone.
    pub fn free_pages(&self) -> u64 {
        self.free_blocks
            .iter()
            .enumerate()
            .map(|(o, n)| n << o)
            .sum()
    }

    /// How many blocks of `order` the free lists could serve without compaction.
    pub fn suitable_blocks(&self, order: usize) -> u64 {
        self.free_blocks
            .iter()
            .enumerate()
            .skip(order)
            .map(|(o, n)| n << (o - order))
            .sum()
    }
}

pub(super) fn parse(path: &Path, text: &str) -> Result<Vec<BuddyZone>> {
    let mut zones = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |m: &str| Error::parse(path, i + 1, format!("{m}: {line:?}"));
        // "Node 0, zone   Normal    377    135 ..."
        let rest = line
            .strip_prefix("Node ")
            .ok_or_else(|| bad("expected 'Node'"))?;
        let (node, rest) = rest.split_once(',').ok_or_else(|| bad("expected ','"))?;
        let node = node.trim().parse().map_err(|_| bad("bad node number"))?;
        let rest = rest
            .trim_start()
            .strip_prefix("zone")
            .ok_or_else(|| bad("expected 'zone'"))?;
        let mut fields = rest.split_whitespace();
        let zone = fields
            .next()
            .ok_or_else(|| bad("missing zone name"))?
            .to_string();
        let free_blocks = fields
            .map(|f| f.parse::<u64>().map_err(|_| bad("bad block count")))
            .collect::<Result<Vec<_>>>()?;
        if free_blocks.is_empty() {
            return Err(bad("no block counts"));
        }
        zones.push(BuddyZone {
            node,
            zone,
            free_blocks,
        });
    }
    Ok(zones)
}

/// The kernel's unusable free space index for `order` (as in debugfs `extfrag/unusable_index`):
/// the share of free memory that cannot serve an allocation of that order. 0 = all usable.
pub fn unusable_index(zone: &BuddyZone, order: usize) -> f64 {
    let free = zone.free_pages();
    if free == 0 {
        return 0.0;
    }
    let usable = zone.suitable_blocks(order) << order;
    (free - usable) as f64 / free as f64
}

/// Free memory of several zones taken together (one node's, or the machine's) as an
/// allocation of one order sees it: how many blocks of that order the free lists could serve
/// now, and how much of the free memory is too broken up to serve any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FreeAtOrder {
    /// The order (9: 2 MiB blocks of 4 KiB pages).
    pub order: usize,
    /// Free 4 KiB pages.
    pub free_pages: u64,
    /// Blocks of `order` the free lists could serve without compaction.
    pub blocks: u64,
}

impl FreeAtOrder {
    /// Add up `zones` (those of `node` only, when given).
    pub fn of(zones: &[BuddyZone], node: Option<u32>, order: usize) -> FreeAtOrder {
        let mine = || zones.iter().filter(|z| node.is_none_or(|n| z.node == n));
        FreeAtOrder {
            order,
            free_pages: mine().map(BuddyZone::free_pages).sum(),
            blocks: mine().map(|z| z.suitable_blocks(order)).sum(),
        }
    }

    /// Free pages that no block of the order holds: free memory an allocation of the order
    /// cannot use until compaction moves what is around it.
    pub fn unusable_pages(&self) -> u64 {
        self.free_pages.saturating_sub(self.blocks << self.order)
    }

    /// The unusable free space index of the zones together (see [`unusable_index`]): 0 when
    /// nothing is free.
    pub fn unusable_index(&self) -> f64 {
        if self.free_pages == 0 {
            return 0.0;
        }
        self.unusable_pages() as f64 / self.free_pages as f64
    }
}

/// The kernel's fragmentation index for `order` (as in debugfs `extfrag/extfrag_index`):
/// `None` when the allocation would succeed now (the kernel prints -1.000); towards 0 a failure
/// would be for lack of memory, towards 1 for fragmentation.
pub fn fragmentation_index(zone: &BuddyZone, order: usize) -> Option<f64> {
    let total_blocks: u64 = zone.free_blocks.iter().sum();
    if zone.suitable_blocks(order) > 0 {
        return None;
    }
    if total_blocks == 0 {
        return Some(0.0);
    }
    // Integer arithmetic in thousandths, exactly as mm/vmstat.c does it.
    let requested = 1u64 << order;
    let milli = 1000 - (1000 + zone.free_pages() * 1000 / requested) / total_blocks;
    Some(milli as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(blocks: &[u64]) -> BuddyZone {
        BuddyZone {
            node: 0,
            zone: "Normal".into(),
            free_blocks: blocks.to_vec(),
        }
    }

    #[test]
    fn parses_a_recorded_sample() {
        let text = include_str!("../../tests/samples/buddyinfo-6.18.txt");
        let z = parse(Path::new("buddyinfo"), text).expect("parse");
        assert_eq!(z.len(), 3);
        assert_eq!(z[2].zone, "Normal");
        assert_eq!(z[2].free_blocks[10], 18);
        assert_eq!(z[1].free_blocks.len(), 11);
    }

    #[test]
    fn bad_line_is_named() {
        let e = parse(Path::new("b"), "Node 0, zone Normal 1 x 3\n").expect_err("bad");
        assert!(e.to_string().contains("b:1"), "{e}");
    }

    #[test]
    fn indices_by_hand() {
        // 8 free single pages, nothing larger: order 9 cannot be served at all.
        let z = zone(&[8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(z.free_pages(), 8);
        assert_eq!(unusable_index(&z, 9), 1.0);
        assert_eq!(unusable_index(&z, 0), 0.0);
        // free_pages*1000/512 = 15; (1000+15)/8 = 126; 1000-126 = 874.
        assert_eq!(fragmentation_index(&z, 9), Some(0.874));
        // One 4 MiB block: 2 MiB allocations succeed.
        let z = zone(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(z.suitable_blocks(9), 2);
        assert_eq!(fragmentation_index(&z, 9), None);
        assert_eq!(unusable_index(&z, 9), 0.0);
    }

    #[test]
    fn zones_add_up_per_node() {
        // Node 0: 512 single pages (one block's worth, unusable) and one 4 MiB block (2 blocks
        // of order 9); node 1: 1024 single pages.
        let mut a = zone(&[512, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        let mut b = zone(&[1024, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        a.node = 0;
        b.node = 1;
        let zones = [a, b];
        let n0 = FreeAtOrder::of(&zones, Some(0), 9);
        assert_eq!(
            (n0.free_pages, n0.blocks, n0.unusable_pages()),
            (1536, 2, 512)
        );
        assert!((n0.unusable_index() - 1.0 / 3.0).abs() < 1e-12);
        let all = FreeAtOrder::of(&zones, None, 9);
        // 2560 free pages, 1024 of them in the two blocks: 1536 / 2560 unusable.
        assert_eq!((all.free_pages, all.blocks), (2560, 2));
        assert!((all.unusable_index() - 0.6).abs() < 1e-12);
        assert_eq!(FreeAtOrder::of(&zones, Some(7), 9).unusable_index(), 0.0);
    }
}
