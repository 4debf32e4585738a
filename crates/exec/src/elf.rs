//! What hugewise reads of an ELF file before running a program with its preload library:
//! whether the program is statically linked (no `PT_INTERP` program header, so no dynamic
//! loader ever reads `LD_PRELOAD` for it), and whether a file given as the library is a
//! shared object for this machine at all (the loader would skip any other with a warning, and
//! the run would take nothing over).

use std::io::Read;
use std::path::{Path, PathBuf};

const PT_INTERP: u32 = 3;
const ET_EXEC: u16 = 2;
const ET_DYN: u16 = 3;

/// The fields of an ELF header hugewise looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    /// `ELFCLASS64`.
    wide: bool,
    e_type: u16,
    e_machine: u16,
    /// A `PT_INTERP` program header: the dynamic loader starts the program.
    interp: bool,
}

/// The header of `bytes` (the start of a file), or why it is not a little-endian ELF file.
fn parse(bytes: &[u8]) -> Result<Header, &'static str> {
    if bytes.get(..4) != Some(b"\x7fELF") {
        return Err("not an ELF file");
    }
    let wide = match bytes.get(4) {
        Some(1) => false,
        Some(2) => true,
        _ => return Err("an ELF file of unknown class"),
    };
    if bytes.get(5) != Some(&1) {
        return Err("a big-endian ELF file");
    }
    let u16_at = |at: usize| {
        bytes
            .get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let u32_at = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let u64_at = |at: usize| {
        bytes.get(at..at + 8).map(|b| {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            u64::from_le_bytes(a)
        })
    };
    let truncated = "a truncated ELF file";
    let (phoff, phentsize, phnum) = if wide {
        (u64_at(32), u16_at(54), u16_at(56))
    } else {
        (u32_at(28).map(u64::from), u16_at(42), u16_at(44))
    };
    let (Some(phoff), Some(phentsize), Some(phnum)) = (phoff, phentsize, phnum) else {
        return Err(truncated);
    };
    let interp = (0..u64::from(phnum)).any(|i| {
        usize::try_from(phoff + i * u64::from(phentsize))
            .ok()
            .and_then(u32_at)
            == Some(PT_INTERP)
    });
    Ok(Header {
        wide,
        e_type: u16_at(16).ok_or(truncated)?,
        e_machine: u16_at(18).ok_or(truncated)?,
        interp,
    })
}

/// The first 64 KiB of `path`: the header and, in any file a linker wrote, the program headers.
fn head(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(64 << 10);
    std::fs::File::open(path)?
        .take(64 << 10)
        .read_to_end(&mut buf)?;
    Ok(buf)
}

/// The file `program` names: itself when it holds a `/`, else the first executable of that
/// name in `PATH`, as `execvp` finds it.
pub fn resolve(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    if program.contains('/') {
        return Some(PathBuf::from(program));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Whether `program` is a statically linked ELF executable. A script, or a file that cannot
/// be read, is not: the loader of whatever runs it decides.
pub fn is_static(program: &Path) -> bool {
    head(program)
        .ok()
        .and_then(|b| parse(&b).ok())
        .is_some_and(|h| matches!(h.e_type, ET_EXEC | ET_DYN) && !h.interp)
}

/// Why the dynamic loader would not load a preload library into `program`, if it would not:
/// a statically linked program has no loader, and a set-user-ID or set-group-ID one runs it in
/// secure mode, which ignores `LD_PRELOAD` (save for system libraries that are set-user-ID
/// themselves). None when it would, or when `program` cannot be found or read (starting it
/// will say why).
pub fn preload_refusal(program: &str) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let path = resolve(program)?;
    if is_static(&path) {
        return Some(format!(
            "{} is statically linked (only the dynamic loader reads LD_PRELOAD)",
            path.display()
        ));
    }
    let mode = std::fs::metadata(&path).ok()?.permissions().mode();
    if mode & 0o6000 != 0 {
        return Some(format!(
            "{} is set-user-ID or set-group-ID (the loader ignores LD_PRELOAD for it)",
            path.display()
        ));
    }
    None
}

/// `Ok` when `path` is an ELF shared object of this machine's kind (the class and machine of
/// the running hugewise); else why not.
pub fn check_shared_object(path: &Path) -> Result<(), String> {
    let b = head(path).map_err(|e| e.to_string())?;
    let h = parse(&b).map_err(str::to_string)?;
    if h.e_type != ET_DYN {
        return Err(format!(
            "an ELF file, but not a shared object (type {})",
            h.e_type
        ));
    }
    if let Some(me) = head(Path::new("/proc/self/exe"))
        .ok()
        .and_then(|b| parse(&b).ok())
    {
        if (h.wide, h.e_machine) != (me.wide, me.e_machine) {
            return Err(format!(
                "a shared object for another machine ({}-bit, machine {}; hugewise is {}-bit, \
                 machine {})",
                if h.wide { 64 } else { 32 },
                h.e_machine,
                if me.wide { 64 } else { 32 },
                me.e_machine
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hugewise_itself_is_dynamic_and_text_is_not_elf() {
        let me = std::env::current_exe().expect("exe");
        assert!(!is_static(&me), "test binaries are dynamically linked");
        let d = tempfile::tempdir().expect("tmp");
        let t = d.path().join("notes.so");
        std::fs::write(&t, "not a library\n").expect("write");
        assert!(!is_static(&t));
        assert_eq!(check_shared_object(&t), Err("not an ELF file".into()));
        assert_eq!(parse(b"\x7fELF\x02\x01"), Err("a truncated ELF file"));
    }

    #[test]
    fn a_set_user_id_program_is_refused_and_a_dynamic_one_is_not() {
        use std::os::unix::fs::PermissionsExt;
        let me = std::env::current_exe().expect("exe");
        assert_eq!(preload_refusal(me.to_str().expect("path")), None);
        let d = tempfile::tempdir().expect("tmp");
        let copy = d.path().join("suid");
        std::fs::write(&copy, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o4755)).expect("chmod");
        let why = preload_refusal(copy.to_str().expect("path")).expect("refused");
        assert!(why.contains("set-user-ID"), "{why}");
        assert_eq!(preload_refusal("/nonexistent/program"), None);
    }

    #[test]
    fn a_header_without_pt_interp_is_static() {
        // A minimal 64-bit executable: header, then one PT_LOAD program header.
        let mut b = vec![0u8; 64 + 56];
        b[..6].copy_from_slice(b"\x7fELF\x02\x01");
        b[16..18].copy_from_slice(&ET_EXEC.to_le_bytes());
        b[18..20].copy_from_slice(&62u16.to_le_bytes());
        b[32..40].copy_from_slice(&64u64.to_le_bytes());
        b[54..56].copy_from_slice(&56u16.to_le_bytes());
        b[56..58].copy_from_slice(&1u16.to_le_bytes());
        b[64..68].copy_from_slice(&1u32.to_le_bytes());
        assert!(!parse(&b).expect("elf").interp);
        b[64..68].copy_from_slice(&PT_INTERP.to_le_bytes());
        assert!(parse(&b).expect("elf").interp);
    }
}
