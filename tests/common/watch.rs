//! A running `spinscope watch` for the watch tests: its stderr goes to a file that the test
//! reads while it runs; killed and reaped on drop, also when the test panics.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Watch {
    pub child: Child,
    /// The file its stderr is written to.
    pub err: PathBuf,
}

impl Watch {
    /// Spawn `cmd` (a `spinscope watch` command) with stdout piped and stderr into `err`.
    pub fn spawn(cmd: &mut Command, err: PathBuf) -> Watch {
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap();
        Watch { child, err }
    }

    /// SIGTERM, then the exit code, stdout and stderr (the stderr file is removed).
    pub fn stop(mut self) -> (Option<i32>, String, String) {
        // SAFETY: kill(2) on our own child.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let t0 = Instant::now();
        let st = loop {
            if let Ok(Some(st)) = self.child.try_wait() {
                break st;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "watch did not stop: {}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut out = String::new();
        if let Some(mut o) = self.child.stdout.take() {
            use std::io::Read;
            let _ = o.read_to_string(&mut out);
        }
        let err = self.stderr();
        let _ = std::fs::remove_file(&self.err);
        (st.code(), out, err)
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.err).unwrap_or_default()
    }

    /// Whether `needle` shows up in stderr within `secs` seconds (read every 50 ms).
    pub fn wait_for(&self, needle: &str, secs: u64) -> bool {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(secs) {
            if self.stderr().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
