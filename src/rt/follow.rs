//! Which server `rt` captures: a server process's listening TCP ports and Unix sockets, and
//! how many clients it has on those sockets (they are not on the wire, so rt cannot time
//! them), from /proc: the process's socket inodes (`/proc/<pid>/fd`) matched against its
//! network namespace's tables (`/proc/<pid>/net/{tcp,tcp6,unix}`). The table parsers are
//! pure; [`of_pid`] and the owner look-ups read /proc.

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The server rt follows, as found before the capture (in `--save`'s run and the total's
/// JSON).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Followed {
    /// How it was found: `--pid 1234`, or the connection (`root@/run/mysqld/mysqld.sock`).
    pub found_by: String,
    /// Its process, when known (needs root to read another user's /proc/<pid>/fd).
    pub pid: Option<u32>,
    /// The process's name (`mariadbd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    /// The TCP ports it listens on: what rt captures unless `--port` says otherwise.
    pub tcp_ports: Vec<u16>,
    /// The Unix sockets it listens on.
    pub unix_sockets: Vec<String>,
    /// Clients connected over its Unix socket(s) when the capture started: not on the wire,
    /// so not timed (None: not known).
    pub unix_socket_clients: Option<u64>,
    /// Where that count comes from: `processlist` (HOST='localhost') or `/proc` (connected
    /// sockets on the server's socket path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unix_clients_from: Option<String>,
    /// The ports `--port` gave when they are not the ones the server listens on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports_given_differ: Vec<u16>,
}

/// The socket inodes among a process's open files.
pub fn socket_inodes(pid: u32) -> std::io::Result<HashSet<u64>> {
    let mut set = HashSet::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/fd"))? {
        let Ok(e) = e else { continue };
        if let Ok(target) = std::fs::read_link(e.path()) {
            if let Some(n) = socket_inode(&target.to_string_lossy()) {
                set.insert(n);
            }
        }
    }
    Ok(set)
}

/// `socket:[12345]` -> 12345.
fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// Ports of the LISTEN sockets (state 0A) of a /proc/net/tcp{,6} table whose inode is in
/// `inodes`.
pub fn listening_tcp(table: &str, inodes: &HashSet<u64>) -> Vec<u16> {
    let mut v = Vec::new();
    for l in table.lines().skip(1) {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 10 || f[3] != "0A" {
            continue;
        }
        let inode = f[9].parse::<u64>().ok();
        let port = f[1]
            .rsplit_once(':')
            .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
        if let (Some(i), Some(p)) = (inode, port) {
            if inodes.contains(&i) && !v.contains(&p) {
                v.push(p);
            }
        }
    }
    v
}

/// A /proc/net/unix table's sockets of `inodes`: the paths listened on (flag
/// `__SO_ACCEPTCON` 0x10000), and the connected ones on those paths (what the server
/// accepted: each carries the path it was accepted on).
pub fn unix_sockets(table: &str, inodes: &HashSet<u64>) -> (Vec<String>, u64) {
    let mut listening = Vec::new();
    let mut connected = Vec::new();
    for l in table.lines().skip(1) {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 8 {
            continue;
        }
        let Ok(inode) = f[6].parse::<u64>() else {
            continue;
        };
        if !inodes.contains(&inode) {
            continue;
        }
        let flags = u32::from_str_radix(f[3], 16).unwrap_or(0);
        let path = f[7..].join(" ");
        if flags & 0x1_0000 != 0 {
            if !listening.contains(&path) {
                listening.push(path);
            }
        } else if f[5] == "03" {
            connected.push(path);
        }
    }
    let clients = connected.iter().filter(|p| listening.contains(p)).count() as u64;
    (listening, clients)
}

/// What a server process listens on, and its Unix-socket clients, from /proc.
pub fn of_pid(pid: u32) -> Result<Followed> {
    let proc_dir = format!("/proc/{pid}");
    if !Path::new(&proc_dir).exists() {
        return Err(Error::bad_input(format!(
            "--pid {pid}: no such process; give the server's pid (pidof mariadbd mysqld)"
        )));
    }
    let inodes = socket_inodes(pid).map_err(|e| {
        Error::runtime(format!(
            "--pid {pid}: reading {proc_dir}/fd: {e}; run as root (rt captures as root anyway)"
        ))
    })?;
    let mut tcp_ports = Vec::new();
    for t in ["tcp", "tcp6"] {
        if let Ok(table) = std::fs::read_to_string(format!("{proc_dir}/net/{t}")) {
            for p in listening_tcp(&table, &inodes) {
                if !tcp_ports.contains(&p) {
                    tcp_ports.push(p);
                }
            }
        }
    }
    tcp_ports.sort_unstable();
    let (unix, clients) = std::fs::read_to_string(format!("{proc_dir}/net/unix"))
        .map(|t| unix_sockets(&t, &inodes))
        .unwrap_or_default();
    Ok(Followed {
        found_by: format!("--pid {pid}"),
        pid: Some(pid),
        process: process_name(pid),
        tcp_ports,
        unix_socket_clients: (!unix.is_empty()).then_some(clients),
        unix_clients_from: (!unix.is_empty()).then(|| "/proc".to_string()),
        unix_sockets: unix,
        ports_given_differ: Vec::new(),
    })
}

