//! MySQL 8.0+ on a Linux kernel older than the sighand->siglock fast path (docs/REFERENCE.md §6).

use crate::doctor::{ev, Facts, Finding, Severity};
use crate::spin::version::Flavor;

/// (major, minor) of a kernel release like "3.10.0-229.el7.x86_64".
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

pub fn check(f: &Facts) -> Vec<Finding> {
    let Some(v) = &f.version else { return vec![] };
    if !(matches!(v.flavor, Flavor::Mysql | Flavor::Percona) && v.major >= 8) {
        return vec![];
    }
    let Some(rel) = f
        .snap
        .host
        .as_ref()
        .and_then(|h| h.kernel_release.as_deref())
    else {
        return vec![];
    };
    let Some((maj, min)) = kernel_version(rel) else {
        return vec![];
    };
    if (maj, min) >= (4, 10) {
        return vec![];
    }
    vec![Finding {
        option_file: vec![],
        id: "ppoll-siglock".into(),
        severity: Severity::Warning,
        title: format!("{} on kernel {rel}: ppoll contention on sighand->siglock", v.short()),
        evidence: vec![ev("kernel_major", maj as f64, ""), ev("kernel_minor", min as f64, "")],
        why: "MySQL 8.0 waits on sockets with ppoll(..., sigmask) (USE_PPOLL_IN_VIO, include/violite.h); kernels before \
              the signal fast path (kernel/signal.c, commit c7be96af89d4) take the process-wide sighand->siglock twice per \
              call: high system CPU in _raw_spin_lock_irq and a QPS ceiling under many connections (docs/REFERENCE.md §6)."
            .into(),
        what_to_do: "Upgrade the kernel (or the distribution), or check `perf top` for _raw_spin_lock_irq under load.".into(),
        statements: vec![],
    }]
}

#[cfg(test)]
mod tests {
    #[test]
    fn kernel_versions() {
        assert_eq!(
            super::kernel_version("3.10.0-229.el7.x86_64"),
            Some((3, 10))
        );
        assert_eq!(super::kernel_version("6.1.0-18-amd64"), Some((6, 1)));
        assert_eq!(super::kernel_version("x"), None);
    }
}
