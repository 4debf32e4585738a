//! NUMA nodes under `/sys/devices/system/node`: which hold memory, and the per-node compaction
//! trigger.

use super::SysFs;
use crate::{Error, Result};

const NODES: &str = "devices/system/node";

/// Parse a kernel node list (`0`, `0-3`, `0,2-3`; empty for none), naming `file` on error.
fn parse_list(file: &std::path::Path, s: &str) -> Result<Vec<u32>> {
    let mut v = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        let bad = || Error::parse(file, 1, format!("not a node list: {s:?}"));
        let num = |x: &str| x.trim().parse::<u32>().map_err(|_| bad());
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(bad());
                }
                v.extend(a..=b);
            }
            None => v.push(num(part)?),
        }
    }
    Ok(v)
}

impl SysFs {
    /// The nodes that hold memory (`has_memory`), in order.
    pub fn memory_nodes(&self) -> Result<Vec<u32>> {
        let rel = format!("{NODES}/has_memory");
        parse_list(&self.path(&rel), &self.read(&rel)?)
    }

    /// Whether this kernel can compact node `node` on request (`nodeN/compact` exists: it
    /// needs `CONFIG_COMPACTION` and `CONFIG_NUMA`).
    pub fn can_compact_node(&self, node: u32) -> bool {
        self.path(&format!("{NODES}/node{node}/compact")).exists()
    }

    /// Compact every zone of node `node` now: the write returns once the kernel has moved what
    /// it could (a whole-node, synchronous compaction in the calling thread, so its CPU time is
    /// the caller's). The file is write-only: there is nothing to read back or restore.
    pub fn compact_node(&self, node: u32) -> Result<()> {
        let p = self.path(&format!("{NODES}/node{node}/compact"));
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .map_err(|e| Error::io(&p, e))?;
        std::io::Write::write_all(&mut f, b"1").map_err(|e| Error::io(&p, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_lists_as_the_kernel_prints_them() {
        let f = std::path::Path::new("has_memory");
        assert_eq!(parse_list(f, "0\n").expect("one"), [0]);
        assert_eq!(parse_list(f, "0,2-4\n").expect("ranges"), [0, 2, 3, 4]);
        assert!(parse_list(f, "\n").expect("none").is_empty());
        let e = parse_list(f, "3-1").expect_err("backwards");
        assert!(e.to_string().contains("has_memory"), "{e}");
    }

    #[test]
    fn a_compaction_request_is_written_to_the_nodes_file_only() {
        let dir = tempfile::tempdir().expect("tmp");
        let node = dir.path().join("devices/system/node/node1");
        std::fs::create_dir_all(&node).expect("mkdir");
        std::fs::write(dir.path().join("devices/system/node/has_memory"), "1\n").expect("w");
        std::fs::write(node.join("compact"), "").expect("w");
        let sys = SysFs::new(dir.path());
        assert_eq!(sys.memory_nodes().expect("nodes"), [1]);
        assert!(sys.can_compact_node(1));
        assert!(!sys.can_compact_node(0));
        sys.compact_node(1).expect("compact");
        assert_eq!(
            std::fs::read_to_string(node.join("compact")).expect("r"),
            "1"
        );
        // A node without the file: the error names it, and nothing is created.
        let e = sys.compact_node(0).expect_err("no node 0");
        assert!(e.to_string().contains("node0/compact"), "{e}");
        assert!(!dir.path().join("devices/system/node/node0").exists());
    }
}
