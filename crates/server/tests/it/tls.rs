//! TLS: the tls-port listener (rustls), client-certificate modes, protocol and cipher
//! settings, encrypted keys, certificate reload by CONFIG SET, replication and MIGRATE over
//! TLS, and redis-cli --tls / redis-server 7.2 interop when those binaries are present.
//! Certificates are made here with rcgen: nothing is read from the machine.

use crate::common::{free_port, fresh_dir, info_value, wait_blocked, wait_for, Server};
use redis::{Commands, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A CA, a server certificate (localhost, 127.0.0.1) and a client certificate, as PEM files.
struct Pki {
    dir: PathBuf,
    ca: rcgen::Certificate,
    ca_key: rcgen::KeyPair,
}

impl Pki {
    fn new(tag: &str) -> Pki {
        let dir = fresh_dir(&format!("tls-{tag}"));
        let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        p.distinguished_name
            .push(rcgen::DnType::CommonName, "tern test CA");
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let ca = p.self_signed(&ca_key).unwrap();
        std::fs::write(dir.join("ca.crt"), ca.pem()).unwrap();
        let pki = Pki { dir, ca, ca_key };
        pki.issue("server", &["localhost", "127.0.0.1"]);
        pki.issue("client", &["client"]);
        pki
    }

    /// `name`.crt / `name`.key signed by the CA; returns the certificate's DER.
    fn issue(&self, name: &str, sans: &[&str]) -> Vec<u8> {
        let mut p =
            rcgen::CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap();
        p.distinguished_name.push(rcgen::DnType::CommonName, name);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = p.signed_by(&key, &self.ca, &self.ca_key).unwrap();
        std::fs::write(self.path(&format!("{name}.crt")), cert.pem()).unwrap();
        std::fs::write(self.path(&format!("{name}.key")), key.serialize_pem()).unwrap();
        std::fs::write(self.path(&format!("{name}.pk8")), key.serialize_der()).unwrap();
        cert.der().to_vec()
    }

    fn path(&self, f: &str) -> String {
        self.dir.join(f).display().to_string()
    }

    fn read(&self, f: &str) -> Vec<u8> {
        std::fs::read(self.dir.join(f)).unwrap()
    }

    /// The server settings for a TLS listener on `tls_port`.
    fn server_args(&self, tls_port: u16) -> Vec<String> {
        vec![
            "--tls-port".into(),
            tls_port.to_string(),
            "--tls-cert-file".into(),
            self.path("server.crt"),
            "--tls-key-file".into(),
            self.path("server.key"),
            "--tls-ca-cert-file".into(),
            self.path("ca.crt"),
        ]
    }

    /// A redis-rs client over TLS, with or without the client certificate.
    fn client(&self, port: u16, with_cert: bool) -> redis::Client {
        let client_tls = with_cert.then(|| redis::ClientTlsConfig {
            client_cert: self.read("client.crt"),
            client_key: self.read("client.key"),
        });
        redis::Client::build_with_tls(
            format!("rediss://127.0.0.1:{port}/"),
            redis::TlsCertificates {
                client_tls,
                root_cert: Some(self.read("ca.crt")),
            },
        )
        .unwrap()
    }

    fn conn(&self, port: u16) -> redis::Connection {
        self.client(port, true)
            .get_connection()
            .expect("TLS connect")
    }

    /// A raw rustls handshake: the server certificate it presented, or the error.
    fn handshake(
        &self,
        port: u16,
        versions: &[&'static rustls::SupportedProtocolVersion],
    ) -> Result<Vec<u8>, String> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(&self.read("ca.crt")).unwrap())
            .unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let cfg = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots)
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_slice(&self.read("client.crt")).unwrap()],
                PrivateKeyDer::from_pem_slice(&self.read("client.key")).unwrap(),
            )
            .unwrap();
        let mut conn = rustls::ClientConnection::new(
            Arc::new(cfg),
            rustls::pki_types::ServerName::try_from("localhost").unwrap(),
        )
        .unwrap();
        let mut sock = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        while conn.is_handshaking() {
            conn.complete_io(&mut sock).map_err(|e| e.to_string())?;
        }
        Ok(conn.peer_certificates().unwrap()[0].to_vec())
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn tls_server(pki: &Pki, extra: &[&str]) -> (Server, u16) {
    let tls_port = free_port();
    let mut args = pki.server_args(tls_port);
    args.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    (Server::tern(&refs), tls_port)
}

