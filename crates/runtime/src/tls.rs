//! TLS as Redis configures it from its `tls-*` settings, on rustls with the ring provider (no
//! OpenSSL): the server side used by the tls-port listener, and the client side used by
//! outgoing links (the replica's link to its master under tls-replication, MIGRATE under
//! tls-cluster). A rebuild replaces both at once and only when everything loads, so a bad
//! file leaves the running configuration in place (Redis's tlsConfigure is atomic too).

use crate::config::Config;
use parking_lot::{Mutex, RwLock};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring as provider, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::server::{StoresServerSessions, WebPkiClientVerifier};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The error CONFIG SET gives when a tls-* change cannot be applied (details go to the log).
pub const APPLY_ERR: &str = "Unable to update TLS configuration. Check server logs.";

/// The TLS configurations in force (None until TLS is first configured).
#[derive(Default)]
pub struct Tls {
    server: RwLock<Option<Arc<ServerConfig>>>,
    client: RwLock<Option<Arc<ClientConfig>>>,
}

impl Tls {
    /// What a new TLS connection accepted on tls-port uses.
    pub fn server_config(&self) -> Option<Arc<ServerConfig>> {
        self.server.read().clone()
    }

    /// What an outgoing TLS connection uses (None: TLS not configured, or no CA to verify
    /// the peer with).
    pub fn client_config(&self) -> Option<Arc<ClientConfig>> {
        self.client.read().clone()
    }

    pub fn is_configured(&self) -> bool {
        self.server.read().is_some()
    }

    /// Build both sides from the settings and put them in force; on failure nothing changes
    /// and the reason (worded as Redis logs it) is returned.
    pub fn configure(&self, cfg: &Config) -> Result<(), String> {
        let (server, client) = build(cfg)?;
        *self.server.write() = Some(server);
        *self.client.write() = client;
        Ok(())
    }
}

/// TLS is needed when something uses it: the listener, the replication link or the cluster.
pub fn wanted(cfg: &Config) -> bool {
    cfg.get_i64("tls-port") != 0 || cfg.get_bool("tls-replication") || cfg.get_bool("tls-cluster")
}

/// Every tls-* setting that rebuilds the configuration when CONFIG SET changes it (tls-port
/// has its own hook: it also moves the listener).
pub const RELOADING: &[&str] = &[
    "tls-session-cache-size",
    "tls-session-cache-timeout",
    "tls-cluster",
    "tls-replication",
    "tls-auth-clients",
    "tls-prefer-server-ciphers",
    "tls-session-caching",
    "tls-cert-file",
    "tls-key-file",
    "tls-key-file-pass",
    "tls-client-cert-file",
    "tls-client-key-file",
    "tls-client-key-file-pass",
    "tls-dh-params-file",
    "tls-ca-cert-file",
    "tls-ca-cert-dir",
    "tls-protocols",
    "tls-ciphers",
    "tls-ciphersuites",
];

/// CONFIG SET of a tls-* file or option: rebuild when TLS is in use (new connections get the
/// new certificates; open ones keep theirs), refuse the change when it does not load.
pub fn register_hooks(srv: &Arc<crate::Server>) {
    for name in RELOADING {
        let weak = Arc::downgrade(srv);
        srv.config.set_apply_hook(
            name,
            Box::new(move |_| {
                let srv = weak.upgrade().ok_or("shutting down")?;
                if !wanted(&srv.config) {
                    return Ok(());
                }
                srv.tls.configure(&srv.config).map_err(|e| {
                    crate::log::warning(&e);
                    APPLY_ERR.to_string()
                })
            }),
        );
    }
}

