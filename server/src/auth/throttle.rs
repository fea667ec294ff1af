//! Sign-in rate limiting, in memory (a restart forgives, which an attacker cannot cause). Every attempt is
//! counted *before* its password hash runs, so attempts sent in parallel count like attempts sent in turn;
//! a success takes its own attempt back and clears the account's failures. The rules, in a sliding window:
//!
//! * **per account and client address**: `per_account_and_address` failures lock that pair until the
//!   oldest leaves the window — one client cannot keep guessing one account;
//! * **per client address**: `per_address` failures lock the address for every account — one client
//!   cannot sweep many accounts;
//! * **per account, from anywhere**: after `account_delay_after` failures, each further attempt on the
//!   account waits a delay that doubles with every failure (1 s, 2 s, 4 s … up to `max_delay`) — many
//!   clients together guess slowly, and a stranger's wrong passwords can delay the real user by at most
//!   `max_delay`, never lock them out.
//!
//! The argon2 work itself is bounded: at most `hashing` password checks run at once; a sign-in beyond them
//! is answered 503 with `Retry-After` before anything is counted or hashed.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub per_account_and_address: usize,
    pub per_address: usize,
    pub account_delay_after: usize,
    pub max_delay: Duration,
    pub window: Duration,
    /// Password checks (argon2, ~19 MiB and tens of ms each) allowed to run at once.
    pub hashing: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            per_account_and_address: 5,
            per_address: 20,
            account_delay_after: 10,
            max_delay: Duration::from_secs(60),
            window: Duration::from_secs(15 * 60),
            hashing: 4,
        }
    }
}

#[derive(Debug, Default)]
struct Windows {
    pairs: HashMap<(String, IpAddr), VecDeque<Instant>>,
    addresses: HashMap<IpAddr, VecDeque<Instant>>,
    accounts: HashMap<String, VecDeque<Instant>>,
}

#[derive(Debug)]
pub struct LoginThrottle {
    limits: Limits,
    windows: Mutex<Windows>,
    hashing: std::sync::Arc<tokio::sync::Semaphore>,
}

/// Why a sign-in may not go ahead now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Too many failures: try again after this long (429).
    Throttled(Duration),
    /// Every password check slot is busy (503).
    Busy,
}

/// Keeps only the failures inside the window; returns how long until the oldest one leaves it.
fn trim(q: &mut VecDeque<Instant>, now: Instant, window: Duration) -> Option<Duration> {
    while q.front().is_some_and(|t| now.duration_since(*t) >= window) {
        q.pop_front();
    }
    q.front().map(|t| window.saturating_sub(now.duration_since(*t)))
}

fn account_key(name: &str) -> String {
    name.trim().to_lowercase()
}

