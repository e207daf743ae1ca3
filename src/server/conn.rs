//! Connecting like every MySQL tool: a positional server (`mysql://user:pass@host:port/db`,
//! `user@host:port`), the mysql client's flags (`-h -P -u -p -S -D`; `-p` takes a value only
//! attached, alone it prompts), its option files (see [`super::optfile`]), `MYSQL_PWD`,
//! `MYSQL_UNIX_PORT`, TLS modes and timeouts.
//!
//! Precedence, as in the mysql client: command-line flags > URL > option files > `MYSQL_PWD`.
//! With no host anywhere the client connects to `localhost`, i.e. the Unix socket: the one
//! the option files name, else `MYSQL_UNIX_PORT`, else the usual socket paths; only when none
//! of those exists does spinscope fall back to TCP 127.0.0.1:3306.
//!
//! Commands that flatten [`ConnArgs`] take `-h` for the host, so they must set
//! `#[command(disable_help_flag = true)]` and declare their own `--help` (see `cli/doctor_args.rs`).
//! No message, Debug output or capture ever contains the password.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, Result};

/// TLS modes of the mysql client (`--ssl-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
#[value(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SslMode {
    /// Plain connection.
    Disabled,
    /// TLS when the server offers it, plain otherwise (the mysql client's default).
    #[default]
    Preferred,
    /// TLS or fail; the certificate is not checked.
    Required,
    /// TLS with the server certificate checked against --ssl-ca (host name not checked).
    VerifyCa,
    /// TLS with the certificate checked against --ssl-ca and the host name.
    VerifyIdentity,
}

impl SslMode {
    /// The name as the mysql client spells it (`VERIFY_CA`).
    pub fn name(self) -> &'static str {
        match self {
            SslMode::Disabled => "DISABLED",
            SslMode::Preferred => "PREFERRED",
            SslMode::Required => "REQUIRED",
            SslMode::VerifyCa => "VERIFY_CA",
            SslMode::VerifyIdentity => "VERIFY_IDENTITY",
        }
    }
}

/// The mysql crate's error text without its Rust wrappers: `IoError { msg }`,
/// `CodecError { msg }`, `DriverError { msg }`, `MySqlError { ERROR 1 (x): msg }` become
/// `msg`. Applied to every error message before it is printed.
/// rustls's reason from the mysql crate's wrapped error text, without the wrapper's quotes
/// and braces: "invalid peer certificate: certificate not valid for name \"127.0.0.1\";
/// certificate is only valid for \"db1.example\"".
fn certificate_reason(s: &str) -> String {
    let inner = s.split_once('`').map_or(s, |(_, r)| r);
    let inner = inner.split('`').next().unwrap_or(inner);
    let mut out = inner.trim_end_matches(['\'', '}', ' ']).trim().to_string();
    // `DnsName("db1.example")` -> "db1.example"
    while let Some(i) = out.find("DnsName(\"") {
        let rest = &out[i + 9..];
        match rest.find("\")") {
            Some(j) => {
                let name = rest[..j].to_string();
                out.replace_range(i..i + 9 + j + 2, &format!("\"{name}\""));
            }
            None => break,
        }
    }
    if out.ends_with("UnknownIssuer") {
        out.push_str(": not signed by the --ssl-ca certificate");
    }
    if out.is_empty() {
        "invalid certificate".into()
    } else {
        out
    }
}

pub fn plain_error_text(s: &str) -> String {
    let mut out = s.to_string();
    for w in [
        "IoError",
        "CodecError",
        "MySqlError",
        "DriverError",
        "UrlError",
        "TlsError",
        "FromValueError",
        "FromRowError",
    ] {
        let open = format!("{w} {{ ");
        while let Some(i) = out.find(&open) {
            // The matching " }": the last one after the opening (wrappers nest at most once).
            let body_start = i + open.len();
            let Some(rel) = out[body_start..].rfind(" }") else {
                break;
            };
            let body = out[body_start..body_start + rel].to_string();
            out.replace_range(i..body_start + rel + 2, &body);
        }
    }
    out
}

/// How to reach the server. Flatten into a command with `#[command(flatten)]`.
#[derive(Clone, Default, clap::Args)]
pub struct ConnArgs {
    /// The server: mysql://user@host:port/db, user@host:port, host[:port], or user@/path.sock
    /// (flags given as well override its parts).
    #[arg(value_name = "TARGET", conflicts_with = "url")]
    pub target: Option<String>,
    /// Server URL mysql://user:pass@host:port/db (flags given as well override its parts).
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Server host [default: localhost, i.e. the socket when one is known, else 127.0.0.1].
    #[arg(short = 'h', long)]
    pub host: Option<String>,
    /// Server TCP port [default: 3306].
    #[arg(short = 'P', long)]
    pub port: Option<u16>,
    /// Unix socket path (used instead of TCP).
    #[arg(short = 'S', long)]
    pub socket: Option<PathBuf>,
    /// User name [default: the login name].
    #[arg(short = 'u', long)]
    pub user: Option<String>,
    /// Password (`-pSECRET`, `--password=SECRET`); `-p` alone prompts on the terminal. Prefer
    /// the prompt, an option file or MYSQL_PWD: values on a command line are visible to `ps`.
    #[arg(short = 'p', long, num_args = 0..=1, require_equals = true, value_name = "PASSWORD")]
    pub password: Option<Option<String>>,
    /// Default database.
    #[arg(short = 'D', long)]
    pub database: Option<String>,
    /// Read options from this file only (instead of /etc/my.cnf, /etc/mysql/my.cnf, ~/.my.cnf).
    #[arg(long, value_name = "FILE", conflicts_with = "no_defaults")]
    pub defaults_file: Option<PathBuf>,
    /// Read this option file too, after the global files and before ~/.my.cnf.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["no_defaults", "defaults_file"])]
    pub defaults_extra_file: Option<PathBuf>,
    /// Read no option file.
    #[arg(long)]
    pub no_defaults: bool,
    /// Print the connection options read from the option files (password hidden) and exit.
    #[arg(long)]
    pub print_defaults: bool,
    /// TLS mode.
    #[arg(long, value_enum, value_name = "MODE")]
    pub ssl_mode: Option<SslMode>,
    /// CA certificate (PEM) for VERIFY_CA / VERIFY_IDENTITY.
    #[arg(long, value_name = "FILE")]
    pub ssl_ca: Option<PathBuf>,
    /// Seconds to wait for the connection, the server's greeting included.
    #[arg(long, default_value_t = 10, value_name = "SECONDS")]
    pub connect_timeout: u64,
    /// Seconds to wait for one query's answer.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    pub query_timeout: u64,
}