#[test]
fn tls_serves_commands_pipelines_big_replies_blocking_and_pubsub() {
    let pki = Pki::new("basic");
    let (srv, tls_port) = tls_server(&pki, &[]);
    let mut c = pki.conn(tls_port);
    let _: () = c.set("k", "v").unwrap();
    assert_eq!(c.get::<_, String>("k").unwrap(), "v");
    // The same keyspace as the plain port.
    assert_eq!(srv.conn().get::<_, String>("k").unwrap(), "v");

    // Pipelining: 2000 commands in one write, answered in order.
    let mut p = redis::pipe();
    for i in 0..2000 {
        p.cmd("INCR").arg("n").ignore();
        if i % 500 == 0 {
            p.cmd("GET").arg("n");
        }
    }
    let got: Vec<i64> = p.query(&mut c).unwrap();
    assert_eq!(got, vec![1, 501, 1001, 1501]);

    // Replies far bigger than a TLS record and the socket buffer.
    let big = "x".repeat(3 << 20);
    let _: () = c.set("big", &big).unwrap();
    assert_eq!(c.get::<_, String>("big").unwrap().len(), big.len());

    // A blocked client is served by a write from another TLS connection.
    let client = pki.client(tls_port, true);
    let waiter = std::thread::spawn(move || {
        let mut w = client.get_connection().unwrap();
        w.blpop::<_, (String, String)>("q", 5.0).unwrap()
    });
    let mut c2 = pki.conn(tls_port);
    wait_blocked(&mut c2, 1); // the BLPOP blocks
    let _: () = c2.rpush("q", "item").unwrap();
    assert_eq!(waiter.join().unwrap(), ("q".into(), "item".into()));

    // Pub/sub messages reach a TLS subscriber.
    let mut sub_conn = pki.conn(tls_port);
    let mut sub = sub_conn.as_pubsub();
    sub.subscribe("chan").unwrap();
    sub.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let n: i64 = c.publish("chan", "hello").unwrap();
    assert_eq!(n, 1);
    let msg = sub.get_message().unwrap();
    assert_eq!(msg.get_payload::<String>().unwrap(), "hello");
    drop(sub);

    // CLIENT INFO shows the TLS port as the local address; INFO lists the tls listener.
    let ci: String = redis::cmd("CLIENT").arg("INFO").query(&mut c).unwrap();
    assert!(ci.contains(&format!("laddr=127.0.0.1:{tls_port} ")), "{ci}");
    let info: String = redis::cmd("INFO").arg("server").query(&mut c).unwrap();
    assert_eq!(
        info_value(&info, "listener2").unwrap(),
        format!("name=tls,bind=127.0.0.1,port={tls_port}")
    );
}

#[test]
fn client_certificates_as_tls_auth_clients_says() {
    let pki = Pki::new("auth");
    // yes (the default): a client without a certificate fails the handshake.
    let (_srv, tls_port) = tls_server(&pki, &[]);
    let r = pki
        .client(tls_port, false)
        .get_connection()
        .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
    assert!(r.is_err(), "a client without a certificate was served");
    assert_eq!(
        redis::cmd("PING")
            .query::<String>(&mut pki.conn(tls_port))
            .unwrap(),
        "PONG"
    );

    // optional: both are served.
    let (_srv2, tls_port2) = tls_server(&pki, &["--tls-auth-clients", "optional"]);
    for with_cert in [false, true] {
        let mut c = pki.client(tls_port2, with_cert).get_connection().unwrap();
        assert_eq!(redis::cmd("PING").query::<String>(&mut c).unwrap(), "PONG");
    }

    // no: no CA needed at all.
    let tls_port3 = free_port();
    let p3 = tls_port3.to_string();
    let (cert, key) = (pki.path("server.crt"), pki.path("server.key"));
    let _srv3 = Server::tern(&[
        "--tls-port",
        &p3,
        "--tls-cert-file",
        &cert,
        "--tls-key-file",
        &key,
        "--tls-auth-clients",
        "no",
    ]);
    let mut c = pki.client(tls_port3, false).get_connection().unwrap();
    assert_eq!(redis::cmd("PING").query::<String>(&mut c).unwrap(), "PONG");
}

