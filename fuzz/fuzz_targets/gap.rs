//! Any bytes as a GAP `.sg` and `.wsg` file: a graph or an error, never a panic, and no
//! allocation beyond what the file's length allows.
#![no_main]

use hugewise_graph::io::gap;
use hugewise_graph::fits::Fit;
use hugewise_graph::Layout;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("hugewise-fuzz-{}.sg", std::process::id()));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    for weighted in [false, true] {
        let _ = gap::read(&path, weighted, Fit { cap_bytes: Some(1 << 28), ..Fit::default() }, &Layout::default(), &mut |_| Ok(()));
    }
    let _ = std::fs::remove_file(&path);
});
