//! The kernel settings hugewise may change: a closed list, so that neither a typo nor a damaged
//! journal can make it write anywhere else (never `/sys/kernel/mm/damon`, for one).

use std::fmt;

pub use hugewise_results::env::KhugepagedSetting;
use serde::{Deserialize, Serialize};

use crate::host::Host;
use crate::{Error, Result};

const THP: &str = "kernel/mm/transparent_hugepage";

/// The setting's file under `khugepaged/`.
fn setting_file(s: KhugepagedSetting) -> &'static str {
    match s {
        KhugepagedSetting::PagesToScan => "pages_to_scan",
        KhugepagedSetting::ScanSleepMillisecs => "scan_sleep_millisecs",
        KhugepagedSetting::AllocSleepMillisecs => "alloc_sleep_millisecs",
        KhugepagedSetting::MaxPtesNone => "max_ptes_none",
        KhugepagedSetting::Defrag => "defrag",
    }
}

/// The values the kernel accepts.
fn setting_range(s: KhugepagedSetting) -> (u64, u64) {
    match s {
        KhugepagedSetting::PagesToScan => (1, u64::from(u32::MAX)),
        KhugepagedSetting::ScanSleepMillisecs | KhugepagedSetting::AllocSleepMillisecs => {
            (0, u64::from(u32::MAX))
        }
        KhugepagedSetting::MaxPtesNone => (0, 511),
        KhugepagedSetting::Defrag => (0, 1),
    }
}

/// Which tree a knob lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tree {
    /// `/sys`.
    Sys,
    /// `/proc`.
    Proc,
}

/// One kernel setting hugewise may change and put back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "knob", rename_all = "snake_case")]
pub enum Knob {
    /// THP mode (`always`, `madvise`, `never`).
    ThpEnabled,
    /// THP fault-time defrag policy.
    ThpDefrag,
    /// The mode of one mTHP size.
    MthpEnabled {
        /// Size in KiB (e.g. 64).
        size_kib: u64,
    },
    /// A khugepaged setting.
    Khugepaged {
        /// Which.
        setting: KhugepagedSetting,
    },
    /// The size of one hugetlb pool, in pages.
    HugetlbPages {
        /// Page size in KiB (2048 or 1048576).
        size_kib: u64,
    },
    /// `vm.compact_unevictable_allowed`: 0 keeps compaction off mlocked pages.
    CompactUnevictable,
    /// `vm.page-cluster`: swap readahead, 2^n pages.
    PageCluster,
    /// `vm.percpu_pagelist_high_fraction`: 0 lets the kernel size the per-CPU free lists
    /// (up to about 1 GiB here); a large value keeps them at their minimum, so freed pages reach
    /// the buddy allocator and merge at once.
    PcpHighFraction,
    /// `vm.compaction_proactiveness`: how hard kcompactd keeps free memory in 2 MiB blocks in
    /// the background (0 to 100; Linux's default 20).
    CompactionProactiveness,
}

/// A `vm.percpu_pagelist_high_fraction` that keeps the per-CPU free lists at their minimum.
pub const PCP_MINIMAL: &str = "1000000000";

enum Kind {
    Selector,
    Number { min: u64, max: u64 },
}

impl Knob {
    /// The tree and the path inside it.
    pub fn location(&self) -> (Tree, String) {
        match *self {
            Knob::ThpEnabled => (Tree::Sys, format!("{THP}/enabled")),
            Knob::ThpDefrag => (Tree::Sys, format!("{THP}/defrag")),
            Knob::MthpEnabled { size_kib } => {
                (Tree::Sys, format!("{THP}/hugepages-{size_kib}kB/enabled"))
            }
            Knob::Khugepaged { setting } => (
                Tree::Sys,
                format!("{THP}/khugepaged/{}", setting_file(setting)),
            ),
            Knob::HugetlbPages { size_kib } => (
                Tree::Sys,
                format!("kernel/mm/hugepages/hugepages-{size_kib}kB/nr_hugepages"),
            ),
            Knob::CompactUnevictable => (Tree::Proc, "sys/vm/compact_unevictable_allowed".into()),
            Knob::PageCluster => (Tree::Proc, "sys/vm/page-cluster".into()),
            Knob::PcpHighFraction => (Tree::Proc, "sys/vm/percpu_pagelist_high_fraction".into()),
            Knob::CompactionProactiveness => (Tree::Proc, "sys/vm/compaction_proactiveness".into()),
        }
    }

    /// The file as a user would write it (`/sys/...` or `/proc/...`).
    pub fn display_path(&self) -> String {
        match self.location() {
            (Tree::Sys, rel) => format!("/sys/{rel}"),
            (Tree::Proc, rel) => format!("/proc/{rel}"),
        }
    }

    fn kind(&self) -> Kind {
        match *self {
            Knob::ThpEnabled | Knob::ThpDefrag | Knob::MthpEnabled { .. } => Kind::Selector,
            Knob::Khugepaged { setting } => {
                let (min, max) = setting_range(setting);
                Kind::Number { min, max }
            }
            Knob::HugetlbPages { .. } => Kind::Number {
                min: 0,
                max: u64::MAX,
            },
            Knob::CompactUnevictable => Kind::Number { min: 0, max: 1 },
            Knob::PageCluster => Kind::Number { min: 0, max: 31 },
            Knob::CompactionProactiveness => Kind::Number { min: 0, max: 100 },
            Knob::PcpHighFraction => Kind::Number {
                min: 0,
                max: i32::MAX as u64,
            },
        }
    }

    fn read_raw(&self, host: &Host) -> Result<String> {
        Ok(match self.location() {
            (Tree::Sys, rel) => host.sys.read(&rel)?,
            (Tree::Proc, rel) => host.proc.read_knob(&rel)?,
        })
    }