#[test]
fn config_set_reloads_certificates_and_refuses_bad_files() {
    let pki = Pki::new("reload");
    let (srv, tls_port) = tls_server(&pki, &[]);
    let first = pki.handshake(tls_port, &[&rustls::version::TLS13]).unwrap();
    let mut c = srv.conn();
    let mut keep = pki.conn(tls_port);

    // A missing file: refused with Redis's wording, the old certificate stays in force.
    let e = redis::cmd("CONFIG")
        .arg("SET")
        .arg("tls-cert-file")
        .arg("/nonexistent/cert.pem")
        .query::<()>(&mut c)
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("CONFIG SET failed (possibly related to argument 'tls-cert-file')"),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("Unable to update TLS configuration. Check server logs."),
        "{e}"
    );
    let v: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("tls-cert-file")
        .query(&mut c)
        .unwrap();
    assert_eq!(v[1], pki.path("server.crt"));
    assert_eq!(
        pki.handshake(tls_port, &[&rustls::version::TLS13]).unwrap(),
        first
    );

    // A new certificate and key together: new connections get it, open ones go on.
    let new_der = pki.issue("server2", &["localhost", "127.0.0.1"]);
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("tls-cert-file")
        .arg(pki.path("server2.crt"))
        .arg("tls-key-file")
        .arg(pki.path("server2.key"))
        .query(&mut c)
        .unwrap();
    assert_eq!(
        pki.handshake(tls_port, &[&rustls::version::TLS13]).unwrap(),
        new_der
    );
    assert_ne!(new_der, first);
    assert_eq!(
        redis::cmd("PING").query::<String>(&mut keep).unwrap(),
        "PONG"
    );

    // A key that does not match the certificate is refused too.
    let e = redis::cmd("CONFIG")
        .arg("SET")
        .arg("tls-key-file")
        .arg(pki.path("client.key"))
        .query::<()>(&mut c)
        .unwrap_err();
    assert!(
        e.to_string().contains("Unable to update TLS configuration"),
        "{e}"
    );
    assert_eq!(
        pki.handshake(tls_port, &[&rustls::version::TLS13]).unwrap(),
        new_der
    );
}

#[test]
fn protocols_and_ciphers_settings() {
    let pki = Pki::new("proto");
    let (srv, tls_port) = tls_server(&pki, &["--tls-protocols", "TLSv1.2"]);
    assert!(pki.handshake(tls_port, &[&rustls::version::TLS12]).is_ok());
    assert!(pki.handshake(tls_port, &[&rustls::version::TLS13]).is_err());
    let mut c = srv.conn();
    let set = |c: &mut redis::Connection, k: &str, v: &str| {
        redis::cmd("CONFIG")
            .arg("SET")
            .arg(k)
            .arg(v)
            .query::<()>(c)
            .map_err(|e| e.to_string())
    };
    set(&mut c, "tls-protocols", "TLSv1.3").unwrap();
    assert!(pki.handshake(tls_port, &[&rustls::version::TLS13]).is_ok());
    assert!(pki.handshake(tls_port, &[&rustls::version::TLS12]).is_err());
    assert!(set(&mut c, "tls-protocols", "TLSv1.4")
        .unwrap_err()
        .contains("Unable to update TLS configuration"));

    // OpenSSL cipher names map to rustls suites; unknown ones are refused.
    set(&mut c, "tls-protocols", "TLSv1.2 TLSv1.3").unwrap();
    set(
        &mut c,
        "tls-ciphers",
        "ECDHE-ECDSA-AES128-GCM-SHA256:!aNULL",
    )
    .unwrap();
    set(&mut c, "tls-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256").unwrap();
    set(&mut c, "tls-prefer-server-ciphers", "yes").unwrap();
    assert!(pki.handshake(tls_port, &[&rustls::version::TLS12]).is_ok());
    assert!(pki.handshake(tls_port, &[&rustls::version::TLS13]).is_ok());
    assert!(set(&mut c, "tls-ciphers", "RC4-MD5")
        .unwrap_err()
        .contains("Unable to update TLS configuration"));
    assert!(set(&mut c, "tls-ciphersuites", "TLS_AES_128_CCM_8_SHA256")
        .unwrap_err()
        .contains("Unable to update TLS configuration"));
    // Session cache settings apply.
    set(&mut c, "tls-session-caching", "no").unwrap();
    set(&mut c, "tls-session-cache-size", "100").unwrap();
    assert!(pki.handshake(tls_port, &[&rustls::version::TLS13]).is_ok());
}

/// An encrypted PKCS#8 key (PBES2: PBKDF2-SHA256 + AES-256-CBC, what `openssl pkcs8 -topk8`
/// and OpenSSL 3's `genpkey -aes256` write).
fn write_encrypted_key(pki: &Pki, name: &str, pass: &str) -> String {
    use pkcs8::der::Decode;
    let der = pki.read(&format!("{name}.pk8"));
    let info = pkcs8::PrivateKeyInfo::from_der(&der).unwrap();
    let params =
        pkcs8::pkcs5::pbes2::Parameters::pbkdf2_sha256_aes256cbc(2048, b"tern-salt", &[7u8; 16])
            .unwrap();
    let enc = info.encrypt_with_params(params, pass).unwrap();
    let pem = enc
        .to_pem("ENCRYPTED PRIVATE KEY", pkcs8::LineEnding::LF)
        .unwrap();
    let path = pki.path(&format!("{name}.enc.key"));
    std::fs::write(&path, pem.as_bytes()).unwrap();
    path
}

