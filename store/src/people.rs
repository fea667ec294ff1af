//! Users, API tokens, share tokens and the audit log. Tokens are stored only as hashes: the caller hashes
//! (the accounts layer owns the scheme), the store never sees a secret.

use crate::{now_ms, on_pool, Store, StoreError};
use serde::{Deserialize, Serialize};

/// Roles are decided in `rights` (no IO; the pages and the browser read the same type).
pub use rights::Role;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct User {
    pub id: i64,
    pub username: String,
    pub password_hash: String,
    pub role: Role,
    pub created_at: i64,
    pub disabled_at: Option<i64>,
}

/// An API token as stored (its secret exists only in the hash).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiToken {
    pub id: i64,
    pub user_id: i64,
    pub name: String,
    pub role: Role,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
    pub last_used_at: Option<i64>,
    /// The token that authenticated the request which made this one: this one works only while it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<i64>,
}

impl ApiToken {
    pub fn is_usable(&self, now: i64) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|t| t > now)
    }
}

/// One audit entry: who did what to which subject, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub id: i64,
    pub at: i64,
    pub actor: Option<String>,
    pub action: String,
    pub subject: String,
    pub reason: Option<String>,
    pub detail: serde_json::Value,
}

/// How stale a token's last-used time may get before a use rewrites it.
const TOUCH_EVERY_MS: i64 = 60_000;

type UserRow = (i64, String, String, String, i64, Option<i64>);
type TokenRow = (i64, i64, String, String, i64, Option<i64>, Option<i64>, Option<i64>, Option<i64>);
type AuditRow = (i64, i64, Option<String>, String, String, Option<String>, String);

fn user(r: UserRow) -> Result<User, StoreError> {
    Ok(User { id: r.0, username: r.1, password_hash: r.2, role: r.3.parse()?, created_at: r.4, disabled_at: r.5 })
}

fn api_token(r: TokenRow) -> Result<ApiToken, StoreError> {
    Ok(ApiToken {
        id: r.0,
        user_id: r.1,
        name: r.2,
        role: r.3.parse()?,
        created_at: r.4,
        expires_at: r.5,
        revoked_at: r.6,
        last_used_at: r.7,
        parent_id: r.8,
    })
}

impl Store {
    pub async fn insert_user(&self, username: &str, password_hash: &str, role: Role) -> Result<i64, StoreError> {
        let now = now_ms();
        on_pool!(self, pool => {
            sqlx::query_scalar("INSERT INTO users (username, password_hash, role, created_at) VALUES ($1, $2, $3, $4) RETURNING id")
                .bind(username).bind(password_hash).bind(role.as_str()).bind(now)
                .fetch_all(pool).await.and_then(crate::one_row)
        })
        .map_err(|e| StoreError::unique(e, || format!("user {username:?} already exists")))
    }

    pub async fn user_by_name(&self, username: &str) -> Result<Option<User>, StoreError> {
        let row: Option<UserRow> = on_pool!(self, pool => {
            sqlx::query_as("SELECT id, username, password_hash, role, created_at, disabled_at FROM users WHERE username = $1")
                .bind(username).fetch_optional(pool).await
        })?;
        row.map(user).transpose()
    }

    pub async fn user_by_id(&self, id: i64) -> Result<Option<User>, StoreError> {
        let row: Option<UserRow> = on_pool!(self, pool => {
            sqlx::query_as("SELECT id, username, password_hash, role, created_at, disabled_at FROM users WHERE id = $1")
                .bind(id).fetch_optional(pool).await
        })?;
        row.map(user).transpose()
    }

    pub async fn list_users(&self) -> Result<Vec<User>, StoreError> {
        let rows: Vec<UserRow> = on_pool!(self, pool => {
            sqlx::query_as("SELECT id, username, password_hash, role, created_at, disabled_at FROM users ORDER BY username")
                .fetch_all(pool).await
        })?;
        rows.into_iter().map(user).collect()
    }

