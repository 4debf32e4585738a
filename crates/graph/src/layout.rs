//! Which page policy each array gets, and in which order arrays are faulted in.

use bytemuck::Pod;
use hugewise_mem::{AllocOrder, PolicyMap, Populate, Region, RegionOptions};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Result;

/// Names of the graph's own arrays, in the order the builder makes them.
pub const GRAPH_REGIONS: &[&str] = &["offsets", "edges", "weights", "in-offsets", "in-edges"];
/// Names of a kernel's working arrays.
pub const KERNEL_REGIONS: &[&str] = &["property", "frontier"];
/// Every name a `--pages` or `--alloc-order` may use.
pub const ALL_REGIONS: &[&str] = &[
    "offsets",
    "edges",
    "weights",
    "in-offsets",
    "in-edges",
    "property",
    "frontier",
];

/// Page policies per array as users write them (`all=base,property=thp-prefix:2%`), any of
/// [`ALL_REGIONS`] named.
pub fn parse_pages(s: &str) -> hugewise_mem::Result<PolicyMap> {
    PolicyMap::parse(s, ALL_REGIONS)
}

/// Page policies per array and the allocation order.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// Policy per array.
    pub pages: PolicyMap,
    /// Who is faulted in first.
    pub order: AllocOrder,
}

impl Default for Layout {
    fn default() -> Self {
        Layout {
            pages: PolicyMap::default(),
            order: AllocOrder::Natural,
        }
    }
}

/// A layout as written on the command line: what [`Layout`] is saved as and read back from,
/// so that the same parser checks it.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LayoutText {
    pages: String,
    order: String,
}

impl Serialize for Layout {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        LayoutText {
            pages: self.pages.to_string(),
            order: self.order.to_string(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Layout {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Layout, D::Error> {
        let t = LayoutText::deserialize(d)?;
        Layout::parse(&t.pages, &t.order).map_err(serde::de::Error::custom)
    }
}

impl Layout {
    /// Parse `--pages` (e.g. `all=base,property=thp`) and `--alloc-order` (`natural`,
    /// `property-first`, or a list).
    pub fn parse(pages: &str, order: &str) -> Result<Layout> {
        Ok(Layout {
            pages: PolicyMap::parse(pages, ALL_REGIONS)?,
            order: AllocOrder::parse(order, ALL_REGIONS)?,
        })
    }

    /// Whether a kernel's arrays are to be faulted in before the graph's.
    pub fn kernel_first(&self) -> bool {
        let order = self.order.arrange(ALL_REGIONS);
        let first_kernel = order.iter().position(|n| KERNEL_REGIONS.contains(n));
        let first_graph = order.iter().position(|n| GRAPH_REGIONS.contains(n));
        matches!((first_kernel, first_graph), (Some(k), Some(g)) if k < g)
    }

    /// Create the array `name` (policy looked up by `group`, e.g. "frontier" for a bitmap) of
    /// `len` elements, faulted in now so that creation order is allocation order.
    pub fn region<T: Pod>(&self, group: &str, name: &str, len: usize) -> Result<Region<T>> {
        let mut opts = RegionOptions::new(self.pages.get(group)).locked(self.pages.locked(group));
        opts.populate = Populate::OnCreate;
        Ok(Region::new(name, len.max(1), opts)?)
    }

    /// Like [`Layout::region`], for an array a reader fills whole at once: its pages are
    /// faulted by the fill itself (by every reading thread) instead of by a single-threaded
    /// populate first. Hugetlb regions are still populated on creation: a fault past an empty
    /// pool is SIGBUS, where a populate is a clean error.
    pub fn filled_region<T: Pod>(&self, group: &str, name: &str, len: usize) -> Result<Region<T>> {
        let policy = self.pages.get(group);
        let mut opts = RegionOptions::new(policy).locked(self.pages.locked(group));
        if policy.hugetlb().is_none() {
            opts = opts.first_touch();
        }
        Ok(Region::new(name, len.max(1), opts)?)
    }

    /// Like [`Layout::region`], but faulted in by first touch: for arrays sized for the worst
    /// case of which a run touches only a part.
    pub fn lazy_region<T: Pod>(&self, group: &str, name: &str, len: usize) -> Result<Region<T>> {
        let opts = RegionOptions::new(self.pages.get(group))
            .first_touch()
            .locked(self.pages.locked(group));
        Ok(Region::new(name, len.max(1), opts)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_first_only_when_asked() {
        assert!(!Layout::default().kernel_first());
        assert!(Layout::parse("", "property-first")
            .expect("layout")
            .kernel_first());
        assert!(!Layout::parse("", "edges,property")
            .expect("layout")
            .kernel_first());
        let e = Layout::parse("bogus=thp", "natural").expect_err("unknown");
        assert!(e.to_string().contains("unknown region 'bogus'"), "{e}");
    }
}