impl std::fmt::Debug for ConnArgs {
    // Hand-written so a password never reaches a log or panic message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnArgs")
            .field("target", &self.target.as_ref().map(|u| redact_target(u)))
            .field("url", &self.url.as_ref().map(|u| redact_url(u)))
            .field("host", &self.host)
            .field("port", &self.port)
            .field("socket", &self.socket)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("database", &self.database)
            .field("defaults_file", &self.defaults_file)
            .field("ssl_mode", &self.ssl_mode)
            .finish()
    }
}

/// Where and how to connect, after merging flags, URL, option file and environment.
#[derive(Clone, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub port: u16,
    pub socket: Option<PathBuf>,
    pub user: String,
    pub password: Option<String>,
    pub database: Option<String>,
    pub ssl_mode: SslMode,
    pub ssl_ca: Option<PathBuf>,
    pub connect_timeout: Duration,
    pub query_timeout: Duration,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Target({})", self.describe())
    }
}

/// Whether a connection to a target uses TLS (the one policy both clients follow: the mysql
/// crate's connections here and the events client's in `load::wire`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsUse {
    /// DISABLED, or a Unix socket (the mysql client never uses TLS there).
    No,
    /// PREFERRED: plain when the server offers no TLS or the TLS handshake fails.
    IfOffered,
    /// REQUIRED, VERIFY_CA, VERIFY_IDENTITY.
    Must,
}

/// How the server's certificate is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsCheck {
    /// PREFERRED, REQUIRED: not checked.
    Nothing,
    /// VERIFY_CA: the chain against this CA; the host name is not checked.
    Ca(PathBuf),
    /// VERIFY_IDENTITY: the chain against this CA and the host name as given.
    CaAndName(PathBuf),
}

/// `--ssl-mode` and `--ssl-ca` for one target, decided once ([`Target::tls_policy`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsPolicy {
    pub tls: TlsUse,
    pub check: TlsCheck,
}

impl Target {
    /// The TLS policy of connections to this target: never on a Unix socket, else as
    /// `--ssl-mode` says (`resolve` makes sure VERIFY_* come with `--ssl-ca`).
    pub fn tls_policy(&self) -> TlsPolicy {
        let tls = match (self.socket.is_some(), self.ssl_mode) {
            (true, _) | (false, SslMode::Disabled) => TlsUse::No,
            (false, SslMode::Preferred) => TlsUse::IfOffered,
            (false, _) => TlsUse::Must,
        };
        let ca = self.ssl_ca.clone().unwrap_or_default();
        let check = match self.ssl_mode {
            SslMode::VerifyCa => TlsCheck::Ca(ca),
            SslMode::VerifyIdentity => TlsCheck::CaAndName(ca),
            _ => TlsCheck::Nothing,
        };
        TlsPolicy { tls, check }
    }

    /// `user@host:port` or `user@socket`, never the password.
    pub fn describe(&self) -> String {
        match &self.socket {
            Some(s) => format!("{}@{}", self.user, s.display()),
            None => format!("{}@{}:{}", self.user, self.host, self.port),
        }
    }

    /// Connection flags that reach this server again (for messages; no password).
    pub fn flags_hint(&self) -> String {
        match &self.socket {
            Some(s) => format!("--socket {} -u {}", s.display(), self.user),
            None => format!("-h {} -P {} -u {}", self.host, self.port, self.user),
        }
    }

    /// `host:port` or the socket path.
    pub fn endpoint(&self) -> String {
        match &self.socket {
            Some(s) => s.display().to_string(),
            None => format!("{}:{}", self.host, self.port),
        }
    }

    /// True when the server runs on this host (socket or loopback address).
    pub fn is_local(&self) -> bool {
        self.socket.is_some() || matches!(self.host.as_str(), "localhost" | "127.0.0.1" | "::1")
    }
}

pub use crate::secret::{redact_target, redact_url};

fn pct_decode(s: &str, what: &str) -> Result<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(v) => {
                    out.push(v);
                    i += 3;
                    continue;
                }
                None => {
                    return Err(Error::bad_input(format!(
                        "bad %-escape in the {what} of the server address; write %XX with two hex digits"
                    )))
                }
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out)
        .map_err(|_| Error::bad_input(format!("the {what} in the server address is not UTF-8")))
}

/// The parts of a `mysql://` URL. Query parameters `socket=` and `ssl-mode=` are understood.
#[derive(Default, Clone, PartialEq, Eq)]
pub struct UrlParts {
    pub user: Option<String>,
    pub password: Option<String>,
    pub host: Option<String>,
    pub port: Option<u16>,
    pub database: Option<String>,
    pub socket: Option<PathBuf>,
    pub ssl_mode: Option<SslMode>,
}

impl std::fmt::Debug for UrlParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UrlParts")
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("host", &self.host)
            .field("port", &self.port)
            .field("database", &self.database)
            .field("socket", &self.socket)
            .finish()
    }
}

/// Parse `mysql://user:pass@host:port/db?socket=/path`. Errors never echo the password.
pub fn parse_url(url: &str) -> Result<UrlParts> {
    parse_url_as(url, &format!("--url {}", redact_url(url)))
}