/// The process's name (`/proc/<pid>/comm`).
pub fn process_name(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The inode of the socket listening on TCP `port` (any address), or on Unix `path`.
fn listening_inode(port: Option<u16>, path: Option<&str>) -> Option<u64> {
    if let Some(port) = port {
        for t in ["/proc/net/tcp", "/proc/net/tcp6"] {
            let table = std::fs::read_to_string(t).unwrap_or_default();
            for l in table.lines().skip(1) {
                let f: Vec<&str> = l.split_whitespace().collect();
                if f.len() >= 10
                    && f[3] == "0A"
                    && f[1]
                        .rsplit_once(':')
                        .and_then(|(_, p)| u16::from_str_radix(p, 16).ok())
                        == Some(port)
                {
                    return f[9].parse().ok();
                }
            }
        }
    }
    if let Some(path) = path {
        let table = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
        for l in table.lines().skip(1) {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() >= 8
                && u32::from_str_radix(f[3], 16).unwrap_or(0) & 0x1_0000 != 0
                && f[7..].join(" ") == path
            {
                return f[6].parse().ok();
            }
        }
    }
    None
}

/// Whether a socket listens on TCP `port` (any address) in this network namespace.
pub fn listens(port: u16) -> bool {
    listening_inode(Some(port), None).is_some()
}

/// The process that holds the socket listening on TCP `port` or Unix `path` (None when
/// nothing listens there or its /proc/<pid>/fd cannot be read: another user's, without
/// root).
pub fn owner(port: Option<u16>, path: Option<&str>) -> Option<u32> {
    let inode = listening_inode(port, path)?;
    let want = format!("socket:[{inode}]");
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(e.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if std::fs::read_link(fd.path()).is_ok_and(|t| t.as_os_str() == want.as_str()) {
                return Some(pid);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    // From this host on 2026-11-28: a throwaway MariaDB 10.11.19 (pid 18275) on 127.0.0.1
    // port 13399 and /tmp/wtD-fix/s.sock, one client on the socket (inode 83734).
    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:0CEA 00000000:0000 0A 00000000:00000000 00:00000000 00000000   107        0 9571 1 00000000d5e58309 100 0 0 10 0
   1: 0100007F:3457 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 31236 1 000000006d6a5c39 100 0 0 10 0
   2: 0100007F:3457 0100007F:C0A4 01 00000000:00000000 00:00000000 00000000     0        0 31240 1 000000006d6a5c39 100 0 0 10 0
";
    const UNIX: &str = "Num       RefCount Protocol Flags    Type St Inode Path
0000000048f9fc2c: 00000003 00000000 00000000 0001 03 83734 /tmp/wtD-fix/s.sock
00000000c022c42d: 00000002 00000000 00010000 0001 01 31237 /tmp/wtD-fix/s.sock
00000000c022c42e: 00000003 00000000 00000000 0001 03 99999 /tmp/wtD-fix/s.sock
00000000c022c42f: 00000003 00000000 00000000 0001 03 31239
";

    #[test]
    fn ports_and_socket_clients_of_the_process_only() {
        let mine: HashSet<u64> = [31236, 31237, 31239, 31240, 83734].into();
        assert_eq!(listening_tcp(TCP, &mine), vec![13399]);
        let (paths, clients) = unix_sockets(UNIX, &mine);
        assert_eq!(paths, vec!["/tmp/wtD-fix/s.sock".to_string()]);
        assert_eq!(clients, 1, "99999 is another process's; 31239 has no path");
        assert!(listening_tcp(TCP, &HashSet::new()).is_empty());
        assert_eq!(socket_inode("socket:[83734]"), Some(83734));
        assert_eq!(socket_inode("pipe:[1]"), None);
    }

    #[test]
    fn this_process_listens_where_it_says() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let f = of_pid(std::process::id()).unwrap();
        assert!(f.tcp_ports.contains(&port), "{f:?}");
        assert_eq!(owner(Some(port), None), Some(std::process::id()));
        assert!(listens(port));
        assert!(of_pid(u32::MAX).is_err());
    }

    proptest::proptest! {
        #[test]
        fn any_table_never_panics(t in "\\PC{0,300}") {
            let set: HashSet<u64> = [1, 2, 3].into();
            let _ = (listening_tcp(&t, &set), unix_sockets(&t, &set));
        }
    }
}
