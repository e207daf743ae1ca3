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
    /// Rest, by subsystem: storage engine code (InnoDB's, and the handler interface the SQL
    /// layer calls it through).
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
            Class::OsWait => "OS wait (futex)",
            Class::KernelSpinlock => "kernel spinlock",
            Class::SignalMask => "signal-mask work (ppoll, sigprocmask)",
            Class::Innodb => "rest: storage engine (InnoDB, handler)",
            Class::Server => "rest: server / SQL layer",
            Class::Libc => "rest: libc",
            Class::Kernel => "rest: kernel",
            Class::Unsymbolized => "rest: no symbol",
            Class::Other => "rest: other",
        }
    }

    /// The label, naming the sync array only where the profile shows one (MySQL 5.6-8.0 and
    /// MariaDB before 10.6 wait in it; MariaDB 10.6+ waits on futexes directly).
    pub fn label_in(self, sync_array_seen: bool) -> &'static str {
        match self {
            Class::OsWait if sync_array_seen => "OS wait (sync array, futex)",
            c => c.label(),
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

/// Frames that mean "this thread is working for InnoDB": the handler entry points the SQL layer
/// calls, and InnoDB's own background threads (MySQL 5.6-8.x, MariaDB 10.x-11.x).
const INNODB_ENTRY: &[&str] = &[
    // The handler interface: below it the SQL layer waits for the engine (in a stripped
    // mariadbd the InnoDB functions under `handler::ha_index_next` have no symbol).
    "handler::",
    "ha_innobase::",
    "ha_innopart::",
    "innobase_",
    "srv_master_",
    "srv_purge_",
    "srv_worker_",
    "srv_monitor_",
    "srv_error_monitor",
    "buf_flush_page_cleaner",
    "buf_flush_page_coordinator",
    "buf_lru_manager",
    "buf_dump_thread",
    "buf_resize_thread",
    "io_handler_thread",
    "fts_optimize_thread",
    "dict_stats_thread",
    "lock_wait_timeout_thread",
    "purge_coordinator_callback",
    "purge_worker_callback",
    "tpool::",
];

/// Function-name prefixes that only InnoDB uses (module prefixes of storage/innobase); SQL-layer
/// names such as `lock_tables`, `lock_table_names` or `log_slow_statement` share none of them.
const INNODB_NAMES: &[&str] = &[
    "btr_",
    "buf_",
    "dict_",
    "fil_",
    "fsp_",
    "fseg_",
    "fts_",
    "ibuf_",
    "mtr_",
    "page_",
    "que_",
    "rec_",
    "row_",
    "srv_",
    "sync_",
    "trx_",
    "ut_",
    "srw_",
    "ssux_",
    "sux_",
    "dtuple_",
    "lock_rec_",
    "lock_sys",
    "lock_trx",
    "lock_release",
    "lock_grant",
    "lock_clust_rec",
    "lock_sec_rec",
    "log_write",
    "log_sys",
    "log_buffer",
    "log_free_check",
    "log_checkpoint",
    "log_t::",
    "mtr_t::",
    "trx_t::",
    "buf_pool_t::",
    "lock_sys_t::",
    "dict_sys_t::",
    "purge_sys_t::",
];

/// Whether a frame belongs to InnoDB by its role (an entry point or thread of the engine) or by
/// a name only InnoDB uses.
pub fn is_innodb_frame(frame: &str) -> bool {
    let f = frame.strip_suffix("_[k]").unwrap_or(frame);
    f == "lock_table"
        || INNODB_ENTRY.iter().any(|p| f.starts_with(p))
        || INNODB_NAMES.iter().any(|p| f.starts_with(p))
}

fn is_libc(leaf: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "__memmove",
        "__memcpy",
        "__memset",
        "__memcmp",
        "__strlen",
        "__strcmp",
        "__GI_",
        "_int_malloc",
        "_int_free",
        "__libc",
        "__lll_",
        "_dl_",
        "__pthread",
        "pthread_",
        "clock_gettime",
        "__clock_gettime",
        "__vdso",
        "__GI___",
        "__nptl",
    ];
    const EXACT: &[&str] = &[
        "malloc",
        "free",
        "cfree",
        "calloc",
        "realloc",
        "memcpy",
        "memmove",
        "memset",
        "memcmp",
        "strlen",
        "strcmp",
        "syscall",
        "__sched_yield",
        "sched_yield",
    ];
    PREFIXES.iter().any(|p| leaf.starts_with(p)) || EXACT.contains(&leaf)
}

/// Frames that say nothing about the work below them: thread entry points and C runtime roots.
const THREAD_ROOTS: &[&str] = &[
    "start_thread",
    "clone",
    "clone3",
    "__clone",
    "__clone3",
    "_start",
    "__libc_start_main",
    "__libc_start_call_main",
    "execute_native_thread_routine",
    "pfs_spawn_thread",
];