fn build(cfg: &Config) -> Result<(Arc<ServerConfig>, Option<Arc<ClientConfig>>), String> {
    let get = |n: &str| cfg.get(n).unwrap_or_default();
    let cert_file = get("tls-cert-file");
    let key_file = get("tls-key-file");
    if cert_file.is_empty() {
        return Err("No tls-cert-file configured!".into());
    }
    if key_file.is_empty() {
        return Err("No tls-key-file configured!".into());
    }
    let auth = get("tls-auth-clients");
    let (ca_file, ca_dir) = (get("tls-ca-cert-file"), get("tls-ca-cert-dir"));
    if (auth != "no" || cfg.get_bool("tls-cluster") || cfg.get_bool("tls-replication"))
        && ca_file.is_empty()
        && ca_dir.is_empty()
    {
        return Err("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!".into());
    }
    let versions = parse_protocols(&get("tls-protocols"))?;
    let provider = Arc::new(CryptoProvider {
        cipher_suites: select_suites(&get("tls-ciphers"), &get("tls-ciphersuites"))?,
        ..provider::default_provider()
    });

    let certs = load_certs(&cert_file)?;
    let key = load_key(&key_file, &get("tls-key-file-pass"))?;
    let roots = load_roots(&ca_file, &ca_dir)
        .map_err(|e| format!("Failed to configure CA certificate(s) file/directory: {e}"))?;
    let dh = get("tls-dh-params-file");
    if !dh.is_empty() {
        // rustls negotiates ECDHE only, so the parameters are not used; a missing file is
        // still refused as Redis refuses it.
        std::fs::metadata(&dh).map_err(|e| format!("Failed to load {dh}: {e}"))?;
    }

    let roots = Arc::new(roots);
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| format!("Failed to configure TLS protocols/ciphers: {e}"))?;
    let builder = match auth.as_str() {
        "no" => builder.with_no_client_auth(),
        mode => {
            let v = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone());
            let v = if mode == "optional" {
                v.allow_unauthenticated()
            } else {
                v
            };
            builder.with_client_cert_verifier(
                v.build()
                    .map_err(|e| format!("Failed to configure CA certificate(s): {e}"))?,
            )
        }
    };
    let mut server = builder
        .with_single_cert(certs.clone(), key.clone_key())
        .map_err(|e| match e {
            // webpki refuses some certificates outright (X.509 v1 among them).
            rustls::Error::InvalidCertificate(_) => {
                format!("Failed to load certificate: {cert_file}: {e}")
            }
            e => format!("Failed to load private key: {key_file}: {e}"),
        })?;
    server.ignore_client_order = cfg.get_bool("tls-prefer-server-ciphers");
    if cfg.get_bool("tls-session-caching") {
        server.session_storage = Arc::new(SessionCache::new(
            cfg.get_i64("tls-session-cache-size").max(0) as usize,
            Duration::from_secs(cfg.get_i64("tls-session-cache-timeout").max(0) as u64),
        ));
    } else {
        server.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        server.send_tls13_tickets = 0;
    }

    // The client side: Redis presents tls-client-cert-file when both client files are set,
    // the server certificate otherwise; it verifies the peer's chain against the CA but
    // not its host name.
    let client = if roots.is_empty() {
        None
    } else {
        let (c_file, c_key) = (get("tls-client-cert-file"), get("tls-client-key-file"));
        let (ccerts, ckey) = if !c_file.is_empty() && !c_key.is_empty() {
            (
                load_certs(&c_file)?,
                load_key(&c_key, &get("tls-client-key-file-pass"))?,
            )
        } else {
            (certs, key)
        };
        let verifier =
            rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                .build()
                .map_err(|e| format!("Failed to configure CA certificate(s): {e}"))?;
        let client = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&versions)
            .map_err(|e| format!("Failed to configure TLS protocols/ciphers: {e}"))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnly(verifier)))
            .with_client_auth_cert(ccerts, ckey)
            .map_err(|e| format!("Failed to load private key: {e}"))?;
        Some(Arc::new(client))
    };
    Ok((Arc::new(server), client))
}

/// `tls-protocols`: Redis's names, case-insensitive. rustls speaks only TLS 1.2 and 1.3.
fn parse_protocols(s: &str) -> Result<Vec<&'static rustls::SupportedProtocolVersion>, String> {
    if s.trim().is_empty() {
        return Ok(vec![&rustls::version::TLS13, &rustls::version::TLS12]);
    }
    let mut out = Vec::new();
    let mut old = false;
    for t in s.split_whitespace() {
        match t.to_ascii_lowercase().as_str() {
            "tlsv1" | "tlsv1.1" => old = true,
            "tlsv1.2" => out.push(&rustls::version::TLS12),
            "tlsv1.3" => out.push(&rustls::version::TLS13),
            _ => {
                return Err("Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.".into())
            }
        }
    }
    if out.is_empty() && old {
        return Err("Invalid tls-protocols specified: TLSv1 and TLSv1.1 are not supported (rustls speaks TLSv1.2 and TLSv1.3 only).".into());
    }
    if old {
        crate::log::warning("tls-protocols: TLSv1 and TLSv1.1 are not supported and are ignored.");
    }
    Ok(out)
}

