//! `GET /experiments/{id}/files/{*path}`: a file of one experiment (logs, reports, charts), served only
//! from inside `data-dir/experiments/{id}/`. What is there was partly written by code under test (a
//! trial's log, a warp server's files), which may swap a folder for a link while a download runs. So the
//! path is checked as text (no `..`, no absolute or hidden parts), then walked one component at a time
//! from directory handles, each opened with `O_NOFOLLOW` (a link anywhere, even one swapped in mid-walk,
//! refuses the download), and the file is served from the handle that was checked. The database's files
//! are never opened (closing any handle to an SQLite file drops the server's locks on it): a name or an
//! inode that is one of them is refused before `open`. Who may read which file is
//! `Principal::may_read_file`.

use crate::api::error::{ApiError, ApiResult};
use crate::auth::Principal;
use crate::state::AppState;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue};
use axum::response::Response;
use axum::Extension;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, PathBuf};

/// The relative path as safe components, or why it is refused.
pub fn checked_relative(path: &str) -> Result<PathBuf, String> {
    if path.is_empty() || path.len() > 1024 {
        return Err("give a file path of 1–1024 characters".into());
    }
    let mut out = PathBuf::new();
    for part in std::path::Path::new(path).components() {
        match part {
            Component::Normal(p) if !p.to_string_lossy().starts_with('.') => out.push(p),
            _ => {
                return Err(format!(
                    "{:?} is not a plain path inside the experiment (no '..', '.', '/' prefix or hidden names)",
                    crate::api::error::quoted_prefix(path)
                ))
            }
        }
    }
    if path.contains('\\') || path.contains('\0') {
        return Err(format!("{:?} contains a backslash or NUL", crate::api::error::quoted_prefix(path)));
    }
    Ok(out)
}

/// Names SQLite gives a database's files.
fn is_database_name(name: &[u8]) -> bool {
    let name = String::from_utf8_lossy(name).to_ascii_lowercase();
    [".db", ".db-wal", ".db-shm", ".db-journal", ".sqlite", ".sqlite3", "-wal", "-shm", "-journal"].iter().any(|end| name.ends_with(end))
}

