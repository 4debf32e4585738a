//! What backs a range of memory (4 KiB, THP, mTHP, hugetlb, absent), as the kernel reported it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Where a [`Backing`] was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackingSource {
    /// pagemap + kpageflags: every 4 KiB page classified.
    Pagemap,
    /// smaps totals of the mappings overlapping the range.
    Smaps,
}

/// How a range of memory is backed, in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Backing {
    /// Where the numbers come from.
    pub source: BackingSource,
    /// Bytes in the range.
    pub total_bytes: u64,
    /// Present in 4 KiB pages.
    pub base_bytes: u64,
    /// Present in 2 MiB transparent huge pages.
    pub thp_2m_bytes: u64,
    /// Present in mTHP folios of other sizes, by folio size in KiB (pagemap source only).
    /// JSON keys are strings; they are read back as numbers.
    #[serde(deserialize_with = "sizes_as_keys")]
    pub mthp_bytes: BTreeMap<u64, u64>,
    /// Present in hugetlb pages.
    pub hugetlb_bytes: u64,
    /// Never touched, or freed.
    pub not_present_bytes: u64,
    /// In swap.
    pub swapped_bytes: u64,
    /// Per 2 MiB chunk of the range: entirely in one 2 MiB THP or a hugetlb page (pagemap source
    /// only; empty for smaps).
    pub huge_chunks: Vec<bool>,
    /// True when smaps mappings reached outside the range, so totals were prorated.
    pub approximate: bool,
}

/// A map whose keys JSON holds as strings of digits. A saved result's fields sit flattened
/// beside its envelope (`Saved`), and serde reads the maps of a flattened struct without
/// turning string keys into numbers: a run whose arrays got mTHP folios could not be read back.
fn sizes_as_keys<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BTreeMap<u64, u64>, D::Error> {
    let raw = BTreeMap::<String, u64>::deserialize(d)?;
    raw.into_iter()
        .map(|(k, v)| {
            k.parse::<u64>().map(|k| (k, v)).map_err(|_| {
                serde::de::Error::custom(format!("mthp_bytes: key {k:?} is not a size in KiB"))
            })
        })
        .collect()
}

impl Backing {
    /// Bytes in pages of 2 MiB or more (THP and hugetlb).
    pub fn huge_bytes(&self) -> u64 {
        self.thp_2m_bytes + self.hugetlb_bytes
    }

    /// Huge bytes as a share of the present bytes (0 when nothing is present).
    pub fn huge_share(&self) -> f64 {
        let present = self.total_bytes - self.not_present_bytes - self.swapped_bytes;
        if present == 0 {
            0.0
        } else {
            self.huge_bytes() as f64 / present as f64
        }
    }
}
