//! Renderers shared by every command: JSON documents and terminal tables.

pub mod spin;

pub mod chart;
pub mod doctor_md;
pub mod html;
pub mod lab;
pub mod markdown;
pub mod probe;
pub mod sweep;
pub mod sweep_html;
pub mod timeline;

/// The one HTML escaper, for element text and attribute values alike (HTML pages, the SVG
/// charts' titles and tooltips): `&`, `<`, `>`, `"` and `'` become entities, so document text
/// can neither open a tag nor close a quoted attribute.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

// JSON saving, the table builder and the number formatters are plain helpers below every
// layer (`files`, `units`: the engines use them too); re-exported here for the renderers and
// older callers.
pub use crate::files::{save_json, to_json};
pub use crate::units::{fmt_count, fmt_ns, fmt_num, table};

#[cfg(test)]
mod tests {
    #[test]
    fn the_one_escaper_is_safe_in_text_and_in_either_quote() {
        let s = super::esc(r#"<a href='x' title="y">&amp;</a>"#);
        assert_eq!(
            s,
            "&lt;a href=&#39;x&#39; title=&quot;y&quot;&gt;&amp;amp;&lt;/a&gt;"
        );
        for bad in ['<', '>', '"', '\''] {
            assert!(!s.contains(bad), "{bad} left in {s}");
        }
    }
}
