//! Which server is which when several processes share a name (`--process mariadbd` on a host
//! with several instances): each pid's TCP ports and Unix sockets it listens on (its socket
//! inodes from /proc/PID/fd matched in /proc/PID/net/tcp, tcp6 and unix) and its data directory
//! (`--datadir` on its command line, else its working directory, where mysqld and mariadbd
//! change to at start). The parsers are pure; `describe` reads /proc.

use std::collections::BTreeSet;

/// What tells one server process from another.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Instance {
    pub pid: u32,
    pub ports: Vec<u16>,
    pub sockets: Vec<String>,
    pub datadir: Option<String>,
    /// /proc/PID/fd could not be read (another user's process, without root).
    pub fds_unreadable: bool,
}

impl Instance {
    /// `pid 123: port 3307, socket /run/mysqld/b.sock, datadir /var/lib/mysql-b`.
    pub fn line(&self) -> String {
        let mut parts = Vec::new();
        match self.ports.as_slice() {
            [] => {}
            [p] => parts.push(format!("port {p}")),
            ps => parts.push(format!(
                "ports {}",
                ps.iter().map(u16::to_string).collect::<Vec<_>>().join(", ")
            )),
        }
        for s in &self.sockets {
            parts.push(format!("socket {s}"));
        }
        if self.fds_unreadable {
            parts.push("listening sockets not readable here (run as its user or root)".into());
        } else if self.ports.is_empty() && self.sockets.is_empty() {
            parts.push("no listening socket".into());
        }
        if let Some(d) = &self.datadir {
            parts.push(format!("datadir {d}"));
        }
        format!("pid {}: {}", self.pid, parts.join(", "))
    }
}

/// The socket inodes among symlink targets of /proc/PID/fd (`socket:[12345]`).
pub fn socket_inodes<'a>(targets: impl Iterator<Item = &'a str>) -> BTreeSet<u64> {
    targets
        .filter_map(|t| t.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok())
        .collect()
}

