//! Atomic replacement of a file: readers see the old contents or the new ones,
//! never a part, and a failed or killed write leaves the old file untouched
//! and no temporary file behind.
//!
//! The new contents go to a temporary file in the target's directory, which is
//! synced, renamed over the target, and the directory synced. On Linux the
//! temporary file is created without a name (O_TMPFILE), so the kernel frees it
//! if the process dies while writing; it gets a name only for the instant
//! between `linkat` and `rename` (rename can replace a file, linkat can't).
//! Elsewhere, and on filesystems without O_TMPFILE, it is named
//! `.{target}.{pid}.{token}.tmp` from the start. Either way a save removes the
//! temporary files of the same target left by processes that no longer exist.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Replaces `target` with what `fill` writes into the (empty) file it is given.
pub fn replace(target: &Path, fill: impl FnOnce(&mut File) -> io::Result<()>) -> io::Result<()> {
    replace_via(target, fill, cfg!(target_os = "linux"))
}

/// `replace`, with an unnamed temporary file when `unnamed_first` and possible.
#[cfg_attr(not(target_os = "linux"), allow(unused_variables))]
fn replace_via(
    target: &Path,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
    unnamed_first: bool,
) -> io::Result<()> {
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Some(base) = target.file_name().map(|b| b.to_string_lossy().into_owned()) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} does not name a file", target.display()),
        ));
    };
    remove_stale(dir, &base);
    let tmp = dir.join(format!(".{}.{}.{}.tmp", base, std::process::id(), token()));
    #[cfg(target_os = "linux")]
    if let Some(mut f) = unnamed(dir).filter(|_| unnamed_first) {
        fill(&mut f)?;
        f.sync_all()?;
        link(&f, &tmp)?;
        return finish(&tmp, target, dir);
    }
    let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
    let written = fill(&mut f).and_then(|()| f.sync_all());
    drop(f);
    match written {
        Ok(()) => finish(&tmp, target, dir),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Renames the complete temporary file over the target and syncs the directory
/// (so the rename itself survives a power loss).
fn finish(tmp: &Path, target: &Path, dir: &Path) -> io::Result<()> {
    if let Err(e) = fs::rename(tmp, target) {
        let _ = fs::remove_file(tmp);
        return Err(e);
    }
    // Some systems (Windows) can't open or sync a directory: the rename stands anyway.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Unique among the temporary files of this process.
fn token() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{:x}{:08x}", NEXT.fetch_add(1, Ordering::Relaxed), nanos)
}

/// Removes `.{base}.{pid}.{token}.tmp` files whose process is gone.
fn remove_stale(dir: &Path, base: &str) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    let prefix = format!(".{}.", base);
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Some(middle) = name.strip_prefix(&prefix).and_then(|m| m.strip_suffix(".tmp")) else {
            continue;
        };
        let Some((pid, token)) = middle.split_once('.') else { continue };
        let hex = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit());
        let Ok(pid) = pid.parse::<u32>() else { continue };
        if hex(token) && pid != std::process::id() && !alive(pid) {
            let _ = fs::remove_file(dir.join(&*name));
        }
    }
}

/// Whether process `pid` exists. Where that can't be told, assume it does (and keep its files).
fn alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        // kill(pid <= 0) would address process groups: no such pid is ours to judge.
        let Ok(pid) = libc::pid_t::try_from(pid) else { return true };
        if pid <= 0 {
            return true;
        }
        // SAFETY: signal 0 only checks that the process exists; nothing is sent.
        if unsafe { libc::kill(pid, 0) } == 0 {
            return true;
        }
        io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// A writable file in `dir` with no name, or None where the kernel or the
/// filesystem can't make one (or /proc, needed to name it later, is missing).
#[cfg(target_os = "linux")]
fn unnamed(dir: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    if !Path::new("/proc/self/fd").is_dir() {
        return None;
    }
    OpenOptions::new().write(true).custom_flags(libc::O_TMPFILE).open(dir).ok()
}

/// Gives the unnamed file `f` the name `tmp`.
#[cfg(target_os = "linux")]
fn link(f: &File, tmp: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::io::AsRawFd;
    // linkat(fd, "", AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH; the /proc link doesn't.
    let src = CString::new(format!("/proc/self/fd/{}", f.as_raw_fd()))?;
    let dst = CString::new(tmp.as_os_str().as_bytes())?;
    // SAFETY: both paths are NUL-terminated strings that outlive the call.
    let r = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            src.as_ptr(),
            libc::AT_FDCWD,
            dst.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rumus-atomic-{}-{}", name, std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn replaces_and_leaves_nothing_else() {
        for unnamed in [true, false] {
            let d = scratch(&format!("replace-{}", unnamed));
            let target = d.join("ckpt");
            replace_via(&target, |f| io::Write::write_all(f, b"one"), unnamed).unwrap();
            replace_via(&target, |f| io::Write::write_all(f, b"two"), unnamed).unwrap();
            assert_eq!(fs::read(&target).unwrap(), b"two");
            assert_eq!(names(&d), ["ckpt"]);
            fs::remove_dir_all(&d).unwrap();
        }
    }

    #[test]
    fn failure_keeps_the_old_file() {
        for unnamed in [true, false] {
            let d = scratch(&format!("failure-{}", unnamed));
            let target = d.join("ckpt");
            replace(&target, |f| io::Write::write_all(f, b"old")).unwrap();
            let fill = |f: &mut File| {
                io::Write::write_all(f, b"partial")?;
                Err(io::Error::other("disk full"))
            };
            let err = replace_via(&target, fill, unnamed).unwrap_err();
            assert_eq!(err.to_string(), "disk full");
            assert_eq!(fs::read(&target).unwrap(), b"old");
            assert_eq!(names(&d), ["ckpt"]);
            fs::remove_dir_all(&d).unwrap();
        }
    }

    #[test]
    fn stale_files_of_dead_processes_go_others_stay() {
        let d = scratch("stale");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let keep = [
            format!(".ckpt.{}.ab12.tmp", std::process::id()), // this process: may be writing
            ".ckpt.1.ab12.tmp".to_string(),                   // init: alive
            format!(".ckpt.{}.not-hex.tmp", dead),            // not ours
            format!(".other.{}.ab12.tmp", dead),              // another target's
        ];
        for n in &keep {
            fs::write(d.join(n), b"x").unwrap();
        }
        fs::write(d.join(format!(".ckpt.{}.ab12.tmp", dead)), b"x").unwrap();
        replace(&d.join("ckpt"), |f| io::Write::write_all(f, b"new")).unwrap();
        let mut expected: Vec<String> = keep.to_vec();
        expected.push("ckpt".into());
        expected.sort();
        assert_eq!(names(&d), expected);
        fs::remove_dir_all(&d).unwrap();
    }
}
