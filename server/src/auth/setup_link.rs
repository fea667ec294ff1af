//! The one-time setup link a server with no users prints: only its digest is kept, and it is used up by
//! the first admin it creates.

use super::token;
use std::sync::Mutex;

#[derive(Debug, Default)]
pub struct SetupLink {
    digest: Mutex<Option<String>>,
}

impl SetupLink {
    /// Makes a new one-time secret and returns it (the only time it is seen).
    pub fn issue(&self) -> String {
        let secret = token::generate();
        *self.digest.lock().unwrap_or_else(|e| e.into_inner()) = Some(token::digest(&secret));
        secret
    }

    /// Whether `secret` is the live link's (without using it up).
    pub fn is_live(&self, secret: &str) -> bool {
        self.digest.lock().unwrap_or_else(|e| e.into_inner()).as_deref() == Some(token::digest(secret).as_str())
    }

    pub(super) fn take_if(&self, secret: &str) -> bool {
        let mut d = self.digest.lock().unwrap_or_else(|e| e.into_inner());
        if d.as_deref() == Some(token::digest(secret).as_str()) {
            *d = None;
            true
        } else {
            false
        }
    }

    pub(super) fn give_back(&self, secret: &str) {
        *self.digest.lock().unwrap_or_else(|e| e.into_inner()) = Some(token::digest(secret));
    }
}
