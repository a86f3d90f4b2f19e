//! `clipforge cluster init-certs DIR NODE...`: the certificates of mutual
//! TLS between nodes (`cluster.tls`, on by default in a cluster): a CA
//! (`ca.pem`, `ca.key`) and, per node, a certificate it signed
//! (`<node>.pem`, `<node>.key`) naming the hosts peers dial the node at.
//! Run again with the same DIR to add nodes: the CA there is reused, and
//! existing files are never overwritten. Keys are written readable by
//! their owner only.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// Why `cluster init-certs` wrote no (or not every) file.
#[derive(Debug, thiserror::Error)]
enum CertsError {
    #[error("{0:?}: expected NAME or NAME=HOST[,HOST...] (letters, digits, '-', '_', '.')")]
    Node(String),
    /// A file or the directory could not be read or written.
    #[error("{}: {source}", path.display())]
    File {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The CA's key is there but its certificate is not.
    #[error("{} is missing", .0.display())]
    Missing(PathBuf),
    #[error("{} exists: remove it to make a new certificate for {name}", path.display())]
    Exists { path: PathBuf, name: String },
    /// rcgen refused a key, a host name or a signature (`what` says which).
    #[error("{what}: {source}")]
    Certificate {
        what: String,
        #[source]
        source: rcgen::Error,
    },
}

fn file_error(path: &Path) -> impl FnOnce(std::io::Error) -> CertsError + '_ {
    move |source| CertsError::File {
        path: path.to_path_buf(),
        source,
    }
}

fn certificate_error(what: impl Into<String>) -> impl FnOnce(rcgen::Error) -> CertsError {
    let what = what.into();
    move |source| CertsError::Certificate { what, source }
}

#[derive(clap::Args, Debug)]
pub struct InitCertsArgs {
    /// Directory for the files (created when missing).
    pub dir: PathBuf,
    /// `NAME` or `NAME=HOST[,HOST...]`: a node (its `node.name`) and the
    /// host names or IP addresses its peers reach it at (its
    /// `cluster.advertise_host`; default: NAME).
    #[arg(required = true)]
    pub nodes: Vec<String>,
    /// How long the certificates are valid, in days.
    #[arg(long, default_value_t = 825)]
    pub days: u32,
}

/// One node of the command line: its name and the hosts its certificate names.
fn parse_node(arg: &str) -> Result<(String, Vec<String>), CertsError> {
    let (name, hosts) = match arg.split_once('=') {
        Some((n, h)) => (
            n.trim(),
            h.split(',').map(|h| h.trim().to_string()).collect(),
        ),
        None => (arg.trim(), vec![arg.trim().to_string()]),
    };
    let valid = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
    };
    if !valid(name) || name.contains(':') || hosts.iter().any(|h| !valid(h)) {
        return Err(CertsError::Node(arg.to_string()));
    }
    Ok((name.to_string(), hosts))
}

/// Writes `contents` to a new file (never over an existing one); `secret`
/// files are readable by their owner only.
fn write_new(path: &Path, contents: &str, secret: bool) -> Result<(), CertsError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(if secret { 0o600 } else { 0o644 });
    }
    let mut file = options.open(path).map_err(file_error(path))?;
    file.write_all(contents.as_bytes())
        .map_err(file_error(path))
}

fn validity(params: &mut CertificateParams, days: u32) {
    let now = rcgen::date_time_ymd(1970, 1, 1)
        + std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
    // A little in the past, for clocks that lag.
    params.not_before = now - std::time::Duration::from_secs(3600);
    params.not_after = now + std::time::Duration::from_secs(u64::from(days) * 86_400);
}

/// The CA's parameters. A node certificate names its issuer by these
/// (subject) and by the CA key, so the same parameters with the key kept
/// in `ca.key` sign for the `ca.pem` written by an earlier run.
fn ca_params(days: u32) -> CertificateParams {
    let mut params = CertificateParams::default();
    params
        .distinguished_name
        .push(DnType::CommonName, "Clipforge cluster CA");
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    validity(&mut params, days);
    params
}

/// The CA in `dir`: the one there (its key signs), else a new one
/// written there.
fn certificate_authority(dir: &Path, days: u32) -> Result<Issuer<'static, KeyPair>, CertsError> {
    let (cert_path, key_path) = (dir.join("ca.pem"), dir.join("ca.key"));
    if cert_path.exists() || key_path.exists() {
        if !cert_path.exists() {
            return Err(CertsError::Missing(cert_path));
        }
        let pem = std::fs::read_to_string(&key_path).map_err(file_error(&key_path))?;
        let key =
            KeyPair::from_pem(&pem).map_err(certificate_error(key_path.display().to_string()))?;
        println!("using the CA in {}", cert_path.display());
        return Ok(Issuer::new(ca_params(days), key));
    }
    let key = KeyPair::generate().map_err(certificate_error("generating the CA key"))?;
    let params = ca_params(days);
    let cert = params
        .self_signed(&key)
        .map_err(certificate_error("signing the CA"))?;
    write_new(&key_path, &key.serialize_pem(), true)?;
    write_new(&cert_path, &cert.pem(), false)?;
    println!("wrote {} and {}", cert_path.display(), key_path.display());
    Ok(Issuer::new(params, key))
}

