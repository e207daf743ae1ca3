//! Table test over the real INNODB STATUS corpus in tests/fixtures/innodb_status/ (origins and
//! licences in its README): every SEMAPHORES counter and every wait-cell count below was read
//! by hand from the fixture text, and selected cells are checked field by field. Every line of
//! every real SEMAPHORES section must be recognised.

use spinscope::server::parse::innodb::{parse, SemaphoreLayout, SpinCounters};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/innodb_status/");

fn read(name: &str) -> String {
    std::fs::read_to_string(format!("{DIR}{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

type C = Option<(u64, Option<u64>, u64)>;

struct Case {
    file: &'static str,
    layout: SemaphoreLayout,
    reservations: &'static [u64],
    signals: &'static [u64],
    mutex: C,
    shared: C,
    excl: C,
    sx: C,
    rounds_per_wait: &'static [(&'static str, f64)],
    cells: usize,
    truncated: bool,
}

use SemaphoreLayout::*;

fn cases() -> Vec<Case> {
    vec![
        // percona-toolkit t/pt-fk-error-logger/samples (2007, MySQL 5.0 era)
        Case {
            file: "pt_fk_is001.txt",
            layout: Mutex50,
            reservations: &[49],
            signals: &[49],
            mutex: Some((0, Some(980), 0)),
            shared: Some((27, None, 13)),
            excl: Some((43, None, 36)),
            sx: None,
            rounds_per_wait: &[],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "pt_fk_is002.txt",
            layout: Mutex50,
            reservations: &[7],
            signals: &[7],
            mutex: Some((0, Some(60), 0)),
            shared: Some((14, None, 7)),
            excl: Some((1, None, 0)),
            sx: None,
            rounds_per_wait: &[],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "pt_fk_is005.txt",
            layout: Mutex50,
            reservations: &[10],
            signals: &[10],
            mutex: Some((0, Some(100), 0)),
            shared: Some((20, None, 10)),
            excl: Some((1, None, 0)),
            sx: None,
            rounds_per_wait: &[],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "pt_lib_is001.txt",
            layout: Mutex50,
            reservations: &[7],
            signals: &[7],
            mutex: Some((0, Some(2), 0)),
            shared: Some((14, None, 7)),
            excl: Some((0, None, 0)),
            sx: None,
            rounds_per_wait: &[],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "pt_secure_collect_2018_1.txt",
            layout: Mutex56,
            reservations: &[36440343],
            signals: &[977828096],
            mutex: Some((12033970052, Some(5762849775), 2335696)),
            shared: Some((263735499, Some(1073398879), 17684023)),
            excl: Some((31045741, Some(1579081322), 15143736)),
            sx: None,
            rounds_per_wait: &[("mutex", 0.48), ("RW-shared", 4.07), ("RW-excl", 50.86)],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "pt_summary_001.txt",
            layout: Mutex50,
            reservations: &[12433146],
            signals: &[56397470],
            mutex: Some((217635758, Some(189376110), 1270716)),
            shared: Some((32034008, None, 7368549)),
            excl: Some((4795269, None, 3653871)),
            sx: None,
            rounds_per_wait: &[("mutex", 0.87), ("RW-shared", 9.69), ("RW-excl", 40.94)],
            cells: 164,
            truncated: false,
        },
        Case {
            file: "pt_summary_002.txt",
            layout: Mutex50,
            reservations: &[20669512],
            signals: &[42085038],
            mutex: Some((402818050, Some(1525643142), 15710890)),
            shared: Some((17524902, None, 3416443)),
            excl: Some((4524539, None, 1014358)),
            sx: None,
            rounds_per_wait: &[("mutex", 3.79), ("RW-shared", 9.61), ("RW-excl", 36.88)],
            cells: 50,
            truncated: true,
        },
        Case {
            file: "pt_summary_003.txt",
            layout: Mutex50,
            reservations: &[4],
            signals: &[4],
            mutex: Some((0, Some(0), 0)),
            shared: Some((4, None, 4)),
            excl: Some((0, None, 0)),
            sx: None,
            rounds_per_wait: &[("mutex", 0.0), ("RW-shared", 30.0), ("RW-excl", 0.0)],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "pt_summary_004.txt",
            layout: Mutex50,
            reservations: &[2465097785],
            signals: &[1048997206],
            mutex: Some((0, Some(170041380422), 1296480180)),
            shared: Some((876388672, None, 511031480)),
            excl: Some((181873480, None, 47872283)),
            sx: None,
            rounds_per_wait: &[],
            cells: 8,
            truncated: false,
        },
        Case {
            file: "pt_summary_enc008_percona8032.txt",
            layout: Rw57,
            reservations: &[674],
            signals: &[462],
            mutex: None,
            shared: Some((0, Some(0), 0)),
            excl: Some((0, Some(0), 0)),
            sx: Some((0, Some(0), 0)),
            rounds_per_wait: &[("RW-shared", 0.0), ("RW-excl", 0.0), ("RW-sx", 0.0)],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "pt_summary_enc009_percona8032.txt",
            layout: Rw57,
            reservations: &[719],
            signals: &[505],
            mutex: None,
            shared: Some((0, Some(0), 0)),
            excl: Some((0, Some(0), 0)),
            sx: Some((0, Some(0), 0)),
            rounds_per_wait: &[("RW-shared", 0.0), ("RW-excl", 0.0), ("RW-sx", 0.0)],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "pt_summary_temp002_percona5520.txt",
            layout: Mutex56,
            reservations: &[2],
            signals: &[2],
            mutex: Some((0, Some(0), 0)),
            shared: Some((2, Some(60), 2)),
            excl: Some((0, Some(0), 0)),
            sx: None,
            rounds_per_wait: &[("mutex", 0.0), ("RW-shared", 30.0), ("RW-excl", 0.0)],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "pt_summary_temp003_mysql5149.txt",
            layout: Mutex50,
            reservations: &[7],
            signals: &[7],
            mutex: Some((0, Some(140), 7)),
            shared: Some((0, None, 0)),
            excl: Some((0, None, 0)),
            sx: None,
            rounds_per_wait: &[],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "pt_summary_temp004_mysql5149.txt",
            layout: Mutex50,
            reservations: &[3],
            signals: &[3],
            mutex: Some((0, Some(20), 0)),
            shared: Some((4, None, 2)),
            excl: Some((1, None, 1)),
            sx: None,
            rounds_per_wait: &[],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "pt_summary_temp005_percona5161.txt",
            layout: Mutex50,
            reservations: &[38],
            signals: &[38],
            mutex: Some((43, Some(526), 12)),
            shared: Some((18, None, 18)),
            excl: Some((0, None, 8)),
            sx: None,
            rounds_per_wait: &[("mutex", 12.23), ("RW-shared", 30.0), ("RW-excl", 240.0)],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "pt_summary_temp006_pxc5528.txt",
            layout: Mutex56,
            reservations: &[39],
            signals: &[39],
            mutex: Some((11, Some(271), 6)),
            shared: Some((24, Some(720), 24)),
            excl: Some((0, Some(270), 9)),
            sx: None,
            rounds_per_wait: &[("mutex", 24.64), ("RW-shared", 30.0), ("RW-excl", 270.0)],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "pt_summary_temp007_pxc5528.txt",
            layout: Mutex56,
            reservations: &[36],
            signals: &[36],
            mutex: Some((14, Some(222), 4)),
            shared: Some((25, Some(722), 24)),
            excl: Some((0, Some(240), 8)),
            sx: None,
            rounds_per_wait: &[("mutex", 15.86), ("RW-shared", 28.88), ("RW-excl", 240.0)],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "pt_summary_tempdir_mysql5158.txt",
            layout: Mutex50,
            reservations: &[4],
            signals: &[4],
            mutex: Some((0, Some(20), 1)),
            shared: Some((4, None, 2)),
            excl: Some((1, None, 1)),
            sx: None,
            rounds_per_wait: &[],
            cells: 0,
            truncated: false,
        },
        // Captured by this project from a throwaway MariaDB 10.11.19 (tests/fixtures/snapshots/
        // recapture.sh): the section header only, by design.
        Case {
            file: "capture_mariadb1011_live.txt",
            layout: Blank,
            reservations: &[],
            signals: &[],
            mutex: None,
            shared: None,
            excl: None,
            sx: None,
            rounds_per_wait: &[],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "capture_mariadb1011_delay6000.txt",
            layout: Blank,
            reservations: &[],
            signals: &[],
            mutex: None,
            shared: None,
            excl: None,
            sx: None,
            rounds_per_wait: &[],
            cells: 0,
            truncated: false,
        },
        // innotop t/ (versions as innotop's own t/InnoDBParser.t labels them)
        Case {
            file: "innotop_002.txt",
            layout: Mutex56,
            reservations: &[80],
            signals: &[85],
            mutex: Some((86, Some(623), 19)),
            shared: Some((68, Some(1578), 51)),
            excl: Some((6, Some(332), 10)),
            sx: None,
            rounds_per_wait: &[("mutex", 7.24), ("RW-shared", 23.21), ("RW-excl", 55.33)],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "innotop_003.txt",
            layout: Mutex56,
            reservations: &[1757986],
            signals: &[2154155],
            mutex: Some((10064599, Some(171797460), 835032)),
            shared: Some((1011518, Some(22210753), 376443)),
            excl: Some((349482, Some(17619220), 306941)),
            sx: None,
            rounds_per_wait: &[("mutex", 17.07), ("RW-shared", 21.96), ("RW-excl", 50.42)],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "innotop_004.txt",
            layout: Mutex56,
            reservations: &[24103],
            signals: &[25061],
            mutex: Some((50177, Some(436385), 4143)),
            shared: Some((17481, Some(505350), 16775)),
            excl: Some((259, Some(93826), 3039)),
            sx: None,
            rounds_per_wait: &[("mutex", 8.70), ("RW-shared", 28.91), ("RW-excl", 362.26)],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "innotop_005.txt",
            layout: Mutex56,
            reservations: &[5],
            signals: &[4],
            mutex: Some((2, Some(60), 2)),
            shared: Some((3, Some(90), 3)),
            excl: Some((0, Some(0), 0)),
            sx: None,
            rounds_per_wait: &[("mutex", 30.0), ("RW-shared", 30.0), ("RW-excl", 0.0)],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "innotop_006.txt",
            layout: Mutex56,
            reservations: &[6307],
            signals: &[47086],
            mutex: Some((8538726, Some(8236962), 4010)),
            shared: Some((16635, Some(71131), 683)),
            excl: Some((3522, Some(105509), 1268)),
            sx: None,
            rounds_per_wait: &[("mutex", 0.96), ("RW-shared", 4.28), ("RW-excl", 29.96)],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "innotop_007.txt",
            layout: Mutex56,
            reservations: &[56103364],
            signals: &[517940481],
            mutex: Some((994672655, Some(1869427362), 14115318)),
            shared: Some((93199886, Some(685475806), 14831919)),
            excl: Some((81742409, Some(1711657009), 24743296)),
            sx: None,
            rounds_per_wait: &[("mutex", 1.88), ("RW-shared", 7.35), ("RW-excl", 20.94)],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "innotop_008_mysql5612.txt",
            layout: Mutex56,
            reservations: &[5],
            signals: &[5],
            mutex: Some((4, Some(120), 3)),
            shared: Some((3, Some(90), 2)),
            excl: Some((0, Some(0), 0)),
            sx: None,
            rounds_per_wait: &[("mutex", 30.0), ("RW-shared", 30.0), ("RW-excl", 0.0)],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "innotop_009_mysql577.txt",
            layout: Mutex56,
            reservations: &[242326408],
            signals: &[195748281],
            mutex: Some((0, Some(0), 0)),
            shared: Some((326628200, Some(560409008), 233780815)),
            excl: Some((7253812, Some(85549627786), 23564)),
            sx: Some((342, Some(10537), 338)),
            rounds_per_wait: &[
                ("mutex", 0.0),
                ("RW-shared", 1.72),
                ("RW-excl", 11793.75),
                ("RW-sx", 30.81),
            ],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "innotop_010_mysql8012.txt",
            layout: Rw57,
            reservations: &[3],
            signals: &[3],
            mutex: None,
            shared: Some((0, Some(0), 0)),
            excl: Some((2, Some(60), 1)),
            sx: Some((0, Some(0), 0)),
            rounds_per_wait: &[("RW-shared", 0.0), ("RW-excl", 30.0), ("RW-sx", 0.0)],
            cells: 0,
            truncated: false,
        },
        Case {
            file: "innotop_011_mysql810_debug.txt",
            layout: Rw57,
            reservations: &[8133],
            signals: &[6750],
            mutex: None,
            shared: Some((0, Some(0), 0)),
            excl: Some((0, Some(0), 0)),
            sx: Some((0, Some(0), 0)),
            rounds_per_wait: &[("RW-shared", 0.0), ("RW-excl", 0.0), ("RW-sx", 0.0)],
            cells: 9,
            truncated: false,
        },
        Case {
            file: "innotop_012_mysql920.txt",
            layout: Rw57,
            reservations: &[23],
            signals: &[23],
            mutex: None,
            shared: Some((0, Some(0), 0)),
            excl: Some((0, Some(0), 0)),
            sx: Some((0, Some(0), 0)),
            rounds_per_wait: &[("RW-shared", 0.0), ("RW-excl", 0.0), ("RW-sx", 0.0)],
            cells: 0,
            truncated: false,
        },
    ]
}

fn sc(c: C) -> Option<SpinCounters> {
    c.map(|(spins, rounds, os_waits)| SpinCounters {
        spins,
        rounds,
        os_waits,
    })
}

#[test]
fn every_real_semaphores_section_reads_as_read_by_hand() {
    let mut checked = 0;
    for case in cases() {
        let text = read(case.file);
        let st = parse(&text);
        let f = case.file;
        assert_eq!(st.truncated, case.truncated, "{f}: truncated");
        let s = st
            .semaphores
            .unwrap_or_else(|| panic!("{f}: no SEMAPHORES"));
        assert_eq!(s.layout, case.layout, "{f}: layout");
        assert_eq!(s.reservation_counts, case.reservations, "{f}: reservations");
        assert_eq!(s.signal_counts, case.signals, "{f}: signals");
        assert_eq!(s.mutex, sc(case.mutex), "{f}: mutex");
        assert_eq!(s.rw_shared, sc(case.shared), "{f}: RW-shared");
        assert_eq!(s.rw_excl, sc(case.excl), "{f}: RW-excl");
        assert_eq!(s.rw_sx, sc(case.sx), "{f}: RW-sx");
        let rpw: Vec<(&str, f64)> = s
            .rounds_per_wait
            .iter()
            .map(|(n, v)| (n.as_str(), *v))
            .collect();
        assert_eq!(rpw, case.rounds_per_wait, "{f}: rounds per wait");
        assert_eq!(s.wait_cells.len(), case.cells, "{f}: wait cells");
        // An independent count: one cell per `--Thread` line in the text.
        assert_eq!(
            text.lines().filter(|l| l.starts_with("--Thread ")).count(),
            case.cells,
            "{f}: --Thread lines"
        );
        assert_eq!(
            s.unrecognised_count, 0,
            "{f}: unrecognised lines {:?}",
            s.unrecognised
        );
        checked += 1;
    }
    // Every real text in the directory is in the table (synthetic_* files are not real).
    let real = std::fs::read_dir(DIR)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".txt") && !n.starts_with("synthetic_"))
        .count();
    assert_eq!(checked, real, "a real fixture is missing from the table");
}