    /// Active (not disabled) admins.
    pub async fn count_admins(&self) -> Result<i64, StoreError> {
        Ok(on_pool!(self, pool => {
            sqlx::query_scalar("SELECT COUNT(*) FROM users WHERE role = 'admin' AND disabled_at IS NULL").fetch_one(pool).await
        })?)
    }

    /// Changes a user's role and/or disables (`Some(true)`) or re-enables (`Some(false)`) the account —
    /// unless that would leave no active admin (`Conflict`). Checked and changed in one transaction that
    /// holds every active admin's row (PostgreSQL: `FOR UPDATE`; SQLite: one statement under its write
    /// lock), so two admins demoting each other at once cannot both succeed.
    pub async fn update_user(&self, id: i64, role: Option<Role>, disabled: Option<bool>) -> Result<(), StoreError> {
        let now = now_ms();
        // The row stays or becomes an active admin after the change?
        let keeps = "(COALESCE($1, role) = 'admin' AND CASE WHEN $2 = 1 THEN 0 WHEN $2 = 0 THEN 1 ELSE disabled_at IS NULL END)";
        let sql = format!(
            "UPDATE users SET role = COALESCE($1, role), \
             disabled_at = CASE WHEN $2 = 1 THEN COALESCE(disabled_at, $3) WHEN $2 = 0 THEN NULL ELSE disabled_at END \
             WHERE id = $4 AND ({keeps} OR EXISTS (SELECT 1 FROM users o WHERE o.id <> $4 AND o.role = 'admin' AND o.disabled_at IS NULL))"
        );
        let n = match self {
            Store::Sqlite(pool) => sqlx::query(&sql)
                .bind(role.map(Role::as_str))
                .bind(disabled.map(i64::from))
                .bind(now)
                .bind(id)
                .execute(pool)
                .await?
                .rows_affected(),
            Store::Postgres(pool) => {
                let mut tx = pool.begin().await?;
                sqlx::query("SELECT id FROM users WHERE role = 'admin' AND disabled_at IS NULL ORDER BY id FOR UPDATE")
                    .fetch_all(&mut *tx)
                    .await?;
                let sql = sql.replace(
                    "CASE WHEN $2 = 1 THEN 0 WHEN $2 = 0 THEN 1 ELSE disabled_at IS NULL END",
                    "CASE WHEN $2 = 1 THEN FALSE WHEN $2 = 0 THEN TRUE ELSE disabled_at IS NULL END",
                );
                let n = sqlx::query(&sql)
                    .bind(role.map(Role::as_str))
                    .bind(disabled.map(i64::from))
                    .bind(now)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                tx.commit().await?;
                n
            }
        };
        if n == 0 {
            return match self.user_by_id(id).await? {
                None => Err(StoreError::NotFound { what: "user", key: id.to_string() }),
                Some(u) => Err(StoreError::Conflict(format!("{:?} is the last active admin; make another admin first", u.username))),
            };
        }
        Ok(())
    }

