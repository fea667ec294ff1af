//! Browser sessions in the same database as everything else, through tower-sessions' sqlx stores (they
//! create and migrate their own table). One type serves both backends.
//!
//! The database never holds a session's id as the cookie carries it: every id is stored as
//! [`stored_id`] (its SHA-256, cut to the id's 128 bits), so whoever reads the database (a backup, a file
//! left readable) cannot take over a session. Rows written before this rule cannot be found by any cookie
//! (everyone signed in then signs in again once) and expire as usual.

use async_trait::async_trait;
use std::time::Duration;
use store::Store;
use tower_sessions::cookie::SameSite;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, ExpiredDeletion, SessionStore};
use tower_sessions::{Expiry, SessionManagerLayer};
use tower_sessions_sqlx_store::{PostgresStore, SqliteStore};

#[derive(Debug, Clone)]
pub enum AnySessionStore {
    Sqlite(SqliteStore),
    Postgres(PostgresStore),
}

macro_rules! on_session_store {
    ($self:expr, $s:ident => $body:expr) => {
        match $self {
            AnySessionStore::Sqlite($s) => $body,
            AnySessionStore::Postgres($s) => $body,
        }
    };
}

impl AnySessionStore {
    /// The session store for this database, with its table created.
    pub async fn for_store(store: &Store) -> Result<AnySessionStore, sqlx::Error> {
        let sessions = match store {
            Store::Sqlite(pool) => AnySessionStore::Sqlite(SqliteStore::new(pool.clone())),
            Store::Postgres(pool) => AnySessionStore::Postgres(PostgresStore::new(pool.clone())),
        };
        on_session_store!(&sessions, s => s.migrate().await)?;
        Ok(sessions)
    }

    /// Removes expired sessions every `period`, until the task is aborted.
    pub fn spawn_expiry(&self, period: Duration) -> tokio::task::JoinHandle<()> {
        let sessions = self.clone();
        tokio::spawn(async move {
            let result = on_session_store!(sessions, s => s.continuously_delete_expired(period).await);
            if let Err(e) = result {
                tracing::warn!(error = %e, "expired-session cleanup stopped");
            }
        })
    }

    /// Cookie policy: HttpOnly, SameSite=Lax, Secure when users reach Arbiter over https, ending after
    /// `idle` without a request (the absolute limit is checked at authentication).
    pub fn layer(self, idle: Duration, secure: bool) -> SessionManagerLayer<AnySessionStore> {
        let idle = tower_sessions::cookie::time::Duration::seconds(i64::try_from(idle.as_secs()).unwrap_or(i64::MAX));
        SessionManagerLayer::new(self)
            .with_name("arbiter_session")
            .with_http_only(true)
            .with_same_site(SameSite::Lax)
            .with_secure(secure)
            .with_expiry(Expiry::OnInactivity(idle))
    }
}

/// Behind a TLS-terminating proxy that says so (`X-Forwarded-Proto: https`), the session cookie is
/// marked `Secure` even when ARBITER_PUBLIC_URL is not set. A client that sends the header itself only
/// makes its own cookie stricter.
pub async fn secure_behind_tls_proxy(req: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    use axum::http::{header, HeaderValue};
    let behind_tls = req.headers().get("x-forwarded-proto").and_then(|v| v.to_str().ok()).is_some_and(|v| v.eq_ignore_ascii_case("https"));
    let mut response = next.run(req).await;
    if behind_tls {
        let headers = response.headers_mut();
        let cookies: Vec<HeaderValue> = headers.get_all(header::SET_COOKIE).iter().cloned().collect();
        headers.remove(header::SET_COOKIE);
        for cookie in cookies {
            let text = cookie.to_str().unwrap_or("");
            let secured = if text.starts_with("arbiter_session=") && !text.contains("; Secure") {
                HeaderValue::from_str(&format!("{text}; Secure")).unwrap_or(cookie)
            } else {
                cookie
            };
            headers.append(header::SET_COOKIE, secured);
        }
    }
    response
}

/// The id a session is stored under: SHA-256 of the cookie's id, its first 128 bits.
pub fn stored_id(id: &Id) -> Id {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(id.0.to_le_bytes());
    let mut first = [0u8; 16];
    first.copy_from_slice(&digest[..16]);
    Id(i128::from_le_bytes(first))
}

fn as_stored(record: &Record) -> Record {
    Record { id: stored_id(&record.id), ..record.clone() }
}

#[async_trait]
impl SessionStore for AnySessionStore {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        // A fresh random id whose stored form is not taken (a collision of 128 random bits is never
        // expected; the loop keeps the store's promise anyway).
        while on_session_store!(self, s => s.load(&stored_id(&record.id)).await)?.is_some() {
            record.id = Id::default();
        }
        on_session_store!(self, s => s.save(&as_stored(record)).await)
    }
    async fn save(&self, record: &Record) -> session_store::Result<()> {
        on_session_store!(self, s => s.save(&as_stored(record)).await)
    }
    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        let found = on_session_store!(self, s => s.load(&stored_id(id)).await)?;
        Ok(found.map(|record| Record { id: *id, ..record }))
    }
    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        on_session_store!(self, s => s.delete(&stored_id(id)).await)
    }
}