fn node_certificate(
    dir: &Path,
    ca: &Issuer<'_, KeyPair>,
    name: &str,
    hosts: Vec<String>,
    days: u32,
) -> Result<(), CertsError> {
    let (cert_path, key_path) = (
        dir.join(format!("{name}.pem")),
        dir.join(format!("{name}.key")),
    );
    if cert_path.exists() || key_path.exists() {
        return Err(CertsError::Exists {
            path: cert_path,
            name: name.to_string(),
        });
    }
    let key = KeyPair::generate().map_err(certificate_error(format!("generating {name}'s key")))?;
    let mut params = CertificateParams::new(hosts.clone())
        .map_err(certificate_error(format!("{name}: {hosts:?}")))?;
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    params.use_authority_key_identifier_extension = true;
    validity(&mut params, days);
    let cert = params
        .signed_by(&key, ca)
        .map_err(certificate_error(format!("signing {name}'s certificate")))?;
    write_new(&key_path, &key.serialize_pem(), true)?;
    write_new(&cert_path, &cert.pem(), false)?;
    println!(
        "wrote {} and {} (hosts: {})",
        cert_path.display(),
        key_path.display(),
        hosts.join(", ")
    );
    Ok(())
}

fn init_certs(args: &InitCertsArgs) -> Result<(), CertsError> {
    let nodes = args
        .nodes
        .iter()
        .map(|n| parse_node(n))
        .collect::<Result<Vec<_>, _>>()?;
    std::fs::create_dir_all(&args.dir).map_err(file_error(&args.dir))?;
    let ca = certificate_authority(&args.dir, args.days)?;
    for (name, hosts) in nodes {
        node_certificate(&args.dir, &ca, &name, hosts, args.days)?;
    }
    let dir = args.dir.display();
    println!(
        "on each node set cluster.tls_ca = \"{dir}/ca.pem\", cluster.tls_cert = \
         \"{dir}/<node>.pem\", cluster.tls_key = \"{dir}/<node>.key\" \
         (CLIPFORGE_CLUSTER_TLS_CA, _TLS_CERT, _TLS_KEY); keep ca.key off the nodes"
    );
    Ok(())
}

pub fn run(args: InitCertsArgs) -> ExitCode {
    match init_certs(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_arguments_name_their_hosts() {
        assert_eq!(
            parse_node("node-a").unwrap(),
            ("node-a".into(), vec!["node-a".into()])
        );
        assert_eq!(
            parse_node("node-b=10.0.0.5,b.internal").unwrap(),
            (
                "node-b".into(),
                vec!["10.0.0.5".into(), "b.internal".into()]
            )
        );
        for bad in ["", "a b", "n=", "../x", "n=h/1"] {
            let err = parse_node(bad).unwrap_err();
            assert!(matches!(&err, CertsError::Node(a) if a == bad), "{bad:?}");
            assert!(
                err.to_string().contains("expected NAME or NAME=HOST"),
                "{err}"
            );
        }
    }

    /// Node certificates made in two runs (the second reusing the CA)
    /// complete a mutual TLS handshake with each other.
    #[tokio::test]
    async fn certificates_made_in_two_runs_share_the_ca_and_shake_hands() {
        let dir = tempfile::tempdir().unwrap();
        let first = InitCertsArgs {
            dir: dir.path().to_path_buf(),
            nodes: vec!["a=127.0.0.1".into()],
            days: 2,
        };
        init_certs(&first).unwrap();
        let later = InitCertsArgs {
            nodes: vec!["b=127.0.0.1,b.local".into()],
            ..first
        };
        init_certs(&later).unwrap();
        let again = init_certs(&later).unwrap_err();
        assert!(
            matches!(&again, CertsError::Exists { name, .. } if name == "b"),
            "never overwrites a node's files: {again}"
        );
        assert!(
            again
                .to_string()
                .ends_with("b.pem exists: remove it to make a new certificate for b"),
            "{again}"
        );
        let p = |f: &str| dir.path().join(f);
        let tls = |node: &str| {
            clipforge_actors::cluster::ClusterTls::from_pem(
                &p(&format!("{node}.pem")),
                &p(&format!("{node}.key")),
                &p("ca.pem"),
            )
            .unwrap()
        };
        let (a, b) = (tls("a"), tls("b"));
        let (client, server) = tokio::io::duplex(64 * 1024);
        let acceptor = a.acceptor.clone();
        let accepted = tokio::spawn(async move { acceptor.accept(server).await.map(drop) });
        let connected = b
            .connector
            .connect("127.0.0.1".try_into().unwrap(), client)
            .await;
        assert!(connected.is_ok(), "{:?}", connected.err());
        accepted.await.unwrap().expect("a accepts b's certificate");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            for key in ["ca.key", "a.key", "b.key"] {
                let mode = std::fs::metadata(p(key)).unwrap().permissions().mode();
                assert_eq!(mode & 0o777, 0o600, "{key}");
            }
        }
    }
}
