//! pprof out: a profile as gzipped `profile.proto` (github.com/google/pprof, proto/profile.proto),
//! the format `go tool pprof`, Grafana Pyroscope and Parca read. Pure: it takes plain frames and
//! samples (built from profile's folded stacks in `profile::located`) and returns bytes.
//!
//! The sample types are a list, so a view with other values (off-CPU time, say) adds its own
//! `ValueType` and a value per sample beside the on-CPU ones. Messages are written by hand with
//! prost's derive (no build script, no protoc); the field numbers are profile.proto's.

use std::collections::HashMap;
use std::io::Write;

use prost::Message;

/// A sample type or the period's type: `samples/count`, `cpu/nanoseconds`, `off_cpu/nanoseconds`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueType {
    pub kind: String,
    pub unit: String,
}

impl ValueType {
    pub fn new(kind: &str, unit: &str) -> ValueType {
        ValueType {
            kind: kind.into(),
            unit: unit.into(),
        }
    }
}

/// One frame: a function name, and for code without a symbol, the binary and the offset in its
/// file (the same for every run of the same build, unlike a run-time address).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Frame {
    pub function: String,
    pub binary: Option<String>,
    pub file_offset: Option<u64>,
}

/// One stack and its values (one per sample type, in order), with labels (key, value).
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Indexes into [`Profile::frames`], root first (as folded stacks are written).
    pub frames: Vec<usize>,
    pub values: Vec<i64>,
    pub labels: Vec<(String, String)>,
}

/// What is written.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Profile {
    pub sample_types: Vec<ValueType>,
    /// The sample type a reader shows first (an index into `sample_types`).
    pub default_sample_type: Option<usize>,
    pub frames: Vec<Frame>,
    pub samples: Vec<Sample>,
    pub period_type: Option<ValueType>,
    /// One sample every `period` of `period_type` (0: unknown).
    pub period: i64,
    /// How long the recording lasted (0: unknown).
    pub duration_ns: i64,
    /// When it started, in ns since the Unix epoch (0: unknown).
    pub time_ns: i64,
    pub comments: Vec<String>,
}

/// profile.proto's messages, the fields spinscope writes.
pub mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        #[prost(message, repeated, tag = "3")]
        pub mapping: Vec<Mapping>,
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        #[prost(int64, tag = "9")]
        pub time_nanos: i64,
        #[prost(int64, tag = "10")]
        pub duration_nanos: i64,
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        #[prost(int64, tag = "12")]
        pub period: i64,
        #[prost(int64, repeated, tag = "13")]
        pub comment: Vec<i64>,
        #[prost(int64, tag = "14")]
        pub default_sample_type: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        /// Leaf first.
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
        #[prost(message, repeated, tag = "3")]
        pub label: Vec<Label>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Label {
        #[prost(int64, tag = "1")]
        pub key: i64,
        #[prost(int64, tag = "2")]
        pub str: i64,
        #[prost(int64, tag = "3")]
        pub num: i64,
        #[prost(int64, tag = "4")]
        pub num_unit: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Mapping {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub memory_start: u64,
        #[prost(uint64, tag = "3")]
        pub memory_limit: u64,
        #[prost(uint64, tag = "4")]
        pub file_offset: u64,
        #[prost(int64, tag = "5")]
        pub filename: i64,
        #[prost(int64, tag = "6")]
        pub build_id: i64,
        #[prost(bool, tag = "7")]
        pub has_functions: bool,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub mapping_id: u64,
        #[prost(uint64, tag = "3")]
        pub address: u64,
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
        #[prost(int64, tag = "2")]
        pub line: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(int64, tag = "2")]
        pub name: i64,
        #[prost(int64, tag = "3")]
        pub system_name: i64,
        #[prost(int64, tag = "4")]
        pub filename: i64,
    }
}

/// The string table: index 0 is "" as profile.proto requires.
#[derive(Default)]
struct Strings {
    list: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        let mut s = Strings::default();
        s.get("");
        s
    }
    fn get(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.list.len() as i64;
        self.list.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

/// The profile as profile.proto's message (ids from 1; one location per distinct frame, one
/// function per distinct name, one mapping per binary that has frames without a symbol).
pub fn to_proto(p: &Profile) -> proto::Profile {
    let mut st = Strings::new();
    let vt = |st: &mut Strings, v: &ValueType| proto::ValueType {
        r#type: st.get(&v.kind),
        unit: st.get(&v.unit),
    };
    let sample_type = p.sample_types.iter().map(|v| vt(&mut st, v)).collect();
    let mut functions: Vec<proto::Function> = Vec::new();
    let mut fn_ids: HashMap<&str, u64> = HashMap::new();
    let mut mappings: Vec<proto::Mapping> = Vec::new();
    let mut map_ids: HashMap<&str, u64> = HashMap::new();
    let mut locations: Vec<proto::Location> = Vec::with_capacity(p.frames.len());
    for (i, f) in p.frames.iter().enumerate() {
        let function_id = *fn_ids.entry(f.function.as_str()).or_insert_with(|| {
            let id = functions.len() as u64 + 1;
            let name = st.get(&f.function);
            functions.push(proto::Function {
                id,
                name,
                system_name: name,
                filename: 0,
            });
            id
        });
        let mapping_id = match &f.binary {
            Some(b) => *map_ids.entry(b.as_str()).or_insert_with(|| {
                let id = mappings.len() as u64 + 1;
                mappings.push(proto::Mapping {
                    id,
                    memory_start: 0,
                    memory_limit: u64::MAX,
                    file_offset: 0,
                    filename: st.get(b),
                    build_id: 0,
                    has_functions: true,
                });
                id
            }),
            None => 0,
        };
        locations.push(proto::Location {
            id: i as u64 + 1,
            mapping_id,
            // With a mapping at 0 the address is the offset in the file: stable across runs.
            address: f.file_offset.filter(|_| mapping_id != 0).unwrap_or(0),
            line: vec![proto::Line {
                function_id,
                line: 0,
            }],
        });
    }
    let sample = p
        .samples
        .iter()
        .map(|s| proto::Sample {
            location_id: s.frames.iter().rev().map(|&i| i as u64 + 1).collect(),
            value: s.values.clone(),
            label: s
                .labels
                .iter()
                .map(|(k, v)| proto::Label {
                    key: st.get(k),
                    str: st.get(v),
                    num: 0,
                    num_unit: 0,
                })
                .collect(),
        })
        .collect();
    let period_type = p.period_type.as_ref().map(|v| vt(&mut st, v));
    let comment = p.comments.iter().map(|c| st.get(c)).collect();
    let default_sample_type = p
        .default_sample_type
        .and_then(|i| p.sample_types.get(i))
        .map_or(0, |v| st.get(&v.kind));
    proto::Profile {
        sample_type,
        sample,
        mapping: mappings,
        location: locations,
        function: functions,
        string_table: st.list,
        time_nanos: p.time_ns,
        duration_nanos: p.duration_ns,
        period_type,
        period: p.period,
        comment,
        default_sample_type,
    }
}

/// The profile as gzipped profile.proto bytes.
pub fn encode(p: &Profile) -> std::io::Result<Vec<u8>> {
    let raw = to_proto(p).encode_to_vec();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&raw)?;
    gz.finish()
}

