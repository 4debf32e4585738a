//! Free page reporting: a guest kernel that hands its free memory back to the hypervisor
//! (virtio-balloon's free page reporting). A page handed back is no longer backed by the host,
//! so its next first touch in the guest costs a host fault on top of the guest's own.

use super::SysFs;
use crate::Result;

/// The counter of memory reported so far. Upstream kernels expose only the reporting order; a
/// kernel built for VMs that counts what it handed back does it here.
const REPORTED_KIB: &str = "module/page_reporting/parameters/reported_kib";

impl SysFs {
    /// Memory this guest has reported to the host as free since boot, in KiB; `None` where the
    /// kernel does not count it (no free page reporting, or an upstream kernel without the
    /// counter).
    pub fn reported_kib(&self) -> Result<Option<u64>> {
        self.read_u64(REPORTED_KIB)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_is_read_where_the_kernel_has_it_and_none_elsewhere() {
        let dir = tempfile::tempdir().expect("tmp");
        let sys = SysFs::new(dir.path());
        assert_eq!(sys.reported_kib().expect("absent is not an error"), None);
        let p = dir.path().join(REPORTED_KIB);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, "950896\n").expect("write");
        assert_eq!(sys.reported_kib().expect("read"), Some(950_896));
        std::fs::write(&p, "lots\n").expect("write");
        let e = sys.reported_kib().expect_err("not a number").to_string();
        assert!(e.contains("reported_kib"), "{e}");
    }
}
