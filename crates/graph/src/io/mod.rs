//! Readers and writers of graph files.
//!
//! - [`edgelist`]: `.el` / `.wel` text (any whitespace, `#` and `%` comments);
//! - [`mtx`]: Matrix Market coordinate files;
//! - [`gap`]: the GAP benchmark suite's serialized `.sg` / `.wsg`, byte-compatible;
//! - [`hwg`]: hugewise's own binary CSR, versioned and checksummed, read straight into regions.
//!
//! Compressed input (`gzip`, `zstd`) is detected by magic bytes, not by name.

pub mod edgelist;
pub mod gap;
pub mod hwg;
pub mod mtx;

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use crate::{Error, Result};

/// Open `path` for reading, decompressing gzip or zstd transparently.
pub fn open(path: &Path) -> Result<Box<dyn Read + Send>> {
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut magic = [0u8; 4];
    let got = read_up_to(&mut f, &mut magic).map_err(|e| Error::io(path, e))?;
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    let buf = BufReader::with_capacity(1 << 20, f);
    Ok(match &magic[..got] {
        [0x1f, 0x8b, ..] => Box::new(flate2::read::MultiGzDecoder::new(buf)),
        [0x28, 0xb5, 0x2f, 0xfd] => Box::new(
            ruzstd::decoding::StreamingDecoder::new(buf).map_err(|e| Error::Format {
                path: path.to_path_buf(),
                message: format!("zstd header: {e}"),
            })?,
        ),
        _ => Box::new(buf),
    })
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}
