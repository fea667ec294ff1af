//! Who is asking. The server's authentication layer puts a `rights::Principal` on every request; server
//! functions read it from context and ask it before they touch the store. What each principal may do is
//! decided in the `rights` crate (re-exported here), not in the UI.

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
    pub use rights::{Actor, ExperimentAct, Principal, Refused, Role, Via};

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

    /// The caller, if it has at least `role` (`rights::Principal::at_least`); otherwise an error the page
    /// shows (and 401/403).
    pub fn require(role: Role) -> Result<Actor, crate::error::AppError> {
        principal().at_least(role).map_err(|r| {
            set_status(match r {
                Refused::Unauthorized(_) => 401,
                Refused::Forbidden(_) => 403,
            });
            r.into()
        })
    }
}

/// The signed-in user, for the header; `None` for anonymous and share-link visitors.
#[server(prefix = "/fn", endpoint = "whoami")]
pub async fn whoami() -> Result<Option<SignedIn>, crate::error::AppError> {
    Ok(match principal() {
        Principal::User { name, role, .. } => Some(SignedIn { name, role: role.as_str().to_string() }),
        _ => None,
    })
}