#[test]
fn named_mutex_cells_of_the_51_plugin() {
    // pt_summary_001.txt: `Mutex at 0x... '&kernel_mutex', lock var 1` and named RW-latches.
    let s = parse(&read("pt_summary_001.txt")).semaphores.unwrap();
    let c = &s.wait_cells[0];
    assert_eq!(c.thread, "139960404199760");
    assert_eq!(
        (c.waited_file.as_str(), c.waited_line, c.seconds),
        ("lock/lock0lock.c", 3224, 0.0)
    );
    assert_eq!(c.latch.as_deref(), Some("Mutex"));
    assert_eq!(c.latch_name.as_deref(), Some("&kernel_mutex"));
    assert_eq!(c.created_file, None);
    let c = &s.wait_cells[1];
    assert_eq!(c.thread, "140055933507920");
    assert_eq!(
        (c.waited_file.as_str(), c.waited_line),
        ("btr/btr0cur.c", 523)
    );
    assert_eq!(c.latch.as_deref(), Some("X-lock on RW-latch"));
    assert_eq!(c.latch_name.as_deref(), Some("&block->lock"));
    assert_eq!(c.holder_thread.as_deref(), Some("139960567171408"));
    assert_eq!(c.holder_mode.as_deref(), Some("exclusive"));
    assert_eq!(c.last_write_file.as_deref(), Some("btr/btr0cur.c"));
    assert_eq!(c.last_write_line, Some(523));
    let c = &s.wait_cells[2];
    assert_eq!(c.thread, "139960931486032");
    assert_eq!(
        (c.waited_file.as_str(), c.waited_line),
        ("row/row0sel.c", 3549)
    );
    assert_eq!(c.latch.as_deref(), Some("S-lock on RW-latch"));
    assert_eq!(c.latch_name.as_deref(), Some("&btr_search_latch"));
    assert_eq!(c.holder_thread.as_deref(), Some("139960676096336"));
    let c = s.wait_cells.last().unwrap();
    assert_eq!(c.thread, "140055978502480");
    assert_eq!(c.latch_name.as_deref(), Some("&block->lock"));
    assert_eq!(c.holder_thread.as_deref(), Some("139960567171408"));
    let kernel = s
        .wait_cells
        .iter()
        .filter(|c| c.latch_name.as_deref() == Some("&kernel_mutex"))
        .count();
    assert_eq!(kernel, 30, "30 `Mutex at 0xf89ab0 '&kernel_mutex'` lines");

    // pt_summary_002.txt (cut before the END line): mutex cells only at its start and end.
    let s = parse(&read("pt_summary_002.txt")).semaphores.unwrap();
    let c = &s.wait_cells[0];
    assert_eq!(c.thread, "2145843520");
    assert_eq!(
        (c.waited_file.as_str(), c.waited_line),
        ("./include/log0log.ic", 322)
    );
    assert_eq!(c.latch_name.as_deref(), Some("&log_sys->mutex"));
    let c = &s.wait_cells[1];
    assert_eq!(
        (c.thread.as_str(), c.waited_file.as_str(), c.waited_line),
        ("2142648640", "trx/trx0trx.c", 1033)
    );
    assert_eq!(c.latch_name.as_deref(), Some("&kernel_mutex"));
    let c = s.wait_cells.last().unwrap();
    assert_eq!(
        (c.thread.as_str(), c.waited_file.as_str(), c.waited_line),
        ("2138921280", "trx/trx0undo.c", 1796)
    );
    assert_eq!(c.latch_name.as_deref(), Some("&rseg->mutex"));
}

