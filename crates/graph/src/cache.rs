//! Reordered graphs kept on disk, so that a run reordering a file it has reordered before
//! loads the result instead of relabelling again.
//!
//! Relabelling costs several times what loading costs (at kron:24, 5–7 s against about 1 s:
//! every arc's new id is a random read of a 64 MiB permutation, and every list is written
//! anew into fresh memory), while reading a reordered `.hwg` back costs one load. A study that
//! runs a reordered variant ten times pays the relabelling once.
//!
//! An entry is a directory named by a hash of what selects it (the input's path and the kind
//! its name gives, the method, the options that change the graph, the versions of the entry
//! layout, of the orderings and of hugewise). It holds three files, written in this order and
//! each atomically: `order` (the permutation), `graph.hwg` (the reordered graph) and `key`
//! (everything that must match: the input file's size, modification and change times and
//! inode too, and last the checksums of the two files this store wrote). An entry is used
//! only when its `key` matches in full and both files carry the checksums it names, so a
//! crash halfway through a store (no `key` yet), an input changed since (another `key`) or two
//! stores that overlapped (files from both) never yield a wrong graph; a store replaces the
//! entry of the same path and options. The permutation's and the graph's own checksums are
//! compared as they are read.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Instant, UNIX_EPOCH};

pub use hugewise_results::graph::{CacheOutcome, CacheUse};

use crate::build::BuildStats;
use crate::fits::Fit;
use crate::io::hwg;
use crate::load::{file_kind, FileKind, Input, LoadOptions};
use crate::reorder::{Method, Relabeling, ReorderStats};
use crate::{Csr, Error, Layout, Result};

/// Version of an entry's layout (its files and their formats); part of every key, beside
/// [`crate::reorder::OUTPUT_VERSION`] for what the relabelling makes.
const VERSION: u32 = 1;
const ORDER_MAGIC: &[u8; 8] = b"HWORDER\0";
const ORDER_HEADER: usize = 24;
const KEY: &str = "key";
const ORDER: &str = "order";
const GRAPH: &str = "graph.hwg";

/// Graphs smaller than this are not kept: relabelling them takes well under a second.
pub const MIN_GRAPH_BYTES: u64 = 256 << 20;

/// Free space a store leaves on the cache's file system, besides the entry.
pub const KEEP_FREE_BYTES: u64 = 4 << 30;

/// A directory of reordered graphs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cache {
    dir: PathBuf,
    min_graph_bytes: u64,
    keep_free_bytes: u64,
}

impl Cache {
    /// The cache in `dir` (created on the first store), keeping graphs of at least
    /// [`MIN_GRAPH_BYTES`] and leaving [`KEEP_FREE_BYTES`] free.
    pub fn new(dir: impl Into<PathBuf>) -> Cache {
        Cache {
            dir: dir.into(),
            min_graph_bytes: MIN_GRAPH_BYTES,
            keep_free_bytes: KEEP_FREE_BYTES,
        }
    }

