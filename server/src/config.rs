//! Turning `serve` flags into a checked configuration, with errors that name the setting to change.

use crate::cli::{ServeArgs, StoreArgs};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("data dir {path} cannot be used: {reason}. Set ARBITER_DATA_DIR (or --data-dir) to a writable directory")]
    DataDir { path: String, reason: String },
    #[error("ARBITER_PUBLIC_URL (or --public-url) {0:?} is not of the form http(s)://HOST[:PORT]")]
    PublicUrl(String),
    #[error("{0} must be at least 1")]
    Zero(&'static str),
    #[error("ARBITER_METRICS_TOKEN is set but shorter than 24 characters; use a long random value")]
    MetricsToken,
    #[error("ARBITER_PYTHON (or --python) {0} is not a file; point it at a Python 3.11 (scripts/setup.sh makes .venv/bin/python)")]
    Python(String),
}

#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub addr: SocketAddr,
    pub database_url: String,
    pub data_dir: PathBuf,
    pub site_root: PathBuf,
    pub suites_dir: PathBuf,
    pub finelog_url: Option<String>,
    /// The Python for `{python}` in suite commands and for an owned finelog server.
    pub python: Option<PathBuf>,
    /// `scheme://host[:port]` users reach Arbiter at, when configured.
    pub public_origin: Option<String>,
    pub session_idle: std::time::Duration,
    pub session_max: std::time::Duration,
    pub retention: crate::retention::Retention,
    /// SHA-256 of ARBITER_METRICS_TOKEN (read from the environment only: a secret never goes in argv).
    pub metrics_token_digest: Option<String>,
    /// An admin allowed local pipeline trials to run without a sandbox where there is none.
    pub unsandboxed_trials: bool,
    /// `--engine-cap`.
    pub cluster_cap: i64,
    /// Reverse proxies whose X-Forwarded-For is believed.
    pub trusted_proxies: Vec<crate::auth::client_addr::Cidr>,
    /// The `arbiter` binary that supervises trials and hosts the owned finelog (this one).
    pub arbiter_exe: PathBuf,
}

impl ServeConfig {
    pub fn from_args(args: ServeArgs) -> Result<ServeConfig, ConfigError> {
        let (data_dir, database_url) = args.store.resolve()?;
        let public_origin = args.public_url.as_deref().filter(|u| !u.trim().is_empty()).map(parse_origin).transpose()?;
        let hours = |h: u32, name: &'static str| {
            if h == 0 {
                Err(ConfigError::Zero(name))
            } else {
                Ok(std::time::Duration::from_secs(u64::from(h) * 3600))
            }
        };
        let metrics_token_digest = match std::env::var("ARBITER_METRICS_TOKEN") {
            Ok(t) if t.trim().is_empty() => None,
            Ok(t) if t.trim().len() < 24 => return Err(ConfigError::MetricsToken),
            Ok(t) => Some(crate::auth::token::digest(&t)),
            Err(_) => None,
        };
        Ok(ServeConfig {
            addr: args.addr,
            database_url,
            data_dir,
            site_root: args.site_root,
            suites_dir: args.suites_dir,
            unsandboxed_trials: args.unsandboxed_trials,
            cluster_cap: args.cluster_cap,
            trusted_proxies: args.trusted_proxies,
            finelog_url: args.finelog_url.filter(|u| !u.trim().is_empty()),
            python: resolve_python(args.python)?,
            public_origin,
            session_idle: hours(args.session_idle_hours, "ARBITER_SESSION_IDLE_HOURS")?,
            session_max: hours(args.session_max_hours, "ARBITER_SESSION_MAX_HOURS")?,
            retention: crate::retention::Retention::from_args(&args.retention),
            metrics_token_digest,
            arbiter_exe: std::env::current_exe().unwrap_or_else(|_| "arbiter".into()),
        })
    }

    /// The base of links Arbiter prints: the public URL, or the address it listens on.
    pub fn base_url(&self, bound: SocketAddr) -> String {
        self.public_origin.clone().unwrap_or_else(|| format!("http://{bound}"))
    }
}

/// The configured Python (which must exist), else `.venv/bin/python` when present; absolute, but not
/// canonical: a venv's python is a symlink whose target would lose the venv.
fn resolve_python(given: Option<PathBuf>) -> Result<Option<PathBuf>, ConfigError> {
    // Absolute and without `..` (a sandboxed trial sees only the Python environment, so a path through a
    // folder it cannot see would not resolve), but the file itself is kept: a venv's `python` is a symlink
    // whose own path is what makes the venv active.
    let absolute = |p: &Path| {
        let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        match (std::fs::canonicalize(dir), p.file_name()) {
            (Ok(dir), Some(name)) => dir.join(name),
            _ => std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()),
        }
    };
    match given.filter(|p| !p.as_os_str().is_empty()) {
        Some(p) if p.is_file() => Ok(Some(absolute(&p))),
        Some(p) => Err(ConfigError::Python(p.display().to_string())),
        None => Ok(Some(PathBuf::from(".venv/bin/python")).filter(|p| p.is_file()).map(|p| absolute(&p))),
    }
}

