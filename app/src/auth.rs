//! Who is asking. The server's authentication layer puts a [`Principal`] on every request; server
//! functions read it from context and ask it before they touch the store.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// What the page shows about the signed-in user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignedIn {
    pub name: String,
    /// viewer, launcher or admin.
    pub role: String,
}

#[cfg(feature = "ssr")]
pub use server_side::*;

#[cfg(feature = "ssr")]
mod server_side {
    use leptos::prelude::*;
    pub use store::people::Role;

    /// How a signed-in principal proved who it is.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Via {
        Session,
        ApiToken(i64),
    }

    /// The caller of one request.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Principal {
        Anonymous,
        /// A user, through a browser session or an API token; `role` is the token's when it is narrower.
        User {
            id: i64,
            name: String,
            role: Role,
            via: Via,
        },
        /// Someone holding share links: read access to these experiments and nothing else.
        Share {
            experiments: Vec<i64>,
        },
    }

    impl Principal {
        /// The role of a signed-in user; `None` for anonymous and share-link callers.
        pub fn role(&self) -> Option<Role> {
            match self {
                Principal::User { role, .. } => Some(*role),
                _ => None,
            }
        }

        pub fn user_id(&self) -> Option<i64> {
            match self {
                Principal::User { id, .. } => Some(*id),
                _ => None,
            }
        }

        /// At least `role` (viewer < launcher < admin).
        pub fn has(&self, role: Role) -> bool {
            self.role().is_some_and(|r| r >= role)
        }

        /// Any signed-in user reads every experiment; a share link reads its own.
        pub fn can_read_experiment(&self, id: i64) -> bool {
            match self {
                Principal::Anonymous => false,
                Principal::User { .. } => true,
                Principal::Share { experiments } => experiments.contains(&id),
            }
        }
    }

    /// The caller of the current server function or page render.
    pub fn principal() -> Principal {
        use_context::<Principal>().unwrap_or(Principal::Anonymous)
    }

    /// Sets the HTTP status of the current response (a server function's or a page's).
    pub fn set_status(code: u16) {
        if let (Some(r), Ok(status)) = (use_context::<leptos_axum::ResponseOptions>(), http::StatusCode::from_u16(code)) {
            r.set_status(status);
        }
    }

    /// The caller, if it has at least `role`; otherwise an error the page shows (and 401/403).
    pub fn require(role: Role) -> Result<Principal, ServerFnError> {
        let p = principal();
        if p.has(role) {
            Ok(p)
        } else if p.role().is_some() {
            set_status(403);
            Err(ServerFnError::new(format!("forbidden: this needs the {} role", role.as_str())))
        } else {
            set_status(401);
            Err(ServerFnError::new("unauthorized: sign in first"))
        }
    }
}

/// The signed-in user, for the header; `None` for anonymous and share-link visitors.
#[server(prefix = "/fn", endpoint = "whoami")]
pub async fn whoami() -> Result<Option<SignedIn>, ServerFnError> {
    Ok(match principal() {
        Principal::User { name, role, .. } => Some(SignedIn { name, role: role.as_str().to_string() }),
        _ => None,
    })
}