/// Ports in LISTEN state (st 0A) owned by `inodes`, from /proc/net/tcp or tcp6 text.
pub fn listening_ports(net_tcp: &str, inodes: &BTreeSet<u64>) -> Vec<u16> {
    let mut v: Vec<u16> = net_tcp
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (local, st, inode) = (f.get(1)?, f.get(3)?, f.get(9)?);
            if *st != "0A" || !inodes.contains(&inode.parse().ok()?) {
                return None;
            }
            u16::from_str_radix(local.rsplit(':').next()?, 16).ok()
        })
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Paths of listening Unix sockets (flag __SO_ACCEPTCON, 0x10000) owned by `inodes`, from
/// /proc/net/unix text.
pub fn listening_unix(net_unix: &str, inodes: &BTreeSet<u64>) -> Vec<String> {
    let mut v: Vec<String> = net_unix
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let flags = u32::from_str_radix(f.get(3)?, 16).ok()?;
            let inode: u64 = f.get(6)?.parse().ok()?;
            let path = f.get(7)?;
            (flags & 0x1_0000 != 0 && inodes.contains(&inode) && path.starts_with('/'))
                .then(|| path.to_string())
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The value of `--name=V` or `--name V` (also `--name_with_underscores`) in a command line.
pub fn option_value(args: &[String], name: &str) -> Option<String> {
    let alt = name.replace('-', "_");
    let mut it = args.iter();
    let mut found = None;
    while let Some(a) = it.next() {
        let Some(rest) = a.strip_prefix("--") else {
            continue;
        };
        let norm = rest.replace('_', "-");
        if let Some(v) = norm
            .strip_prefix(name)
            .and_then(|r| r.strip_prefix('='))
            .map(|_| rest[rest.find('=').map_or(0, |i| i + 1)..].to_string())
        {
            found = Some(v);
        } else if rest == name || rest == alt {
            found = it.next().cloned();
        }
    }
    found
}

/// Read what /proc tells about `pid` (unreadable parts left empty).
pub fn describe(pid: u32) -> Instance {
    let proc_dir = format!("/proc/{pid}");
    let args: Vec<String> = std::fs::read(format!("{proc_dir}/cmdline"))
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default();
    let (inodes, fds_unreadable) = match std::fs::read_dir(format!("{proc_dir}/fd")) {
        Ok(rd) => {
            let targets: Vec<String> = rd
                .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            (socket_inodes(targets.iter().map(String::as_str)), false)
        }
        Err(_) => (BTreeSet::new(), true),
    };
    let read = |f: &str| std::fs::read_to_string(format!("{proc_dir}/net/{f}")).unwrap_or_default();
    let mut ports = listening_ports(&read("tcp"), &inodes);
    ports.extend(listening_ports(&read("tcp6"), &inodes));
    ports.sort_unstable();
    ports.dedup();
    let sockets = listening_unix(&read("unix"), &inodes);
    let datadir = option_value(&args, "datadir").or_else(|| {
        std::fs::read_link(format!("{proc_dir}/cwd"))
            .ok()
            .map(|p| p.display().to_string())
    });
    Instance {
        pid,
        ports,
        sockets,
        datadir,
        fds_unreadable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Lines of /proc/PID/net/tcp, tcp6 and unix as Linux 6.1 wrote them on the project's KVM
    // guest, with throwaway MariaDB 10.11 servers running (cut to the columns' header and a
    // few rows).
    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:0CEA 00000000:0000 0A 00000000:00000000 00:00000000 00000000   107        0 9571 1 00000000d5e58309 100 0 0 10 0
   1: 0100007F:847D 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 80566 1 000000006d6a5c39 100 0 0 10 0
   2: 0100007F:847D 0100007F:D2C8 01 00000000:00000000 00:00000000 00000000     0        0 80999 1 000000006d6a5c39 100 0 0 10 0
";
    const TCP6: &str = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:18EB 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5525 1 000000000990a448 100 0 0 10 0
";
    const UNIX: &str = "Num       RefCount Protocol Flags    Type St Inode Path
00000000a873de2b: 00000002 00000000 00000000 0001 03 39132 /tmp/wb/d/s.sock
000000002a721779: 00000002 00000000 00010000 0001 01  5487 /var/run/postgresql/.s.PGSQL.5432
00000000b873de2b: 00000002 00000000 00010000 0001 01 80570 /tmp/wb/d/s.sock
0000000063fd416b: 00000003 00000000 00000000 0001 03 55377
";

    #[test]
    fn listening_sockets_of_the_pid_only() {
        let inodes = socket_inodes(
            [
                "socket:[80566]",
                "socket:[80999]",
                "socket:[80570]",
                "/dev/null",
                "socket:[x]",
            ]
            .into_iter(),
        );
        assert_eq!(inodes.len(), 3);
        assert_eq!(listening_ports(TCP, &inodes), vec![0x847D]);
        assert_eq!(listening_ports(TCP6, &inodes), Vec::<u16>::new());
        let all: BTreeSet<u64> = [5525].into();
        assert_eq!(listening_ports(TCP6, &all), vec![0x18EB]);
        assert_eq!(listening_unix(UNIX, &inodes), vec!["/tmp/wb/d/s.sock"]);
        // Garbage never panics and finds nothing.
        assert!(listening_ports("x\n1: zz 0A\n", &inodes).is_empty());
        assert!(listening_unix("x\n: 1 2 zz\n", &inodes).is_empty());
    }

    #[test]
    fn command_line_options() {
        let args: Vec<String> = [
            "/usr/sbin/mariadbd",
            "--no-defaults",
            "--datadir=/tmp/a/data",
            "--port",
            "3307",
            "--pid_file=/tmp/a/m.pid",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            option_value(&args, "datadir").as_deref(),
            Some("/tmp/a/data")
        );
        assert_eq!(option_value(&args, "port").as_deref(), Some("3307"));
        assert_eq!(
            option_value(&args, "pid-file").as_deref(),
            Some("/tmp/a/m.pid")
        );
        assert_eq!(option_value(&args, "socket"), None);
        let i = Instance {
            pid: 7,
            ports: vec![3307],
            sockets: vec!["/tmp/a/s.sock".into()],
            datadir: Some("/tmp/a/data".into()),
            fds_unreadable: false,
        };
        assert_eq!(
            i.line(),
            "pid 7: port 3307, socket /tmp/a/s.sock, datadir /tmp/a/data"
        );
    }
}
