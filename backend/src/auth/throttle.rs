//! Failed-login throttling: after [`MAX_FAILURES`] wrong passwords for one username from one
//! client address within [`WINDOW`], further attempts for that pair are refused (429
//! `too_many_attempts`) until the oldest of those failures leaves the window.
//!
//! An attempt counts as a failure from the moment it is let through ([`LoginThrottle::attempt`])
//! until it succeeds ([`LoginThrottle::succeeded`] clears the pair). Counting only after the
//! password check would let a client that sends 100 attempts at once past the check 100 times,
//! since none of them has failed yet when the others are checked.
//!
//! Why this key: a limit per username alone would let anyone lock the admin out by failing on
//! purpose; a limit per address alone would, behind a reverse proxy where every client shares
//! one address, lock everybody out. The pair slows guessing one account's password from one
//! place to 5 tries per 5 minutes, while the account's owner elsewhere logs in as usual.
//! Refused attempts are answered before the password hash is computed, so a flood of them costs
//! no Argon2 work. State is in memory, per process: a restart forgets it, which only gives an
//! attacker one more window.
//!
//! The logic takes `now` as an argument and does no I/O, so tests drive time directly.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Wrong passwords allowed per (username, address) within [`WINDOW`].
pub const MAX_FAILURES: usize = 5;
/// How long a failure counts.
pub const WINDOW: Duration = Duration::from_secs(5 * 60);
/// Most (username, address) pairs remembered; past it the stalest pairs are forgotten, so a
/// spray of invented usernames cannot grow memory without bound.
pub const MAX_TRACKED: usize = 10_000;
/// Usernames are cut to this many bytes in the key (no real username is longer).
const MAX_KEY_USERNAME_BYTES: usize = 128;

/// Who is trying: the username asked for and the client's address (`None` when the server
/// was not told, e.g. in a router driven without a socket).
type Key = (String, Option<IpAddr>);

/// The failed-login counters of one process.
#[derive(Debug)]
pub struct LoginThrottle {
    max_failures: usize,
    window: Duration,
    max_tracked: usize,
    failures: Mutex<HashMap<Key, VecDeque<Instant>>>,
}

impl Default for LoginThrottle {
    fn default() -> Self {
        Self::new(MAX_FAILURES, WINDOW, MAX_TRACKED)
    }
}

