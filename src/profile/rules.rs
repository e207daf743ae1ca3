//! Frame classes and the rules that assign them: the ONE table to edit when a server release
//! renames its spin or wait paths. A sample's class is the class of the frame nearest the
//! leaf that matches a rule (so `ppoll -> _raw_spin_lock_irq` is a kernel spinlock sample, and
//! `srw_mutex_impl::wait_and_lock -> futex_wait` an OS wait); samples that match no rule fall
//! into a subsystem class chosen from the leaf frame.

use serde::{Deserialize, Serialize};

/// A frame class. The first four are the named spin/latch/wait classes of the issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// InnoDB (and mysys LF) user-space spinning: ut_delay, TTAS/rw-lock spin, srw_lock spin.
    InnodbSpin,
    /// Sleeping in the OS after spinning: sync array, os_event, futex.
    OsWait,
    /// Kernel spinlocks.
    KernelSpinlock,
    /// Signal-mask work (ppoll with a sigmask, sigprocmask).
    SignalMask,
    /// Rest, by subsystem: InnoDB storage engine code.
    Innodb,
    /// Rest: the SQL layer and everything else in the server binary.
    Server,
    /// Rest: the C library and the dynamic loader.
    Libc,
    /// Rest: other kernel code (scheduler, network, I/O).
    Kernel,
    /// Rest: frames without a symbol that are not recognised spin loops.
    Unsymbolized,
    /// Rest: anything else.
    Other,
}

impl Class {
    pub const ALL: [Class; 10] = [
        Class::InnodbSpin,
        Class::OsWait,
        Class::KernelSpinlock,
        Class::SignalMask,
        Class::Innodb,
        Class::Server,
        Class::Libc,
        Class::Kernel,
        Class::Unsymbolized,
        Class::Other,
    ];

    /// Stable identifier used in JSON.
    pub fn id(self) -> &'static str {
        match self {
            Class::InnodbSpin => "innodb_spin",
            Class::OsWait => "os_wait",
            Class::KernelSpinlock => "kernel_spinlock",
            Class::SignalMask => "signal_mask",
            Class::Innodb => "innodb",
            Class::Server => "server",
            Class::Libc => "libc",
            Class::Kernel => "kernel",
            Class::Unsymbolized => "unsymbolized",
            Class::Other => "other",
        }
    }

    /// Human label for the table and the flame-graph legend.
    pub fn label(self) -> &'static str {
        match self {
            Class::InnodbSpin => "InnoDB spin",
            Class::OsWait => "OS wait (sync array, futex)",
            Class::KernelSpinlock => "kernel spinlock",
            Class::SignalMask => "signal-mask work (ppoll, sigprocmask)",
            Class::Innodb => "rest: InnoDB",
            Class::Server => "rest: server / SQL layer",
            Class::Libc => "rest: libc",
            Class::Kernel => "rest: kernel",
            Class::Unsymbolized => "rest: no symbol",
            Class::Other => "rest: other",
        }
    }

    /// Whether this is one of the named spin/latch/wait classes (own colours in the SVG).
    pub fn is_latch(self) -> bool {
        matches!(
            self,
            Class::InnodbSpin | Class::OsWait | Class::KernelSpinlock | Class::SignalMask
        )
    }

    /// Flame-graph fill colour for the latch classes.
    pub fn rgb(self) -> (u8, u8, u8) {
        match self {
            Class::InnodbSpin => (220, 20, 60),
            Class::OsWait => (70, 130, 230),
            Class::KernelSpinlock => (150, 60, 200),
            Class::SignalMask => (20, 170, 120),
            _ => (200, 200, 200),
        }
    }
}

