//! `/proc/pagetypeinfo`: free blocks per migrate type and pageblock counts per type.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::{Error, Result};

/// Free blocks of one migrate type in one zone, by order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PageTypeFree {
    /// NUMA node.
    pub node: u32,
    /// Zone name.
    pub zone: String,
    /// Migrate type (Unmovable, Movable, Reclaimable, HighAtomic, CMA, Isolate).
    pub migrate_type: String,
    /// Free block count per order.
    pub free_blocks: Vec<u64>,
}

/// The parsed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PageTypeInfo {
    /// Order of a pageblock (9 on x86-64: 2 MiB).
    pub pageblock_order: u32,
    /// Free lists per (node, zone, type).
    pub free: Vec<PageTypeFree>,
    /// Pageblocks per migrate type, per "node/zone".
    pub blocks: BTreeMap<String, BTreeMap<String, u64>>,
}

pub(super) fn parse(path: &Path, text: &str) -> Result<PageTypeInfo> {
    let mut pageblock_order = None;
    let mut free = Vec::new();
    let mut blocks = BTreeMap::new();
    let mut block_types: Vec<String> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let bad = |m: &str| Error::parse(path, i + 1, format!("{m}: {line:?}"));
        let t = line.trim();
        if let Some(v) = t.strip_prefix("Page block order:") {
            pageblock_order = Some(v.trim().parse().map_err(|_| bad("bad block order"))?);
        } else if let Some(v) = t.strip_prefix("Number of blocks type") {
            block_types = v.split_whitespace().map(str::to_string).collect();
        } else if t.starts_with("Node") {
            let (head, counts) = match t.split_once(", type") {
                // "Node 0, zone Normal, type Movable 1 2 3"
                Some((head, rest)) => {
                    let mut f = rest.split_whitespace();
                    let ty = f.next().ok_or_else(|| bad("missing migrate type"))?;
                    (head, Some((ty.to_string(), f.collect::<Vec<_>>())))
                }
                None => (t, None),
            };
            let (node, zone, rest) =
                node_zone(head).ok_or_else(|| bad("expected 'Node N, zone Z'"))?;
            match counts {
                Some((migrate_type, nums)) => {
                    let free_blocks = nums
                        .iter()
                        .map(|n| n.parse().map_err(|_| bad("bad count")))
                        .collect::<Result<Vec<u64>>>()?;
                    free.push(PageTypeFree {
                        node,
                        zone,
                        migrate_type,
                        free_blocks,
                    });
                }
                None => {
                    let nums = rest
                        .iter()
                        .map(|n| n.parse().map_err(|_| bad("bad block count")))
                        .collect::<Result<Vec<u64>>>()?;
                    if nums.len() != block_types.len() {
                        return Err(bad("block counts do not match the header's types"));
                    }
                    let per_type = block_types.iter().cloned().zip(nums).collect();
                    blocks.insert(format!("{node}/{zone}"), per_type);
                }
            }
        }
    }
    let pageblock_order =
        pageblock_order.ok_or_else(|| Error::parse(path, 0, "no 'Page block order' line"))?;
    Ok(PageTypeInfo {
        pageblock_order,
        free,
        blocks,
    })
}

/// Split "Node 0, zone Normal 48 557" into (0, "Normal", ["48", "557"]).
fn node_zone(s: &str) -> Option<(u32, String, Vec<&str>)> {
    let rest = s.strip_prefix("Node")?;
    let (node, rest) = rest.split_once(',')?;
    let rest = rest.trim_start().strip_prefix("zone")?;
    let mut f = rest.split_whitespace();
    let zone = f.next()?.to_string();
    Some((node.trim().parse().ok()?, zone, f.collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_recorded_sample() {
        let text = include_str!("../../tests/samples/pagetypeinfo-6.18.txt");
        let p = parse(Path::new("pagetypeinfo"), text).expect("parse");
        assert_eq!(p.pageblock_order, 9);
        assert_eq!(p.free.len(), 15);
        let movable = p
            .free
            .iter()
            .find(|f| f.zone == "DMA32" && f.migrate_type == "Movable")
            .expect("DMA32 Movable");
        assert_eq!(movable.free_blocks[10], 752);
        assert_eq!(p.blocks["0/Normal"]["Unmovable"], 48);
        assert_eq!(p.blocks["0/DMA32"]["Movable"], 1528);
    }

    #[test]
    fn missing_header_is_an_error() {
        assert!(parse(Path::new("p"), "Node 0, zone DMA 1 2\n").is_err());
    }
}