    /// The current value (for a multiple-choice knob, the selected word).
    pub fn read(&self, host: &Host) -> Result<String> {
        let raw = self.read_raw(host)?;
        Ok(match self.kind() {
            Kind::Selector => hugewise_sys::sysfs::Selector::parse(&raw)
                .map(|s| s.current)
                .unwrap_or(raw),
            Kind::Number { .. } => raw,
        })
    }

    /// Check `value` against what this kernel accepts, before anything is written.
    pub fn validate(&self, host: &Host, value: &str) -> Result<String> {
        let value = value.trim();
        match self.kind() {
            Kind::Selector => {
                let raw = self.read_raw(host).map_err(|e| match e {
                    Error::Sys(hugewise_sys::Error::Io { source, .. })
                        if source.kind() == std::io::ErrorKind::NotFound =>
                    {
                        Error::Invalid(format!(
                            "{self}: {} does not exist on this kernel",
                            self.display_path()
                        ))
                    }
                    other => other,
                })?;
                let choices = hugewise_sys::sysfs::Selector::parse(&raw)
                    .map(|s| s.choices)
                    .unwrap_or_default();
                if choices.iter().any(|c| c == value) {
                    Ok(value.to_string())
                } else {
                    Err(Error::Invalid(format!(
                        "{self}: '{value}' is not one of {} ({})",
                        choices.join(", "),
                        self.display_path()
                    )))
                }
            }
            Kind::Number { min, max } => {
                let n: u64 = value.parse().map_err(|_| {
                    Error::Invalid(format!("{self}: '{value}' is not a whole number"))
                })?;
                if n < min || n > max {
                    return Err(Error::Invalid(format!(
                        "{self}: {n} is outside {min}..={max}"
                    )));
                }
                if *self == Knob::PcpHighFraction && (1..8).contains(&n) {
                    return Err(Error::Invalid(format!(
                        "{self}: {n} is refused by the kernel (0, or 8 and above)"
                    )));
                }
                Ok(n.to_string())
            }
        }
    }

    /// Write `value` as it is (validate first).
    pub fn write(&self, host: &Host, value: &str) -> Result<()> {
        match self.location() {
            (Tree::Sys, rel) => host.sys.write(&rel, value)?,
            (Tree::Proc, rel) => host.proc.write_knob(&rel, value)?,
        };
        Ok(())
    }
}

impl fmt::Display for Knob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Knob::ThpEnabled => write!(f, "thp enabled"),
            Knob::ThpDefrag => write!(f, "thp defrag"),
            Knob::MthpEnabled { size_kib } => write!(f, "thp {size_kib}kB enabled"),
            Knob::Khugepaged { setting } => write!(f, "khugepaged {}", setting_file(setting)),
            Knob::HugetlbPages { size_kib } => write!(f, "hugetlb {size_kib}kB pages"),
            Knob::CompactUnevictable => write!(f, "vm.compact_unevictable_allowed"),
            Knob::PageCluster => write!(f, "vm.page-cluster"),
            Knob::PcpHighFraction => write!(f, "vm.percpu_pagelist_high_fraction"),
            Knob::CompactionProactiveness => write!(f, "vm.compaction_proactiveness"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::FakeMachine;

    #[test]
    fn selector_values_are_checked_against_the_kernel_choices() {
        let m = FakeMachine::new();
        let h = m.host();
        assert_eq!(Knob::ThpEnabled.read(&h).expect("read"), "madvise");
        assert_eq!(
            Knob::ThpEnabled.validate(&h, "always").expect("ok"),
            "always"
        );
        let e = Knob::ThpEnabled
            .validate(&h, "sometimes")
            .expect_err("not a choice");
        assert!(e.to_string().contains("always, madvise, never"), "{e}");
        let e = Knob::MthpEnabled { size_kib: 32 }
            .validate(&h, "always")
            .expect_err("no such size");
        assert!(e.to_string().contains("does not exist"), "{e}");
    }

    #[test]
    fn numbers_are_range_checked() {
        let m = FakeMachine::new();
        let h = m.host();
        let max_none = Knob::Khugepaged {
            setting: KhugepagedSetting::MaxPtesNone,
        };
        assert!(max_none.validate(&h, "512").is_err());
        assert_eq!(max_none.validate(&h, " 0 ").expect("ok"), "0");
        assert!(Knob::CompactUnevictable.validate(&h, "2").is_err());
        assert!(Knob::PageCluster.validate(&h, "-1").is_err());
        assert!(Knob::PcpHighFraction.validate(&h, "7").is_err());
        assert!(Knob::PcpHighFraction.validate(&h, PCP_MINIMAL).is_ok());
        assert!(Knob::CompactionProactiveness.validate(&h, "101").is_err());
        assert_eq!(
            Knob::CompactionProactiveness
                .validate(&h, "100")
                .expect("ok"),
            "100"
        );
    }

    #[test]
    fn every_knob_lives_outside_damon() {
        let all = [
            Knob::ThpEnabled,
            Knob::ThpDefrag,
            Knob::MthpEnabled { size_kib: 64 },
            Knob::Khugepaged {
                setting: KhugepagedSetting::Defrag,
            },
            Knob::HugetlbPages { size_kib: 2048 },
            Knob::CompactUnevictable,
            Knob::PageCluster,
            Knob::PcpHighFraction,
            Knob::CompactionProactiveness,
        ];
        for k in all {
            assert!(!k.display_path().contains("damon"), "{k}");
            let json = serde_json::to_string(&k).expect("json");
            let back: Knob = serde_json::from_str(&json).expect("back");
            assert_eq!(back, k);
        }
    }
}