/// OpenSSL's names for the TLS 1.2 suites rustls has.
const TLS12_SUITES: &[(&str, rustls::SupportedCipherSuite)] = &[
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        provider::cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        provider::cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        provider::cipher_suite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        provider::cipher_suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        provider::cipher_suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        provider::cipher_suite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
];

/// The TLS 1.3 suites (OpenSSL and IANA names agree).
const TLS13_SUITES: &[(&str, rustls::SupportedCipherSuite)] = &[
    (
        "TLS_AES_256_GCM_SHA384",
        provider::cipher_suite::TLS13_AES_256_GCM_SHA384,
    ),
    (
        "TLS_AES_128_GCM_SHA256",
        provider::cipher_suite::TLS13_AES_128_GCM_SHA256,
    ),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        provider::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256,
    ),
];

/// Which OpenSSL cipher-list keyword selects which of the TLS 1.2 suites above.
fn keyword_matches(word: &str, name: &str) -> Option<bool> {
    Some(match word {
        "DEFAULT" | "ALL" | "HIGH" | "ECDHE" | "EECDH" | "kECDHE" | "TLSv1.2" => true,
        "AESGCM" => name.contains("GCM"),
        "AES" => name.contains("AES"),
        "AES128" => name.contains("AES128"),
        "AES256" => name.contains("AES256"),
        "CHACHA20" => name.contains("CHACHA20"),
        "aRSA" | "ECDHE-RSA" => name.starts_with("ECDHE-RSA"),
        "aECDSA" | "ECDSA" | "ECDHE-ECDSA" => name.starts_with("ECDHE-ECDSA"),
        "SHA256" => name.ends_with("SHA256") || name.contains("CHACHA20"),
        "SHA384" => name.ends_with("SHA384"),
        _ => return None,
    })
}

/// The suites `tls-ciphers` (TLS 1.2, OpenSSL cipher-list syntax) and `tls-ciphersuites`
/// (TLS 1.3, colon-separated names) leave, in rustls's preference order. A name or keyword
/// that selects nothing rustls has is refused; exclusions (`!X`, `-X`) of what rustls never
/// offers only narrow, so they are accepted.
fn select_suites(
    ciphers: &str,
    suites13: &str,
) -> Result<Vec<rustls::SupportedCipherSuite>, String> {
    let mut out = Vec::new();
    if suites13.trim().is_empty() {
        out.extend(TLS13_SUITES.iter().map(|(_, s)| *s));
    } else {
        for name in suites13.split(':').map(str::trim).filter(|n| !n.is_empty()) {
            match TLS13_SUITES.iter().find(|(n, _)| *n == name) {
                Some((_, s)) => {
                    if !out.contains(s) {
                        out.push(*s)
                    }
                }
                None => {
                    return Err(format!(
                        "Failed to configure ciphersuites: {suites13}: '{name}' is not a TLSv1.3 suite rustls supports ({})",
                        TLS13_SUITES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(":")
                    ))
                }
            }
        }
    }
    let mut chosen: Vec<&str> = Vec::new();
    if ciphers.trim().is_empty() {
        chosen.extend(TLS12_SUITES.iter().map(|(n, _)| *n));
    } else {
        let mut removed: Vec<&str> = Vec::new();
        for tok in ciphers
            .split([':', ',', ' '])
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            if tok.starts_with('@') {
                continue; // @STRENGTH, @SECLEVEL=n: ordering/levels rustls sets itself
            }
            let (neg, word) = match tok.strip_prefix(['!', '-']) {
                Some(w) => (true, w),
                None => (false, tok.strip_prefix('+').unwrap_or(tok)),
            };
            let hits: Vec<&str> = TLS12_SUITES
                .iter()
                .map(|(n, _)| *n)
                .filter(|n| *n == word || keyword_matches(word, n) == Some(true))
                .collect();
            if neg {
                removed.extend(hits);
                continue;
            }
            if hits.is_empty() {
                return Err(format!(
                    "Failed to configure ciphers: {ciphers}: '{word}' selects no cipher rustls supports ({})",
                    TLS12_SUITES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(":")
                ));
            }
            for h in hits {
                if !chosen.contains(&h) && !removed.contains(&h) {
                    chosen.push(h);
                }
            }
        }
        chosen.retain(|n| !removed.contains(n));
        if chosen.is_empty() {
            return Err(format!("Failed to configure ciphers: {ciphers}"));
        }
    }
    out.extend(
        TLS12_SUITES
            .iter()
            .filter(|(n, _)| chosen.contains(n))
            .map(|(_, s)| *s),
    );
    Ok(out)
}