/// Whether a folded frame names a function (inferno names a frame without a symbol after its
/// module, `[mariadbd]`, `[unknown]`).
pub fn has_symbol(frame: &str) -> bool {
    let f = frame.strip_suffix("_[k]").unwrap_or(frame);
    !(f.starts_with('[') || f.starts_with('\u{1}') || f.trim().is_empty())
}

/// Class of a sample that matched no rule (`frames` root first, comm excluded): kernel or libc
/// by its leaf; otherwise storage engine when a frame on the stack belongs to the engine (the
/// leaf works on its behalf); otherwise the SQL layer when any frame below the thread's entry
/// has a symbol (a leaf without one is then server code called from it: a frame with a symbol
/// is never "no symbol"); only stacks with no named server frame at all are "no symbol".
/// Stacks of one frame (recorded without call chains) can only go by the leaf's name.
pub fn rest_class(frames: &[&str]) -> Class {
    rest_class_by(frames, &mut |f| is_innodb_frame(f))
}

/// [`rest_class`] with the engine test given (a cached one, when many stacks share frames).
pub fn rest_class_by(frames: &[&str], is_engine: &mut dyn FnMut(&str) -> bool) -> Class {
    let leaf = frames.last().copied().unwrap_or("");
    if let Some(c) = rest_class_of_leaf(leaf) {
        return c;
    }
    if frames.iter().any(|f| is_engine(f)) {
        return Innodb;
    }
    if frames.iter().any(|f| is_named_frame(f)) {
        return Server;
    }
    Unsymbolized
}

/// The rest class a leaf frame decides alone (blank: other; kernel; libc), as in
/// [`rest_class`]; `None`: the frames above it decide.
pub fn rest_class_of_leaf(leaf: &str) -> Option<Class> {
    if leaf.trim().is_empty() {
        Some(Other)
    } else if leaf.ends_with("_[k]") {
        Some(Kernel)
    } else if is_libc(leaf) {
        Some(Libc)
    } else {
        None
    }
}

/// A frame that makes a stack the SQL layer's in [`rest_class`] (when nothing else decides):
/// a named user-space function that is neither libc nor a thread root.
pub fn is_named_frame(f: &str) -> bool {
    has_symbol(f) && !f.ends_with("_[k]") && !is_libc(f) && !THREAD_ROOTS.contains(&f)
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
    fn rest_by_role() {
        assert_eq!(rest_class(&["row_ins_clust_index_entry_low"]), Innodb);
        assert_eq!(rest_class(&["__memmove_avx_unaligned_erms"]), Libc);
        assert_eq!(rest_class(&["schedule", "finish_task_switch_[k]"]), Kernel);
        assert_eq!(rest_class(&["[mariadbd]"]), Unsymbolized);
        assert_eq!(rest_class(&["dispatch_command"]), Server);
        // SQL-layer table locking is not InnoDB, with or without a call chain.
        assert_eq!(
            rest_class(&["do_command", "mysql_update", "lock_tables"]),
            Server
        );
        assert_eq!(
            rest_class(&["mysql_execute_command", "open_tables", "lock_table_names"]),
            Server
        );
        assert_eq!(rest_class(&["lock_table_names"]), Server);
        // A server function working for InnoDB (called below the handler) is InnoDB's time.
        assert_eq!(
            rest_class(&[
                "mysql_update",
                "ha_innobase::update_row",
                "my_hash_sort_bin"
            ]),
            Innodb
        );
        assert_eq!(
            rest_class(&["tpool::thread_pool_generic::worker", "my_checksum"]),
            Innodb
        );
        assert_eq!(rest_class(&["lock_rec_lock"]), Innodb);
        // Stripped mariadbd (Debian): InnoDB under the handler has no symbol; it is the
        // engine's time, and a named SQL-layer caller makes the rest the server's.
        assert_eq!(
            rest_class(&[
                "start_thread",
                "[mariadbd]",
                "mysql_select",
                "handler::ha_index_next",
                "[mariadbd]"
            ]),
            Innodb
        );
        assert_eq!(
            rest_class(&[
                "start_thread",
                "[mariadbd]",
                "JOIN::optimize_inner",
                "[mariadbd]"
            ]),
            Server
        );
        assert_eq!(
            rest_class(&["clone3", "start_thread", "[mariadbd]", "[mariadbd]"]),
            Unsymbolized
        );
        assert_eq!(rest_class(&["[mariadbd]", "[libc.so.6]"]), Unsymbolized);
        assert_eq!(rest_class(&[""]), Other);
    }
}