/// thread, waited at (file, line), latch, created in (file, line), holder, last write (file, line).
type Cell004 = (
    &'static str,
    &'static str,
    u64,
    &'static str,
    &'static str,
    u64,
    &'static str,
    &'static str,
    u64,
);

#[test]
fn created_in_file_cells_old_and_new() {
    // pt_summary_004.txt: all eight cells.
    let s = parse(&read("pt_summary_004.txt")).semaphores.unwrap();
    let want: [Cell004; 8] = [
        (
            "1229429056",
            "btr/btr0cur.c",
            443,
            "X-lock on RW-latch",
            "buf/buf0buf.c",
            550,
            "1229429056",
            "buf/buf0buf.c",
            1823,
        ),
        (
            "1189288256",
            "btr/btr0sea.c",
            1024,
            "X-lock on RW-latch",
            "btr/btr0sea.c",
            139,
            "1220999488",
            "btr/btr0sea.c",
            1024,
        ),
        (
            "1191496000",
            "btr/btr0sea.c",
            1024,
            "X-lock on RW-latch",
            "btr/btr0sea.c",
            139,
            "1220999488",
            "btr/btr0sea.c",
            1024,
        ),
        (
            "1200527680",
            "btr/btr0sea.c",
            1170,
            "S-lock on RW-latch",
            "btr/btr0sea.c",
            139,
            "1220999488",
            "btr/btr0sea.c",
            1024,
        ),
        (
            "1222805824",
            "row/row0sel.c",
            3495,
            "S-lock on RW-latch",
            "btr/btr0sea.c",
            139,
            "1220999488",
            "btr/btr0sea.c",
            1024,
        ),
        (
            "1235851584",
            "btr/btr0cur.c",
            1501,
            "X-lock on RW-latch",
            "btr/btr0sea.c",
            139,
            "1220999488",
            "btr/btr0sea.c",
            1024,
        ),
        (
            "1217386816",
            "row/row0sel.c",
            3495,
            "S-lock on RW-latch",
            "btr/btr0sea.c",
            139,
            "1220999488",
            "btr/btr0sea.c",
            1024,
        ),
        (
            "1262946624",
            "row/row0sel.c",
            3495,
            "S-lock on RW-latch",
            "btr/btr0sea.c",
            139,
            "1220999488",
            "btr/btr0sea.c",
            1024,
        ),
    ];
    assert_eq!(s.wait_cells.len(), want.len());
    for (c, w) in s.wait_cells.iter().zip(want) {
        assert_eq!(c.thread, w.0);
        assert_eq!(
            (c.waited_file.as_str(), c.waited_line),
            (w.1, w.2),
            "{}",
            w.0
        );
        assert_eq!(c.seconds, 0.0);
        assert_eq!(c.latch.as_deref(), Some(w.3));
        assert_eq!(c.latch_name, None);
        assert_eq!(
            (c.created_file.as_deref(), c.created_line),
            (Some(w.4), Some(w.5))
        );
        assert_eq!(c.holder_thread.as_deref(), Some(w.6));
        assert_eq!(c.holder_mode.as_deref(), Some("exclusive"));
        assert_eq!(
            (c.last_write_file.as_deref(), c.last_write_line),
            (Some(w.7), Some(w.8))
        );
    }

    // innotop_011 (MySQL 8.1.0 debug build): RW-LATCH INFO list, then nine cells.
    let s = parse(&read("innotop_011_mysql810_debug.txt"))
        .semaphores
        .unwrap();
    assert!(s.debug_latch_lines > 40, "{}", s.debug_latch_lines);
    let want: [(&str, &str, u64); 9] = [
        ("139785219020544", "buf0block_hint.cc", 72),
        ("139785416038144", "buf0block_hint.cc", 72),
        ("139784550844160", "buf0block_hint.cc", 72),
        ("139785217963776", "buf0block_hint.cc", 72),
        ("139785550268160", "buf0block_hint.cc", 72),
        ("139785417094912", "buf0block_hint.cc", 72),
        ("139785214793472", "buf0block_hint.cc", 72),
        ("139785216907008", "buf0buf.cc", 3735),
        ("139785215850240", "buf0block_hint.cc", 72),
    ];
    assert_eq!(s.wait_cells.len(), want.len());
    for (c, w) in s.wait_cells.iter().zip(want) {
        assert_eq!(
            (c.thread.as_str(), c.waited_file.as_str(), c.waited_line),
            w
        );
        assert_eq!(c.seconds, 0.0);
        assert_eq!(c.latch.as_deref(), Some("S-lock on RW-latch"));
        assert_eq!(
            (c.created_file.as_deref(), c.created_line),
            (Some("hash0hash.cc"), Some(116))
        );
        assert_eq!(c.holder_thread.as_deref(), Some("139784549787392"));
        assert_eq!(c.holder_mode.as_deref(), Some("exclusive"));
        assert_eq!(
            (c.last_write_file.as_deref(), c.last_write_line),
            (
                Some("/home/yoku0825/mysql-8.1.0/storage/innobase/ha/hash0hash.cc"),
                Some(64)
            )
        );
    }
}

