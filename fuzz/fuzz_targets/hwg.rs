//! Any bytes as a `.hwg` file: a graph whose structure is sound, or an error; never a panic.
#![no_main]

use hugewise_graph::io::hwg;
use hugewise_graph::fits::Fit;
use hugewise_graph::Layout;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("hugewise-fuzz-{}.hwg", std::process::id()));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    if let Ok((g, _)) = hwg::read(&path, Fit { cap_bytes: Some(1 << 28), ..Fit::default() }, &Layout::default(), &mut |_| Ok(())) {
        // Every list is in bounds: walking the graph must not panic.
        let arcs: usize = (0..g.n() as u32).map(|v| g.out_neighbors(v).len()).sum();
        assert_eq!(arcs as u64, g.arcs());
    }
    let _ = std::fs::remove_file(&path);
});