/// Parse a server given as a positional argument, the forms the MySQL tools take:
/// `mysql://user:pass@host:port/db` (or `mariadb://`), mysqlsh-style
/// `user[:pass]@host[:port][/db]`, `host[:port]`, and a socket as `user@/path/to.sock` or
/// `user@(/path/to.sock)`. Errors never echo the password. Used by every command's positional
/// TARGET and by inventories.
pub fn parse_target_arg(s: &str) -> Result<UrlParts> {
    let shown = redact_target(s);
    let label = format!("server {shown}");
    let bad = |why: &str| {
        Error::bad_input(format!(
            "{label}: {why}; give mysql://user@host:port/db, user@host:port, host[:port] or user@/path/to.sock"
        ))
    };
    if s.trim().is_empty() {
        return Err(bad("empty"));
    }
    if s.chars().any(char::is_whitespace) {
        return Err(bad("contains a space"));
    }
    if s.contains("://") {
        return parse_url_as(s, &label);
    }
    let (auth, rest) = match s.rfind('@') {
        Some(at) => (Some(&s[..at]), &s[at + 1..]),
        None => (None, s),
    };
    let sock = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .or_else(|| rest.starts_with('/').then_some(rest));
    if let Some(sock) = sock {
        let mut p = match auth {
            Some(a) => parse_url_as(&format!("mysql://{a}@localhost"), &label)?,
            None => UrlParts::default(),
        };
        if sock.is_empty() {
            return Err(bad("the socket path is empty"));
        }
        p.host = Some("localhost".to_string());
        p.socket = Some(PathBuf::from(pct_decode(sock, "socket")?));
        return Ok(p);
    }
    if rest.is_empty() {
        return Err(bad("no host after '@'"));
    }
    parse_url_as(&format!("mysql://{s}"), &label)
}

fn parse_url_as(url: &str, label: &str) -> Result<UrlParts> {
    let bad = |why: &str| {
        Error::bad_input(format!(
            "{label}: {why}; expected mysql://user:password@host:port/database"
        ))
    };
    let rest = url
        .strip_prefix("mysql://")
        .or_else(|| url.strip_prefix("mariadb://"))
        .ok_or_else(|| bad("the scheme must be mysql:// or mariadb://"))?;
    // The userinfo first: a password may hold '?', '/' or ':' (the last '@' ends it).
    let (auth, rest) = match rest.rfind('@') {
        Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
        None => (None, rest),
    };
    let (hostpart, query) = match rest.split_once('?') {
        Some((a, q)) => (a, Some(q)),
        None => (rest, None),
    };
    let mut p = UrlParts::default();
    if let Some(auth) = auth {
        let (u, pw) = match auth.split_once(':') {
            Some((u, pw)) => (u, Some(pw)),
            None => (auth, None),
        };
        if !u.is_empty() {
            p.user = Some(pct_decode(u, "user")?);
        }
        if let Some(pw) = pw {
            p.password = Some(pct_decode(pw, "password")?);
        }
    }
    let (hp, db) = match hostpart.split_once('/') {
        Some((hp, db)) => (hp, Some(db)),
        None => (hostpart, None),
    };
    if let Some(db) = db.filter(|d| !d.is_empty()) {
        p.database = Some(pct_decode(db, "database")?);
    }
    let (host, port) = if let Some(v6) = hp.strip_prefix('[') {
        let (h, after) = v6
            .split_once(']')
            .ok_or_else(|| bad("unclosed [ in the host"))?;
        (h, after.strip_prefix(':'))
    } else {
        match hp.rsplit_once(':') {
            Some((h, port)) => (h, Some(port)),
            None => (hp, None),
        }
    };
    if !host.is_empty() {
        if host.chars().any(|c| c.is_whitespace() || c == '/') {
            return Err(bad("the host contains a space or '/'"));
        }
        p.host = Some(pct_decode(host, "host")?);
    }
    if let Some(port) = port {
        p.port = Some(
            port.parse::<u16>()
                .ok()
                .filter(|&v| v > 0)
                .ok_or_else(|| {
                    if auth.is_none() && !port.chars().all(|c| c.is_ascii_digit()) {
                        // Perhaps user:password without @host: never echo it.
                        bad("what follows ':' is not a port number in 1..=65535 (user:password needs @host after it)")
                    } else {
                        bad(&format!("port {port:?} is not a number in 1..=65535"))
                    }
                })?,
        );
    }
    for kv in query.unwrap_or("").split('&').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        match k.replace('_', "-").as_str() {
            "socket" => p.socket = Some(PathBuf::from(pct_decode(v, "socket")?)),
            "ssl-mode" => p.ssl_mode = Some(parse_ssl_mode(v).map_err(|e| bad(&e))?),
            other if crate::secret::is_secret_key(other) => {
                return Err(bad(
                    "a password is not a parameter; put it in the user info (mysql://user:password@host) or an option file (--defaults-file)",
                ))
            }
            other => {
                return Err(bad(&format!(
                    "unknown parameter {:?} (socket, ssl-mode)",
                    crate::secret::scrub(other)
                )))
            }
        }
    }
    Ok(p)
}

fn parse_ssl_mode(v: &str) -> std::result::Result<SslMode, String> {
    use clap::ValueEnum;
    SslMode::from_str(v, true).map_err(|_| {
        format!("ssl-mode {v:?} is not one of DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY")
    })
}

/// The option-file source these flags select.
pub fn optfile_source(a: &ConnArgs) -> super::optfile::Source {
    use super::optfile::Source;
    if a.no_defaults {
        Source::None
    } else if let Some(f) = &a.defaults_file {
        Source::Only(f.clone())
    } else {
        Source::Standard {
            extra: a.defaults_extra_file.clone(),
        }
    }
}

fn option_files(a: &ConnArgs) -> Result<super::optfile::Options> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    super::optfile::load(
        &optfile_source(a),
        home.as_deref(),
        super::optfile::CLIENT_GROUPS,
    )
}