/// (device, inode) of a path, when it exists.
fn identity(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Why a walk did not end at a regular file.
#[derive(Debug, PartialEq, Eq)]
pub enum Walk {
    /// Nothing there (or a link, a folder, a database file: never told apart to the caller).
    NotFound,
    /// A link where the walk expected a folder or the file: refused (logged).
    Link,
}

fn openat(dir: &OwnedFd, name: &[u8], flags: libc::c_int) -> std::io::Result<OwnedFd> {
    let c = CString::new(name).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: openat(2) on a descriptor this function borrows and a NUL-terminated name; the returned
    // descriptor is owned from here.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), flags | libc::O_CLOEXEC | libc::O_NOFOLLOW) };
    if fd < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

fn stat_at(dir: &OwnedFd, name: &[u8]) -> std::io::Result<libc::stat> {
    let c = CString::new(name).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstatat(2) fills `st`, which lives on this stack frame; the link itself is described.
    let rc = unsafe { libc::fstatat(dir.as_raw_fd(), c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    if rc != 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(st)
    }
}

/// Opens `relative` under `root` without following a link anywhere on the way, and refuses the
/// database's files (`forbidden`, by (device, inode)) and any database-looking name before opening.
pub fn open_beneath(root: &std::path::Path, relative: &std::path::Path, forbidden: &[(u64, u64)]) -> Result<std::fs::File, Walk> {
    let root_c = CString::new(root.as_os_str().as_bytes()).map_err(|_| Walk::NotFound)?;
    // SAFETY: open(2) of the experiment's folder (a path Arbiter made); owned from here.
    let fd = unsafe { libc::open(root_c.as_ptr(), libc::O_DIRECTORY | libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW) };
    if fd < 0 {
        return Err(Walk::NotFound);
    }
    let mut dir = unsafe { OwnedFd::from_raw_fd(fd) };
    let parts: Vec<&[u8]> = relative.components().map(|c| c.as_os_str().as_bytes()).collect();
    let link = |e: &std::io::Error| if e.raw_os_error() == Some(libc::ELOOP) { Walk::Link } else { Walk::NotFound };
    for (i, name) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        if !last {
            if stat_at(&dir, name).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK) {
                return Err(Walk::Link);
            }
            // A link swapped in after that look is refused by O_NOFOLLOW (ELOOP, or ENOTDIR with O_DIRECTORY).
            dir = openat(&dir, name, libc::O_DIRECTORY | libc::O_RDONLY).map_err(|e| match e.raw_os_error() {
                Some(libc::ENOTDIR) => Walk::Link,
                _ => link(&e),
            })?;
            continue;
        }
        if is_database_name(name) {
            return Err(Walk::NotFound);
        }
        let st = stat_at(&dir, name).map_err(|_| Walk::NotFound)?;
        if st.st_mode & libc::S_IFMT == libc::S_IFLNK {
            return Err(Walk::Link);
        }
        if st.st_mode & libc::S_IFMT != libc::S_IFREG || forbidden.contains(&(st.st_dev, st.st_ino)) {
            return Err(Walk::NotFound);
        }
        // Non-blocking: a FIFO swapped in after the check cannot hang the server.
        let file = openat(&dir, name, libc::O_RDONLY | libc::O_NONBLOCK).map_err(|e| link(&e))?;
        let file = std::fs::File::from(file);
        let meta = file.metadata().map_err(|_| Walk::NotFound)?;
        use std::os::unix::fs::MetadataExt;
        if !meta.is_file() || forbidden.contains(&(meta.dev(), meta.ino())) {
            return Err(Walk::NotFound);
        }
        return Ok(file);
    }
    Err(Walk::NotFound)
}

/// The content type a file is served with, by its extension.
fn content_type(name: &std::path::Path) -> &'static str {
    match name.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "txt" | "log" | "env" => "text/plain; charset=utf-8",
        "csv" => "text/csv; charset=utf-8",
        "json" => "application/json",
        "md" => "text/markdown; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "html" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

pub async fn download(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((id, path)): Path<(i64, String)>,
) -> ApiResult<Response> {
    let not_found = || ApiError::NotFound(format!("experiment {id} has no file {:?}", crate::api::error::quoted_prefix(&path)));
    let relative = checked_relative(&path).map_err(ApiError::BadRequest)?;
    principal.may_read_file(id, &relative.to_string_lossy()).map_err(ApiError::Forbidden)?;
    let root = engine::experiment_dir(&state.data_dir, id);
    let forbidden: Vec<(u64, u64)> = ["arbiter.db", "arbiter.db-wal", "arbiter.db-shm", "arbiter.db-journal"]
        .iter()
        .filter_map(|name| identity(&state.data_dir.join(name)))
        .collect();
    let opened = {
        let relative = relative.clone();
        tokio::task::spawn_blocking(move || open_beneath(&root, &relative, &forbidden))
            .await
            .map_err(|e| ApiError::Internal(e.to_string()))?
    };
    let file = match opened {
        Ok(f) => f,
        Err(Walk::Link) => {
            tracing::warn!(id, path, "a download met a link inside the experiment's directory; refused");
            return Err(not_found());
        }
        Err(Walk::NotFound) => return Err(not_found()),
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let reader = tokio::fs::File::from_std(file);
    let stream = futures_util::stream::unfold(reader, |mut reader| async move {
        use tokio::io::AsyncReadExt;
        let mut buf = vec![0u8; 64 * 1024];
        match reader.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok::<_, std::io::Error>(bytes::Bytes::from(buf)), reader))
            }
            Err(e) => Some((Err(e), reader)),
        }
    });
    let mut response = Response::new(Body::from_stream(stream));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type(&relative)));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // Whatever the file holds, it never runs as a page of this site.
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("sandbox; default-src 'none'"));
    let is_inline = matches!(relative.extension().and_then(|e| e.to_str()), Some("txt" | "log" | "csv" | "json" | "md" | "svg" | "png"));
    if !is_inline {
        headers.insert(header::CONTENT_DISPOSITION, HeaderValue::from_static("attachment"));
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_paths() {
        assert_eq!(checked_relative("logs/trial-1.log").unwrap(), std::path::PathBuf::from("logs/trial-1.log"));
        for bad in ["", "../secret", "logs/../../x", "/etc/passwd", ".env", "logs/.hidden", "a\\..\\b", "./x"] {
            assert!(checked_relative(bad).is_err(), "{bad:?} must be refused");
        }
    }
}

#[cfg(test)]
mod walk_tests {
    use super::*;

    #[test]
    fn links_anywhere_and_database_files_are_never_opened() {
        let tmp = std::env::temp_dir().join(format!("arbiter-walk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let root = tmp.join("experiments/7");
        std::fs::create_dir_all(root.join("logs")).unwrap();
        std::fs::write(root.join("logs/trial-1.log"), "hello").unwrap();
        std::fs::write(tmp.join("arbiter.db"), "SQLite format 3").unwrap();
        std::os::unix::fs::symlink(tmp.join("arbiter.db"), root.join("logs/db")).unwrap();
        std::os::unix::fs::symlink(&tmp, root.join("up")).unwrap();
        std::fs::hard_link(tmp.join("arbiter.db"), root.join("logs/copy")).unwrap();
        let forbidden = vec![identity(&tmp.join("arbiter.db")).unwrap()];
        let open = |p: &str| open_beneath(&root, std::path::Path::new(p), &forbidden);
        let mut text = String::new();
        std::io::Read::read_to_string(&mut open("logs/trial-1.log").unwrap(), &mut text).unwrap();
        assert_eq!(text, "hello");
        assert_eq!(open("logs/db").unwrap_err(), Walk::Link);
        assert_eq!(open("up/arbiter.db").unwrap_err(), Walk::Link, "a linked folder on the way");
        std::fs::write(root.join("logs/other.db-wal"), "x").unwrap();
        assert_eq!(open("logs/other.db-wal").unwrap_err(), Walk::NotFound, "a database's name is never opened");
        assert_eq!(open("up/experiments/7/logs/trial-1.log").unwrap_err(), Walk::Link, "a linked folder on the way");
        assert_eq!(open("logs/copy").unwrap_err(), Walk::NotFound, "a hard link to the database is refused by its inode");
        assert_eq!(open("logs").unwrap_err(), Walk::NotFound, "a folder is not a file");
        assert_eq!(open("nothing").unwrap_err(), Walk::NotFound);
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
