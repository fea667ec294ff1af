//! `GET /experiments/{id}/files/{*path}`: a file of one experiment (logs, reports, charts), served only
//! from inside `data-dir/experiments/{id}/`. The path is checked twice: as text (no `..`, no absolute
//! or hidden parts) and after the filesystem resolved it (so a symlink cannot lead outside). Who may
//! read which file is `Principal::may_read_file`.

use crate::api::error::{ApiError, ApiResult};
use crate::auth::Principal;
use crate::state::AppState;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, Request};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use std::path::{Component, PathBuf};
use tower::ServiceExt;
use tower_http::services::ServeFile;

use engine::experiment_dir;

/// The relative path as safe components, or why it is refused.
pub fn checked_relative(path: &str) -> Result<PathBuf, String> {
    if path.is_empty() || path.len() > 1024 {
        return Err("give a file path of 1–1024 characters".into());
    }
    let mut out = PathBuf::new();
    for part in std::path::Path::new(path).components() {
        match part {
            Component::Normal(p) if !p.to_string_lossy().starts_with('.') => out.push(p),
            _ => return Err(format!("{path:?} is not a plain path inside the experiment (no '..', '.', '/' prefix or hidden names)")),
        }
    }
    if path.contains('\\') || path.contains('\0') {
        return Err(format!("{path:?} contains a backslash or NUL"));
    }
    Ok(out)
}

pub async fn download(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((id, path)): Path<(i64, String)>,
    req: Request<Body>,
) -> ApiResult<Response> {
    let not_found = || ApiError::NotFound(format!("experiment {id} has no file {path:?}"));
    let relative = checked_relative(&path).map_err(ApiError::BadRequest)?;
    principal.may_read_file(id, &relative.to_string_lossy()).map_err(ApiError::Forbidden)?;
    let root = experiment_dir(&state.data_dir, id);
    let Ok(root) = tokio::fs::canonicalize(&root).await else { return Err(not_found()) };
    let Ok(file) = tokio::fs::canonicalize(root.join(&relative)).await else { return Err(not_found()) };
    if !file.starts_with(&root) {
        tracing::warn!(id, path, "download resolved outside the experiment's directory; refused");
        return Err(not_found());
    }
    if !tokio::fs::metadata(&file).await.is_ok_and(|m| m.is_file()) {
        return Err(not_found());
    }
    let mut response = ServeFile::new(&file).oneshot(req).await.map_err(|e| ApiError::Internal(e.to_string()))?.into_response();
    let headers = response.headers_mut();
    // Whatever the file holds, it never runs as a page of this site.
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("sandbox; default-src 'none'"));
    let is_inline = matches!(file.extension().and_then(|e| e.to_str()), Some("txt" | "log" | "csv" | "json" | "md" | "svg" | "png"));
    if !is_inline {
        headers.insert(header::CONTENT_DISPOSITION, HeaderValue::from_static("attachment"));
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::checked_relative;

    #[test]
    fn only_plain_relative_paths() {
        assert_eq!(checked_relative("logs/trial-1.log").unwrap(), std::path::PathBuf::from("logs/trial-1.log"));
        for bad in ["", "../secret", "logs/../../x", "/etc/passwd", ".env", "logs/.hidden", "a\\..\\b", "./x"] {
            assert!(checked_relative(bad).is_err(), "{bad:?} must be refused");
        }
    }
}
