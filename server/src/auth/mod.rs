//! Accounts and access: who a request comes from ([`principal`]), what each route lets them do
//! ([`policy`]), cross-site request forgery ([`csrf`]), sign-in and first-run setup, secrets.

pub mod client_addr;
pub mod csrf;
pub mod login;
pub mod password;
pub mod policy;
pub mod principal;
pub mod setup;
pub mod setup_link;
pub mod throttle;
pub mod token;
pub mod users;

pub use rights::{Actor, Principal, Role, Via};

/// What a browser session keeps about its user.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct SessionUser {
    pub user_id: i64,
    /// When the user signed in (epoch ms): the absolute session limit counts from here.
    pub login_at: i64,
}

/// Session keys.
pub const SESSION_USER: &str = "user";
pub const SESSION_SHARES: &str = "shares";
