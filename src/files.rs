//! Safe file handling shared by every command (issue 24, item 5): inputs opened without
//! blocking and refused when they are FIFOs, devices or sockets, read with a size cap;
//! outputs written atomically through a new exclusive temp file in the same directory (the
//! `tempfile` crate), never through or over a symbolic link; appends that refuse a link;
//! private modes for files that can hold server data; an output that is one of the inputs
//! refused before anything is read or written; output paths checked before any work starts;
//! documents saved as pretty JSON (`save_json`).

use std::fs::{File, OpenOptions, Permissions};
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Size cap of a JSON input (`--snapshot`, `--probe`, `--host-facts`): real ones are well
/// under 10 MiB.
pub const JSON_INPUT_CAP: u64 = 64 << 20;

/// spinscope's state directory: `$XDG_STATE_HOME/spinscope` (else `~/.local/state/spinscope`),
/// home of the change journal and this host's saved CPU figure; None when neither
/// XDG_STATE_HOME nor HOME is set.
pub fn state_dir() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        Some(x) => PathBuf::from(x),
        None => {
            PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".local/state")
        }
    };
    Some(base.join("spinscope"))
}

/// What a file that is not a regular file is, for messages (None: a regular file).
pub fn special_kind(ft: std::fs::FileType) -> Option<&'static str> {
    if ft.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if ft.is_char_device() || ft.is_block_device() {
        Some("a device")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

/// Open an input for reading without ever blocking in `open` (O_NONBLOCK) and refuse, by
/// fstat of what was opened, a FIFO, device or socket (reading one can hang or never end) and,
/// unless `dir_ok`, a directory. A symbolic link an input names is followed: the user chose it.
pub fn open_input_kind(path: &Path, flag: &str, dir_ok: bool) -> Result<File> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            Error::bad_input(format!("{flag} {}: cannot read it ({e})", path.display()))
        })?;
    let meta = f.metadata().map_err(|e| {
        Error::bad_input(format!("{flag} {}: cannot read it ({e})", path.display()))
    })?;
    if let Some(kind) = special_kind(meta.file_type()) {
        return Err(Error::bad_input(format!(
            "{flag} {}: is {kind}, not a regular file; give a regular file",
            path.display()
        )));
    }
    if meta.is_dir() && !dir_ok {
        return Err(Error::bad_input(format!(
            "{flag} {}: is a directory; give a regular file",
            path.display()
        )));
    }
    // Back to blocking reads (a no-op for regular files, kept for clarity).
    use std::os::fd::AsRawFd;
    // SAFETY: fcntl on a descriptor this function owns; no memory is passed.
    unsafe {
        let fl = libc::fcntl(f.as_raw_fd(), libc::F_GETFL);
        if fl >= 0 {
            libc::fcntl(f.as_raw_fd(), libc::F_SETFL, fl & !libc::O_NONBLOCK);
        }
    }
    Ok(f)
}

/// Refuse, without opening it, an input that is a FIFO, device or socket (a missing or
/// unreadable path is left to the reader, which may list it instead of failing).
pub fn refuse_special(path: &Path, flag: &str) -> Result<()> {
    let special = std::fs::metadata(path)
        .ok()
        .and_then(|m| special_kind(m.file_type()));
    match special {
        Some(kind) => Err(Error::bad_input(format!(
            "{flag} {}: is {kind}, not a regular file; give a regular file",
            path.display()
        ))),
        None => Ok(()),
    }
}

/// [`open_input_kind`] for a file input (directories refused).
pub fn open_input(path: &Path, flag: &str) -> Result<File> {
    open_input_kind(path, flag, false)
}