/// How a rule matches a folded frame name.
#[derive(Debug, Clone, Copy)]
pub enum Pat {
    Prefix(&'static str),
    Contains(&'static str),
    Suffix(&'static str),
}

/// One classification rule.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub class: Class,
    pub pat: Pat,
    /// Where the pattern comes from, for whoever maintains the table.
    pub why: &'static str,
}

const fn r(class: Class, pat: Pat, why: &'static str) -> Rule {
    Rule { class, pat, why }
}

use Class::*;
use Pat::*;

/// The rule table. Order matters only within one frame: the first matching rule wins.
pub const RULES: &[Rule] = &[
    // InnoDB spin paths.
    r(
        InnodbSpin,
        Prefix("[spin loop at "),
        "spin loop found from instruction bytes (no symbol)",
    ),
    r(
        InnodbSpin,
        Prefix("ut_delay"),
        "all InnoDB versions: the PAUSE loop",
    ),
    r(
        InnodbSpin,
        Contains("spin_and_try_lock"),
        "MySQL 5.7/8.0 TTASEventMutex spin",
    ),
    r(
        InnodbSpin,
        Contains("TTASEventMutex<"),
        "MySQL 5.7/8.0 PolicyMutex<TTASEventMutex>::enter",
    ),
    r(
        InnodbSpin,
        Prefix("rw_lock_s_lock_spin"),
        "MySQL 5.6/5.7/8.0 shared rw-lock spin",
    ),
    r(
        InnodbSpin,
        Prefix("rw_lock_x_lock_func"),
        "MySQL 5.6/5.7/8.0 exclusive rw-lock spin",
    ),
    r(
        InnodbSpin,
        Prefix("rw_lock_sx_lock_func"),
        "MySQL 5.7/8.0 SX rw-lock spin",
    ),
    r(
        InnodbSpin,
        Prefix("mutex_spin_wait"),
        "MySQL 5.6 mutex spin",
    ),
    r(
        InnodbSpin,
        Contains("wait_and_lock"),
        "MariaDB 10.6+ srw_mutex_impl<true>::wait_and_lock",
    ),
    r(
        InnodbSpin,
        Contains("ssux_lock_impl<true>::rd_wait"),
        "MariaDB 10.6+ shared spin",
    ),
    r(
        InnodbSpin,
        Contains("ssux_lock_impl<true>::wr_wait"),
        "MariaDB 10.6+ exclusive spin",
    ),
    r(
        InnodbSpin,
        Contains("srw_spin_lock"),
        "MariaDB 10.6+ spinning srw_lock",
    ),
    r(
        InnodbSpin,
        Contains("LF_BACKOFF"),
        "mysys lock-free hash backoff",
    ),
    r(
        InnodbSpin,
        Prefix("my_cpu_relax"),
        "MariaDB MY_RELAX_CPU when not inlined",
    ),
    // OS waits.
    r(
        OsWait,
        Prefix("sync_array_"),
        "MySQL 5.6-8.0 sync array reserve/wait",
    ),
    r(
        OsWait,
        Prefix("os_event"),
        "MySQL os_event::wait / os_event_wait_low",
    ),
    r(
        OsWait,
        Suffix("srw_mutex_impl<true>::wait"),
        "MariaDB 10.6+ futex wait",
    ),
    r(
        OsWait,
        Suffix("srw_mutex_impl<false>::wait"),
        "MariaDB 10.6+ futex wait",
    ),
    r(
        OsWait,
        Contains("ssux_lock_impl<false>::"),
        "MariaDB 10.6+ non-spinning waits",
    ),
    r(
        OsWait,
        Contains("futex_wait"),
        "kernel futex wait and glibc __futex_abstimed_wait",
    ),
    r(OsWait, Prefix("futex_q_lock"), "kernel futex queue"),
    r(OsWait, Prefix("do_futex"), "kernel futex syscall"),
    r(
        OsWait,
        Prefix("__x64_sys_futex"),
        "kernel futex syscall entry",
    ),
    r(
        OsWait,
        Prefix("__arm64_sys_futex"),
        "kernel futex syscall entry",
    ),
    r(OsWait, Prefix("pthread_cond_"), "glibc condition variables"),
    r(
        OsWait,
        Prefix("___pthread_cond_"),
        "glibc condition variables",
    ),
    // Kernel spinlocks.
    r(
        KernelSpinlock,
        Prefix("_raw_spin_lock"),
        "kernel spin_lock*/spin_lock_irq*",
    ),
    r(
        KernelSpinlock,
        Contains("queued_spin_lock_slowpath"),
        "qspinlock slow path (native_, __pv_)",
    ),
    r(KernelSpinlock, Prefix("_raw_read_lock"), "kernel rwlock"),
    r(KernelSpinlock, Prefix("_raw_write_lock"), "kernel rwlock"),
    // Signal-mask work.
    r(
        SignalMask,
        Prefix("__set_current_blocked"),
        "kernel/signal.c, takes sighand->siglock",
    ),
    r(SignalMask, Prefix("set_current_blocked"), "kernel/signal.c"),
    r(
        SignalMask,
        Contains("sigprocmask"),
        "glibc and kernel sigprocmask",
    ),
    r(
        SignalMask,
        Contains("ppoll"),
        "MySQL 8.0 vio ppoll with sigmask",
    ),
    r(
        SignalMask,
        Prefix("set_user_sigmask"),
        "kernel ppoll/pselect sigmask",
    ),
    r(
        SignalMask,
        Prefix("restore_saved_sigmask"),
        "kernel ppoll/pselect sigmask",
    ),
];

/// The named class of one folded frame name (a `_[k]` kernel mark is ignored), if any rule
/// matches.
pub fn frame_class(frame: &str) -> Option<Class> {
    let frame = frame.strip_suffix("_[k]").unwrap_or(frame);
    RULES
        .iter()
        .find(|r| matches(r.pat, frame))
        .map(|r| r.class)
}

fn matches(p: Pat, s: &str) -> bool {
    match p {
        Prefix(x) => s.starts_with(x),
        Contains(x) => s.contains(x),
        Suffix(x) => s.ends_with(x),
    }
}

/// InnoDB function-name prefixes and source-file families, for the "rest" subsystem split.
const INNODB_PREFIXES: &[&str] = &[
    "btr_",
    "buf_",
    "dict_",
    "fil_",
    "fsp_",
    "fseg_",
    "fts_",
    "ha_innobase",
    "ibuf_",
    "lock_",
    "log_",
    "mach_",
    "mtr_",
    "os_",
    "page_",
    "pfs_",
    "que_",
    "rec_",
    "row_",
    "srv_",
    "sync_",
    "trx_",
    "ut_",
    "mtr_t",
    "trx_t",
    "buf_pool_t",
    "log_t",
    "lock_sys_t",
    "dict_sys_t",
    "purge_sys_t",
    "srw_",
    "ssux_",
    "sux_",
    "innobase_",
    "cmp_",
    "dtuple_",
    "btr_cur_",
];

/// Class of a sample that matched no rule: the subsystem of its leaf frame.
pub fn rest_class(leaf: &str, leaf_is_kernel: bool) -> Class {
    if leaf_is_kernel || leaf.ends_with("_[k]") {
        return Kernel;
    }
    if leaf.starts_with('[') {
        // inferno names unsymbolized frames after their module: [mariadbd], [unknown].
        return Unsymbolized;
    }
    if INNODB_PREFIXES.iter().any(|p| leaf.starts_with(p)) {
        return Innodb;
    }
    const LIBC: &[&str] = &[
        "__memmove",
        "__memcpy",
        "__memset",
        "__memcmp",
        "__strlen",
        "__GI_",
        "_int_",
        "malloc",
        "free",
        "cfree",
        "__libc",
        "__lll_",
        "_dl_",
        "__pthread",
        "pthread_",
        "clock_gettime",
        "__clock_gettime",
        "syscall",
        "__vdso",
        "__GI___",
    ];
    if LIBC.iter().any(|p| leaf.starts_with(p)) {
        return Libc;
    }
    if leaf.is_empty() {
        return Other;
    }
    Server
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spin_paths_of_each_family() {
        assert_eq!(frame_class("ut_delay"), Some(InnodbSpin));
        assert_eq!(
            frame_class("TTASEventMutex<GenericPolicy>::spin_and_try_lock"),
            Some(InnodbSpin)
        );
        assert_eq!(frame_class("rw_lock_x_lock_func"), Some(InnodbSpin));
        assert_eq!(
            frame_class("srw_mutex_impl<true>::wait_and_lock"),
            Some(InnodbSpin)
        );
        assert_eq!(
            frame_class("ssux_lock_impl<true>::wr_wait"),
            Some(InnodbSpin)
        );
        assert_eq!(
            frame_class("[spin loop at mariadbd+0x1234]"),
            Some(InnodbSpin)
        );
        assert_eq!(frame_class("LF_BACKOFF"), Some(InnodbSpin));
    }

    #[test]
    fn waits_locks_and_signals() {
        assert_eq!(frame_class("sync_array_wait_event"), Some(OsWait));
        // inferno strips argument lists before we classify.
        assert_eq!(frame_class("srw_mutex_impl<true>::wait"), Some(OsWait));
        assert_eq!(frame_class("futex_wait_queue"), Some(OsWait));
        assert_eq!(frame_class("_raw_spin_lock_irq"), Some(KernelSpinlock));
        assert_eq!(
            frame_class("native_queued_spin_lock_slowpath"),
            Some(KernelSpinlock)
        );
        assert_eq!(frame_class("__set_current_blocked"), Some(SignalMask));
        assert_eq!(frame_class("__x64_sys_ppoll"), Some(SignalMask));
        assert_eq!(frame_class("do_command"), None);
    }

    #[test]
    fn rest_by_subsystem() {
        assert_eq!(rest_class("row_ins_clust_index_entry_low", false), Innodb);
        assert_eq!(rest_class("__memmove_avx_unaligned_erms", false), Libc);
        assert_eq!(rest_class("finish_task_switch", true), Kernel);
        assert_eq!(rest_class("[mariadbd]", false), Unsymbolized);
        assert_eq!(rest_class("dispatch_command", false), Server);
    }
}