/// A PEM certificate chain; errors worded as Redis logs them.
fn load_certs(path: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    read_certs(path).map_err(|e| format!("Failed to load certificate: {path}: {e}"))
}

fn read_certs(path: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    if certs.is_empty() {
        return Err("no PEM certificate found".into());
    }
    Ok(certs)
}

/// A PEM private key (PKCS#8, PKCS#1 RSA or SEC1 EC). An encrypted PKCS#8 key
/// (`BEGIN ENCRYPTED PRIVATE KEY`, what OpenSSL 3 writes) is decrypted with `pass`
/// (PBES2: PBKDF2 or scrypt with AES-CBC). OpenSSL's legacy encrypted PEM (`Proc-Type:
/// 4,ENCRYPTED`) is refused with a hint to convert it.
fn load_key(path: &str, pass: &str) -> Result<PrivateKeyDer<'static>, String> {
    read_key(path, pass).map_err(|e| format!("Failed to load private key: {path}: {e}"))
}

fn read_key(path: &str, pass: &str) -> Result<PrivateKeyDer<'static>, String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&bytes);
    if text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err("legacy encrypted PEM keys (Proc-Type/DEK-Info) are not supported; convert the key with `openssl pkcs8 -topk8` (encrypted PKCS#8 is)".into());
    }
    const BEGIN: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";
    const END: &str = "-----END ENCRYPTED PRIVATE KEY-----";
    if let Some(start) = text.find(BEGIN) {
        let end = text[start..]
            .find(END)
            .map(|e| start + e + END.len())
            .ok_or("unterminated PEM block")?;
        if pass.is_empty() {
            return Err("the key is encrypted and no tls-key-file-pass is set".into());
        }
        let (_, der) =
            pkcs8::der::pem::decode_vec(text[start..end].as_bytes()).map_err(|e| e.to_string())?;
        let info =
            pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_slice()).map_err(|e| e.to_string())?;
        let doc = info
            .decrypt(pass.as_bytes())
            .map_err(|e| format!("bad decrypt ({e})"))?;
        return Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            doc.as_bytes().to_vec(),
        )));
    }
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| e.to_string())
}

/// The CA certificates of tls-ca-cert-file and of every PEM file in tls-ca-cert-dir
/// (OpenSSL reads that directory by hashed names; every certificate there is a superset).
fn load_roots(file: &str, dir: &str) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    if !file.is_empty() {
        for c in read_certs(file).map_err(|e| format!("{file}: {e}"))? {
            roots.add(c).map_err(|e| format!("{file}: {e}"))?;
        }
    }
    if !dir.is_empty() {
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{dir}: {e}"))?;
        for e in entries.flatten() {
            let p = e.path();
            if !p.is_file() {
                continue;
            }
            let Ok(bytes) = std::fs::read(&p) else {
                continue;
            };
            for c in CertificateDer::pem_slice_iter(&bytes).flatten() {
                let _ = roots.add(c);
            }
        }
        if roots.is_empty() {
            return Err(format!("{dir}: no CA certificate found"));
        }
    }
    Ok(roots)
}

