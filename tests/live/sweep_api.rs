//! The sweep engine through its library API, as `tune` or another engine uses it: a typed
//! plan, connectors and an observer in, a document out (saved after every step, settings
//! restored), against a throwaway MariaDB. No CLI in the measured path (the schema is made by
//! `sweep prepare`).

use crate::common;
use std::time::Duration;

use common::mariadb::{self, MariaDb};
use spinscope::load::spec::{parse_variants, Setting};
use spinscope::load::workload::Kind;
use spinscope::server::conn::{resolve, ConnArgs};
use spinscope::sweep::{self, Connectors, Observer, Point, StepDoc, SweepPlan};

#[derive(Default)]
struct Seen {
    start: Option<(usize, Duration)>,
    steps: Vec<(usize, usize, u32, String, u32)>,
    applied: Vec<(String, String, String)>,
}

impl Observer for Seen {
    fn start(&mut self, steps: usize, per_step: Duration) {
        self.start = Some((steps, per_step));
    }
    fn applied(&mut self, variant: &str, now: &Setting, asked: &str) {
        self.applied
            .push((variant.into(), now.value.clone(), asked.into()));
    }
    fn step_done(&mut self, at: Point, step: &StepDoc, _wall: Duration) {
        assert_eq!(
            (at.threads, at.variant),
            (step.threads, step.variant.as_str())
        );
        self.steps
            .push((at.k, at.n, at.threads, at.variant.into(), at.repeat));
    }
}

#[test]
fn a_short_sweep_through_the_library_api() {
    if mariadb::skip_reason("sweep_api", mariadb::available().err()).is_some() {
        return;
    }
    let db = MariaDb::start(&["--innodb-flush-log-at-trx-commit=0"]);
    db.sql("SET GLOBAL innodb_spin_wait_delay = 7");
    // In-process sweeps keep their change journal in the binary's own state directory.
    common::lib_env();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_spinscope"))
        .args(["sweep", "prepare", "--socket"])
        .arg(&db.socket)
        .args([
            "--user",
            "root",
            "--no-defaults",
            "--tables",
            "1",
            "--table-size",
            "1000",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let target = resolve(&ConnArgs {
        socket: Some(db.socket.clone()),
        user: Some("root".into()),
        no_defaults: true,
        connect_timeout: 10,
        query_timeout: 30,
        ..Default::default()
    })
    .unwrap();
    let variants = parse_variants(&[
        "d4:innodb_spin_wait_delay=4".to_string(),
        "d200:innodb_spin_wait_delay=200".to_string(),
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("sweep.json");
    let mut plan = SweepPlan::new(
        "spinscope",
        Kind::parse("point-select").unwrap(),
        vec![1, 2],
        variants,
    );
    plan.warmup = Duration::from_millis(200);
    plan.duration = Duration::from_millis(600);
    plan.outputs.save = Some(save.clone());
    let conns = Connectors::for_target(&target, &plan.schema);
    let mut seen = Seen::default();
    let run = sweep::run(&plan, &conns, &mut seen).unwrap();
    assert!(
        run.error.is_none(),
        "{:?}",
        run.error.map(|e| e.to_string())
    );
    let doc = run.doc;

    // Every planned step ran, in order, each reported once as k of N.
    assert!(doc.complete && !doc.interrupted);
    assert_eq!(seen.start, Some((4, Duration::from_millis(800))));
    let want: Vec<(usize, usize, u32, String, u32)> =
        [(1, "d4"), (1, "d200"), (2, "d4"), (2, "d200")]
            .iter()
            .enumerate()
            .map(|(i, (t, v))| (i + 1, 4, *t, v.to_string(), 1))
            .collect();
    assert_eq!(seen.steps, want);
    assert_eq!(doc.steps.len(), 4);
    for s in &doc.steps {
        assert!(s.txns > 0 && s.tps > 0.0 && s.invalid.is_none(), "{s:?}");
        assert!(s.latency_us.p50 > 0.0 && s.latency_us.p50 <= s.latency_us.p99);
        // The setting was in force during the step and read back after it.
        let want = if s.variant == "d4" { "4" } else { "200" };
        assert_eq!(s.applied[0].value, want);
        assert_eq!(s.settings_after[0].value, want);
    }
    assert_eq!(seen.applied.len(), 4);
    assert!(seen.applied.iter().all(|(_, now, asked)| now == asked));
    // Saved after every step: the file holds the final document.
    let saved: spinscope::report::sweep::SweepDoc =
        serde_json::from_str(&std::fs::read_to_string(&save).unwrap()).unwrap();
    // (JSON round-trips floats to the last digit or so: compare what identifies each step.)
    let key = |d: &spinscope::report::sweep::SweepDoc| {
        d.steps
            .iter()
            .map(|s| {
                (
                    s.threads,
                    s.variant.clone(),
                    s.txns,
                    s.histogram.data.clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(key(&saved), key(&doc));
    assert!(saved.complete && saved.settings_changed.iter().all(|c| c.restored));
    // Restored.
    assert_eq!(db.sql("SELECT @@GLOBAL.innodb_spin_wait_delay").trim(), "7");
    assert!(
        doc.settings_changed.iter().all(|c| c.restored),
        "{:?}",
        doc.settings_changed
    );
}
