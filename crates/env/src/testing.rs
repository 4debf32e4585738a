//! A fake machine for tests: a `/proc` and `/sys` tree with the knobs hugewise-env writes.

use std::path::Path;

use crate::host::Host;

/// A temporary `/proc` + `/sys` tree and state directory, removed on drop.
pub struct FakeMachine {
    dir: tempfile::TempDir,
}

const FILES: &[(&str, &str)] = &[
    (
        "sys/kernel/mm/transparent_hugepage/enabled",
        "always [madvise] never\n",
    ),
    (
        "sys/kernel/mm/transparent_hugepage/defrag",
        "always defer defer+madvise [madvise] never\n",
    ),
    (
        "sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled",
        "always inherit madvise [never]\n",
    ),
    (
        "sys/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan",
        "4096\n",
    ),
    (
        "sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs",
        "10000\n",
    ),
    (
        "sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none",
        "511\n",
    ),
    (
        "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",
        "0\n",
    ),
    (
        "sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages",
        "0\n",
    ),
    ("proc/sys/vm/compact_unevictable_allowed", "1\n"),
    ("proc/sys/vm/page-cluster", "3\n"),
    ("proc/sys/vm/compaction_proactiveness", "20\n"),
    ("proc/sys/vm/percpu_pagelist_high_fraction", "0\n"),
    ("proc/sys/kernel/random/boot_id", "fake-boot-1\n"),
];

impl FakeMachine {
    /// A fresh tree with THP at `madvise`, empty pools and the kernel's default knobs.
    pub fn new() -> FakeMachine {
        let dir = tempfile::tempdir().expect("temporary directory");
        for (rel, text) in FILES {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        }
        FakeMachine { dir }
    }

    /// The tree's root.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// A host on this tree, journaling in `<root>/state`.
    pub fn host(&self) -> Host {
        Host::fake(
            &self.dir.path().join("proc"),
            &self.dir.path().join("sys"),
            &self.dir.path().join("state"),
        )
    }

    /// Content of a file of the tree, trimmed.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(rel))
            .expect("read")
            .trim()
            .to_string()
    }

    /// The value of a knob of the tree: for a multiple-choice file, the selected word (a real
    /// kernel shows `always [madvise] never` again after `madvise` is written; a plain file
    /// keeps what was written).
    pub fn value(&self, rel: &str) -> String {
        let raw = self.read(rel);
        hugewise_sys::sysfs::Selector::parse(&raw)
            .map(|s| s.current)
            .unwrap_or(raw)
    }

    /// Every knob of the tree with its value, to compare a whole machine before and after.
    pub fn snapshot(&self) -> Vec<(String, String)> {
        FILES
            .iter()
            .map(|(rel, _)| (rel.to_string(), self.value(rel)))
            .collect()
    }

    /// Pretend the machine rebooted: a new boot id.
    pub fn reboot(&self) {
        std::fs::write(
            self.dir.path().join("proc/sys/kernel/random/boot_id"),
            "fake-boot-2\n",
        )
        .expect("write");
    }
}

impl Default for FakeMachine {
    fn default() -> Self {
        FakeMachine::new()
    }
}
