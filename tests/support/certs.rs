//! Test certificates made in the test with rcgen: a CA, server certificates it issues
//! for chosen names, and client certificates for mutual TLS. Nothing is read from or
//! trusted on the host.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    SanType,
};

/// A certificate authority that issues test certificates.
pub(crate) struct TestCa {
    /// The CA certificate, PEM.
    pub(crate) pem: String,
    issuer: Issuer<'static, KeyPair>,
}

/// An issued certificate and its private key, both PEM.
pub(crate) struct Issued {
    /// The certificate.
    pub(crate) cert_pem: String,
    /// Its private key.
    pub(crate) key_pem: String,
}

impl TestCa {
    /// A new self-signed CA named `name`.
    pub(crate) fn new(name: &str) -> TestCa {
        let key = KeyPair::generate().expect("generate a CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).expect("self-sign the CA");
        TestCa {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A server certificate for `names` (DNS names or IP addresses).
    pub(crate) fn server(&self, names: &[&str]) -> Issued {
        self.issue(names, ExtendedKeyUsagePurpose::ServerAuth)
    }

    /// A client certificate (for mutual TLS).
    pub(crate) fn client(&self) -> Issued {
        self.issue(
            &["headroom-test-client"],
            ExtendedKeyUsagePurpose::ClientAuth,
        )
    }

    fn issue(&self, names: &[&str], usage: ExtendedKeyUsagePurpose) -> Issued {
        let key = KeyPair::generate().expect("generate a key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.distinguished_name.push(DnType::CommonName, names[0]);
        for name in names {
            params.subject_alt_names.push(match name.parse() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName((*name).try_into().expect("a DNS name")),
            });
        }
        params.extended_key_usages = vec![usage];
        let cert = params.signed_by(&key, &self.issuer).expect("issue");
        Issued {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

/// Writes `text` to `dir/name` and returns the path.
pub(crate) fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write a PEM file");
    path
}

/// A self-signed certificate made as most people make one, with the real `openssl`
/// command: `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes
/// -days 30 -subj /CN=CN -addext subjectAltName=SAN`. openssl marks it as its own CA
/// (`basicConstraints CA:TRUE`). `None` (a skip, or a failure under
/// `HEADROOM_REQUIRE_ALL`) when openssl is not installed (`scripts/test.sh` installs it).
pub(crate) fn openssl_self_signed(dir: &Path, name: &str, cn: &str, san: &str) -> Option<Issued> {
    let (cert, key) = (
        dir.join(format!("{name}.pem")),
        dir.join(format!("{name}.key")),
    );
    let made = std::process::Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .arg("ec_paramgen_curve:prime256v1")
        .args(["-nodes", "-days", "30", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .args(["-subj", &format!("/CN={cn}"), "-addext"])
        .arg(format!("subjectAltName={san}"))
        .output();
    let made = super::require("openssl (the command)", made)?;
    assert!(
        made.status.success(),
        "openssl req failed: {}",
        String::from_utf8_lossy(&made.stderr)
    );
    let read = |p: &Path| std::fs::read_to_string(p).expect("openssl wrote the file");
    Some(Issued {
        cert_pem: read(&cert),
        key_pem: read(&key),
    })
}