/// Read a text input of at most `cap` bytes; anything larger, a FIFO or a device is bad
/// input naming the flag.
pub fn read_capped(path: &Path, cap: u64, flag: &str) -> Result<String> {
    let f = open_input(path, flag)?;
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

/// Why `path` may not be an output target as it stands (None: it may): a symbolic link
/// (planted or not, never written through or replaced), a directory, a FIFO or device.
fn target_problem(path: &Path) -> Option<String> {
    let m = std::fs::symlink_metadata(path).ok()?;
    let ft = m.file_type();
    if ft.is_symlink() {
        Some("is a symbolic link, which spinscope never writes through or replaces; remove it or choose another path".into())
    } else if ft.is_dir() {
        Some("is a directory; choose a file path".into())
    } else {
        special_kind(ft).map(|k| format!("is {k}, not a regular file; choose a file path"))
    }
}

fn io_problem(why: String) -> std::io::Error {
    std::io::Error::other(why)
}

/// Check, before any load or change starts, that `path` can be written: not a link, a
/// directory or a device, and its directory takes a new file.
pub fn check_output(path: &Path, flag: &str) -> Result<()> {
    if let Some(why) = target_problem(path) {
        return Err(Error::bad_input(format!(
            "{flag} {}: {why}",
            path.display()
        )));
    }
    let probe = new_temp(&dir_of(path), path, 0o600).map_err(|e| {
        Error::bad_input(format!(
            "{flag} {}: cannot write ({e}); choose a writable path",
            path.display()
        ))
    })?;
    drop(probe); // removes the probe file
    Ok(())
}

/// Check that a directory for outputs exists (or can be created) and takes a new file; a
/// symbolic link as the directory itself is refused too.
pub fn check_output_dir(dir: &Path, flag: &str) -> Result<()> {
    if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(Error::bad_input(format!(
            "{flag} {}: is a symbolic link, which spinscope never writes through; choose a directory",
            dir.display()
        )));
    }
    let bad = |e: std::io::Error| {
        Error::bad_input(format!(
            "{flag} {}: cannot write there ({e}); choose a writable directory",
            dir.display()
        ))
    };
    std::fs::create_dir_all(dir).map_err(bad)?;
    drop(new_temp(dir, &dir.join("probe"), 0o600).map_err(bad)?);
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

/// A new temp file next to `target` (the `tempfile` crate: O_CREAT | O_EXCL with a random
/// name, so never an existing file and never through a symlink), mode `mode`; removed when
/// dropped unless persisted.
fn new_temp(dir: &Path, target: &Path, mode: u32) -> std::io::Result<tempfile::NamedTempFile> {
    let base = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    tempfile::Builder::new()
        .prefix(&format!(".{base}."))
        .suffix(".tmp")
        .permissions(Permissions::from_mode(mode))
        .tempfile_in(dir)
}

/// Sync `tmp`, then rename it over `path` unless `path` has become a link, directory or
/// device meanwhile (the rename replaces a name, never writes through it), and sync the
/// directory.
fn persist(tmp: tempfile::NamedTempFile, path: &Path) -> std::io::Result<()> {
    tmp.as_file().sync_all()?;
    if let Some(why) = target_problem(path) {
        return Err(io_problem(why));
    }
    tmp.persist(path).map_err(|e| e.error)?;
    if let Ok(d) = File::open(dir_of(path)) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Write `bytes` to `path` atomically: a new exclusive temp file in the same directory
/// (mode `mode`), fsync, rename over the target, fsync the directory. A symbolic link,
/// directory or device at `path` is refused, never replaced or written through.
pub fn write_atomic_mode(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    if let Some(why) = target_problem(path) {
        return Err(io_problem(why));
    }
    let mut tmp = new_temp(&dir_of(path), path, mode)?;
    tmp.write_all(bytes)?;
    persist(tmp, path)
}

fn write_error(flag: &str, path: &Path, e: std::io::Error) -> Error {
    match target_problem(path) {
        Some(why) => Error::bad_input(format!("{flag} {}: {why}", path.display())),
        None => Error::bad_input(format!(
            "{flag} {}: cannot write ({e}); choose a writable path",
            path.display()
        )),
    }
}

/// [`write_atomic_mode`] with a message naming the flag. `private` files (anything that can
/// hold server data: snapshots, sweep results, reports) are 0600, others 0644.
pub fn write_atomic(path: &Path, bytes: &[u8], flag: &str, private: bool) -> Result<()> {
    write_atomic_mode(path, bytes, if private { 0o600 } else { 0o644 })
        .map_err(|e| write_error(flag, path, e))
}

/// Serialize a document as pretty JSON.
pub fn to_json<T: serde::Serialize>(doc: &T) -> Result<String> {
    serde_json::to_string_pretty(doc).map_err(|e| Error::runtime(format!("serializing JSON: {e}")))
}

/// Write a JSON document to a file atomically and privately (0600: documents can hold
/// server data), saying which file failed and why.
pub fn save_json<T: serde::Serialize>(doc: &T, path: &Path) -> Result<()> {
    let s = to_json(doc)? + "\n";
    write_atomic(path, s.as_bytes(), "--save", true)
}

/// An output streamed while the work runs (`profile --svg`, `--save-script`): created at
/// once as a new temp file next to its path, so a bad path fails before the work, and
/// renamed over the path only by [`Output::commit`]; dropped uncommitted, it leaves nothing.
pub struct Output {
    tmp: tempfile::NamedTempFile,
    path: PathBuf,
    flag: String,
}

impl Output {
    /// A new output for `path`; `private` (server data) is 0600, else 0644.
    pub fn create(path: &Path, flag: &str, private: bool) -> Result<Output> {
        if let Some(why) = target_problem(path) {
            return Err(Error::bad_input(format!(
                "{flag} {}: {why}",
                path.display()
            )));
        }
        let mode = if private { 0o600 } else { 0o644 };
        let tmp = new_temp(&dir_of(path), path, mode).map_err(|e| write_error(flag, path, e))?;
        Ok(Output {
            tmp,
            path: path.to_path_buf(),
            flag: flag.to_string(),
        })
    }

    /// The temp file to write into.
    pub fn file(&mut self) -> &mut File {
        self.tmp.as_file_mut()
    }

    /// Sync and rename the written file over the path.
    pub fn commit(self) -> Result<()> {
        let (flag, path) = (self.flag, self.path);
        persist(self.tmp, &path).map_err(|e| write_error(&flag, &path, e))
    }
}

/// Open `path` for appending (created with `mode` when missing) with O_NOFOLLOW: a symbolic
/// link at `path` is refused (ELOOP), never followed; anything but a regular file is refused.
pub fn append_nofollow(path: &Path, mode: u32) -> std::io::Result<File> {
    let f = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => {
                io_problem("it is a symbolic link, which spinscope never appends through".into())
            }
            _ => e,
        })?;
    let ft = f.metadata()?.file_type();
    if let Some(kind) = special_kind(ft) {
        return Err(io_problem(format!("it is {kind}, not a regular file")));
    }
    Ok(f)
}