impl LoginThrottle {
    /// A throttle with its own limits (tests use small ones).
    pub fn new(max_failures: usize, window: Duration, max_tracked: usize) -> Self {
        Self {
            max_failures: max_failures.max(1),
            window,
            max_tracked: max_tracked.max(1),
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// Lets an attempt through and counts it as a failure until it succeeds, or refuses it
    /// with the whole seconds to wait (at least 1, so a `Retry-After` header never says 0).
    pub fn attempt(&self, username: &str, client: Option<IpAddr>, now: Instant) -> Result<(), u64> {
        let mut map = self.lock();
        let key = key(username, client);
        if let Some(times) = map.get_mut(&key) {
            forget_expired(times, now, self.window);
            if times.len() >= self.max_failures {
                let oldest = times[times.len() - self.max_failures];
                let wait = (oldest + self.window).saturating_duration_since(now);
                let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                return Err(seconds.max(1));
            }
        } else if map.len() >= self.max_tracked {
            self.make_room(&mut map, now);
        }
        map.entry(key).or_default().push_back(now);
        Ok(())
    }

    /// The password was right: the pair's failures, this attempt's included, are forgotten.
    pub fn succeeded(&self, username: &str, client: Option<IpAddr>) {
        self.lock().remove(&key(username, client));
    }

    /// How many pairs are remembered (for tests).
    pub fn tracked(&self) -> usize {
        self.lock().len()
    }

    /// Drops pairs with no failure left in the window; if none, the pair whose last failure is
    /// the oldest. Runs only when the map is full, so its linear scan is rare.
    fn make_room(&self, map: &mut HashMap<Key, VecDeque<Instant>>, now: Instant) {
        let window = self.window;
        map.retain(|_, times| times.back().is_some_and(|&t| now.saturating_duration_since(t) < window));
        if map.len() >= self.max_tracked
            && let Some(stalest) = map
                .iter()
                .min_by_key(|(_, times)| times.back().copied())
                .map(|(k, _)| k.clone())
        {
            map.remove(&stalest);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, VecDeque<Instant>>> {
        // A panic while holding the lock leaves plain counters behind: still usable.
        self.failures.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn key(username: &str, client: Option<IpAddr>) -> Key {
    let mut end = username.len().min(MAX_KEY_USERNAME_BYTES);
    while !username.is_char_boundary(end) {
        end -= 1;
    }
    (username[..end].to_owned(), client)
}

fn forget_expired(times: &mut VecDeque<Instant>, now: Instant, window: Duration) {
    while times
        .front()
        .is_some_and(|&t| now.saturating_duration_since(t) >= window)
    {
        times.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    const HOME: Option<IpAddr> = Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)));
    const ELSEWHERE: Option<IpAddr> = Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)));

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    /// `n` attempts that all get through (and, never succeeding, stay counted as failures).
    fn fail_n(t: &LoginThrottle, user: &str, ip: Option<IpAddr>, n: usize, at: Instant) {
        for i in 0..n {
            assert_eq!(t.attempt(user, ip, at), Ok(()), "attempt {i} of {user}");
        }
    }

    #[test]
    fn attempts_are_let_through_until_the_failures_reach_the_limit() {
        let t = LoginThrottle::new(3, secs(60), 100);
        let now = Instant::now();
        fail_n(&t, "alice", HOME, 3, now);
        assert_eq!(t.attempt("alice", HOME, now), Err(60));
    }

    #[test]
    fn attempts_in_flight_count_before_their_password_is_checked() {
        // Ten attempts arrive together; none has been answered yet.
        let t = LoginThrottle::new(3, secs(60), 100);
        let now = Instant::now();
        let through = (0..10).filter(|_| t.attempt("alice", HOME, now).is_ok()).count();
        assert_eq!(through, 3);
    }

    #[test]
    fn the_wait_ends_when_the_oldest_counted_failure_leaves_the_window() {
        let t = LoginThrottle::new(2, secs(60), 100);
        let start = Instant::now();
        fail_n(&t, "alice", HOME, 1, start);
        fail_n(&t, "alice", HOME, 1, start + secs(20));
        assert_eq!(t.attempt("alice", HOME, start + secs(30)), Err(30));
        // At 60 s the first failure has expired: this attempt gets through and counts.
        fail_n(&t, "alice", HOME, 1, start + secs(60));
        assert_eq!(
            t.attempt("alice", HOME, start + secs(62)),
            Err(18),
            "now the failure at 20 s is the oldest of the two that count"
        );
    }

    #[test]
    fn a_wait_is_rounded_up_and_never_zero_seconds() {
        let t = LoginThrottle::new(1, secs(60), 100);
        let start = Instant::now();
        fail_n(&t, "alice", HOME, 1, start);
        assert_eq!(t.attempt("alice", HOME, start + Duration::from_millis(30_500)), Err(30));
        let almost = start + secs(60) - Duration::from_millis(1);
        assert_eq!(t.attempt("alice", HOME, almost), Err(1));
    }

    #[test]
    fn a_correct_password_clears_the_failures() {
        let t = LoginThrottle::new(3, secs(60), 100);
        let now = Instant::now();
        fail_n(&t, "alice", HOME, 2, now);
        t.succeeded("alice", HOME);
        fail_n(&t, "alice", HOME, 3, now);
        assert!(t.attempt("alice", HOME, now).is_err());
    }

    #[test]
    fn another_address_or_another_username_is_not_affected() {
        let t = LoginThrottle::new(2, secs(60), 100);
        let now = Instant::now();
        fail_n(&t, "admin", ELSEWHERE, 2, now);
        assert!(t.attempt("admin", ELSEWHERE, now).is_err());
        assert_eq!(
            t.attempt("admin", HOME, now),
            Ok(()),
            "the owner elsewhere still logs in"
        );
        assert_eq!(t.attempt("alice", ELSEWHERE, now), Ok(()));
        assert_eq!(t.attempt("admin", None, now), Ok(()));
    }

    #[test]
    fn refused_attempts_do_not_extend_the_wait() {
        let t = LoginThrottle::new(3, secs(60), 100);
        let now = Instant::now();
        fail_n(&t, "alice", HOME, 3, now);
        for s in 1..59 {
            assert!(t.attempt("alice", HOME, now + secs(s)).is_err());
        }
        assert_eq!(t.attempt("alice", HOME, now + secs(59)), Err(1));
        assert_eq!(t.attempt("alice", HOME, now + secs(60)), Ok(()));
    }

    #[test]
    fn expired_failures_are_forgotten() {
        let t = LoginThrottle::new(1, secs(60), 100);
        let now = Instant::now();
        fail_n(&t, "alice", HOME, 1, now);
        assert_eq!(t.tracked(), 1);
        assert_eq!(t.attempt("alice", HOME, now + secs(61)), Ok(()));
        t.succeeded("alice", HOME);
        assert_eq!(t.tracked(), 0);
    }

    #[test]
    fn a_full_table_forgets_expired_pairs_first_then_the_stalest() {
        let t = LoginThrottle::new(3, secs(60), 3);
        let start = Instant::now();
        fail_n(&t, "old", HOME, 1, start);
        fail_n(&t, "a", HOME, 1, start + secs(30));
        fail_n(&t, "b", HOME, 1, start + secs(40));
        // "old" expired at 60 s: it makes room for "c".
        fail_n(&t, "c", HOME, 3, start + secs(61));
        assert_eq!(t.tracked(), 3);
        assert!(t.attempt("c", HOME, start + secs(61)).is_err());
        // Nothing has expired at 62 s: the stalest live pair, "a", goes.
        fail_n(&t, "d", HOME, 3, start + secs(62));
        assert_eq!(t.tracked(), 3);
        assert!(t.attempt("d", HOME, start + secs(62)).is_err());
        assert!(t.attempt("c", HOME, start + secs(62)).is_err(), "c is kept");
        fail_n(&t, "b", HOME, 2, start + secs(62));
        assert!(
            t.attempt("b", HOME, start + secs(62)).is_err(),
            "b is kept, with its first failure"
        );
        fail_n(&t, "a", HOME, 3, start + secs(62));
    }

    #[test]
    fn very_long_usernames_share_a_bounded_key() {
        let t = LoginThrottle::new(1, secs(60), 100);
        let now = Instant::now();
        let long = "é".repeat(200);
        fail_n(&t, &long, HOME, 1, now);
        assert!(t.attempt(&format!("{long}x"), HOME, now).is_err());
    }
}
