//! Safe file handling shared by every command: inputs read with a size cap, outputs written
//! atomically through a new exclusive temp file in the same directory (never following a
//! planted symlink), private modes for files that can hold server data, and output paths
//! checked before any work starts.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Size cap of a JSON input (`--snapshot`, `--probe`, `--host-facts`): real ones are well
/// under 10 MiB.
pub const JSON_INPUT_CAP: u64 = 64 << 20;

/// Read a text input of at most `cap` bytes; anything larger (or endless, like /dev/zero) is
/// bad input naming the flag.
pub fn read_capped(path: &Path, cap: u64, flag: &str) -> Result<String> {
    let f = File::open(path).map_err(|e| {
        Error::bad_input(format!("{flag} {}: cannot read it ({e})", path.display()))
    })?;
    let mut buf = Vec::new();
    f.take(cap + 1).read_to_end(&mut buf).map_err(|e| {
        Error::bad_input(format!("{flag} {}: cannot read it ({e})", path.display()))
    })?;
    if buf.len() as u64 > cap {
        return Err(Error::bad_input(format!(
            "{flag} {}: larger than {} MiB, which no file spinscope writes reaches; give the right file",
            path.display(),
            cap >> 20
        )));
    }
    String::from_utf8(buf).map_err(|_| {
        Error::bad_input(format!(
            "{flag} {}: not UTF-8 text; give the right file",
            path.display()
        ))
    })
}

fn dir_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Check, before any load or change starts, that `path` can be written: its directory exists
/// and takes a new file, and the path is not a directory.
pub fn check_output(path: &Path, flag: &str) -> Result<()> {
    let bad = |why: String| {
        Error::bad_input(format!(
            "{flag} {}: {why}; choose a writable path",
            path.display()
        ))
    };
    if path.is_dir() {
        return Err(bad("is a directory".into()));
    }
    let dir = dir_of(path);
    let (f, tmp) = new_temp(&dir, path, 0o600).map_err(|e| bad(format!("cannot write ({e})")))?;
    drop(f);
    let _ = std::fs::remove_file(tmp);
    Ok(())
}

/// Check that a directory for outputs exists (or can be created) and takes a new file.
pub fn check_output_dir(dir: &Path, flag: &str) -> Result<()> {
    let bad = |e: std::io::Error| {
        Error::bad_input(format!(
            "{flag} {}: cannot write there ({e}); choose a writable directory",
            dir.display()
        ))
    };
    std::fs::create_dir_all(dir).map_err(bad)?;
    let (f, tmp) = new_temp(dir, &dir.join("probe"), 0o600).map_err(bad)?;
    drop(f);
    let _ = std::fs::remove_file(tmp);
    Ok(())
}

/// Files a command writes into one directory after its work (chart sets): the directory and
/// every declared name are checked before the work starts, so a bad `--charts` never costs a
/// finished run, and at the end only declared names are written, each atomically.
pub struct OutputDir {
    dir: PathBuf,
    flag: &'static str,
    names: Vec<String>,
    private: bool,
}

impl OutputDir {
    /// Create `dir` if needed and check it takes each of `names` (none may be a directory).
    /// `private` files (server data) are 0600, others 0644.
    pub fn open(dir: &Path, names: Vec<String>, flag: &'static str, private: bool) -> Result<Self> {
        check_output_dir(dir, flag)?;
        for n in &names {
            check_output(&dir.join(n), flag)?;
        }
        Ok(OutputDir {
            dir: dir.to_path_buf(),
            flag,
            names,
            private,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Write each (name, contents); a name not declared to `open` is a program error.
    pub fn write<S: AsRef<[u8]>>(&self, files: &[(String, S)]) -> Result<()> {
        for (name, bytes) in files {
            if !self.names.contains(name) {
                return Err(Error::runtime(format!(
                    "{} {}: {name} was not checked before the run (a spinscope bug)",
                    self.flag,
                    self.dir.display()
                )));
            }
            write_atomic(
                &self.dir.join(name),
                bytes.as_ref(),
                self.flag,
                self.private,
            )?;
        }
        Ok(())
    }
}

/// A new temp file next to `target`, created with O_EXCL | O_NOFOLLOW: never an existing
/// file, never through a symlink.
fn new_temp(dir: &Path, target: &Path, mode: u32) -> std::io::Result<(File, PathBuf)> {
    let base = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let mut last = None;
    for i in 0..100u32 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let tmp = dir.join(format!(".{base}.{}.{nanos:x}{i}.tmp", std::process::id()));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
        {
            Ok(f) => return Ok((f, tmp)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temp name")))
}

/// Write `bytes` to `path` atomically: a new exclusive temp file in the same directory
/// (mode `mode`), fsync, rename over the target, fsync the directory.
pub fn write_atomic_mode(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let dir = dir_of(path);
    let (mut f, tmp) = new_temp(&dir, path, mode)?;
    let r = f
        .write_all(bytes)
        .and_then(|_| f.sync_all())
        .and_then(|_| std::fs::rename(&tmp, path));
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
        return r;
    }
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// [`write_atomic_mode`] with a message naming the flag. `private` files (anything that can
/// hold server data: snapshots, sweep results) are 0600, others 0644.
pub fn write_atomic(path: &Path, bytes: &[u8], flag: &str, private: bool) -> Result<()> {
    write_atomic_mode(path, bytes, if private { 0o600 } else { 0o644 }).map_err(|e| {
        Error::bad_input(format!(
            "{flag} {}: cannot write ({e}); choose a writable path",
            path.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn atomic_write_is_private_and_ignores_a_planted_symlink() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let out = d.path().join("out.json");
        // A symlink planted at the old fixed temp name must not be followed.
        std::os::unix::fs::symlink(&victim, d.path().join("out.tmp~")).unwrap();
        write_atomic(&out, b"{}", "--save", true).unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "{}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // No temp file left behind.
        let n = std::fs::read_dir(d.path()).unwrap().count();
        assert_eq!(n, 3, "victim, symlink, out");
    }

    #[test]
    fn capped_read_refuses_endless_input() {
        let e = read_capped(Path::new("/dev/zero"), 1 << 20, "--snapshot").unwrap_err();
        assert!(matches!(e, Error::BadInput(_)));
        assert!(
            e.to_string()
                .contains("--snapshot /dev/zero: larger than 1 MiB"),
            "{e}"
        );
    }

    #[test]
    fn output_checks() {
        let d = tempfile::tempdir().unwrap();
        assert!(check_output(&d.path().join("a.html"), "--html").is_ok());
        let e = check_output(Path::new("/nonexistent-dir/x.html"), "--html").unwrap_err();
        assert!(
            e.to_string().starts_with("--html /nonexistent-dir/x.html"),
            "{e}"
        );
        assert!(check_output(d.path(), "--html").is_err());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }
}
