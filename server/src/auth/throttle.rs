//! Sign-in rate limiting: failed attempts are counted per account and per client address in a sliding
//! window; past the limit, sign-in is refused (429) until the oldest failure leaves the window. A
//! success clears the account's count. In memory: a restart forgives, which an attacker cannot cause.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub per_account: usize,
    pub per_address: usize,
    pub window: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { per_account: 5, per_address: 20, window: Duration::from_secs(15 * 60) }
    }
}

#[derive(Debug, Default)]
struct Windows {
    accounts: HashMap<String, VecDeque<Instant>>,
    addresses: HashMap<IpAddr, VecDeque<Instant>>,
}

#[derive(Debug)]
pub struct LoginThrottle {
    limits: Limits,
    windows: Mutex<Windows>,
}

/// Keeps only the failures inside the window; returns how long until the oldest one leaves it.
fn trim(q: &mut VecDeque<Instant>, now: Instant, window: Duration) -> Option<Duration> {
    while q.front().is_some_and(|t| now.duration_since(*t) >= window) {
        q.pop_front();
    }
    q.front().map(|t| window.saturating_sub(now.duration_since(*t)))
}

impl LoginThrottle {
    pub fn new(limits: Limits) -> LoginThrottle {
        LoginThrottle { limits, windows: Mutex::new(Windows::default()) }
    }

    fn account_key(name: &str) -> String {
        name.trim().to_lowercase()
    }

    /// `Err(wait)` when this account or address has used up its failures.
    pub fn check(&self, account: &str, addr: IpAddr) -> Result<(), Duration> {
        let now = Instant::now();
        let mut w = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        let window = self.limits.window;
        let mut wait = None;
        if let Some(q) = w.accounts.get_mut(&Self::account_key(account)) {
            let until = trim(q, now, window);
            if q.len() >= self.limits.per_account {
                wait = until;
            }
        }
        if let Some(q) = w.addresses.get_mut(&addr) {
            let until = trim(q, now, window);
            if q.len() >= self.limits.per_address {
                wait = wait.max(until);
            }
        }
        match wait {
            Some(d) => Err(d.max(Duration::from_secs(1))),
            None => Ok(()),
        }
    }

    pub fn failed(&self, account: &str, addr: IpAddr) {
        let now = Instant::now();
        let mut w = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        // Bound the memory a flood of invented names can take.
        if w.accounts.len() > 10_000 {
            let window = self.limits.window;
            w.accounts.retain(|_, q| trim(q, now, window).is_some());
            w.addresses.retain(|_, q| trim(q, now, window).is_some());
        }
        w.accounts.entry(Self::account_key(account)).or_default().push_back(now);
        w.addresses.entry(addr).or_default().push_back(now);
    }

    pub fn succeeded(&self, account: &str) {
        let mut w = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        w.accounts.remove(&Self::account_key(account));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_per_account_and_per_address() {
        let t = LoginThrottle::new(Limits { per_account: 3, per_address: 5, window: Duration::from_secs(60) });
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        for _ in 0..3 {
            assert!(t.check("Alice", a).is_ok());
            t.failed("alice", a);
        }
        let wait = t.check("ALICE ", b).unwrap_err();
        assert!(wait <= Duration::from_secs(60) && wait >= Duration::from_secs(1), "{wait:?}");
        assert!(t.check("bob", a).is_ok(), "another account from the same address still may try");
        t.failed("bob", a);
        t.failed("carol", a);
        assert!(t.check("dave", a).is_err(), "the address used up its 5 failures");
        assert!(t.check("dave", b).is_ok());
        t.succeeded("bob");
        assert!(t.check("bob", b).is_ok());
    }

    #[test]
    fn failures_leave_the_window() {
        let t = LoginThrottle::new(Limits { per_account: 1, per_address: 10, window: Duration::from_millis(30) });
        let a: IpAddr = "::1".parse().unwrap();
        t.failed("x", a);
        assert!(t.check("x", a).is_err());
        std::thread::sleep(Duration::from_millis(40));
        assert!(t.check("x", a).is_ok());
    }
}
