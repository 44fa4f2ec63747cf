//! The TLS client settings: rustls with the ring provider (aws-lc-rs would need cmake and builds
//! slowly), the Mozilla roots compiled in (no dependency on the system's certificate store), and
//! the certificates of a PEM file for a private CA or a self-signed server.

use std::path::Path;
use std::sync::Arc;

use tokio_rustls::rustls::pki_types::CertificateDer;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};

/// The web PKI roots plus the certificates of `ca_cert`; errors name the file (`--ca-cert`).
pub fn config(ca_cert: Option<&Path>) -> Result<Arc<ClientConfig>, String> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = ca_cert {
        let bad = |e: &dyn std::fmt::Display| format!("--ca-cert {}: {e}", path.display());
        let mut added = 0;
        for cert in CertificateDer::pem_file_iter(path).map_err(|e| bad(&e))? {
            roots.add(cert.map_err(|e| bad(&e))?).map_err(|e| bad(&e))?;
            added += 1;
        }
        if added == 0 {
            return Err(bad(&"no PEM certificate in the file"));
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    // The client speaks HTTP/1.1; say so, so that a server never picks h2.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