/// Read gzipped (or plain) profile.proto bytes back; for tests and checks.
pub fn decode(bytes: &[u8]) -> Result<proto::Profile, String> {
    use std::io::Read;
    let raw = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut v = Vec::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_end(&mut v)
            .map_err(|e| format!("not gzip: {e}"))?;
        v
    } else {
        bytes.to_vec()
    };
    proto::Profile::decode(raw.as_slice()).map_err(|e| format!("not profile.proto: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(f: &str) -> Frame {
        Frame {
            function: f.into(),
            binary: None,
            file_offset: None,
        }
    }

    fn sample_profile() -> Profile {
        Profile {
            sample_types: vec![
                ValueType::new("samples", "count"),
                ValueType::new("cpu", "nanoseconds"),
            ],
            default_sample_type: Some(1),
            frames: vec![
                frame("do_command"),
                frame("ut_delay"),
                Frame {
                    function: "mariadbd+0x1234".into(),
                    binary: Some("mariadbd".into()),
                    file_offset: Some(0x1234),
                },
            ],
            samples: vec![
                Sample {
                    frames: vec![0, 1],
                    values: vec![3, 3_000_000],
                    labels: vec![("class".into(), "innodb_spin".into())],
                },
                Sample {
                    frames: vec![0, 2],
                    values: vec![1, 1_000_000],
                    labels: vec![("class".into(), "unsymbolized".into())],
                },
            ],
            period_type: Some(ValueType::new("cpu", "nanoseconds")),
            period: 2_004_008,
            duration_ns: 10_000_000_000,
            time_ns: 0,
            comments: vec!["spinscope profile".into()],
        }
    }

    /// Encoded, gzipped, decoded by prost: every table reads back as written.
    #[test]
    fn encodes_and_decodes_back() {
        let p = sample_profile();
        let bytes = encode(&p).unwrap();
        assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip");
        let d = decode(&bytes).unwrap();
        let s = |i: i64| d.string_table[i as usize].as_str();
        assert_eq!(d.string_table[0], "");
        let types: Vec<(&str, &str)> = d
            .sample_type
            .iter()
            .map(|v| (s(v.r#type), s(v.unit)))
            .collect();
        assert_eq!(types, [("samples", "count"), ("cpu", "nanoseconds")]);
        assert_eq!(s(d.default_sample_type), "cpu");
        assert_eq!(d.sample.len(), 2);
        // Leaf first: ut_delay (location 2), then do_command (location 1).
        assert_eq!(d.sample[0].location_id, vec![2, 1]);
        assert_eq!(d.sample[0].value, vec![3, 3_000_000]);
        let l = &d.sample[1].label[0];
        assert_eq!((s(l.key), s(l.str)), ("class", "unsymbolized"));
        let loc = &d.location[2];
        assert_eq!(loc.address, 0x1234);
        let m = &d.mapping[(loc.mapping_id - 1) as usize];
        assert_eq!(s(m.filename), "mariadbd");
        let f = &d.function[(loc.line[0].function_id - 1) as usize];
        assert_eq!(s(f.name), "mariadbd+0x1234");
        assert_eq!(d.location[0].mapping_id, 0);
        assert_eq!(d.period, 2_004_008);
        assert_eq!(d.duration_nanos, 10_000_000_000);
        assert_eq!(s(d.period_type.unwrap().r#type), "cpu");
        assert_eq!(s(d.comment[0]), "spinscope profile");
        // Deterministic: the same profile, the same bytes.
        assert_eq!(encode(&p).unwrap(), bytes);
    }

    #[test]
    fn one_function_per_name_and_garbage_is_refused() {
        let mut p = sample_profile();
        p.frames.push(frame("ut_delay"));
        let d = to_proto(&p);
        assert_eq!(d.location.len(), 4);
        assert_eq!(d.function.len(), 3);
        assert!(decode(b"\x1f\x8bnot gzip").is_err());
        assert!(decode(&[0xff; 7]).is_err());
    }
}