#[test]
fn unknown_lines_are_named_never_numbers() {
    // A real 5.6 text with an invented counter line and a mangled one inserted after the
    // header (the edit is the test's, the rest is innotop_008 as published).
    let real = read("innotop_008_mysql5612.txt");
    let edited = real.replacen(
        "OS WAIT ARRAY INFO: reservation count 5\n",
        "OS WAIT ARRAY INFO: reservation count 5\nLatch spin storms 17, naps 3\nRW-sx spins lots, rounds 4, OS waits 2\n",
        1,
    );
    assert_ne!(edited, real);
    let s = parse(&edited).semaphores.unwrap();
    assert_eq!(s.unrecognised_count, 2, "{:?}", s.unrecognised);
    assert_eq!(s.rw_sx, None, "no guess from a mangled line");
    assert_eq!(s.mutex.unwrap().spins, 4, "the real counters still read");
    let line = s.describe();
    assert!(line.contains("recognised OS WAIT ARRAY"), "{line}");
    assert!(line.contains("2 line(s) not recognised"), "{line}");
    assert!(line.contains("Latch spin storms 17"), "{line}");
    assert!(!line.contains('\n'));
}

proptest::proptest! {
    #[test]
    fn never_panics_on_cut_or_mangled_real_texts(
        which in 0usize..64, cut in 0usize..70_000, junk in "\\PC{0,60}", at in 0usize..5000
    ) {
        let names: Vec<String> = std::fs::read_dir(DIR).unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".txt"))
            .collect();
        let text = read(&names[which % names.len()]);
        let mut t: String = text.chars().take(cut).collect();
        let at = t.char_indices().map(|(i, _)| i).nth(at).unwrap_or(t.len());
        t.insert_str(at, &junk);
        let _ = parse(&t);
    }
}
