//! TLS for the events client: rustls (the version the mysql crate already brings, with the
//! same `ring` provider) over the client's own sockets. The TLS handshake is done blocking,
//! like the rest of the login; afterwards a request is sealed into TLS records before the
//! first of its bytes is written ([`TlsSession::seal`]), so the nonblocking writes and the
//! io_uring sends carry ciphertext unchanged, and what a socket read is opened back into
//! protocol bytes ([`TlsSession::open`]). Records the session must send on its own (an alert,
//! a key update) leave with the next request.
//!
//! Certificate checks follow the thread client's (`server::conn::opts`): PREFERRED and
//! REQUIRED check nothing, VERIFY_CA checks the chain against `--ssl-ca` but not the host
//! name, VERIFY_IDENTITY both.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, ClientConnection, DigitallySignedStruct};
use rustls::{RootCertStore, SignatureScheme};

/// What can go wrong here (the connection's `TlsError` takes both).
#[derive(Debug)]
pub enum TlsError {
    /// TLS could not be set up or went wrong: rustls's reason.
    Tls(String),
    Io(io::Error),
}

impl From<io::Error> for TlsError {
    fn from(e: io::Error) -> Self {
        TlsError::Io(e)
    }
}

/// How the server's certificate is checked (from `--ssl-mode` and `--ssl-ca`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verify {
    /// PREFERRED, REQUIRED: not checked.
    Nothing,
    /// VERIFY_CA: the chain against this CA; the host name is not checked.
    Ca(PathBuf),
    /// VERIFY_IDENTITY: the chain against this CA and the host name as given.
    CaAndName(PathBuf),
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn tls_error(e: impl std::fmt::Display) -> TlsError {
    TlsError::Tls(e.to_string())
}

/// The certificates of a PEM file.
fn roots(ca: &Path) -> Result<RootCertStore, TlsError> {
    let mut store = RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(ca)
        .map_err(|e| tls_error(format!("--ssl-ca {}: {e}", ca.display())))?;
    for c in certs {
        let c = c.map_err(|e| tls_error(format!("--ssl-ca {}: {e}", ca.display())))?;
        store
            .add(c)
            .map_err(|e| tls_error(format!("--ssl-ca {}: {e}", ca.display())))?;
    }
    if store.is_empty() {
        return Err(tls_error(format!(
            "--ssl-ca {}: no certificate in the file",
            ca.display()
        )));
    }
    Ok(store)
}

/// The client configuration of `verify`.
pub fn config(verify: &Verify) -> Result<Arc<ClientConfig>, TlsError> {
    let p = provider();
    let checker: Arc<dyn ServerCertVerifier> = match verify {
        Verify::Nothing => Arc::new(Unchecked(Arc::clone(&p))),
        Verify::Ca(ca) | Verify::CaAndName(ca) => {
            let webpki =
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots(ca)?), Arc::clone(&p))
                    .build()
                    .map_err(tls_error)?;
            Arc::new(Chain {
                webpki,
                names: matches!(verify, Verify::CaAndName(_)),
            })
        }
    };
    let c = ClientConfig::builder_with_provider(p)
        .with_safe_default_protocol_versions()
        .map_err(tls_error)?
        .dangerous()
        .with_custom_certificate_verifier(checker)
        .with_no_client_auth();
    Ok(Arc::new(c))
}

/// PREFERRED / REQUIRED: any certificate (as the thread client's
/// `danger_accept_invalid_certs`).
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }
    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// VERIFY_CA / VERIFY_IDENTITY: the chain checked; a certificate for another name is
/// accepted unless `names`.
#[derive(Debug)]
struct Chain {
    webpki: Arc<WebPkiServerVerifier>,
    names: bool,
}

impl ServerCertVerifier for Chain {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .webpki
            .verify_server_cert(end_entity, intermediates, name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.names => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(m, c, d)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(m, c, d)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// The name the certificate is checked against: the host as given (VERIFY_IDENTITY); for
/// the other modes any valid name does.
fn server_name(host: &str) -> ServerName<'static> {
    ServerName::try_from(host.to_string())
        .unwrap_or_else(|_| ServerName::try_from("localhost").expect("a valid name"))
}

/// An rustls error inside an io::Error (how `complete_io` reports them) as a TLS error.
fn from_io(e: io::Error) -> TlsError {
    let tls = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .map(|r| r.to_string());
    match tls {
        Some(t) => TlsError::Tls(t),
        None if e.kind() == io::ErrorKind::UnexpectedEof => {
            TlsError::Tls("the server closed the connection during the TLS handshake".into())
        }
        None => TlsError::Io(e),
    }
}

/// A TLS session over one of the client's sockets.
pub struct TlsSession {
    conn: ClientConnection,
}

impl std::fmt::Debug for TlsSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TlsSession({:?})", self.conn.protocol_version())
    }
}

impl TlsSession {
    /// The TLS handshake on `s` (blocking), right after the SSLRequest packet.
    pub fn handshake<S: Read + Write>(
        s: &mut S,
        config: Arc<ClientConfig>,
        host: &str,
    ) -> Result<TlsSession, TlsError> {
        let mut conn = ClientConnection::new(config, server_name(host)).map_err(tls_error)?;
        // A request is sealed whole, however long.
        conn.set_buffer_limit(None);
        while conn.is_handshaking() {
            conn.complete_io(s).map_err(from_io)?;
        }
        while conn.wants_write() {
            conn.write_tls(s).map_err(from_io)?;
        }
        Ok(TlsSession { conn })
    }

    /// Replace the protocol bytes in `out` by the TLS records that carry them (preceded by
    /// any record the session still has to send).
    pub fn seal(&mut self, out: &mut Vec<u8>) -> Result<(), TlsError> {
        if !out.is_empty() {
            self.conn.writer().write_all(out).map_err(from_io)?;
        }
        out.clear();
        while self.conn.wants_write() {
            self.conn.write_tls(out).map_err(from_io)?;
        }
        Ok(())
    }

    /// The protocol bytes carried by the TLS bytes `raw` (a record may end in a later read),
    /// appended to `plain`.
    pub fn open(&mut self, mut raw: &[u8], plain: &mut Vec<u8>) -> Result<(), TlsError> {
        while !raw.is_empty() {
            if self.conn.read_tls(&mut raw).map_err(from_io)? == 0 {
                break;
            }
            let st = self.conn.process_new_packets().map_err(tls_error)?;
            let n = st.plaintext_bytes_to_read();
            if n > 0 {
                let at = plain.len();
                plain.resize(at + n, 0);
                self.conn
                    .reader()
                    .read_exact(&mut plain[at..])
                    .map_err(TlsError::Io)?;
            }
        }
        Ok(())
    }

    /// Seal and write `bytes` (blocking).
    pub fn send_blocking(&mut self, s: &mut impl Write, bytes: &[u8]) -> Result<(), TlsError> {
        let mut out = bytes.to_vec();
        self.seal(&mut out)?;
        s.write_all(&out)?;
        Ok(())
    }

    /// Read (blocking) until some protocol bytes came, appended to `plain`.
    pub fn recv_blocking(
        &mut self,
        s: &mut impl Read,
        plain: &mut Vec<u8>,
    ) -> Result<(), TlsError> {
        let mut tmp = [0u8; 16384];
        let before = plain.len();
        while plain.len() == before {
            let n = s.read(&mut tmp)?;
            if n == 0 {
                return Err(TlsError::Io(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection",
                )));
            }
            self.open(&tmp[..n], plain)?;
        }
        Ok(())
    }
}
