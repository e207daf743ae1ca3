//! Properties of the system-schema guard (issue 24, item 4): it never panics, whatever the
//! text; a write to a system schema is refused however it is spelled (case, quotes, comments,
//! spaces around the dot); a read of one is never refused.

use proptest::prelude::*;
use spinscope::load::sql_guard::{system_write, SYSTEM_SCHEMAS};

/// Random letter case of `s`.
fn cased(s: &str, mask: u64) -> String {
    s.chars()
        .enumerate()
        .map(|(i, c)| {
            if mask >> (i % 64) & 1 == 1 {
                c.to_ascii_uppercase()
            } else {
                c
            }
        })
        .collect()
}

/// Whitespace or a comment between two tokens.
fn gap() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(" ".to_string()),
        Just("  \t".to_string()),
        Just(" /* x; 'y' */ ".to_string()),
        Just("/**/".to_string()),
        Just("\n".to_string()),
    ]
}

fn schema_name() -> impl Strategy<Value = String> {
    (0..SYSTEM_SCHEMAS.len(), any::<u64>(), 0..3u8).prop_map(|(i, mask, q)| {
        let n = cased(SYSTEM_SCHEMAS[i], mask);
        match q {
            0 => n,
            1 => format!("`{n}`"),
            _ => format!("\"{n}\""),
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn never_panics(s in any::<String>()) {
        let _ = system_write(&s);
    }

    #[test]
    fn never_panics_on_sql_like_text(s in "[a-zA-Z_`'\"\\\\.;@()*/!#\\- \n0-9M]{0,80}") {
        let _ = system_write(&s);
    }

    #[test]
    fn writes_are_refused_however_spelled(
        schema in schema_name(),
        g1 in gap(), g2 in gap(), g3 in gap(),
        verb in 0..6usize,
    ) {
        let target = format!("{schema}{g1}.{g2}setup_instruments");
        let sql = match verb {
            0 => format!("UPDATE{g3}{target} SET ENABLED='YES'"),
            1 => format!("DELETE FROM{g3}{target}"),
            2 => format!("INSERT INTO{g3}{target} VALUES (1)"),
            3 => format!("REPLACE{g3}{target} SELECT * FROM sbtest1"),
            4 => format!("TRUNCATE{g3}{target}"),
            _ => format!("CALL{g3}{schema}{g1}.{g2}ps_setup_enable_instrument('x')"),
        };
        prop_assert!(system_write(&sql).is_some(), "not refused: {}", sql);
    }

    #[test]
    fn reads_are_never_refused(schema in schema_name(), g1 in gap(), g2 in gap()) {
        let sql = format!("SELECT *{g1}FROM {schema}{g1}.{g2}setup_instruments WHERE NAME = 'mysql.user'");
        prop_assert!(system_write(&sql).is_none(), "refused: {}", sql);
        let sql = format!("INSERT INTO sbtest1 SELECT * FROM{g1}{schema}.{g2}x");
        prop_assert!(system_write(&sql).is_none(), "refused: {}", sql);
    }
}
