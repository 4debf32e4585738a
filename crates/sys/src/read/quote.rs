//! Input shown back in an error: a line from a file may be megabytes long or hold terminal
//! escape sequences, and an error message is read on a terminal.

/// Characters of input an error shows at most.
pub const SHOWN_CHARS: usize = 80;

/// `text` as an error shows it: control characters escaped (`\u{1b}`, `\n`), and cut to
/// [`SHOWN_CHARS`] characters followed by `… (N bytes)` when longer.
pub fn shown(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.char_indices();
    for (_, c) in chars.by_ref().take(SHOWN_CHARS) {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    if chars.next().is_some() {
        out.push_str(&format!("… ({} bytes)", text.len()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_kept_and_controls_are_escaped() {
        assert_eq!(shown("0 1 x"), "0 1 x");
        assert_eq!(shown("a\u{1b}[31mred\r"), "a\\u{1b}[31mred\\r");
    }

    #[test]
    fn long_text_is_cut_and_its_length_said() {
        let s = "é".repeat(5_000_000);
        let got = shown(&s);
        assert_eq!(got, format!("{}… (10000000 bytes)", "é".repeat(80)));
        assert_eq!(shown(&"x".repeat(80)), "x".repeat(80));
    }
}