#[test]
fn encrypted_private_key_with_tls_key_file_pass() {
    let pki = Pki::new("enc");
    let key = write_encrypted_key(&pki, "server", "s3cret");
    let tls_port = free_port();
    let p = tls_port.to_string();
    let (cert, ca) = (pki.path("server.crt"), pki.path("ca.crt"));
    let srv = Server::tern(&[
        "--tls-port",
        &p,
        "--tls-cert-file",
        &cert,
        "--tls-key-file",
        &key,
        "--tls-key-file-pass",
        "s3cret",
        "--tls-ca-cert-file",
        &ca,
    ]);
    assert_eq!(
        redis::cmd("PING")
            .query::<String>(&mut pki.conn(tls_port))
            .unwrap(),
        "PONG"
    );
    let mut c = srv.conn();
    let e = redis::cmd("CONFIG")
        .arg("SET")
        .arg("tls-key-file-pass")
        .arg("wrong")
        .query::<()>(&mut c)
        .unwrap_err();
    assert!(
        e.to_string().contains("Unable to update TLS configuration"),
        "{e}"
    );

    // A wrong password at start-up stops the server, as Redis does.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tern-server"))
        .args([
            "--port",
            &free_port().to_string(),
            "--save",
            "",
            "--tls-port",
            &free_port().to_string(),
            "--tls-cert-file",
            &cert,
            "--tls-key-file",
            &key,
            "--tls-key-file-pass",
            "wrong",
            "--tls-ca-cert-file",
            &ca,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(log.contains("Failed to load private key"), "{log}");
    assert!(
        log.contains("Failed to configure TLS. Check logs for more info."),
        "{log}"
    );
}

#[test]
fn replica_follows_master_over_tls() {
    let pki = Pki::new("repl");
    let (master, m_tls) = tls_server(&pki, &[]);
    let (replica, r_tls) = tls_server(&pki, &["--tls-replication", "yes"]);
    let mut m = pki.conn(m_tls);
    let _: () = m.set("before", "1").unwrap();
    let mut r = replica.conn();
    let _: () = redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(m_tls)
        .query(&mut r)
        .unwrap();
    wait_for("the replica to sync", Duration::from_secs(10), || {
        r.get::<_, Option<String>>("before").unwrap().as_deref() == Some("1")
    });
    for i in 0..100 {
        let _: () = m.set(format!("k{i}"), i).unwrap();
    }
    wait_for(
        "the stream to reach the replica",
        Duration::from_secs(10),
        || r.get::<_, Option<i64>>("k99").unwrap() == Some(99),
    );
    let info: String = redis::cmd("INFO").arg("replication").query(&mut r).unwrap();
    assert_eq!(info_value(&info, "master_link_status").unwrap(), "up");
    // The replica announces its tls-port, as Redis does under tls-replication.
    let minfo: String = redis::cmd("INFO")
        .arg("replication")
        .query(&mut master.conn())
        .unwrap();
    let slave0 = info_value(&minfo, "slave0").unwrap();
    assert!(slave0.contains(&format!("port={r_tls},")), "{slave0}");

    // Without tls-replication the replica speaks plain TCP to the TLS port: no link.
    let (plain, _) = tls_server(&pki, &[]);
    let mut p = plain.conn();
    let _: () = redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(m_tls)
        .query(&mut p)
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let info: String = redis::cmd("INFO").arg("replication").query(&mut p).unwrap();
    assert_eq!(info_value(&info, "master_link_status").unwrap(), "down");
    assert_eq!(p.get::<_, Option<String>>("before").unwrap(), None);
}

#[test]
fn migrate_uses_tls_under_tls_cluster() {
    let pki = Pki::new("migrate");
    let (src, _) = tls_server(&pki, &["--tls-cluster", "yes"]);
    let (dst, dst_tls) = tls_server(&pki, &[]);
    let mut s = src.conn();
    let _: () = s.set("mk", "mv").unwrap();
    let r: String = redis::cmd("MIGRATE")
        .arg("127.0.0.1")
        .arg(dst_tls)
        .arg("mk")
        .arg(0)
        .arg(5000)
        .query(&mut s)
        .unwrap();
    assert_eq!(r, "OK");
    assert_eq!(dst.conn().get::<_, String>("mk").unwrap(), "mv");
    assert_eq!(s.get::<_, Option<String>>("mk").unwrap(), None);

    // Without tls-cluster MIGRATE speaks plain TCP, and the TLS port cannot answer it.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("tls-cluster")
        .arg("no")
        .query(&mut s)
        .unwrap();
    let _: () = s.set("mk2", "v").unwrap();
    // (Another spelling of the host: the cached TLS connection to 127.0.0.1 stays in use
    // until it idles out, as Redis's cached migration sockets do.)
    let e = redis::cmd("MIGRATE")
        .arg("localhost")
        .arg(dst_tls)
        .arg("mk2")
        .arg(0)
        .arg(500)
        .query::<String>(&mut s)
        .unwrap_err();
    assert!(e.to_string().contains("IOERR"), "{e}");
}

fn redis_src_bin(name: &str) -> Option<PathBuf> {
    let base = std::env::var("REDIS_SRC")
        .map(PathBuf::from)
        .or_else(|_| std::env::var("HOME").map(|h| Path::new(&h).join("redis-7.2.6")))
        .ok()?;
    let p = base.join("src").join(name);
    p.exists().then_some(p)
}

/// A binary built with TLS support (`--tls` in its help), or None to skip.
fn tls_capable(path: PathBuf) -> Option<PathBuf> {
    let out = std::process::Command::new(&path)
        .arg("--help")
        .output()
        .ok()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text.contains("--tls").then_some(path)
}

#[test]
fn redis_cli_tls_talks_to_tern() {
    let cli = redis_src_bin("redis-cli")
        .or_else(|| Some(PathBuf::from("/usr/bin/redis-cli")).filter(|p| p.exists()))
        .and_then(tls_capable);
    let Some(cli) = cli else {
        eprintln!("skipped: no redis-cli with TLS support");
        return;
    };
    let pki = Pki::new("cli");
    let (_srv, tls_port) = tls_server(&pki, &[]);
    let run = |args: &[&str]| {
        let out = std::process::Command::new(&cli)
            .args([
                "--tls",
                "--cert",
                &pki.path("client.crt"),
                "--key",
                &pki.path("client.key"),
                "--cacert",
                &pki.path("ca.crt"),
                "-p",
                &tls_port.to_string(),
            ])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(run(&["SET", "clikey", "hello"]), "OK");
    assert_eq!(run(&["GET", "clikey"]), "hello");
    assert_eq!(run(&["DBSIZE"]), "1");
}

#[test]
fn redis_7_2_replica_follows_tern_over_tls() {
    let Some(redis) = redis_src_bin("redis-server").and_then(|p| {
        let out = std::process::Command::new(&p)
            .args(["--port", "0", "--save", "", "--tls-port", "1"])
            .args([
                "--tls-cert-file",
                "/nonexistent",
                "--tls-key-file",
                "/nonexistent",
            ])
            .output()
            .ok()?;
        // Either way it exits at once: a build with TLS cannot load the certificate, one
        // without says it has no TLS support.
        let text = String::from_utf8_lossy(&out.stderr).to_string()
            + &String::from_utf8_lossy(&out.stdout);
        (!text.contains("TLS support")).then_some(p)
    }) else {
        eprintln!("skipped: no redis-server 7.2 built with TLS");
        return;
    };
    let pki = Pki::new("redisrepl");
    let (_master, m_tls) = tls_server(&pki, &[]);
    let mut m = pki.conn(m_tls);
    let _: () = m.set("a", "1").unwrap();
    let port = free_port();
    let dir = pki.dir.join("redis");
    std::fs::create_dir_all(&dir).unwrap();
    struct KillOnDrop(std::process::Child);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _child = KillOnDrop(
        std::process::Command::new(redis)
            .current_dir(&dir)
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--tls-replication",
                "yes",
                "--tls-cert-file",
                &pki.path("server.crt"),
                "--tls-key-file",
                &pki.path("server.key"),
                "--tls-ca-cert-file",
                &pki.path("ca.crt"),
                "--replicaof",
                "127.0.0.1",
                &m_tls.to_string(),
            ])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut r = loop {
            if let Ok(c) = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
                .unwrap()
                .get_connection()
            {
                break c;
            }
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut m = pki.conn(m_tls);
        let _: () = m.set("b", "2").unwrap();
        wait_for("redis-server to replicate", Duration::from_secs(10), || {
            r.get::<_, Option<String>>("b").unwrap().as_deref() == Some("2")
        });
        assert_eq!(r.get::<_, String>("a").unwrap(), "1");
        let v: Value = redis::cmd("ROLE").query(&mut r).unwrap();
        assert!(format!("{v:?}").contains("connected"), "{v:?}");
    }
}
