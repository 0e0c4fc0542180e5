//! `baton dev-certs`: a development CA, a server certificate, a client certificate and an admin
//! token, as files, to try TLS, mutual TLS and tokens on one machine. Not for production: the
//! CA key sits beside the certificates it signed.
//!
//! Public for the `baton` binary's `dev-certs` command, and for programs that need real
//! certificates on loopback without a PKI: the integration tests of TLS, mutual TLS and the
//! CLI's `--ca`/`--cert` flags call [`generate`].

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

use crate::config::{new_token, token_hash};

use crate::error::{Error, Result};

/// What `generate` wrote.
pub struct DevCerts {
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    /// `[[tokens]]` with the admin token's hash: `auth.tokens_file`.
    pub tokens_file: PathBuf,
    /// The admin token itself (written nowhere else).
    pub token: String,
}

fn failed(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Config(format!("dev-certs: {what}: {e}"))
}

/// Writes into `dir`: `ca.pem`/`ca.key`, `server.pem`/`server.key` (valid for `hosts`),
/// `client.pem`/`client.key` (subject common name `client`), and `tokens.toml` with one
/// admin token named `dev-admin`.
pub fn generate(dir: &Path, hosts: &[String], client: &str) -> Result<DevCerts> {
    std::fs::create_dir_all(dir).map_err(|e| failed(&dir.display().to_string(), e))?;
    // Private keys and the tokens file: readable by their owner only (0600); certificates are
    // public.
    let write = |name: &str, text: &str| -> Result<PathBuf> {
        use std::{io::Write, os::unix::fs::OpenOptionsExt};
        let path = dir.join(name);
        let private = name.ends_with(".key") || name == "tokens.toml";
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(if private { 0o600 } else { 0o644 })
            .open(&path)
            .and_then(|mut f| f.write_all(text.as_bytes()).map(|()| f))
            .map_err(|e| failed(&path.display().to_string(), e))?;
        if private {
            // An existing file keeps its mode through open(): set it.
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(|e| failed(&path.display().to_string(), e))?;
        }
        let _ = file.flush();
        Ok(path)
    };
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(|e| failed("CA", e))?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, "Baton development CA");
    let ca_key = KeyPair::generate().map_err(|e| failed("CA key", e))?;
    let ca_cert = ca_params.self_signed(&ca_key).map_err(|e| failed("CA", e))?;
    let ca = write("ca.pem", &ca_cert.pem())?;
    write("ca.key", &ca_key.serialize_pem())?;
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf = |names: Vec<String>, cn: &str| -> Result<(String, String)> {
        let mut params = CertificateParams::new(names).map_err(|e| failed(cn, e))?;
        params.distinguished_name.push(DnType::CommonName, cn);
        let key = KeyPair::generate().map_err(|e| failed(cn, e))?;
        let cert = params.signed_by(&key, &issuer).map_err(|e| failed(cn, e))?;
        Ok((cert.pem(), key.serialize_pem()))
    };
    let (server_pem, server_key_pem) = leaf(hosts.to_vec(), hosts.first().map_or("localhost", |h| h.as_str()))?;
    let (client_pem, client_key_pem) = leaf(vec![client.to_string()], client)?;
    let token = new_token();
    let tokens = format!(
        "# Made by `baton dev-certs`. The token itself is not stored; only its SHA-256.\n\
         [[tokens]]\nname = \"dev-admin\"\nsha256 = \"{}\"\nroles = [\"admin\"]\n",
        token_hash(&token)
    );
    Ok(DevCerts {
        ca,
        server_cert: write("server.pem", &server_pem)?,
        server_key: write("server.key", &server_key_pem)?,
        client_cert: write("client.pem", &client_pem)?,
        client_key: write("client.key", &client_key_pem)?,
        tokens_file: write("tokens.toml", &tokens)?,
        token,
    })
}
