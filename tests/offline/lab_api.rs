//! The lab through its library API, as another engine (tune, a notebook) would use it: a typed
//! plan in, a document out, progress observed; no CLI involved.

use spinscope::lab::{self, LabPlan, LatchKind, Progress, SpinParams};

fn plan(latches: Vec<LatchKind>, scales: Vec<u32>) -> LabPlan {
    LabPlan {
        latches,
        threads: vec![2],
        scales,
        repeats: 2,
        duration_ms: 30,
        cs_ns: 200,
        cs_lines: 1,
        think_ns: 200,
        pin: false,
        padding: 64,
        params: SpinParams::default(),
        relax_auto: true,
    }
}

#[test]
fn a_plan_runs_into_a_document_with_progress() {
    let p = plan(vec![LatchKind::Mariadb106, LatchKind::Futex], vec![1, 4]);
    let (mut starts, mut runs) = (0, 0);
    let doc = lab::run(&p, &mut |ev| match ev {
        Progress::Start { runs: n, .. } => {
            starts += 1;
            assert_eq!(n, 2 * 2 * 2);
        }
        Progress::Run { done, .. } => {
            runs += 1;
            assert_eq!(done, runs);
        }
        Progress::Interrupted { .. } => panic!("not interrupted"),
    })
    .unwrap();
    assert_eq!((starts, runs), (1, 8));
    assert_eq!(doc.schema, "spinscope.lab/2");
    assert_eq!(doc.points.len(), 4);
    assert_eq!(doc.compare.len(), 2, "one row per latch and thread count");
    for pt in &doc.points {
        assert_eq!(pt.runs.len(), 2);
        assert_eq!(pt.lost_updates, 0);
        // Only the MariaDB latch carries an M, chosen by MariaDB's rule (100 or 200).
        match pt.latch {
            LatchKind::Mariadb106 => {
                assert!(matches!(pt.relax_multiplier, Some(100) | Some(200)))
            }
            _ => assert_eq!(pt.relax_multiplier, None),
        }
        assert_eq!(pt.hint.is_none(), pt.latch == LatchKind::Futex);
        for r in &pt.runs {
            assert!(r.elapsed_ms >= 30.0, "elapsed {} ms", r.elapsed_ms);
            assert!(r.busy_cpus <= doc.machine.cpus as f64 * 1.02 + 0.05);
        }
    }
    // The document round-trips through its JSON form.
    let back: lab::LabDoc = serde_json::from_str(&serde_json::to_string(&doc).unwrap()).unwrap();
    assert_eq!(back.points.len(), 4);
    assert_eq!(back.plan.latches, p.latches);
}

#[test]
fn an_invalid_plan_is_refused_before_measuring() {
    let mut p = plan(vec![LatchKind::Std], vec![1]);
    p.duration_ms = 1;
    let err = lab::run(&p, &mut |_| panic!("no progress for a refused plan")).unwrap_err();
    assert!(err.to_string().contains("--duration 1ms"), "{err}");
    p.duration_ms = 30;
    p.latches.clear();
    assert!(lab::run(&p, &mut |_| {}).is_err());
}