/// (device, inode) of an existing file (links followed), or the absolute path a file not yet
/// made would have (its directory resolved), to tell whether two paths are one file.
#[derive(PartialEq, Eq)]
enum Identity {
    Inode(u64, u64),
    Path(PathBuf),
}

fn identity(p: &Path) -> Identity {
    if let Ok(m) = std::fs::metadata(p) {
        return Identity::Inode(m.dev(), m.ino());
    }
    let dir = std::fs::canonicalize(dir_of(p)).unwrap_or_else(|_| dir_of(p));
    Identity::Path(dir.join(p.file_name().unwrap_or_default()))
}

/// Refuse, before anything is read or written, an output that is one of the inputs or
/// another output (same device and inode, or the same path for files not yet made): e.g.
/// `profile --perf-script x --svg x` would otherwise replace its own input.
pub fn refuse_same(inputs: &[(&str, &Path)], outputs: &[(&str, &Path)]) -> Result<()> {
    let ins: Vec<Identity> = inputs.iter().map(|(_, p)| identity(p)).collect();
    let outs: Vec<Identity> = outputs.iter().map(|(_, p)| identity(p)).collect();
    for (i, (oflag, opath)) in outputs.iter().enumerate() {
        let clash = ins
            .iter()
            .zip(inputs)
            .chain(outs[..i].iter().zip(&outputs[..i]))
            .find(|(id, _)| **id == outs[i]);
        if let Some((_, (flag, p))) = clash {
            return Err(Error::bad_input(format!(
                "{oflag} {}: is the same file as {flag} {}; give the output another path",
                opath.display(),
                p.display()
            )));
        }
    }
    Ok(())
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
                .contains("--snapshot /dev/zero: is a device, not a regular file"),
            "{e}"
        );
        let d = tempfile::tempdir().unwrap();
        let big = d.path().join("big");
        std::fs::write(&big, vec![b'x'; (1 << 20) + 1]).unwrap();
        let e = read_capped(&big, 1 << 20, "--snapshot").unwrap_err();
        assert!(e.to_string().contains("larger than 1 MiB"), "{e}");
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

    fn fifo(p: &Path) {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string; mkfifo only reads it.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn a_planted_link_at_an_output_is_refused_and_its_target_kept() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let out = d.path().join("out.svg");
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        let e = check_output(&out, "--svg").unwrap_err().to_string();
        assert!(e.contains("is a symbolic link"), "{e}");
        let e = write_atomic(&out, b"x", "--svg", false).unwrap_err();
        assert!(matches!(e, Error::BadInput(_)), "{e}");
        assert!(Output::create(&out, "--svg", true).is_err());
        let e = append_nofollow(&out, 0o600).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert!(std::fs::symlink_metadata(&out)
            .unwrap()
            .file_type()
            .is_symlink());
        let e = check_output_dir(&out, "--out-dir").unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert_eq!(
            std::fs::read_dir(d.path()).unwrap().count(),
            2,
            "nothing left behind"
        );
    }

    #[test]
    fn streamed_outputs_appear_only_when_committed() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("flame.svg");
        let mut o = Output::create(&p, "--svg", true).unwrap();
        o.file().write_all(b"<svg/>").unwrap();
        assert!(!p.exists());
        o.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "<svg/>");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        drop(Output::create(&d.path().join("other"), "--svg", true).unwrap());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn fifo_inputs_are_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("fifo");
        fifo(&p);
        let t = std::time::Instant::now();
        let e = read_capped(&p, 1 << 20, "--inventory")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("is a FIFO (named pipe), not a regular file"),
            "{e}"
        );
        assert!(open_input(d.path(), "--snapshot").is_err());
        assert!(open_input_kind(d.path(), "report", true).is_ok());
        assert!(t.elapsed().as_secs() < 2);
        assert!(
            check_output(&p, "--save").is_err(),
            "a FIFO is no output either"
        );
    }

    #[test]
    fn appends_create_private_files_and_append() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("watch.log");
        append_nofollow(&p, 0o600)
            .unwrap()
            .write_all(b"a\n")
            .unwrap();
        append_nofollow(&p, 0o600)
            .unwrap()
            .write_all(b"b\n")
            .unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "a\nb\n");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn an_output_that_is_an_input_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let x = d.path().join("x");
        std::fs::write(&x, "perf").unwrap();
        let e = refuse_same(&[("--perf-script", &x)], &[("--svg", &x)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("is the same file as --perf-script"), "{e}");
        // Through another spelling and through a link to the input.
        let other = d.path().join(".").join("x");
        assert!(refuse_same(&[("--perf-script", &x)], &[("--folded", &other)]).is_err());
        let link = d.path().join("l");
        std::os::unix::fs::symlink(&x, &link).unwrap();
        assert!(refuse_same(&[("--perf-script", &link)], &[("--svg", &x)]).is_err());
        // Two outputs not yet made at one path.
        let y = d.path().join("y");
        assert!(refuse_same(&[], &[("--svg", &y), ("--folded", &y)]).is_err());
        assert!(refuse_same(&[("--perf-script", &x)], &[("--svg", &y)]).is_ok());
        assert_eq!(std::fs::read_to_string(&x).unwrap(), "perf");
    }
}