/// The connection options the option files give, as `--name=value` words (the password
/// shown as `*****`), like the mysql client's `--print-defaults`.
pub fn print_defaults_text(a: &ConnArgs) -> Result<String> {
    let o = option_files(a)?;
    let mut seen = std::collections::BTreeSet::new();
    let mut words = Vec::new();
    for e in &o.entries {
        if !seen.insert(e.key.clone()) {
            // The client prints every occurrence; one per option (the last wins) reads better.
            words.retain(|(k, _): &(String, String)| k != &e.key);
        }
        let w = match (&e.value, e.key.as_str()) {
            (Some(_), k) if crate::secret::is_secret_key(k) => format!("--{k}=*****"),
            (Some(v), k) => format!("--{k}={v}"),
            (None, k) => format!("--{k}"),
        };
        words.push((e.key.clone(), w));
    }
    let files = if o.files.is_empty() {
        "(none)".to_string()
    } else {
        o.files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    Ok(format!(
        "spinscope would have been started with the following arguments:\n{}\n(option files read: {files})\n",
        words.into_iter().map(|(_, w)| w).collect::<Vec<_>>().join(" ")
    ))
}

/// The socket the mysql client would use for `localhost` when no option names one.
fn default_socket(env_socket: Option<PathBuf>) -> Option<PathBuf> {
    if env_socket.is_some() {
        return env_socket;
    }
    [
        "/run/mysqld/mysqld.sock",
        "/var/run/mysqld/mysqld.sock",
        "/var/lib/mysql/mysql.sock",
        "/tmp/mysql.sock",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| {
        use std::os::unix::fs::FileTypeExt;
        std::fs::metadata(p).is_ok_and(|m| m.file_type().is_socket())
    })
}

fn login_name() -> String {
    std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| "root".to_string())
}

/// Merge flags, URL, option file and `MYSQL_PWD` (no prompt, no I/O but the option file).
/// `prompt` is called when `-p` was given without a value.
pub fn resolve_with(
    a: &ConnArgs,
    env_pwd: Option<String>,
    prompt: &dyn Fn() -> Result<String>,
) -> Result<Target> {
    resolve_env(a, env_pwd, None, prompt)
}

/// [`resolve_with`] with `MYSQL_UNIX_PORT` given: the default socket for `localhost` comes
/// from it (or the usual paths when `None`).
pub fn resolve_env(
    a: &ConnArgs,
    env_pwd: Option<String>,
    env_socket: Option<PathBuf>,
    prompt: &dyn Fn() -> Result<String>,
) -> Result<Target> {
    let opts = option_files(a)?;
    let cnf = |k: &str| opts.value(k).map(str::to_string);
    let url = match (&a.target, &a.url) {
        (Some(t), _) => parse_target_arg(t)?,
        (None, Some(u)) => parse_url(u)?,
        (None, None) => UrlParts::default(),
    };
    let cnf_port = match cnf("port") {
        Some(p) => Some(p.parse::<u16>().ok().filter(|&v| v > 0).ok_or_else(|| {
            Error::bad_input(format!(
                "option file {}: port={p:?} is not a port number in 1..=65535",
                opts.origin("port")
            ))
        })?),
        None => None,
    };
    let cnf_ssl = match cnf("ssl-mode") {
        Some(m) => Some(parse_ssl_mode(&m).map_err(|e| {
            Error::bad_input(format!("option file {}: {e}", opts.origin("ssl-mode")))
        })?),
        None => None,
    };
    let password = match &a.password {
        Some(Some(p)) => Some(p.clone()),
        Some(None) => Some(prompt()?),
        None => match url.password.clone() {
            Some(p) => Some(p),
            // A bare `password` line in an option file asks, as the client does.
            None => match opts.password() {
                Some(Some(p)) => Some(p.to_string()),
                Some(None) => Some(prompt()?),
                None => env_pwd,
            },
        },
    };
    let host = a.host.clone().or(url.host).or_else(|| cnf("host"));
    let tcp_protocol = cnf("protocol").is_some_and(|p| p.eq_ignore_ascii_case("tcp"));
    let socket = a
        .socket
        .clone()
        .or(url.socket)
        .or_else(|| cnf("socket").map(PathBuf::from));
    // The mysql client: host "localhost" (or none) means the socket; any other host, a port
    // on the command line or protocol=tcp means TCP.
    let explicit_tcp = host.as_deref().is_some_and(|h| h != "localhost")
        || a.port.is_some()
        || url.port.is_some()
        || tcp_protocol;
    let socket = if a.socket.is_some() {
        socket
    } else if explicit_tcp {
        None
    } else {
        socket.or_else(|| default_socket(env_socket))
    };
    let ssl_ca = a
        .ssl_ca
        .clone()
        .or_else(|| cnf("ssl-ca").map(PathBuf::from));
    let ssl_mode = a.ssl_mode.or(url.ssl_mode).or(cnf_ssl).unwrap_or_default();
    if matches!(ssl_mode, SslMode::VerifyCa | SslMode::VerifyIdentity) && ssl_ca.is_none() {
        return Err(Error::bad_input(
            "--ssl-mode VERIFY_CA/VERIFY_IDENTITY needs --ssl-ca FILE (the CA certificate in PEM)",
        ));
    }
    if let Some(ca) = &ssl_ca {
        if !ca.is_file() {
            return Err(Error::bad_input(format!(
                "--ssl-ca {}: no such file",
                ca.display()
            )));
        }
    }
    if a.connect_timeout == 0 || a.query_timeout == 0 {
        return Err(Error::bad_input(
            "--connect-timeout and --query-timeout must be at least 1 second",
        ));
    }
    Ok(Target {
        host: match host {
            // TCP to "localhost" goes to 127.0.0.1 (not a resolver's ::1 first), except where
            // the name is checked: VERIFY_IDENTITY matches the certificate against the host
            // as given, as the mysql client does.
            Some(h)
                if h == "localhost" && socket.is_none() && ssl_mode != SslMode::VerifyIdentity =>
            {
                "127.0.0.1".to_string()
            }
            Some(h) => h,
            None => "127.0.0.1".to_string(),
        },
        port: a.port.or(url.port).or(cnf_port).unwrap_or(3306),
        socket,
        user: a
            .user
            .clone()
            .or(url.user)
            .or_else(|| cnf("user"))
            .unwrap_or_else(login_name),
        password,
        database: a
            .database
            .clone()
            .or(url.database)
            .or_else(|| cnf("database")),
        ssl_mode,
        ssl_ca,
        connect_timeout: Duration::from_secs(a.connect_timeout),
        query_timeout: Duration::from_secs(a.query_timeout),
    })
}