    /// The cache a user asked for: in `dir`, none for `off`, and without a directory the
    /// default one: `$HUGEWISE_CACHE_DIR`, else `$XDG_CACHE_HOME/hugewise`, else
    /// `$HOME/.cache/hugewise` (none when none of them is set).
    pub fn chosen(dir: Option<&Path>) -> Option<Cache> {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        match dir {
            Some(d) if d.as_os_str() == "off" => None,
            Some(d) => Some(Cache::new(d)),
            None => var("HUGEWISE_CACHE_DIR")
                .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("hugewise")))
                .or_else(|| var("HOME").map(|d| d.join(".cache").join("hugewise")))
                .map(Cache::new),
        }
    }

    /// Keep graphs of at least `bytes` (0: all).
    pub fn min_graph_bytes(mut self, bytes: u64) -> Cache {
        self.min_graph_bytes = bytes;
        self
    }

    /// Leave `bytes` free on the file system besides the entry.
    pub fn keep_free_bytes(mut self, bytes: u64) -> Cache {
        self.keep_free_bytes = bytes;
        self
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The entry for `input` reordered by `method` (with `seed`, which `random` and added
    /// weights depend on) after a load with `opts`; `None` for a generator or shape, which
    /// `graph gen --reorder … --out` saves once instead, or for a file that cannot be read
    /// (the load reports it).
    pub fn entry(
        &self,
        input: &Input,
        opts: &LoadOptions,
        method: Method,
        seed: u64,
    ) -> Option<Entry> {
        let Input::File(given) = input else {
            return None;
        };
        // The kind comes from the name given (a link named `.el` to a `.wel` file loads as an
        // edge list without weights), the identity from the file it names.
        let kind = file_kind(given).ok()?;
        let path = std::fs::canonicalize(given).ok()?;
        let meta = std::fs::metadata(&path).ok()?;
        let modified = meta
            .modified()
            .ok()?
            .duration_since(UNIX_EPOCH)
            .ok()?
            .as_nanos();
        // Added weights are hashed from the seed; `.wel` and `.wsg` files bring their own.
        let own_weights = matches!(kind, FileKind::WeightedEdgeList | FileKind::WeightedGap);
        let seeded = method == Method::Random || (opts.weighted && !own_weights);
        let select = format!(
            "hugewise reordered graph, entry version {VERSION}, orderings version {}, \
             hugewise {}\ninput {} read as {kind:?}\nmethod {method}\nseed {}\nweighted {}\n\
             symmetrize {}\n",
            crate::reorder::OUTPUT_VERSION,
            env!("CARGO_PKG_VERSION"),
            path.display(),
            if seeded { seed.to_string() } else { "-".into() },
            opts.weighted,
            opts.symmetrize,
        );
        let key = format!(
            "{select}bytes {}\nmodified {modified}\nchanged {}.{:09}\ninode {}:{}\n",
            meta.len(),
            meta.ctime(),
            meta.ctime_nsec(),
            meta.dev(),
            meta.ino()
        );
        Some(Entry {
            dir: self
                .dir
                .join(format!("reorder-{:016x}", fnv1a(select.as_bytes()))),
            key,
            min_graph_bytes: self.min_graph_bytes,
            keep_free_bytes: self.keep_free_bytes,
        })
    }
}

/// FNV-1a, 64 bits: names an entry (the full key inside it settles a collision).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// What a lookup found.
#[derive(Debug)]
pub enum Found {
    /// The reordered graph and what goes with it.
    Hit(Box<Hit>),
    /// Nothing usable; the note says why an entry that was there was not used.
    Miss(Option<String>),
}

/// A reordered graph read from the cache.
#[derive(Debug)]
pub struct Hit {
    /// The graph, in new ids.
    pub graph: Csr,
    /// Its permutation.
    pub relabeling: Relabeling,
    /// The reading's breakdown, as a load's.
    pub build: BuildStats,
    /// What to report of the cache's use.
    pub used: CacheUse,
}

impl Hit {
    /// The reordering's record for a run that read this: nothing ordered or relabelled (the
    /// reading is the load's time), and where it came from.
    pub fn stats(&self, method: Method) -> ReorderStats {
        ReorderStats {
            method: method.to_string(),
            order_ns: 0,
            relabel_ns: 0,
            cache: Some(self.used.clone()),
        }
    }
}

/// One input's place in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    dir: PathBuf,
    key: String,
    min_graph_bytes: u64,
    keep_free_bytes: u64,
}

/// Why the entry directory `dir` (and the cache's above it) cannot be trusted, if it cannot:
/// not a directory of this user's or root's, or writable by others, who could then have put a
/// graph of their choosing in it. `None` when it is fine, or not there.
fn not_ours(dir: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let me = hugewise_sys::caps::euid();
    [dir, dir.parent().unwrap_or(dir)].iter().find_map(|d| {
        let m = std::fs::symlink_metadata(d).ok()?;
        let bad =
            !m.file_type().is_dir() || (m.uid() != me && m.uid() != 0) || m.mode() & 0o022 != 0;
        bad.then(|| {
            format!(
                "{}: {}, owned by uid {}, mode {:o}: not read, as another user could have put \
                 a graph there; keep the cache in a directory only you can write",
                d.display(),
                hugewise_sys::file::type_name(&m.file_type()),
                m.uid(),
                m.mode() & 0o7777
            )
        })
    })
}