/// Verifies the peer's chain against the CA, as Redis does, without matching the host
/// name (Redis does not set one to check).
#[derive(Debug)]
struct ChainOnly(Arc<rustls::client::WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        use rustls::CertificateError as C;
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                C::NotValidForName | C::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// A cached session's bytes and when it was stored.
type Session = (Vec<u8>, Instant);

/// The server's session cache: tls-session-cache-size entries (0: unbounded, as OpenSSL),
/// each good for tls-session-cache-timeout seconds.
#[derive(Debug)]
struct SessionCache {
    max: usize,
    ttl: Duration,
    map: Mutex<HashMap<Vec<u8>, Session>>,
}

impl SessionCache {
    fn new(max: usize, ttl: Duration) -> SessionCache {
        SessionCache {
            max,
            ttl,
            map: Mutex::new(HashMap::new()),
        }
    }
}

impl StoresServerSessions for SessionCache {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        let mut m = self.map.lock();
        if self.max != 0 && m.len() >= self.max {
            let ttl = self.ttl;
            m.retain(|_, (_, at)| at.elapsed() < ttl);
            if m.len() >= self.max {
                if let Some(k) = m.keys().next().cloned() {
                    m.remove(&k);
                }
            }
        }
        m.insert(key, (value, Instant::now()));
        true
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        let mut m = self.map.lock();
        match m.get(key) {
            Some((v, at)) if at.elapsed() < self.ttl => Some(v.clone()),
            Some(_) => {
                m.remove(key);
                None
            }
            None => None,
        }
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        let (v, at) = self.map.lock().remove(key)?;
        (at.elapsed() < self.ttl).then_some(v)
    }

    fn can_cache(&self) -> bool {
        true
    }
}

/// A blocking outgoing connection, plain or TLS (the replica's link, MIGRATE).
pub enum SyncStream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl SyncStream {
    pub fn tcp(&self) -> &TcpStream {
        match self {
            SyncStream::Plain(s) => s,
            SyncStream::Tls(s) => &s.sock,
        }
    }

    /// Wrap a connected socket in TLS and complete the handshake within `timeout`.
    pub fn tls(
        config: Arc<ClientConfig>,
        tcp: TcpStream,
        host: &str,
        timeout: Duration,
    ) -> Result<SyncStream, String> {
        // The name is only sent (SNI); the chain check ignores it, as Redis does.
        let name = ServerName::try_from(host.to_string())
            .unwrap_or_else(|_| ServerName::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()));
        let conn = rustls::ClientConnection::new(config, name).map_err(|e| e.to_string())?;
        let saved = tcp.read_timeout().ok().flatten();
        tcp.set_read_timeout(Some(timeout))
            .map_err(|e| e.to_string())?;
        let mut s = rustls::StreamOwned::new(conn, tcp);
        while s.conn.is_handshaking() {
            s.conn
                .complete_io(&mut s.sock)
                .map_err(|e| format!("TLS handshake failed: {e}"))?;
        }
        s.sock.set_read_timeout(saved).map_err(|e| e.to_string())?;
        Ok(SyncStream::Tls(Box::new(s)))
    }
}

impl Read for SyncStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            SyncStream::Plain(s) => s.read(buf),
            SyncStream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for SyncStream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            SyncStream::Plain(s) => s.write(buf),
            SyncStream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            SyncStream::Plain(s) => s.flush(),
            SyncStream::Tls(s) => s.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ciphers_map_openssl_names_and_refuse_unknown() {
        let all = select_suites("", "").unwrap();
        assert_eq!(all.len(), 9);
        let s = select_suites("ECDHE-RSA-AES128-GCM-SHA256", "TLS_AES_128_GCM_SHA256").unwrap();
        assert_eq!(s.len(), 2);
        let s = select_suites("DEFAULT:!aNULL:!MD5:!CHACHA20", "").unwrap();
        assert_eq!(s.len(), 3 + 4);
        assert!(select_suites("RC4-SHA", "").is_err());
        assert!(select_suites("", "TLS_AES_128_CCM_SHA256").is_err());
        assert!(select_suites("HIGH:!ECDHE", "").is_err());
    }

    #[test]
    fn protocols_as_redis_names_them() {
        assert_eq!(parse_protocols("").unwrap().len(), 2);
        assert_eq!(parse_protocols("TLSv1.2").unwrap().len(), 1);
        assert_eq!(parse_protocols("tlsv1.2 TLSv1.3").unwrap().len(), 2);
        assert!(parse_protocols("TLSv1.4").is_err());
        assert!(parse_protocols("TLSv1 TLSv1.1").is_err());
    }
}
