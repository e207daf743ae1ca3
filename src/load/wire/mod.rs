//! The event client's own MySQL protocol: [`codec`] (pure: packets, handshake, commands, a
//! resumable response reader) and [`conn`] (a socket with the blocking handshake and setup
//! commands). [`events`] is the client that drives many such connections from a few threads.

pub mod codec;
pub mod conn;
pub mod events;

pub use conn::{connect, Endpoint, Tls, WireConn, WireError};