impl Entry {
    /// The entry's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The files a hit reads: the order and the reordered graph.
    pub fn files(&self) -> [PathBuf; 2] {
        [self.dir.join(ORDER), self.dir.join(GRAPH)]
    }

    /// Read the entry into regions laid out by `layout`, if it is there and its key matches.
    /// A damaged entry is a miss with a note (the run relabels and replaces it); so is a graph
    /// that would not fit (`fit`), whose input the load then refuses by its own name.
    pub fn find(
        &self,
        layout: &Layout,
        fit: Fit,
        before_alloc: &mut dyn FnMut(usize) -> Result<()>,
    ) -> Found {
        let t = Instant::now();
        if let Some(why) = not_ours(&self.dir) {
            return Found::Miss(Some(why));
        }
        let sums = match std::fs::read_to_string(self.dir.join(KEY)) {
            Ok(k) => match k.strip_prefix(&self.key).and_then(Sums::parse) {
                Some(sums) => sums,
                None => {
                    return Found::Miss(Some(format!(
                        "{}: made from another version of the input or options; replaced",
                        self.dir.display()
                    )))
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Found::Miss(None),
            Err(e) => return Found::Miss(Some(format!("{}: {e}", self.dir.join(KEY).display()))),
        };
        // The key names the files its store wrote: a store for another key that overlapped it
        // (the input changed while two runs relabelled it) is caught here.
        let mismatch = |what: &str| {
            Found::Miss(Some(format!(
                "{}: the {what} is not the one its key was written with; replaced",
                self.dir.display()
            )))
        };
        let order = match read_order(&self.dir.join(ORDER)) {
            Ok((o, sum)) if sum == sums.order => o,
            Ok(_) => return mismatch("permutation"),
            Err(e) => return Found::Miss(Some(e.to_string())),
        };
        let graph = self.dir.join(GRAPH);
        match hwg::header_checksum(&graph) {
            Ok(sum) if sum == sums.graph => {}
            Ok(_) => return mismatch("graph"),
            Err(e) => return Found::Miss(Some(e.to_string())),
        }
        let (g, build) = match hwg::read(&graph, fit, layout, before_alloc) {
            Ok(x) => x,
            Err(Error::TooLarge { .. }) => return Found::Miss(None),
            Err(e) => return Found::Miss(Some(e.to_string())),
        };
        if order.old_of_new().len() != g.n() {
            return Found::Miss(Some(format!(
                "{}: a permutation of {} vertices for a graph of {}",
                self.dir.display(),
                order.old_of_new().len(),
                g.n()
            )));
        }
        let bytes = file_bytes(&graph) + file_bytes(&self.dir.join(ORDER));
        let used = CacheUse {
            outcome: CacheOutcome::Hit,
            path: self.dir.clone(),
            bytes,
            ns: t.elapsed().as_nanos() as u64,
            note: None,
        };
        Found::Hit(Box::new(Hit {
            graph: g,
            relabeling: order,
            build,
            used,
        }))
    }

    /// `g` (as loaded from the entry's input) reordered by `method` into regions laid out by
    /// `layout`: read from the entry when it holds it, else relabelled here and kept.
    pub fn reorder(
        &self,
        g: &Csr,
        method: Method,
        seed: u64,
        layout: &Layout,
        fit: Fit,
    ) -> Result<(Csr, Relabeling, ReorderStats)> {
        let missed = match self.find(layout, fit, &mut |_| Ok(())) {
            Found::Hit(hit) => {
                let stats = hit.stats(method);
                return Ok((hit.graph, hit.relabeling, stats));
            }
            Found::Miss(why) => why,
        };
        let (h, r, mut stats) = crate::reorder::reorder(g, method, seed, layout)?;
        stats.cache = self.store(&h, &r, missed);
        Ok((h, r, stats))
    }

    /// Keep `g` (reordered by `r`) in the entry for later runs, replacing what was there. Never
    /// fails the run: what went wrong is the outcome's note. `None` for a graph too small to
    /// be worth keeping. `why_missed` (from [`Entry::find`]) is carried into the note.
    pub fn store(&self, g: &Csr, r: &Relabeling, why_missed: Option<String>) -> Option<CacheUse> {
        if g.data_bytes() < self.min_graph_bytes {
            return None;
        }
        let t = Instant::now();
        let not_stored = |note: String| CacheUse {
            outcome: CacheOutcome::NotStored,
            path: self.dir.clone(),
            bytes: 0,
            ns: 0,
            note: Some(match &why_missed {
                Some(m) => format!("{m}; {note}"),
                None => note,
            }),
        };
        if let Err(e) = std::fs::create_dir_all(&self.dir) {
            return Some(not_stored(format!("{}: {e}", self.dir.display())));
        }
        hugewise_sys::file::remove_dead_temporaries(&self.dir);
        // The graph's arrays and the permutation, with a little for headers.
        let want = g.data_bytes() + 4 * g.n() as u64 + (1 << 20);
        match hugewise_sys::swap::free_bytes(&self.dir) {
            Ok(free) if free >= want + self.keep_free_bytes => {}
            Ok(free) => {
                return Some(not_stored(format!(
                    "not kept: {} free on the file system of {}, the entry takes {} and {} are \
                     kept free",
                    gib(free),
                    self.dir.display(),
                    gib(want),
                    gib(self.keep_free_bytes)
                )))
            }
            Err(e) => return Some(not_stored(format!("not kept: {e}"))),
        }
        match self.write(g, r) {
            Ok(bytes) => Some(CacheUse {
                outcome: CacheOutcome::Stored,
                path: self.dir.clone(),
                bytes,
                ns: t.elapsed().as_nanos() as u64,
                note: why_missed,
            }),
            Err(e) => {
                // Without its key the rest is never read; take it away so it does not sit
                // on the disk.
                let _ = std::fs::remove_file(self.dir.join(ORDER));
                let _ = std::fs::remove_file(self.dir.join(GRAPH));
                Some(not_stored(format!("not kept: {e}")))
            }
        }
    }

    fn write(&self, g: &Csr, r: &Relabeling) -> Result<u64> {
        let key = self.dir.join(KEY);
        match std::fs::remove_file(&key) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::io(&key, e)),
            _ => {}
        }
        let order = self.dir.join(ORDER);
        hugewise_sys::file::write_atomic_with(&order, &mut |w| write_order(r, w))
            .map_err(|e| Error::io(&order, e))?;
        let graph = self.dir.join(GRAPH);
        let (_, graph_bytes) = crate::save::save(g, &graph)?;
        let sums = Sums {
            order: order_checksum(r),
            graph: hwg::header_checksum(&graph)?,
        };
        let text = format!("{}{}", self.key, sums.text());
        hugewise_sys::file::write_atomic_with(&key, &mut |w| w.write_all(text.as_bytes()))
            .map_err(|e| Error::io(&key, e))?;
        Ok(graph_bytes + file_bytes(&order))
    }
}

