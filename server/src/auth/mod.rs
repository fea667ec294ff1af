//! Accounts: password hashing, secret tokens, and the commands that create users and API tokens.
//! Sessions, login and route protection build on these.

pub mod password;
pub mod token;
pub mod users;