fn tty_prompt() -> Result<String> {
    rpassword::prompt_password("Enter password: ").map_err(|e| {
        Error::bad_input(format!(
            "-p without a value prompts for the password, but there is no terminal to ask ({e}); \
             use MYSQL_PWD, --defaults-file or -pPASSWORD"
        ))
    })
}

/// Merge the connection options as the mysql client does, prompting for `-p` on the terminal.
/// `--print-defaults` prints the option-file values and ends the process (exit 0), as the
/// client does.
pub fn resolve(a: &ConnArgs) -> Result<Target> {
    if a.print_defaults {
        print!("{}", print_defaults_text(a)?);
        std::process::exit(crate::error::EXIT_OK);
    }
    resolve_env(
        a,
        std::env::var("MYSQL_PWD").ok(),
        std::env::var_os("MYSQL_UNIX_PORT").map(PathBuf::from),
        &tty_prompt,
    )
}

fn opts(t: &Target, tls: bool) -> mysql::OptsBuilder {
    let mut b = mysql::OptsBuilder::new()
        .user(Some(t.user.clone()))
        .pass(t.password.clone())
        .db_name(t.database.clone())
        .prefer_socket(false)
        .tcp_connect_timeout(Some(t.connect_timeout))
        // The handshake too waits at most the connect timeout (a server that takes the
        // connection but never greets, e.g. SIGSTOPped); queries get theirs after it.
        .read_timeout(Some(t.connect_timeout))
        .write_timeout(Some(t.connect_timeout));
    b = match &t.socket {
        Some(s) => b.socket(Some(s.to_string_lossy().into_owned())),
        None => b.ip_or_hostname(Some(t.host.clone())).tcp_port(t.port),
    };
    let policy = t.tls_policy();
    if tls && policy.tls != TlsUse::No {
        let mut ssl = mysql::SslOpts::default();
        match policy.check {
            TlsCheck::Nothing => {
                ssl = ssl
                    .with_danger_accept_invalid_certs(true)
                    .with_danger_skip_domain_validation(true);
            }
            TlsCheck::Ca(_) => ssl = ssl.with_danger_skip_domain_validation(true),
            TlsCheck::CaAndName(_) => {}
        }
        if let Some(ca) = &t.ssl_ca {
            ssl = ssl.with_root_cert_path(Some(ca.clone()));
        }
        b = b.ssl_opts(Some(ssl));
    }
    b
}

