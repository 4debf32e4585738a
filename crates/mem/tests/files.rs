//! Regions that read a recorded `/proc` and `/sys` instead of the real ones: what a region
//! reports comes from the files it was given.

use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use hugewise_mem::{BackingSource, Error, KernelFiles, PagePolicy, Region, RegionOptions};
use hugewise_sys::proc::ProcFs;
use hugewise_sys::sysfs::SysFs;

const MIB: usize = 1 << 20;

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}

#[test]
fn an_empty_recorded_pool_is_refused_and_names_its_knob() {
    let d = tempfile::tempdir().expect("tmp");
    let pool = "kernel/mm/hugepages/hugepages-2048kB";
    for (f, v) in [
        ("nr_hugepages", "4"),
        ("free_hugepages", "1"),
        ("resv_hugepages", "0"),
        ("surplus_hugepages", "0"),
        ("nr_overcommit_hugepages", "0"),
    ] {
        write(d.path(), &format!("{pool}/{f}"), &format!("{v}\n"));
    }
    let files = KernelFiles {
        proc: ProcFs::default(),
        sys: SysFs::new(d.path()),
    };
    let e = Region::<u8>::with_files(
        "edges",
        4 * MIB,
        RegionOptions::new(PagePolicy::Hugetlb2M),
        files,
    )
    .expect_err("one free page for two");
    match &e {
        Error::HugetlbPool {
            needed, free, knob, ..
        } => {
            assert_eq!((*needed, *free), (2, 1));
            assert!(knob.starts_with(&d.path().display().to_string()), "{knob}");
        }
        other => panic!("not a pool error: {other}"),
    }
}

#[test]
fn backing_is_read_from_the_recorded_proc() {
    let d = tempfile::tempdir().expect("tmp");
    let files = KernelFiles {
        proc: ProcFs::new(d.path()),
        sys: SysFs::default(),
    };
    let r = Region::<u8>::with_files(
        "property",
        4 * MIB,
        RegionOptions::new(PagePolicy::Base),
        files,
    )
    .expect("region");
    let (start, len) = (r.addr(), r.mapped_bytes());
    // Every page present with its frame hidden, as pagemap shows it without root: the
    // region falls back to the recorded smaps, which claims half of it in a 2 MiB page.
    std::fs::create_dir_all(d.path().join("self")).expect("mkdir");
    let mut pagemap = std::fs::File::create(d.path().join("self/pagemap")).expect("pagemap");
    pagemap
        .seek(SeekFrom::Start((start / 4096) as u64 * 8))
        .expect("seek");
    for _ in 0..len / 4096 {
        pagemap
            .write_all(&(1u64 << 63).to_le_bytes())
            .expect("entry");
    }
    drop(pagemap);
    write(
        d.path(),
        "self/smaps",
        &format!(
            "{start:x}-{:x} rw-p 00000000 00:00 0 \n\
             Size:               {kib} kB\n\
             KernelPageSize:        4 kB\n\
             MMUPageSize:           4 kB\n\
             Rss:                {kib} kB\n\
             AnonHugePages:      2048 kB\n\
             Swap:                  0 kB\n\
             VmFlags: rd wr mr mw me ac nh \n",
            start + len,
            kib = len / 1024
        ),
    );
    let b = r.backing().expect("backing");
    assert_eq!(b.source, BackingSource::Smaps);
    // The real region is on 4 KiB pages (MADV_NOHUGEPAGE): 2 MiB huge can only come from
    // the recorded files.
    assert_eq!(b.thp_2m_bytes, 2 * MIB as u64);
    assert_eq!(b.base_bytes, (len - 2 * MIB) as u64);
}
