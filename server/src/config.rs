//! Turning `serve` flags into a checked configuration, with errors that name the setting to change.

use crate::cli::{ServeArgs, StoreArgs};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("data dir {path} cannot be used: {reason}. Set ARBITER_DATA_DIR (or --data-dir) to a writable directory")]
    DataDir { path: String, reason: String },
}

#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub addr: SocketAddr,
    pub database_url: String,
    pub data_dir: PathBuf,
    pub site_root: PathBuf,
}

impl ServeConfig {
    pub fn from_args(args: ServeArgs) -> Result<ServeConfig, ConfigError> {
        let (data_dir, database_url) = args.store.resolve()?;
        Ok(ServeConfig { addr: args.addr, database_url, data_dir, site_root: args.site_root })
    }
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