/// The longest wait for one answer on an open connection (SO_RCVTIMEO and SO_SNDTIMEO on its
/// socket; a TLS connection's too, under the TLS layer).
fn set_answer_timeout(c: &mysql::Conn, d: Duration) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let tv = libc::timeval {
        tv_sec: d.as_secs() as libc::time_t,
        tv_usec: d.subsec_micros() as libc::suseconds_t,
    };
    for opt in [libc::SO_RCVTIMEO, libc::SO_SNDTIMEO] {
        // SAFETY: setsockopt(2) on the connection's own open socket with a valid timeval of
        // the size passed.
        let r = unsafe {
            libc::setsockopt(
                c.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&tv as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A one-line explanation of a connection error (exit 3), never with the password.
pub fn explain(t: &Target, e: &mysql::Error) -> Error {
    let at = t.describe();
    let msg = match e {
        e if crate::error::is_timeout(e) => format!(
            "no answer from {at} within the timeout (--connect-timeout {} s to connect, \
             --query-timeout {} s per query): the server takes connections but does not answer \
             (stopped or hung?)",
            t.connect_timeout.as_secs(),
            t.query_timeout.as_secs()
        ),
        mysql::Error::MySqlError(m) if m.code == 1045 => format!(
            "access denied for {at} (server error 1045); check the user and password \
             (-u, -p, MYSQL_PWD, --defaults-file)"
        ),
        mysql::Error::MySqlError(m) if m.code == 1049 => {
            format!("unknown database at {at}: {}; check -D / the URL path", m.message)
        }
        mysql::Error::MySqlError(m) => format!("server {at} refused: {} (error {})", m.message, m.code),
        mysql::Error::IoError(io) => format!(
            "cannot connect to {at}: {io}; check that the server runs and the host, port or socket"
        ),
        mysql::Error::DriverError(mysql::DriverError::CouldNotConnect(detail)) => format!(
            "cannot connect to {at}: {}; check that the server runs and the host, port or socket",
            detail
                .as_ref()
                .map(|(_, desc, _)| desc.clone())
                .unwrap_or_else(|| "no address answered".to_string())
        ),
        mysql::Error::DriverError(mysql::DriverError::ConnectTimeout) => format!(
            "cannot connect to {at}: no answer within {} s; check the host and port, or raise --connect-timeout",
            t.connect_timeout.as_secs()
        ),
        mysql::Error::DriverError(mysql::DriverError::TlsNotSupported) => format!(
            "{at} does not offer TLS but --ssl-mode {} requires it; use --ssl-mode PREFERRED or DISABLED, or enable TLS on the server",
            t.ssl_mode.name()
        ),
        mysql::Error::TlsError(te) => format!(
            "TLS with {at} failed: {te}; check --ssl-ca and --ssl-mode"
        ),
        other if other.to_string().contains("certificate") => format!(
            "TLS with {at} failed: the server certificate was rejected ({}); check --ssl-ca and --ssl-mode",
            certificate_reason(&other.to_string())
        ),
        mysql::Error::CodecError(c) => format!(
            "the connection to {at} broke: {}; check that the server still runs and the network",
            plain_error_text(&c.to_string())
        ),
        other => format!(
            "connection to {at} failed: {}",
            plain_error_text(&strip_password(&other.to_string(), t))
        ),
    };
    Error::runtime(strip_password(&msg, t))
}

fn strip_password(s: &str, t: &Target) -> String {
    match &t.password {
        Some(p) if !p.is_empty() => s.replace(p.as_str(), "***"),
        _ => s.to_string(),
    }
}

/// Open a connection to a resolved target. PREFERRED falls back to a plain connection when
/// the server offers no TLS. The change journal is not read here: a command's first
/// connection to a server goes through [`connect_checked`].
pub fn connect_target(t: &Target) -> Result<mysql::Conn> {
    connect_target_with(t, |b| b)
}

/// [`connect_target`] with extra client options, e.g. `stmt_cache_size(0)` for a caller that
/// owns (and closes) its prepared statements itself.
pub fn connect_target_with(
    t: &Target,
    extra: impl Fn(mysql::OptsBuilder) -> mysql::OptsBuilder,
) -> Result<mysql::Conn> {
    let policy = t.tls_policy();
    let want_tls = policy.tls != TlsUse::No;
    let c = match mysql::Conn::new(extra(opts(t, want_tls))) {
        Ok(c) => c,
        Err(
            mysql::Error::DriverError(mysql::DriverError::TlsNotSupported)
            | mysql::Error::TlsError(_),
        ) if policy.tls == TlsUse::IfOffered => {
            mysql::Conn::new(extra(opts(t, false))).map_err(|e| explain(t, &e))?
        }
        Err(e) => return Err(explain(t, &e)),
    };
    set_answer_timeout(&c, t.query_timeout)
        .map_err(|e| Error::runtime(format!("setting --query-timeout on the connection: {e}")))?;
    Ok(c)
}

/// How a command opens a session on a server it names (watch's threads, each server its
/// own): [`real_sessions`], or a scripted server in tests.
pub type Connect =
    std::sync::Arc<dyn Fn(&Target) -> Result<Box<dyn crate::session::Session>> + Send + Sync>;

/// Sessions on real servers ([`connect_target`]).
pub fn real_sessions() -> Connect {
    std::sync::Arc::new(|t| connect_target(t).map(crate::session::boxed))
}

/// What the change journal says about the server behind `c` (reached through `t`); None
/// when the server cannot say who it is.
pub fn check_journal(
    c: &mut dyn crate::session::Session,
    t: &Target,
) -> Option<crate::journal::Checked> {
    crate::journal::check(c, &t.endpoint(), &t.flags_hint())
}

/// A command's first connection to a server: [`connect_target`], then the change journal
/// for that server, its warnings said on stderr, its findings returned with the connection
/// (they belong to this server alone: fleet doctor and watch hold several).
pub fn connect_checked(t: &Target) -> Result<(mysql::Conn, Option<crate::journal::Checked>)> {
    let mut c = connect_target(t)?;
    let checked = check_journal(&mut c, t);
    if let Some(ch) = &checked {
        ch.warn();
    }
    Ok((c, checked))
}

/// Resolve the options (prompting for `-p`) and connect. Failures are one-line errors:
/// bad options exit 2, an unreachable server or refused login exits 3.
pub fn connect(a: &ConnArgs) -> Result<mysql::Conn> {
    connect_target(&resolve(a)?)
}

/// The mysql client's `-p`: a value only when attached (`-pSECRET`), never the next word.
/// clap cannot attach an optional value to a short flag without `=`, so `-pSECRET` is
/// rewritten to `--password=SECRET` before parsing (everything after `-p` verbatim, as the
/// client takes it). Arguments after `--` stay as they are.
pub fn mysql_style_args(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut out = Vec::with_capacity(args.len());
    let mut rest = false;
    for a in args {
        if rest || a == "--" {
            rest = true;
            out.push(a);
            continue;
        }
        match a.to_str().and_then(|s| s.strip_prefix("-p")) {
            Some(v) if !v.is_empty() => out.push(format!("--password={v}").into()),
            _ => out.push(a),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn certificate_reasons_lose_the_wrappers() {
        let r = super::certificate_reason(
            "IoError { `invalid peer certificate: certificate not valid for name \"127.0.0.1\"; certificate is only valid for DnsName(\"db.invalid\")' }",
        );
        assert_eq!(
            r,
            "invalid peer certificate: certificate not valid for name \"127.0.0.1\"; certificate is only valid for \"db.invalid\""
        );
        assert_eq!(
            super::certificate_reason("x `invalid peer certificate: UnknownIssuer' }"),
            "invalid peer certificate: UnknownIssuer: not signed by the --ssl-ca certificate"
        );
        assert_eq!(super::certificate_reason("` }"), "invalid certificate");
    }

    use super::*;

    fn args() -> ConnArgs {
        ConnArgs {
            no_defaults: true,
            connect_timeout: 10,
            query_timeout: 60,
            ..Default::default()
        }
    }
    fn no_prompt() -> Result<String> {
        Err(Error::bad_input("no prompt in tests"))
    }

    #[test]
    fn url_parts() {
        let p = parse_url("mysql://bob:s%40cret@db.example:3307/shop").unwrap();
        assert_eq!(p.user.as_deref(), Some("bob"));
        assert_eq!(p.password.as_deref(), Some("s@cret"));
        assert_eq!(p.host.as_deref(), Some("db.example"));
        assert_eq!(p.port, Some(3307));
        assert_eq!(p.database.as_deref(), Some("shop"));
        let p = parse_url("mysql://root@[::1]:3306/?socket=/tmp/m.sock&ssl-mode=disabled").unwrap();
        assert_eq!(p.host.as_deref(), Some("::1"));
        assert_eq!(p.socket, Some(PathBuf::from("/tmp/m.sock")));
        assert_eq!(p.ssl_mode, Some(SslMode::Disabled));
    }

    #[test]
    fn bad_urls_never_show_the_password() {
        for u in [
            "postgres://a:topsecret@h/db",
            "mysql://a:topsecret@h:99999/db",
            "mysql://a:topsecret@h:x/db",
            "mysql://a:topsecret@h/db?bogus=1",
            "mysql://ceo:topsecret?Passw0rd@h:x/",
            "mysql://ceo:topsecret!",
            "mysql://ceo:topsecret",
            "mysql://ceo:topsecret/x!",
            "mysql:/ceo:topsecret@h",
        ] {
            let e = parse_url(u).unwrap_err().to_string();
            assert!(!e.contains("topsecret") && !e.contains("ceo"), "{e}");
            assert!(matches!(parse_url(u), Err(Error::BadInput(_))));
        }
    }

    #[test]
    fn a_question_mark_in_the_password_stays_in_the_password() {
        let p = parse_url("mysql://ceo:S3cret?Passw0rd@host/").unwrap();
        assert_eq!(p.password.as_deref(), Some("S3cret?Passw0rd"));
        assert_eq!(p.host.as_deref(), Some("host"));
        assert_eq!(
            redact_url("mysql://ceo:S3cret?Passw0rd@host/"),
            "mysql://***@host/"
        );
        assert_eq!(redact_url("mysql://ceo:pw!"), "mysql://***");
        assert_eq!(redact_url("mysql://h:3306/db"), "mysql://h:3306/db");
    }

    #[test]
    fn precedence_flags_url_cnf_env() {
        let dir = tempfile::tempdir().unwrap();
        let cnf = dir.path().join("my.cnf");
        std::fs::write(
            &cnf,
            "[mysqld]\nuser=mysql\n[client]\nuser = cnfuser\npassword=\"cnfpw\"\nport=3310\nhost=cnfhost\n",
        )
        .unwrap();
        let mut a = args();
        a.no_defaults = false;
        a.defaults_file = Some(cnf);
        let t = resolve_with(&a, Some("envpw".into()), &no_prompt).unwrap();
        assert_eq!(
            (t.user.as_str(), t.port, t.host.as_str()),
            ("cnfuser", 3310, "cnfhost")
        );
        assert_eq!(t.password.as_deref(), Some("cnfpw"));
        a.url = Some("mysql://urluser:urlpw@urlhost:3311".into());
        a.user = Some("flaguser".into());
        let t = resolve_with(&a, None, &no_prompt).unwrap();
        assert_eq!(
            (t.user.as_str(), t.port, t.host.as_str()),
            ("flaguser", 3311, "urlhost")
        );
        assert_eq!(t.password.as_deref(), Some("urlpw"));
        assert!(!format!("{t:?}").contains("urlpw"));
        let t = resolve_with(&args(), Some("envpw".into()), &no_prompt).unwrap();
        assert_eq!(t.password.as_deref(), Some("envpw"));
    }

    #[test]
    fn dash_p_without_value_prompts() {
        let mut a = args();
        a.password = Some(None);
        let t = resolve_with(&a, None, &|| Ok("typed".to_string())).unwrap();
        assert_eq!(t.password.as_deref(), Some("typed"));
        assert!(resolve_with(&a, None, &no_prompt).is_err());
    }

    #[test]
    fn localhost_means_socket_and_tcp_host_drops_it() {
        let mut a = args();
        a.url = Some("mysql://u@localhost/?socket=/s.sock".into());
        assert_eq!(
            resolve_with(&a, None, &no_prompt).unwrap().socket,
            Some(PathBuf::from("/s.sock"))
        );
        a.host = Some("10.0.0.1".into());
        let t = resolve_with(&a, None, &no_prompt).unwrap();
        assert_eq!(t.socket, None);
        assert!(!t.is_local());
    }

    #[test]
    fn tcp_localhost_is_127_0_0_1_unless_its_name_is_verified() {
        let ca = tempfile::NamedTempFile::new().unwrap();
        let mut a = args();
        a.host = Some("localhost".into());
        a.port = Some(3307);
        assert_eq!(
            resolve_with(&a, None, &no_prompt).unwrap().host,
            "127.0.0.1"
        );
        a.ssl_ca = Some(ca.path().to_path_buf());
        a.ssl_mode = Some(SslMode::VerifyCa);
        assert_eq!(
            resolve_with(&a, None, &no_prompt).unwrap().host,
            "127.0.0.1"
        );
        a.ssl_mode = Some(SslMode::VerifyIdentity);
        let t = resolve_with(&a, None, &no_prompt).unwrap();
        assert_eq!((t.host.as_str(), t.socket.as_deref()), ("localhost", None));
        assert!(t.is_local());
    }

    #[test]
    fn one_tls_policy_from_the_mode_and_the_transport() {
        let ca = tempfile::NamedTempFile::new().unwrap();
        let mut a = args();
        a.host = Some("db.example".into());
        a.ssl_ca = Some(ca.path().to_path_buf());
        let mut policy = |m| {
            a.ssl_mode = Some(m);
            resolve_with(&a, None, &no_prompt).unwrap().tls_policy()
        };
        let ca = ca.path().to_path_buf();
        assert_eq!(policy(SslMode::Disabled).tls, TlsUse::No);
        assert_eq!(policy(SslMode::Preferred).tls, TlsUse::IfOffered);
        assert_eq!(policy(SslMode::Required).check, TlsCheck::Nothing);
        assert_eq!(
            policy(SslMode::VerifyCa),
            TlsPolicy {
                tls: TlsUse::Must,
                check: TlsCheck::Ca(ca.clone())
            }
        );
        assert_eq!(
            policy(SslMode::VerifyIdentity).check,
            TlsCheck::CaAndName(ca)
        );
        let mut s = args();
        s.socket = Some("/tmp/mysqld.sock".into());
        s.ssl_mode = Some(SslMode::Required);
        assert_eq!(
            resolve_with(&s, None, &no_prompt).unwrap().tls_policy().tls,
            TlsUse::No
        );
    }

    #[test]
    fn verify_modes_need_a_ca() {
        let mut a = args();
        a.ssl_mode = Some(SslMode::VerifyCa);
        assert!(matches!(
            resolve_with(&a, None, &no_prompt),
            Err(Error::BadInput(_))
        ));
    }

    #[derive(clap::Parser)]
    #[command(disable_help_flag = true)]
    struct P {
        #[command(flatten)]
        c: ConnArgs,
    }
    fn parse(argv: &[&str]) -> ConnArgs {
        use clap::Parser;
        P::try_parse_from(std::iter::once("x").chain(argv.iter().copied()))
            .unwrap_or_else(|e| panic!("{argv:?}: {e}"))
            .c
    }
    fn parse_raw(argv: &[&str]) -> ConnArgs {
        let v = mysql_style_args(argv.iter().map(|s| s.into()).collect());
        let v: Vec<String> = v.into_iter().map(|s| s.into_string().unwrap()).collect();
        parse(&v.iter().map(String::as_str).collect::<Vec<_>>())
    }

    #[test]
    fn dash_p_like_the_mysql_client() {
        assert_eq!(
            parse_raw(&["-pSECRET"]).password,
            Some(Some("SECRET".into()))
        );
        assert_eq!(
            parse(&["--password=SECRET"]).password,
            Some(Some("SECRET".into()))
        );
        // -p alone prompts; the next word is the server, never the password.
        assert_eq!(parse_raw(&["-p=x"]).password, Some(Some("=x".into())));
        let a = parse_raw(&["-p", "db1"]);
        assert_eq!((a.password, a.target.as_deref()), (Some(None), Some("db1")));
        let a = parse(&["--password", "db1:3307"]);
        assert_eq!(
            (a.password, a.target.as_deref()),
            (Some(None), Some("db1:3307"))
        );
        let a = parse(&["-p", "-u", "bob"]);
        assert_eq!((a.password, a.user.as_deref()), (Some(None), Some("bob")));
    }

    #[test]
    fn no_rust_forms_in_error_text() {
        assert_eq!(
            plain_error_text("x: CodecError { IO error: broken pipe (os error 32) }; y"),
            "x: IO error: broken pipe (os error 32); y"
        );
        assert_eq!(plain_error_text("DriverError { a { b } }"), "a { b }");
        assert_eq!(SslMode::VerifyCa.name(), "VERIFY_CA");
        let t = resolve_with(&args(), None, &no_prompt).unwrap();
        let e = explain(
            &t,
            &mysql::Error::DriverError(mysql::DriverError::TlsNotSupported),
        );
        assert!(
            !e.to_string().contains("Required") && !e.to_string().contains("Preferred"),
            "{e}"
        );
        let io = std::io::Error::new(std::io::ErrorKind::BrokenPipe, "broken pipe");
        let e = explain(&t, &mysql::Error::CodecError(io.into())).to_string();
        assert!(
            !e.contains("CodecError") && e.contains("broken pipe"),
            "{e}"
        );
    }

    #[test]
    fn positional_targets() {
        let p = parse_target_arg("mysql://root@db1:3307/shop").unwrap();
        assert_eq!(
            (p.user.as_deref(), p.host.as_deref(), p.port),
            (Some("root"), Some("db1"), Some(3307))
        );
        let p = parse_target_arg("monitor:pw@db2:3308").unwrap();
        assert_eq!(
            (
                p.user.as_deref(),
                p.password.as_deref(),
                p.host.as_deref(),
                p.port
            ),
            (Some("monitor"), Some("pw"), Some("db2"), Some(3308))
        );
        let p = parse_target_arg("db3").unwrap();
        assert_eq!(
            (p.user, p.host.as_deref(), p.port),
            (None, Some("db3"), None)
        );
        let p = parse_target_arg("db3:3310/app").unwrap();
        assert_eq!(
            (p.host.as_deref(), p.port, p.database.as_deref()),
            (Some("db3"), Some(3310), Some("app"))
        );
        let p = parse_target_arg("root@/run/mysqld/mysqld.sock").unwrap();
        assert_eq!(
            (p.user.as_deref(), p.socket),
            (Some("root"), Some(PathBuf::from("/run/mysqld/mysqld.sock")))
        );
        let p = parse_target_arg("root@(/tmp/m.sock)").unwrap();
        assert_eq!(p.socket, Some(PathBuf::from("/tmp/m.sock")));
        let p = parse_target_arg("[::1]:3307").unwrap();
        assert_eq!((p.host.as_deref(), p.port), (Some("::1"), Some(3307)));
        for bad in [
            "",
            " ",
            "root@",
            "db:99999",
            "a b",
            "u:topsecret@h:x",
            "u:topsecret",
        ] {
            let e = parse_target_arg(bad).unwrap_err();
            assert!(matches!(e, Error::BadInput(_)), "{bad}");
            assert!(!e.to_string().contains("topsecret"), "{e}");
        }
        // The positional feeds resolve like --url, flags still win.
        let mut a = args();
        a.target = Some("urluser@urlhost:3311".into());
        a.port = Some(3312);
        let t = resolve_with(&a, None, &no_prompt).unwrap();
        assert_eq!(
            (t.user.as_str(), t.host.as_str(), t.port),
            ("urluser", "urlhost", 3312)
        );
        assert!(!format!("{a:?}").contains("urluser"));
    }

    proptest::proptest! {
        #[test]
        fn target_parser_never_panics(u in "\\PC{0,80}") {
            let _ = parse_target_arg(&u);
            let _ = redact_target(&u);
        }

        #[test]
        fn url_and_cnf_parsers_never_panic(u in "\\PC{0,80}", c in "[\\[\\]a-z_=\"' \n#-]{0,200}") {
            let _ = parse_url(&u);
            let _ = parse_url(&format!("mysql://{u}"));
            let _ = super::super::optfile::parse_text(&c, std::path::Path::new("/nonexistent/x.cnf"), super::super::optfile::CLIENT_GROUPS);
            let _ = redact_url(&u);
        }

        #[test]
        fn errors_never_echo_the_password(pw in "[A-Za-z0-9]{8,16}", port in "[a-z0-9]{0,6}") {
            if let Err(e) = parse_url(&format!("mysql://u:{pw}@h:{port}/d?x=1")) {
                proptest::prop_assert!(!e.to_string().contains(&pw));
            }
        }
    }
}
