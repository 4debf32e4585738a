//! The exit code a shell reports for a process that exited or was ended by a signal: the one
//! mapping every command that runs a program, or is itself stopped by a signal, uses.

/// `code` when the process exited; 128 + `signal` when a signal ended it; 1 when neither is
/// known. Clamped to what an exit status holds.
pub fn shell_code(code: Option<i32>, signal: Option<i32>) -> u8 {
    code.or(signal.map(|s| 128 + s)).unwrap_or(1).clamp(0, 255) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_or_128_plus_the_signal() {
        assert_eq!(shell_code(Some(3), None), 3);
        assert_eq!(shell_code(None, Some(15)), 143);
        assert_eq!(shell_code(None, Some(2)), 130);
        assert_eq!(shell_code(None, None), 1);
        assert_eq!(shell_code(Some(-1), None), 0);
    }
}
