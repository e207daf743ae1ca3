//! The sweep engine (`spinscope sweep run`, and the measuring of `tune`): a typed
//! [`SweepPlan`], the ladder x repeat x variant loop with the server's settings changed through
//! `load::guard` (journaled, restored), the step -> [`StepDoc`] conversion (percentiles, Little,
//! open-loop "kept up", validity, the encoded histogram), and saving after every step.
//!
//! - [`plan`]: [`SweepPlan`] and its checks (every input checked before connecting).
//! - [`step`]: one measured step through `load::driver::run_step`: [`measure_step`].
//! - [`engine`]: [`run`]: the whole sweep into a [`SweepDoc`].
//! - [`observe`]: the [`Observer`] trait progress is reported through ([`Quiet`]: nothing;
//!   the CLI draws it, `cli::progress`).
//!
//! - [`doc`]: the `spinscope.sweep/1` document and its pure analysis (`analyze`); [`csv`]: its
//!   CSV (saved after every step); the table is `report::sweep`, the charts and HTML
//!   `report::sweep_html`.

pub mod csv;
pub mod doc;
pub mod engine;
pub mod observe;
pub mod plan;
pub mod step;

use std::sync::Arc;

use crate::error::Error;
use crate::load::wire::{self, Endpoint, Tls, Verify};
use crate::load::{self, Connector, WireConnector};
use crate::server::conn::{self as server_conn, Target, TlsCheck, TlsUse};

pub use doc::{StepDoc, SweepDoc};
pub use engine::{run, SweepRun};
pub use observe::{Keep, Observer, Point, Quiet, ToMeter};
pub use plan::{secs, Outputs, SweepPlan};
pub use step::{measure_step, Bench, StepSpec};

/// Connections for a sweep: options resolved once (an option file read, `-p` asked once), then
/// every client thread and every reconnect opens its own connection, in `db` when given.
pub fn connector(target: &Target, db: Option<&str>) -> Connector {
    let target = target.clone();
    let db = db.map(str::to_string);
    // Client connections (those with a db) own their prepared statements: the mysql crate's
    // own cache (32 by default) would close statements the workload still holds.
    let own_statements = db.is_some();
    // The admin connector's first connection reads the change journal for this server and
    // warns (once per connector: it belongs to one server).
    let journal_unread = std::sync::atomic::AtomicBool::new(db.is_none());
    Arc::new(move || {
        let mut c = if own_statements {
            server_conn::connect_target_with(&target, |b| b.stmt_cache_size(0))?
        } else if journal_unread.load(std::sync::atomic::Ordering::Relaxed) {
            let (c, _) = server_conn::connect_checked(&target)?;
            journal_unread.store(false, std::sync::atomic::Ordering::Relaxed);
            c
        } else {
            server_conn::connect_target(&target)?
        };
        if let Some(db) = &db {
            c.select_db(db)
                .map_err(|e| Error::runtime(format!("USE {db}: {}", load::describe_error(&e).1)))?;
        }
        Ok(c)
    })
}

/// The event client's connections to `target`, inside `db` (its own protocol code; TLS as
/// the thread client decides it: never on a Unix socket, `--ssl-mode` over TCP).
pub fn wire_connector(target: &Target, db: &str) -> WireConnector {
    // The one TLS policy (`Target::tls_policy`), in this client's words.
    let policy = target.tls_policy();
    let tls = match policy.tls {
        TlsUse::No => Tls::No,
        TlsUse::IfOffered => Tls::IfOffered,
        TlsUse::Must => Tls::Must,
    };
    let verify = match policy.check {
        TlsCheck::Nothing => Verify::Nothing,
        TlsCheck::Ca(ca) => Verify::Ca(ca),
        TlsCheck::CaAndName(ca) => Verify::CaAndName(ca),
    };
    let ep = Endpoint {
        socket: target.socket.clone(),
        host: target.host.clone(),
        port: target.port,
        user: target.user.clone(),
        password: target.password.clone(),
        db: Some(db.to_string()),
        connect_timeout: target.connect_timeout,
        query_timeout: target.query_timeout,
        tls,
        verify,
        deprecate_eof: true,
    };
    Arc::new(move || wire::connect(&ep))
}

/// The connectors a sweep uses: `admin` (no default schema: version, settings, Uptime),
/// `clients` (one connection per client thread, inside the scratch schema) and `wire` (the
/// event client's connections, inside the scratch schema).
#[derive(Clone)]
pub struct Connectors {
    pub admin: Connector,
    pub clients: Connector,
    pub wire: WireConnector,
    /// The server they reach: the endpoint and connection flags for journal records.
    pub endpoint: String,
    pub connect_hint: String,
}

impl Connectors {
    /// Both connectors for `target`, the clients' inside `schema`.
    pub fn for_target(target: &Target, schema: &str) -> Connectors {
        Connectors {
            admin: connector(target, None),
            clients: connector(target, Some(schema)),
            wire: wire_connector(target, schema),
            endpoint: target.endpoint(),
            connect_hint: target.flags_hint(),
        }
    }
}
