//! profile's folded stacks as a pprof profile: one location per distinct frame (a frame without
//! a symbol at its binary's file offset, the same in every run of the same build), the comm and
//! the class spinscope gave each stack as labels, the on-CPU sample types, period and duration.
//! Pure; the encoding is `pprof`'s.

use std::collections::HashMap;

use super::fold::Tally;
use super::pprof::{Frame, Profile, Sample, ValueType};
use super::ProfileDoc;

/// One folded stack: its frame ids (comm first, leaf last), samples and weight, and its class.
pub struct Stack<'a> {
    pub frames: &'a [u32],
    pub tally: Tally,
    pub class: &'static str,
}

/// The label keys written on each sample.
pub const LABEL_CLASS: &str = "class";
pub const LABEL_COMM: &str = "comm";

/// The sample types of an on-CPU profile whose weight is in `unit` of `event`: the samples
/// always; `cpu/nanoseconds` for a time-based event (cpu-clock, task-clock); `<event>/count`
/// for a counted one (cycles); nothing more when samples carry no period.
pub fn on_cpu_types(unit: &str, event: Option<&str>) -> Vec<ValueType> {
    let mut v = vec![ValueType::new("samples", "count")];
    match unit {
        "samples" => {}
        "ns" => v.push(ValueType::new("cpu", "nanoseconds")),
        other => v.push(ValueType::new(event.unwrap_or(other), "count")),
    }
    v
}

/// The pprof profile of `stacks`; `frame` names a frame id (the comm's id included).
pub fn build<'a>(
    stacks: impl Iterator<Item = Stack<'a>>,
    mut frame: impl FnMut(u32) -> Frame,
    doc: &ProfileDoc,
    duration_ns: i64,
) -> Profile {
    let types = on_cpu_types(&doc.weight_unit, doc.source.event.as_deref());
    let weighted = types.len() > 1;
    let mut frames: Vec<Frame> = Vec::new();
    let mut by_id: HashMap<u32, usize> = HashMap::new();
    let mut samples = Vec::new();
    for s in stacks {
        let Some((&comm, rest)) = s.frames.split_first() else {
            continue;
        };
        let comm = frame(comm).function;
        let idx = rest
            .iter()
            .map(|&id| {
                *by_id.entry(id).or_insert_with(|| {
                    frames.push(frame(id));
                    frames.len() - 1
                })
            })
            .collect();
        let mut values = vec![clamp(s.tally.samples)];
        if weighted {
            values.push(clamp(s.tally.weight));
        }
        samples.push(Sample {
            frames: idx,
            values,
            labels: vec![
                (LABEL_CLASS.to_string(), s.class.to_string()),
                (LABEL_COMM.to_string(), comm),
            ],
        });
    }
    let period = if doc.samples > 0 && weighted {
        clamp(doc.weight / doc.samples)
    } else {
        1
    };
    let mut comments = vec![format!(
        "spinscope profile: {} samples of {}; labels: {LABEL_CLASS} (spinscope's class of the \
         stack), {LABEL_COMM}",
        doc.samples,
        doc.source.event.as_deref().unwrap_or("an unnamed event")
    )];
    if let Some(h) = &doc.headline {
        comments.push(h.clone());
    }
    Profile {
        default_sample_type: Some(types.len() - 1),
        period_type: types.last().cloned(),
        sample_types: types,
        frames,
        samples,
        period,
        duration_ns,
        // perf's times are since boot, not a wall clock (and the host clock is not the
        // server's): left unknown.
        time_ns: 0,
        comments,
    }
}

fn clamp(x: u64) -> i64 {
    i64::try_from(x).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_types_follow_the_weight() {
        let k = |v: Vec<ValueType>| -> Vec<String> {
            v.into_iter()
                .map(|t| format!("{}/{}", t.kind, t.unit))
                .collect()
        };
        assert_eq!(
            k(on_cpu_types("ns", Some("cpu-clock"))),
            ["samples/count", "cpu/nanoseconds"]
        );
        assert_eq!(
            k(on_cpu_types("cycles", Some("cycles"))),
            ["samples/count", "cycles/count"]
        );
        assert_eq!(k(on_cpu_types("samples", None)), ["samples/count"]);
    }
}
