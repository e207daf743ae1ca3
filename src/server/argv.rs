//! Passwords given on the command line (`-pSECRET`, `--password=SECRET`, `--url
//! mysql://user:SECRET@host`, a positional `user:SECRET@host`) are overwritten in this process's argument memory right after
//! start, so `ps` and `/proc/PID/cmdline` no longer show them, as the mysql client does.
//! The caller keeps its own copy of the arguments, taken before the overwrite.

/// The byte ranges of password text within a NUL-separated argument block.
pub fn password_ranges(block: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut off = 0;
    let mut prev: &[u8] = b"";
    for arg in block.split(|&b| b == 0) {
        let start = off;
        off += arg.len() + 1;
        // `-p` and `--password` take no separate word (as in the mysql client): the next word
        // is the server, whose own password part is hidden below.
        let takes_url = prev == b"--url";
        prev = arg;
        if arg == b"--" {
            break;
        }
        if let Some(v) = arg.strip_prefix(b"--password=") {
            out.push(start + arg.len() - v.len()..start + arg.len());
        } else if arg.len() > 2 && arg.starts_with(b"-p") {
            out.push(start + 2..start + arg.len());
        } else if let Some(u) = arg.strip_prefix(b"--url=") {
            let base = start + arg.len() - u.len();
            out.extend(url_password(u).map(|r| base + r.start..base + r.end));
        } else if takes_url || (!arg.starts_with(b"-") && arg.contains(&b'@')) {
            out.extend(target_password(arg).map(|r| start + r.start..start + r.end));
            prev = b"";
        }
    }
    out
}

/// The password inside a URL's userinfo (`scheme://user:PASSWORD@host`).
fn url_password(u: &[u8]) -> Option<std::ops::Range<usize>> {
    let s = u.windows(3).position(|w| w == b"://")? + 3;
    let at = s + u[s..].iter().rposition(|&b| b == b'@')?;
    let colon = s + u[s..at].iter().position(|&b| b == b':')?;
    (colon + 1 < at).then(|| colon + 1..at)
}

/// The password of a URL or of a mysqlsh-style `user:PASSWORD@host`.
fn target_password(u: &[u8]) -> Option<std::ops::Range<usize>> {
    if u.windows(3).any(|w| w == b"://") {
        return url_password(u);
    }
    let at = u.iter().rposition(|&b| b == b'@')?;
    let colon = u[..at].iter().position(|&b| b == b':')?;
    (colon + 1 < at).then(|| colon + 1..at)
}

/// Where the kernel keeps this process's arguments (`/proc/self/stat` fields 48 and 49).
fn arg_area() -> Option<(usize, usize)> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    let f: Vec<&str> = s[s.rfind(')')? + 1..].split_whitespace().collect();
    // Field 3 (state) is f[0], so field N is f[N - 3].
    let start = f.get(45)?.parse().ok()?;
    let end = f.get(46)?.parse().ok()?;
    (end > start).then_some((start, end))
}

/// Overwrite every password in the process's argument memory with 'x'. Returns whether one
/// was found (the caller warns once). Call it after copying the arguments.
pub fn scrub_passwords() -> bool {
    let Some((start, end)) = arg_area() else {
        return false;
    };
    // SAFETY: [arg_start, arg_end) is this process's own argument block, mapped writable on
    // the initial stack for the life of the process; nothing else holds a reference to it (the
    // caller copied the arguments before calling).
    let block = unsafe { std::slice::from_raw_parts_mut(start as *mut u8, end - start) };
    let ranges = password_ranges(block);
    for r in &ranges {
        block[r.clone()].fill(b'x');
    }
    !ranges.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrubbed(args: &[&str]) -> String {
        let mut b = args.join("\0").into_bytes();
        b.push(0);
        for r in password_ranges(&b) {
            b[r].fill(b'x');
        }
        String::from_utf8(b).unwrap().replace('\0', " ")
    }

    #[test]
    fn every_password_form_is_hidden() {
        assert_eq!(
            scrubbed(&["spinscope", "doctor", "-pS3cret", "-u", "root"]),
            "spinscope doctor -pxxxxxx -u root "
        );
        assert_eq!(
            scrubbed(&[
                "s",
                "--password=pw",
                "--password",
                "db1",
                "-p",
                "db2",
                "-P",
                "3306"
            ]),
            "s --password=xx --password db1 -p db2 -P 3306 "
        );
        assert_eq!(
            scrubbed(&["s", "-p", "ceo:S3c@h:1", "root@db", "mysql://u:pw@h"]),
            "s -p ceo:xxx@h:1 root@db mysql://u:xx@h "
        );
        assert_eq!(
            scrubbed(&[
                "s",
                "--url",
                "mysql://ceo:S3c?r@t@h:1/db",
                "--url=mysql://u:pw@h"
            ]),
            "s --url mysql://ceo:xxxxxxx@h:1/db --url=mysql://u:xx@h "
        );
        // -p alone (prompt) followed by a flag, and a URL without a password, stay.
        assert_eq!(
            scrubbed(&["s", "-p", "--url", "mysql://u@h"]),
            "s -p --url mysql://u@h "
        );
    }

    proptest::proptest! {
        #[test]
        fn ranges_stay_inside_the_block(args in proptest::collection::vec("[-a-z:/@=p]{0,12}", 0..8)) {
            let mut b = args.join("\0").into_bytes();
            b.push(0);
            for r in password_ranges(&b) {
                proptest::prop_assert!(r.start <= r.end && r.end <= b.len());
            }
        }
    }
}