/// The checksums of the files a store wrote, the last lines of its key.
struct Sums {
    order: u32,
    graph: u32,
}

impl Sums {
    fn text(&self) -> String {
        format!("order {:08x}\ngraph {:08x}\n", self.order, self.graph)
    }

    fn parse(tail: &str) -> Option<Sums> {
        let mut lines = tail.lines();
        let mut field = |name: &str| {
            let v = lines.next()?.strip_prefix(name)?.strip_prefix(' ')?;
            u32::from_str_radix(v, 16).ok()
        };
        let sums = Sums {
            order: field("order")?,
            graph: field("graph")?,
        };
        lines.next().is_none().then_some(sums)
    }
}

fn file_bytes(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

fn gib(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
}

/// The permutation: magic, version, CRC-32 of the ids, vertex count, then the new order's
/// original ids (u32, little-endian).
fn write_order(r: &Relabeling, w: &mut dyn Write) -> std::io::Result<()> {
    let ids: &[u8] = bytemuck::cast_slice(r.old_of_new());
    let mut h = [0u8; ORDER_HEADER];
    h[..8].copy_from_slice(ORDER_MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&order_checksum(r).to_le_bytes());
    h[16..24].copy_from_slice(&(r.old_of_new().len() as u64).to_le_bytes());
    w.write_all(&h)?;
    w.write_all(ids)
}

fn order_checksum(r: &Relabeling) -> u32 {
    crc32fast::hash(bytemuck::cast_slice(r.old_of_new()))
}

/// The permutation in `path` and its checksum, checked.
fn read_order(path: &Path) -> Result<(Relabeling, u32)> {
    let bad = |message: String| Error::Format {
        path: path.to_path_buf(),
        message,
    };
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    let len = f.metadata().map_err(|e| Error::io(path, e))?.len();
    let mut h = [0u8; ORDER_HEADER];
    f.read_exact(&mut h)
        .map_err(|_| bad(format!("only {len} bytes: shorter than its header")))?;
    if &h[..8] != ORDER_MAGIC {
        return Err(bad("bytes 0-7: not a hugewise permutation".into()));
    }
    let word = |at: usize| u32::from_le_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
    if word(8) != VERSION {
        return Err(bad(format!("version {}, not {VERSION}", word(8))));
    }
    let mut n = [0u8; 8];
    n.copy_from_slice(&h[16..24]);
    let n = u64::from_le_bytes(n);
    // The ids that follow the header, compared with the count declared: a damaged count is
    // refused here, before anything is allocated for it.
    let body = len.saturating_sub(ORDER_HEADER as u64);
    if body % 4 != 0 || body / 4 != n || n >= u64::from(u32::MAX) {
        return Err(bad(format!(
            "{len} bytes, but the header declares {n} ids of 4 bytes after its {ORDER_HEADER}"
        )));
    }
    let mut ids = vec![0u32; n as usize];
    f.read_exact(bytemuck::cast_slice_mut(&mut ids))
        .map_err(|e| Error::io(path, e))?;
    let sum = crc32fast::hash(bytemuck::cast_slice(&ids));
    if sum != word(12) {
        return Err(bad("the ids do not match their checksum".into()));
    }
    let r = Relabeling::from_order(ids).map_err(|e| bad(e.to_string()))?;
    Ok((r, sum))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::load;
    use crate::reorder::reorder;

    fn opts() -> LoadOptions {
        LoadOptions {
            seed: 7,
            weighted: false,
            symmetrize: true,
            fit: Fit::default(),
        }
    }

    /// A kron:10 saved as `.hwg` in `d`.
    fn input(d: &Path) -> Input {
        let (g, _) = load(
            &Input::parse("kron:10").expect("spec"),
            opts(),
            &Layout::default(),
            &mut |_| Ok(()),
        )
        .expect("generate");
        let p = d.join("k10.hwg");
        crate::save::save(&g, &p).expect("save");
        Input::File(p)
    }

    fn loaded(input: &Input, o: LoadOptions) -> Csr {
        load(input, o, &Layout::default(), &mut |_| Ok(()))
            .expect("load")
            .0
    }

    fn lists(g: &Csr) -> Vec<(Vec<u32>, Vec<u32>)> {
        (0..g.n() as u32)
            .map(|v| (g.out_neighbors(v).to_vec(), g.out_weights(v).to_vec()))
            .collect()
    }

    /// `e` is a miss whose note says `what`.
    fn miss_says(e: &Entry, what: &str) {
        match e.find(&Layout::default(), Fit::default(), &mut |_| Ok(())) {
            Found::Miss(Some(why)) => assert!(why.contains(what), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    fn hit(e: &Entry) -> (Csr, Relabeling, CacheUse) {
        match e.find(&Layout::default(), Fit::default(), &mut |_| Ok(())) {
            Found::Hit(h) => (h.graph, h.relabeling, h.used),
            Found::Miss(why) => panic!("a miss: {why:?}"),
        }
    }

    #[test]
    fn a_stored_graph_comes_back_the_same_and_a_changed_input_misses() {
        let d = tempfile::tempdir().expect("tmp");
        let input = input(d.path());
        let cache = Cache::new(d.path().join("cache"))
            .min_graph_bytes(0)
            .keep_free_bytes(0);
        let e = cache
            .entry(&input, &opts(), Method::Dbg, 7)
            .expect("a file has an entry");
        assert!(matches!(
            e.find(&Layout::default(), Fit::default(), &mut |_| Ok(())),
            Found::Miss(None)
        ));
        let g = loaded(&input, opts());
        let (h, r, _) = reorder(&g, Method::Dbg, 7, &Layout::default()).expect("reorder");
        let used = e.store(&h, &r, None).expect("kept");
        assert_eq!(used.outcome, CacheOutcome::Stored);
        assert!(used.bytes > h.data_bytes(), "{used:?}");

        // An entry too large for the memory allowed is a miss: the input's own load then
        // refuses it, by the input's name.
        let tight = Fit {
            cap_bytes: Some(1),
            ..Fit::default()
        };
        assert!(matches!(
            e.find(&Layout::default(), tight, &mut |_| panic!("allocated")),
            Found::Miss(None)
        ));

        let (h2, r2, used) = hit(&e);
        assert_eq!(used.outcome, CacheOutcome::Hit);
        assert_eq!(lists(&h2), lists(&h));
        assert_eq!(r2, r);

        // The kind comes from the name given: a link named `.el` to a `.wel` file loads
        // without the file's weights, so it cannot share the `.wel`'s entry.
        let wel = d.path().join("g.wel");
        std::fs::write(&wel, "0 1 5\n1 2 7\n").expect("wel");
        let el = d.path().join("g.el");
        std::os::unix::fs::symlink(&wel, &el).expect("link");
        let w8 = LoadOptions {
            weighted: true,
            ..opts()
        };
        let by_link = cache
            .entry(&Input::File(el), &w8, Method::Dbg, 7)
            .expect("entry");
        let direct = cache
            .entry(&Input::File(wel), &w8, Method::Dbg, 7)
            .expect("entry");
        assert_ne!(by_link.dir, direct.dir);

        // Another method, or a weighted load, is another entry.
        let other = cache.entry(&input, &opts(), Method::HubCluster, 7);
        assert_ne!(other.map(|x| x.dir), Some(e.dir.clone()));
        let weighted = LoadOptions {
            weighted: true,
            ..opts()
        };
        let w = cache
            .entry(&input, &weighted, Method::Dbg, 7)
            .expect("entry");
        assert_ne!(w.dir, e.dir);
        assert_ne!(
            cache
                .entry(&input, &weighted, Method::Dbg, 8)
                .expect("entry")
                .dir,
            w.dir,
            "added weights depend on the seed"
        );

        // The input rewritten: same entry, another key, so a miss that says why.
        let Input::File(p) = &input else {
            unreachable!()
        };
        std::thread::sleep(std::time::Duration::from_millis(20));
        let bytes = std::fs::read(p).expect("read");
        std::fs::remove_file(p).expect("rm");
        std::fs::write(p, bytes).expect("write");
        let again = cache.entry(&input, &opts(), Method::Dbg, 7).expect("entry");
        assert_eq!(again.dir, e.dir);
        miss_says(&again, "another version");
    }

    #[test]
    fn a_damaged_entry_is_a_miss_and_a_crashed_store_is_never_read() {
        let d = tempfile::tempdir().expect("tmp");
        let input = input(d.path());
        let cache = Cache::new(d.path().join("c"))
            .min_graph_bytes(0)
            .keep_free_bytes(0);
        let e = cache.entry(&input, &opts(), Method::Dbg, 7).expect("entry");
        let g = loaded(&input, opts());
        let (h, r, _) = reorder(&g, Method::Dbg, 7, &Layout::default()).expect("reorder");
        e.store(&h, &r, None).expect("kept");

        // A flipped byte in the permutation's ids.
        let order = e.dir.join(ORDER);
        let mut b = std::fs::read(&order).expect("read");
        b[ORDER_HEADER + 5] ^= 1;
        std::fs::write(&order, &b).expect("write");
        miss_says(&e, "checksum");
        // A count past any file (its top bits flipped): refused before it is allocated.
        e.store(&h, &r, None).expect("kept");
        let mut b = std::fs::read(&order).expect("read");
        b[23] ^= 0x40;
        std::fs::write(&order, &b).expect("write");
        miss_says(&e, "declares");
        // Another store's permutation under this key (two stores overlapped): not used.
        e.store(&h, &r, None).expect("kept");
        let other = cache
            .entry(&input, &opts(), Method::HubCluster, 7)
            .expect("entry");
        let (h2, r2, _) = reorder(&g, Method::HubCluster, 7, &Layout::default()).expect("reorder");
        other.store(&h2, &r2, None).expect("kept");
        std::fs::copy(other.dir.join(ORDER), &order).expect("copy");
        miss_says(&e, "not the one");
        // Stored again, it is whole; in a directory others may write, it is not read.
        e.store(&h, &r, None).expect("kept");
        hit(&e);
        let mode = |m: u32| {
            std::fs::set_permissions(&e.dir, std::os::unix::fs::PermissionsExt::from_mode(m))
                .expect("chmod")
        };
        mode(0o777);
        miss_says(&e, "only you can write");
        mode(0o755);
        // Then a store that died before its key: not read.
        hit(&e);
        std::fs::remove_file(e.dir.join(KEY)).expect("rm key");
        assert!(matches!(
            e.find(&Layout::default(), Fit::default(), &mut |_| Ok(())),
            Found::Miss(None)
        ));
        // A dead store's temporary file is cleared by the next store.
        let orphan = e.dir.join(format!(".{GRAPH}.{}.tmp", u32::MAX - 1));
        std::fs::write(&orphan, b"half").expect("orphan");
        e.store(&h, &r, None).expect("kept");
        assert!(!orphan.exists());
    }

    #[test]
    fn small_graphs_generators_and_full_disks_are_not_kept() {
        let d = tempfile::tempdir().expect("tmp");
        let input = input(d.path());
        let g = loaded(&input, opts());
        let (h, r, _) = reorder(&g, Method::Dbg, 7, &Layout::default()).expect("reorder");
        let default = Cache::new(d.path().join("c"));
        let e = default
            .entry(&input, &opts(), Method::Dbg, 7)
            .expect("entry");
        assert_eq!(
            e.store(&h, &r, None),
            None,
            "a kron:10 is not worth keeping"
        );
        assert!(default
            .entry(
                &Input::parse("kron:10").expect("spec"),
                &opts(),
                Method::Dbg,
                7
            )
            .is_none());
        let full = Cache::new(d.path().join("c"))
            .min_graph_bytes(0)
            .keep_free_bytes(u64::MAX / 4);
        let e = full.entry(&input, &opts(), Method::Dbg, 7).expect("entry");
        let used = e.store(&h, &r, None).expect("an outcome");
        assert_eq!(used.outcome, CacheOutcome::NotStored);
        let note = used.note.expect("why");
        assert!(note.contains("kept free"), "{note}");
        assert!(!e.dir.join(GRAPH).exists());
    }
}
