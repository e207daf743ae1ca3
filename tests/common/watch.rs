//! A running `spinscope watch` for the watch tests: its stderr goes to a file that the test
//! reads while it runs; killed and reaped on drop, also when the test panics. Each test file
//! starts and stops it its own way (an `impl Watch` of its own).

use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

pub struct Watch {
    pub child: Child,
    /// The file its stderr is written to.
    pub err: PathBuf,
}

impl Watch {
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
