//! TLS for the tests: a CA, server and client certificates made with rcgen, and a TLS-only
//! redis-server.

use std::path::PathBuf;

use super::cluster::Node;

impl Node {
    /// Starts a TLS-only redis-server (`--port 0 --tls-port <port>`) with `certs`' server
    /// certificate, requiring client certificates signed by their CA.
    pub async fn start_tls(dir: &std::path::Path, certs: &Certificates) -> Self {
        let path = |p: &PathBuf| p.display().to_string();
        let args: Vec<String> = vec![
            "--port".into(),
            "0".into(),
            "--tls-port".into(),
            "{port}".into(),
            "--bind".into(),
            "127.0.0.1".into(),
            "--tls-cert-file".into(),
            path(&certs.server_cert),
            "--tls-key-file".into(),
            path(&certs.server_key),
            "--tls-ca-cert-file".into(),
            path(&certs.ca),
            "--tls-auth-clients".into(),
            "yes".into(),
            "--save".into(),
            "".into(),
            "--appendonly".into(),
            "no".into(),
        ];
        Self::start_with(dir, &args, false, Some(certs.redis())).await
    }
}

/// A CA, a server certificate for 127.0.0.1/localhost and a client certificate, as PEM files.
pub struct Certificates {
    pub dir: PathBuf,
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    /// A CA that signed nothing here: trusting it alone must fail.
    pub other_ca: PathBuf,
}

impl Certificates {
    /// The CA and client certificate, as redis-rs takes them.
    pub fn redis(&self) -> redis::TlsCertificates {
        redis::TlsCertificates {
            client_tls: Some(redis::ClientTlsConfig {
                client_cert: std::fs::read(&self.client_cert).unwrap(),
                client_key: std::fs::read(&self.client_key).unwrap(),
            }),
            root_cert: Some(std::fs::read(&self.ca).unwrap()),
        }
    }

    pub fn make(dir: &std::path::Path) -> Self {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
        let write = |name: &str, pem: String| {
            let path = dir.join(name);
            std::fs::write(&path, pem).unwrap();
            path
        };
        let ca = |cn: &str| {
            let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            params.distinguished_name.push(rcgen::DnType::CommonName, cn);
            let key = KeyPair::generate().unwrap();
            let cert = params.self_signed(&key).unwrap();
            (cert, key, params)
        };
        let (ca_cert, ca_key, ca_params) = ca("baton test CA");
        let (other_cert, ..) = ca("another CA");
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let leaf = |names: Vec<String>| {
            let params = CertificateParams::new(names).unwrap();
            let key = KeyPair::generate().unwrap();
            let cert = params.signed_by(&key, &issuer).unwrap();
            (cert.pem(), key.serialize_pem())
        };
        let (server_cert, server_key) = leaf(vec!["localhost".into(), "127.0.0.1".into()]);
        let (client_cert, client_key) = leaf(vec!["baton-client".into()]);
        Self {
            dir: dir.to_path_buf(),
            ca: write("ca.pem", ca_cert.pem()),
            server_cert: write("server.pem", server_cert),
            server_key: write("server.key", server_key),
            client_cert: write("client.pem", client_cert),
            client_key: write("client.key", client_key),
            other_ca: write("other-ca.pem", other_cert.pem()),
        }
    }
}