    pub async fn count_users(&self) -> Result<i64, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_scalar("SELECT COUNT(*) FROM users").fetch_one(pool).await)?)
    }

    pub async fn insert_api_token(
        &self,
        user_id: i64,
        name: &str,
        token_hash: &str,
        role: Role,
        expires_at: Option<i64>,
        parent_id: Option<i64>,
    ) -> Result<i64, StoreError> {
        let now = now_ms();
        Ok(on_pool!(self, pool => {
            sqlx::query_scalar(
                "INSERT INTO api_tokens (user_id, name, token_hash, role, created_at, expires_at, parent_id) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
            )
            .bind(user_id).bind(name).bind(token_hash).bind(role.as_str()).bind(now).bind(expires_at).bind(parent_id)
            .fetch_all(pool).await.and_then(crate::one_row)
        })?)
    }

    /// Looks a token up by its hash and stamps its last use (at most once a minute, so that busy readers
    /// do not turn every request into a write). Revoked and expired tokens are returned too (check
    /// [`ApiToken::is_usable`]) so the caller can say why a token was refused.
    pub async fn touch_api_token(&self, token_hash: &str) -> Result<Option<ApiToken>, StoreError> {
        let now = now_ms();
        let row: Option<TokenRow> = on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT id, user_id, name, role, created_at, expires_at, revoked_at, last_used_at, parent_id FROM api_tokens WHERE token_hash = $1",
            )
            .bind(token_hash).fetch_optional(pool).await
        })?;
        let Some(mut token) = row.map(api_token).transpose()? else { return Ok(None) };
        if token.is_usable(now) && token.last_used_at.is_none_or(|t| now - t >= TOUCH_EVERY_MS) {
            on_pool!(self, pool => sqlx::query("UPDATE api_tokens SET last_used_at = $1 WHERE id = $2").bind(now).bind(token.id).execute(pool).await.map(|r| r.rows_affected()))?;
            token.last_used_at = Some(now);
        }
        Ok(Some(token))
    }

    /// One API token by id (revoked and expired ones too).
    pub async fn api_token(&self, id: i64) -> Result<Option<ApiToken>, StoreError> {
        let row: Option<TokenRow> = on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT id, user_id, name, role, created_at, expires_at, revoked_at, last_used_at, parent_id FROM api_tokens WHERE id = $1",
            )
            .bind(id).fetch_optional(pool).await
        })?;
        row.map(api_token).transpose()
    }

    /// API tokens, newest first: one user's, or everyone's with `None`.
    pub async fn list_api_tokens(&self, user_id: Option<i64>) -> Result<Vec<ApiToken>, StoreError> {
        let rows: Vec<TokenRow> = on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT id, user_id, name, role, created_at, expires_at, revoked_at, last_used_at, parent_id FROM api_tokens \
                 WHERE $1 IS NULL OR user_id = $1 ORDER BY created_at DESC, id DESC",
            )
            .bind(user_id).fetch_all(pool).await
        })?;
        rows.into_iter().map(api_token).collect()
    }

    /// Sets (or clears) when a token expires.
    pub async fn set_api_token_expiry(&self, id: i64, expires_at: Option<i64>) -> Result<(), StoreError> {
        on_pool!(self, pool => sqlx::query("UPDATE api_tokens SET expires_at = $1 WHERE id = $2").bind(expires_at).bind(id).execute(pool).await.map(|r| r.rows_affected()))?;
        Ok(())
    }

    pub async fn revoke_api_token(&self, id: i64) -> Result<(), StoreError> {
        let now = now_ms();
        let n = on_pool!(self, pool => {
            sqlx::query("UPDATE api_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
                .bind(now).bind(id).execute(pool).await.map(|r| r.rows_affected())
        })?;
        if n == 0 {
            return Err(StoreError::NotFound { what: "active API token", key: id.to_string() });
        }
        Ok(())
    }

    /// A share link of an experiment: `files` opens its logs and other files too; `expires_at` (epoch ms)
    /// ends it, none: until revoked.
    pub async fn insert_share_token(
        &self,
        experiment_id: i64,
        token_hash: &str,
        created_by: Option<i64>,
        files: bool,
        expires_at: Option<i64>,
    ) -> Result<i64, StoreError> {
        let now = now_ms();
        Ok(on_pool!(self, pool => {
            sqlx::query_scalar(
                "INSERT INTO share_tokens (experiment_id, token_hash, created_by, created_at, files, expires_at) \
                 VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
            )
            .bind(experiment_id).bind(token_hash).bind(created_by).bind(now).bind(files).bind(expires_at).fetch_all(pool).await.and_then(crate::one_row)
        })?)
    }

    /// The experiment a live share token opens (not revoked, not expired), and whether it opens its files.
    pub async fn share_token_experiment(&self, token_hash: &str) -> Result<Option<(i64, bool)>, StoreError> {
        let now = now_ms();
        Ok(on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT experiment_id, files FROM share_tokens \
                 WHERE token_hash = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2)",
            )
            .bind(token_hash).bind(now).fetch_optional(pool).await
        })?)
    }

    /// One share token's id by its hash, whether or not it is revoked.
    pub async fn share_token_by_hash(&self, token_hash: &str) -> Result<Option<(i64, i64, Option<i64>)>, StoreError> {
        Ok(on_pool!(self, pool => {
            sqlx::query_as("SELECT id, experiment_id, revoked_at FROM share_tokens WHERE token_hash = $1")
                .bind(token_hash).fetch_optional(pool).await
        })?)
    }

    /// The live (not revoked, not expired) share links of an experiment, newest first, with who made each.
    pub async fn share_links(&self, experiment_id: i64) -> Result<Vec<wire::share::JsonShareLink>, StoreError> {
        let now = now_ms();
        type Row = (i64, Option<String>, i64, Option<i64>, bool);
        let rows: Vec<Row> = on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT s.id, u.username, s.created_at, s.expires_at, s.files FROM share_tokens s \
                 LEFT JOIN users u ON u.id = s.created_by \
                 WHERE s.experiment_id = $1 AND s.revoked_at IS NULL AND (s.expires_at IS NULL OR s.expires_at > $2) \
                 ORDER BY s.id DESC",
            )
            .bind(experiment_id).bind(now).fetch_all(pool).await
        })?;
        Ok(rows
            .into_iter()
            .map(|(id, created_by, created_at, expires_at, files)| wire::share::JsonShareLink {
                id,
                created_by,
                created_at,
                expires_at,
                files,
            })
            .collect())
    }

    /// Revokes every live (not yet expired) share token of an experiment; returns how many.
    pub async fn revoke_share_tokens(&self, experiment_id: i64) -> Result<u64, StoreError> {
        let now = now_ms();
        Ok(on_pool!(self, pool => {
            sqlx::query(
                "UPDATE share_tokens SET revoked_at = $1 \
                 WHERE experiment_id = $2 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $1)",
            )
            .bind(now).bind(experiment_id).execute(pool).await.map(|r| r.rows_affected())
        })?)
    }

    /// Revokes one live share link of an experiment; NotFound when it has no such live link.
    pub async fn revoke_share_token(&self, experiment_id: i64, id: i64) -> Result<(), StoreError> {
        let now = now_ms();
        let n = on_pool!(self, pool => {
            sqlx::query("UPDATE share_tokens SET revoked_at = $1 WHERE id = $2 AND experiment_id = $3 AND revoked_at IS NULL")
                .bind(now).bind(id).bind(experiment_id).execute(pool).await.map(|r| r.rows_affected())
        })?;
        if n == 0 {
            return Err(StoreError::NotFound { what: "live share link", key: format!("{id} of experiment {experiment_id}") });
        }
        Ok(())
    }

    pub async fn audit(
        &self,
        actor_id: Option<i64>,
        action: &str,
        subject: &str,
        reason: Option<&str>,
        detail: &serde_json::Value,
    ) -> Result<i64, StoreError> {
        let detail = serde_json::to_string(detail)?;
        let now = now_ms();
        Ok(on_pool!(self, pool => {
            sqlx::query_scalar(
                "INSERT INTO audit_log (at, actor_id, action, subject, reason, detail) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
            )
            .bind(now).bind(actor_id).bind(action).bind(subject).bind(reason).bind(&detail).fetch_all(pool).await.and_then(crate::one_row)
        })?)
    }

    /// The newest audit entries first.
    pub async fn audit_log(&self, limit: u32) -> Result<Vec<AuditEntry>, StoreError> {
        let rows: Vec<AuditRow> = on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT a.id, a.at, u.username, a.action, a.subject, a.reason, a.detail FROM audit_log a \
                 LEFT JOIN users u ON u.id = a.actor_id ORDER BY a.at DESC, a.id DESC LIMIT $1",
            )
            .bind(limit as i64).fetch_all(pool).await
        })?;
        rows.into_iter()
            .map(|r| {
                Ok(AuditEntry { id: r.0, at: r.1, actor: r.2, action: r.3, subject: r.4, reason: r.5, detail: serde_json::from_str(&r.6)? })
            })
            .collect()
    }
}
