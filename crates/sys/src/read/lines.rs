//! Text read a line at a time, within bounds no text file breaks: a line is at most
//! [`MAX_LINE`] bytes and holds no NUL byte. Without them a text reader handed `/dev/zero` (or
//! 10 GB of zeros compressed to a few hundred KB) reads one endless line into memory.

use std::io::{self, BufRead};

/// The longest line a text reader takes, end excluded.
pub const MAX_LINE: usize = 1 << 20;

/// What makes input not text, at a byte offset from the start of the text (of the decompressed
/// text, for compressed input).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotText {
    /// A NUL byte.
    #[error("byte {offset}: a NUL byte: binary data, not text (is this the right file?)")]
    Nul {
        /// Where.
        offset: u64,
    },
    /// A line longer than [`MAX_LINE`].
    #[error(
        "byte {offset}: a line longer than {} MiB: not text (is this the right file?)",
        MAX_LINE >> 20
    )]
    LongLine {
        /// Where the line starts.
        offset: u64,
    },
    /// Bytes that are not UTF-8.
    #[error("byte {offset}: not UTF-8 text")]
    NotUtf8 {
        /// The first byte that is not.
        offset: u64,
    },
}

impl From<NotText> for io::Error {
    fn from(e: NotText) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, e)
    }
}

impl NotText {
    /// The error for `line`, starting at byte `offset`, if it breaks a bound (its end
    /// excluded).
    pub fn check(line: &[u8], offset: u64) -> Result<(), NotText> {
        if let Some(k) = line.iter().position(|&b| b == 0) {
            return Err(NotText::Nul {
                offset: offset + k as u64,
            });
        }
        if line.len() > MAX_LINE {
            return Err(NotText::LongLine { offset });
        }
        Ok(())
    }
}

/// The lines of a [`BufRead`], each checked by [`NotText::check`] as it is read, so that no
/// more than [`MAX_LINE`] bytes are ever held.
#[derive(Debug)]
pub struct Lines<R> {
    r: R,
    line: Vec<u8>,
    number: u64,
    start: u64,
    next: u64,
}

impl<R: BufRead> Lines<R> {
    /// Lines of `r`, from its current position (counted as byte 0, line 1).
    pub fn new(r: R) -> Lines<R> {
        Lines {
            r,
            line: Vec::new(),
            number: 0,
            start: 0,
            next: 0,
        }
    }

    /// The next line without its `\n`, or `None` at the end. An I/O error, or [`NotText`]
    /// wrapped in one.
    pub fn next_line(&mut self) -> io::Result<Option<&str>> {
        self.line.clear();
        self.start = self.next;
        let mut ended = false;
        while !ended {
            let got = self.r.fill_buf()?;
            if got.is_empty() {
                if self.line.is_empty() {
                    return Ok(None);
                }
                break;
            }
            let (take, body) = match got.iter().position(|&b| b == b'\n') {
                Some(k) => {
                    ended = true;
                    (k + 1, k)
                }
                None => (got.len(), got.len()),
            };
            let at = self.start + self.line.len() as u64;
            NotText::check(&got[..body], at)?;
            if self.line.len() + body > MAX_LINE {
                return Err(NotText::LongLine { offset: self.start }.into());
            }
            self.line.extend_from_slice(&got[..body]);
            self.r.consume(take);
            self.next += take as u64;
        }
        self.number += 1;
        std::str::from_utf8(&self.line).map(Some).map_err(|e| {
            NotText::NotUtf8 {
                offset: self.start + e.valid_up_to() as u64,
            }
            .into()
        })
    }

    /// The 1-based number of the line [`Lines::next_line`] returned last.
    pub fn number(&self) -> u64 {
        self.number
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &[u8]) -> io::Result<Vec<String>> {
        let mut l = Lines::new(io::BufReader::with_capacity(7, text));
        let mut out = Vec::new();
        while let Some(s) = l.next_line()? {
            out.push(s.to_string());
        }
        assert_eq!(l.number(), out.len() as u64);
        Ok(out)
    }

    #[test]
    fn lines_come_whole_across_buffer_refills() {
        let got = all(b"first line\n\nthird, last and unended").expect("text");
        assert_eq!(got, ["first line", "", "third, last and unended"]);
    }

    #[test]
    fn a_nul_byte_is_named_by_its_offset() {
        let e = all(b"0 1\n1 2\n3 \x004\n").expect_err("nul").to_string();
        assert_eq!(
            e,
            "byte 10: a NUL byte: binary data, not text (is this the right file?)"
        );
    }

    #[test]
    fn an_endless_line_is_refused_after_the_bound_not_read_to_its_end() {
        let mut l = Lines::new(io::BufReader::new(io::repeat(b'7')));
        let e = l.next_line().expect_err("endless").to_string();
        assert!(e.starts_with("byte 0: a line longer than 1 MiB"), "{e}");
        let zeros = io::BufReader::new(std::fs::File::open("/dev/zero").expect("zero"));
        let e = Lines::new(zeros)
            .next_line()
            .expect_err("zeros")
            .to_string();
        assert!(e.starts_with("byte 0: a NUL byte"), "{e}");
        let mut long = vec![b'1'; MAX_LINE];
        long.extend_from_slice(b"\n2\n");
        assert_eq!(all(&long).expect("at the bound").len(), 2);
    }

    #[test]
    fn bytes_that_are_not_utf8_are_named() {
        let e = all(b"ok\nl\xe9\n").expect_err("latin-1").to_string();
        assert_eq!(e, "byte 4: not UTF-8 text");
    }
}