/// `https://Host:443/` → `https://host:443`; anything with a path, query or user info is refused.
fn parse_origin(url: &str) -> Result<String, ConfigError> {
    let bad = || ConfigError::PublicUrl(url.to_string());
    let (scheme, rest) = url.trim().split_once("://").ok_or_else(bad)?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return Err(bad());
    }
    let host = rest.strip_suffix('/').unwrap_or(rest);
    let valid = !host.is_empty() && host.chars().all(|c| c.is_ascii_alphanumeric() || "-.:[]".contains(c));
    if !valid {
        return Err(bad());
    }
    Ok(format!("{scheme}://{}", host.to_ascii_lowercase()))
}

impl StoreArgs {
    /// Checks the data dir (creating it when missing) and picks the database: `DATABASE_URL`, or SQLite
    /// at `$ARBITER_DATA_DIR/arbiter.db`.
    pub fn resolve(&self) -> Result<(PathBuf, String), ConfigError> {
        let data_dir = prepare_data_dir(&self.data_dir)?;
        let database_url = match self.database_url.as_deref().filter(|u| !u.trim().is_empty()) {
            Some(url) => url.to_string(),
            None => store::DatabaseUrl::sqlite_file(&data_dir.join("arbiter.db")),
        };
        Ok((data_dir, database_url))
    }

    /// The database URL, as a command-line tool needs it.
    pub fn database_url(&self) -> Result<String, String> {
        self.resolve().map(|(_, url)| url).map_err(|e| e.to_string())
    }
}

/// Creates the data dir if needed and proves it is writable by writing and removing a probe file.
fn prepare_data_dir(path: &Path) -> Result<PathBuf, ConfigError> {
    let err = |reason: String| ConfigError::DataDir { path: path.display().to_string(), reason };
    std::fs::create_dir_all(path).map_err(|e| err(e.to_string()))?;
    let probe = path.join(".arbiter-write-probe");
    std::fs::write(&probe, b"ok").map_err(|e| err(format!("not writable ({e})")))?;
    std::fs::remove_file(&probe).map_err(|e| err(e.to_string()))?;
    path.canonicalize().map_err(|e| err(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(data_dir: PathBuf, database_url: Option<&str>) -> ServeArgs {
        ServeArgs {
            addr: "127.0.0.1:0".parse().unwrap(),
            store: StoreArgs { database_url: database_url.map(String::from), data_dir },
            site_root: "target/site".into(),
            suites_dir: "suites".into(),
            unsandboxed_trials: false,
            cluster_cap: engine::queue::DEFAULT_CLUSTER_CAP,
            trusted_proxies: vec![],
            finelog_url: None,
            python: None,
            public_url: None,
            session_idle_hours: 12,
            session_max_hours: 168,
            retention: crate::cli::RetentionArgs {
                retain_logs_days: 30,
                retain_artifacts_days: 90,
                retain_worktrees_days: 2,
                retain_binaries_days: 14,
            },
        }
    }

    #[test]
    fn public_url_becomes_an_origin() {
        assert_eq!(parse_origin("https://Arbiter.example.com/").unwrap(), "https://arbiter.example.com");
        assert_eq!(parse_origin("http://10.0.0.5:8080").unwrap(), "http://10.0.0.5:8080");
        for bad in ["arbiter.example.com", "ftp://x", "https://x/path", "https://user@x", "https://"] {
            let err = parse_origin(bad).unwrap_err().to_string();
            assert!(err.contains("ARBITER_PUBLIC_URL"), "{bad}: {err}");
        }
    }

    #[test]
    fn sqlite_in_the_data_dir_by_default() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = ServeConfig::from_args(args(tmp.path().join("new/nested"), None)).unwrap();
        assert!(cfg.data_dir.is_dir(), "created when missing");
        assert_eq!(cfg.database_url, format!("sqlite://{}/arbiter.db", cfg.data_dir.display()));
        let blank = ServeConfig::from_args(args(tmp.path().into(), Some("  "))).unwrap();
        assert!(blank.database_url.starts_with("sqlite://"), "a blank DATABASE_URL is no setting");
        let pg = ServeConfig::from_args(args(tmp.path().into(), Some("postgres://a@b/c"))).unwrap();
        assert_eq!(pg.database_url, "postgres://a@b/c");
    }

    #[test]
    fn a_data_dir_under_a_file_is_refused_with_the_setting_named() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("plain-file");
        std::fs::write(&file, "x").unwrap();
        let err = ServeConfig::from_args(args(file.join("sub"), None)).unwrap_err().to_string();
        assert!(err.contains("plain-file/sub") && err.contains("ARBITER_DATA_DIR"), "{err}");
    }
}
