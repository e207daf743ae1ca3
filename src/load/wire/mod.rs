//! The events load client: [`conn`] (a socket with the blocking handshake and setup commands,
//! and the reading of answers as bytes arrive), [`tls`] (rustls over those sockets) and
//! [`events`] (the client that drives many such connections from a few threads). The
//! protocol itself is [`crate::proto`]'s.

pub mod conn;
pub mod events;
pub mod tls;

pub use conn::{connect, Endpoint, Tls, WireConn, WireError};
pub use tls::Verify;
