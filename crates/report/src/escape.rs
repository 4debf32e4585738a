//! Text views made safe to print: strings in a result file (a host name, a path, a label, a
//! program's arguments) may hold terminal escape sequences or carriage returns, which a
//! terminal would obey. Every text and Markdown view passes through [`controls`] on its way
//! out; HTML escapes on its own.

use std::borrow::Cow;

/// `text` with every control character but the line feed written out (`\u{1b}`, `\r`,
/// `\t`), so that printing it moves the cursor only to the next line.
pub fn controls(text: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n';
    if !text.contains(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_line_feeds_stay_control_characters() {
        assert!(matches!(controls("a  b\nc\n"), Cow::Borrowed(_)));
        assert_eq!(
            controls("host\u{1b}]0;pwned\u{7}\r\tx\u{9b}2J\n"),
            "host\\u{1b}]0;pwned\\u{7}\\r\\tx\\u{9b}2J\n"
        );
    }
}