/// A sign-in that went ahead: it holds a password-check slot, and its attempt is already counted.
pub struct Attempt {
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl LoginThrottle {
    pub fn new(limits: Limits) -> LoginThrottle {
        let hashing = std::sync::Arc::new(tokio::sync::Semaphore::new(limits.hashing.max(1)));
        LoginThrottle { limits, windows: Mutex::new(Windows::default()), hashing }
    }

    /// May `account` try from `addr` now? If so its attempt is counted as a failure until [`succeeded`]
    /// takes it back.
    ///
    /// [`succeeded`]: LoginThrottle::succeeded
    pub fn begin(&self, account: &str, addr: IpAddr) -> Result<Attempt, Refusal> {
        let permit = self.hashing.clone().try_acquire_owned().map_err(|_| Refusal::Busy)?;
        let now = Instant::now();
        let l = self.limits;
        let mut w = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        // Bound the memory a flood of invented names can take.
        if w.pairs.len() > 10_000 || w.accounts.len() > 10_000 {
            w.pairs.retain(|_, q| trim(q, now, l.window).is_some());
            w.accounts.retain(|_, q| trim(q, now, l.window).is_some());
            w.addresses.retain(|_, q| trim(q, now, l.window).is_some());
        }
        let key = account_key(account);
        let mut wait: Option<Duration> = None;
        if let Some(q) = w.pairs.get_mut(&(key.clone(), addr)) {
            let until = trim(q, now, l.window);
            if q.len() >= l.per_account_and_address {
                wait = wait.max(until);
            }
        }
        if let Some(q) = w.addresses.get_mut(&addr) {
            let until = trim(q, now, l.window);
            if q.len() >= l.per_address {
                wait = wait.max(until);
            }
        }
        if let Some(q) = w.accounts.get_mut(&key) {
            trim(q, now, l.window);
            if q.len() >= l.account_delay_after {
                let doublings = (q.len() - l.account_delay_after).min(20) as u32;
                let delay = Duration::from_secs(1u64 << doublings).min(l.max_delay);
                let since = q.back().map_or(delay, |t| now.duration_since(*t));
                if since < delay {
                    wait = wait.max(Some(delay - since));
                }
            }
        }
        if let Some(d) = wait {
            return Err(Refusal::Throttled(d.max(Duration::from_secs(1))));
        }
        w.pairs.entry((key.clone(), addr)).or_default().push_back(now);
        w.addresses.entry(addr).or_default().push_back(now);
        w.accounts.entry(key).or_default().push_back(now);
        Ok(Attempt { _permit: permit })
    }

    /// The attempt was right: its count is taken back from the address, and the account's failures
    /// (from anywhere) are cleared.
    pub fn succeeded(&self, account: &str, addr: IpAddr) {
        let key = account_key(account);
        let mut w = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        w.accounts.remove(&key);
        w.pairs.remove(&(key, addr));
        if let Some(q) = w.addresses.get_mut(&addr) {
            q.pop_back();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            per_account_and_address: 3,
            per_address: 5,
            account_delay_after: 4,
            max_delay: Duration::from_secs(8),
            window: Duration::from_secs(60),
            hashing: 100,
        }
    }

    #[test]
    fn limits_per_account_and_address_and_per_address() {
        let t = LoginThrottle::new(limits());
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        for _ in 0..3 {
            drop(t.begin("Alice", a).unwrap());
        }
        let Err(Refusal::Throttled(wait)) = t.begin("ALICE ", a) else { panic!("the pair is locked") };
        assert!(wait <= Duration::from_secs(60) && wait >= Duration::from_secs(1), "{wait:?}");
        assert!(t.begin("alice", b).is_ok(), "the real user, elsewhere, still may try");
        assert!(t.begin("bob", a).is_ok(), "another account from the same address still may try");
        t.begin("carol", a).unwrap();
        assert!(t.begin("dave", a).is_err(), "the address used up its 5 failures");
        assert!(t.begin("dave", b).is_ok());
        t.succeeded("dave", b);
        assert!(t.begin("bob", b).is_ok());
    }

    #[test]
    fn many_addresses_on_one_account_meet_a_growing_delay_not_a_lockout() {
        let t = LoginThrottle::new(limits());
        let addr = |i: u8| -> IpAddr { format!("10.1.0.{i}").parse().unwrap() };
        for i in 0..4 {
            t.begin("admin", addr(i)).unwrap();
        }
        // The 5th failure on the account from anywhere waits ~1 s after the last, then 2 s, 4 s, capped at 8 s.
        let Err(Refusal::Throttled(wait)) = t.begin("admin", addr(9)) else { panic!("delayed") };
        assert!(wait <= Duration::from_secs(1), "{wait:?}");
        let mut w = t.windows.lock().unwrap();
        let q = w.accounts.get_mut("admin").unwrap();
        for _ in 0..10 {
            q.push_back(Instant::now());
        }
        drop(w);
        let Err(Refusal::Throttled(wait)) = t.begin("admin", addr(10)) else { panic!("delayed") };
        assert!(wait > Duration::from_secs(4) && wait <= Duration::from_secs(8), "capped by max_delay: {wait:?}");
    }

    #[test]
    fn attempts_in_parallel_are_counted_before_they_run_and_hashing_is_bounded() {
        let t = LoginThrottle::new(Limits { hashing: 2, ..limits() });
        let a: IpAddr = "::1".parse().unwrap();
        let first = t.begin("x", a).unwrap();
        let second = t.begin("x", a).unwrap();
        assert!(matches!(t.begin("x", a), Err(Refusal::Busy)), "two checks run at once, no more");
        drop(first);
        drop(second);
        // Both in-flight attempts were counted: the third is the last one this pair may make.
        let third = t.begin("x", a).unwrap();
        drop(third);
        assert!(matches!(t.begin("x", a), Err(Refusal::Throttled(_))));
    }

    #[test]
    fn failures_leave_the_window() {
        let t = LoginThrottle::new(Limits { per_account_and_address: 1, window: Duration::from_millis(30), ..limits() });
        let a: IpAddr = "::1".parse().unwrap();
        drop(t.begin("x", a).unwrap());
        assert!(t.begin("x", a).is_err());
        std::thread::sleep(Duration::from_millis(40));
        assert!(t.begin("x", a).is_ok());
    }
}
