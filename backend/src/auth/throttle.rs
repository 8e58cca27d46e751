//! Failed-login throttling, two buckets deep:
//! - per (username, client address): after [`MAX_FAILURES`] wrong passwords within [`WINDOW`],
//!   further attempts for that pair are refused (429 `too_many_attempts`) until the oldest of
//!   those failures leaves the window;
//! - per client address over all usernames: [`MAX_ADDRESS_FAILURES`] within the window, so a
//!   spray of invented usernames from one place is cut off after a few dozen hashes.
//!
//! An attempt counts as a failure from the moment it is let through ([`LoginThrottle::attempt`])
//! until it succeeds ([`LoginThrottle::succeeded`]) or turns out not to have been a guess at all
//! ([`LoginThrottle::not_counted`]: the database failed). Counting only after the password check
//! would let a client that sends 100 attempts at once past the check 100 times.
//!
//! Why these keys: a limit per username alone would let anyone lock the admin out by failing on
//! purpose; the pair slows guessing one account's password from one place while its owner
//! elsewhere logs in as usual. IPv6 addresses are keyed by their /64, since one host usually
//! owns a whole /64 and could otherwise take a fresh address per attempt.
//!
//! Memory is bounded: at most [`MAX_TRACKED`] addresses, each holding at most its own limit of
//! usernames. A full table refuses new addresses (until some expire) instead of forgetting old
//! ones: forgetting the stalest would let an attacker evict their own counter by spraying new
//! keys. Filling it takes 10,000 addresses each with a live failure; IPv6 /64s count on their
//! own only up to [`MAX_NETS_PER_SITE`] per /48, so one /48 cannot do it alone. Refused attempts are answered
//! before any password hashing, so a flood of them costs no Argon2 work. State is in memory,
//! per process.
//!
//! The logic takes `now` as an argument and does no I/O, so tests drive time directly.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Wrong passwords allowed per (username, address) within [`WINDOW`].
pub const MAX_FAILURES: usize = 5;
/// Wrong passwords allowed per address, over all usernames, within [`WINDOW`].
pub const MAX_ADDRESS_FAILURES: usize = 20;
/// How long a failure counts.
pub const WINDOW: Duration = Duration::from_secs(5 * 60);
/// Most addresses remembered at once (each with at most [`MAX_ADDRESS_FAILURES`] usernames).
pub const MAX_TRACKED: usize = 10_000;
/// Usernames are cut to this many bytes in the key (no real username is longer).
const MAX_KEY_USERNAME_BYTES: usize = 128;

/// Where an attempt comes from: the client's address with IPv6 cut to its /64, or the rest of
/// an IPv6 /48 that already has [`MAX_NETS_PER_SITE`] /64s tracked (`None` when the server was
/// not told, e.g. a router driven without a socket).
type Place = Option<IpAddr>;

/// How many /64s of one IPv6 /48 are tracked on their own; past that, the rest of the /48
/// shares one key. A /48 (which one person can get for free) holds 65,536 /64s: without this,
/// one /48 could fill the whole table and lock every new address out.
pub const MAX_NETS_PER_SITE: usize = 64;

/// An attempt that was let through; hand it back to say how it ended.
#[derive(Debug, Clone)]
pub struct Attempt {
    place: Place,
    username: String,
    at: Instant,
}

/// The limits of one throttle (tests use small ones).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Failures per (username, address).
    pub per_pair: usize,
    /// Failures per address, over all usernames.
    pub per_address: usize,
    /// How long a failure counts.
    pub window: Duration,
    /// Most addresses remembered at once.
    pub max_tracked: usize,
    /// Most /64s of one IPv6 /48 tracked on their own.
    pub nets_per_site: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            per_pair: MAX_FAILURES,
            per_address: MAX_ADDRESS_FAILURES,
            window: WINDOW,
            max_tracked: MAX_TRACKED,
            nets_per_site: MAX_NETS_PER_SITE,
        }
    }
}

/// One address's failures, and among them those of each username tried from it. Keeping the
/// pairs inside their address bounds them by the address's own limit: an address holds at
/// most `per_address` live failures, hence at most that many live pairs, so no separate pair
/// table can fill up (and lock out every new pair) before the addresses do.
#[derive(Debug, Default)]
struct PlaceBucket {
    failures: VecDeque<Instant>,
    pairs: HashMap<String, VecDeque<Instant>>,
}

impl PlaceBucket {
    fn forget_expired(&mut self, now: Instant, window: Duration) {
        forget_expired(&mut self.failures, now, window);
        self.pairs.retain(|_, times| {
            forget_expired(times, now, window);
            !times.is_empty()
        });
    }
}

/// Every address's bucket, and how many /64 buckets each IPv6 /48 has.
#[derive(Debug, Default)]
struct Table {
    places: HashMap<Place, PlaceBucket>,
    sites: HashMap<u64, usize>,
}

/// The /48 an IPv6 /64 key belongs to.
fn site_of(place: &Place) -> Option<u64> {
    match place {
        Some(IpAddr::V6(v6)) if u128::from(*v6) & u128::from(u64::MAX) == 0 => Some((u128::from(*v6) >> 80) as u64),
        _ => None,
    }
}

/// The key of "the rest of this /48": its prefix with the low bit set, which no /64 key
/// (whose low 64 bits are zero) can equal.
fn site_place(site: u64) -> Place {
    Some(IpAddr::V6(Ipv6Addr::from((u128::from(site) << 80) | 1)))
}

impl Table {
    fn forget(&mut self, place: &Place) {
        if self.places.remove(place).is_some() {
            uncount(&mut self.sites, place);
        }
    }
}

fn uncount(sites: &mut HashMap<u64, usize>, place: &Place) {
    if let Some(site) = site_of(place)
        && let Some(n) = sites.get_mut(&site)
    {
        *n -= 1;
        if *n == 0 {
            sites.remove(&site);
        }
    }
}

/// The failed-login counters of one process.
#[derive(Debug)]
pub struct LoginThrottle {
    limits: Limits,
    table: Mutex<Table>,
}

impl Default for LoginThrottle {
    fn default() -> Self {
        Self::new(Limits::default())
    }
}

impl LoginThrottle {
    /// A throttle with its own limits.
    pub fn new(limits: Limits) -> Self {
        Self {
            limits: Limits {
                per_pair: limits.per_pair.max(1),
                per_address: limits.per_address.max(1),
                window: limits.window,
                max_tracked: limits.max_tracked.max(1),
                nets_per_site: limits.nets_per_site.max(1),
            },
            table: Mutex::new(Table::default()),
        }
    }

    /// Lets an attempt through and counts it as a failure until told otherwise, or refuses it
    /// with the whole seconds to wait (at least 1, so a `Retry-After` header never says 0).
    pub fn attempt(&self, username: &str, client: Option<IpAddr>, now: Instant) -> Result<Attempt, u64> {
        let Limits {
            per_pair,
            per_address,
            window,
            max_tracked,
            nets_per_site,
        } = self.limits;
        let mut place = place_of(client);
        let username = bounded(username);
        let mut table = self.lock();
        if !table.places.contains_key(&place)
            && let Some(site) = site_of(&place)
            && table.sites.get(&site).is_some_and(|&n| n >= nets_per_site)
        {
            place = site_place(site);
        }
        let Table { places, sites } = &mut *table;
        if let Some(bucket) = places.get_mut(&place) {
            bucket.forget_expired(now, window);
            let pair_wait = bucket.pairs.get(&username).and_then(|t| wait(t, per_pair, window, now));
            let place_wait = wait(&bucket.failures, per_address, window, now);
            if let Some(seconds) = pair_wait.max(place_wait) {
                return Err(seconds);
            }
        } else {
            make_room(places, sites, max_tracked, now, window)?;
            if let Some(site) = site_of(&place) {
                *sites.entry(site).or_default() += 1;
            }
        }
        let bucket = places.entry(place).or_default();
        bucket.failures.push_back(now);
        bucket.pairs.entry(username.clone()).or_default().push_back(now);
        Ok(Attempt {
            place,
            username,
            at: now,
        })
    }

    /// The password was right: the pair's failures are forgotten, and this attempt no longer
    /// counts against the address. The address's other failures stay: a valid login must not
    /// reset a spray of guesses at other accounts from the same place.
    pub fn succeeded(&self, attempt: &Attempt) {
        let mut table = self.lock();
        if let Some(bucket) = table.places.get_mut(&attempt.place) {
            bucket.pairs.remove(&attempt.username);
            remove_one(&mut bucket.failures, attempt.at);
        }
        drop_if_empty(&mut table, &attempt.place);
    }

    /// The attempt ended without a verdict on the password (the database failed, the server
    /// was busy): it is not held against anyone.
    pub fn not_counted(&self, attempt: &Attempt) {
        let mut table = self.lock();
        if let Some(bucket) = table.places.get_mut(&attempt.place) {
            if let Some(times) = bucket.pairs.get_mut(&attempt.username) {
                remove_one(times, attempt.at);
                if times.is_empty() {
                    bucket.pairs.remove(&attempt.username);
                }
            }
            remove_one(&mut bucket.failures, attempt.at);
        }
        drop_if_empty(&mut table, &attempt.place);
    }

    /// How many (username, address) pairs are remembered (for tests).
    pub fn tracked(&self) -> usize {
        self.lock().places.values().map(|b| b.pairs.len()).sum()
    }

    /// How many address keys are remembered (for tests).
    pub fn tracked_places(&self) -> usize {
        self.lock().places.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        // A panic while holding the lock leaves plain counters behind: still usable.
        self.table.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The throttle's key for an address: IPv4 (also when written as IPv4-mapped IPv6) as is, IPv6
/// cut to its /64.
pub fn place_of(client: Option<IpAddr>) -> Place {
    client.map(|ip| match ip {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        },
    })
}

/// If a bucket holds `limit` live failures, how long until the oldest that counts expires.
fn wait(times: &VecDeque<Instant>, limit: usize, window: Duration, now: Instant) -> Option<u64> {
    (times.len() >= limit).then(|| seconds_until(times[times.len() - limit] + window, now))
}

/// Makes room for one more address: drops addresses with no failure left in the window; if
/// the table is still full, refuses (with the wait until the first address expires) rather
/// than evicting a live one. Runs only when the table is full, so its linear scan is rare.
fn make_room(
    places: &mut HashMap<Place, PlaceBucket>,
    sites: &mut HashMap<u64, usize>,
    max: usize,
    now: Instant,
    window: Duration,
) -> Result<(), u64> {
    if places.len() < max {
        return Ok(());
    }
    places.retain(|place, b| {
        let live = b
            .failures
            .back()
            .is_some_and(|&t| now.saturating_duration_since(t) < window);
        if !live {
            uncount(sites, place);
        }
        live
    });
    if places.len() < max {
        return Ok(());
    }
    let first_free = places
        .values()
        .filter_map(|b| b.failures.back())
        .min()
        .map_or(now + window, |&t| t + window);
    Err(seconds_until(first_free, now))
}

fn remove_one(times: &mut VecDeque<Instant>, at: Instant) {
    if let Some(i) = times.iter().rposition(|&t| t == at) {
        times.remove(i);
    }
}

fn drop_if_empty(table: &mut Table, place: &Place) {
    if table
        .places
        .get(place)
        .is_some_and(|b| b.failures.is_empty() && b.pairs.is_empty())
    {
        table.forget(place);
    }
}

fn seconds_until(then: Instant, now: Instant) -> u64 {
    let wait = then.saturating_duration_since(now);
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

fn bounded(username: &str) -> String {
    let mut end = username.len().min(MAX_KEY_USERNAME_BYTES);
    while !username.is_char_boundary(end) {
        end -= 1;
    }
    username[..end].to_owned()
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

    /// Pair limit `pair`, a generous address limit, window `window` s, room for `max` keys.
    fn throttle(pair: usize, window: u64, max: usize) -> LoginThrottle {
        LoginThrottle::new(Limits {
            per_pair: pair,
            per_address: 1000,
            window: secs(window),
            max_tracked: max,
            nets_per_site: 1000,
        })
    }

    /// `n` attempts that all get through (and, never succeeding, stay counted as failures).
    fn fail_n(t: &LoginThrottle, user: &str, ip: Option<IpAddr>, n: usize, at: Instant) -> Vec<Attempt> {
        (0..n)
            .map(|i| {
                t.attempt(user, ip, at)
                    .unwrap_or_else(|w| panic!("attempt {i} of {user} refused for {w} s"))
            })
            .collect()
    }

    #[test]
    fn attempts_are_let_through_until_the_failures_reach_the_limit() {
        let t = throttle(3, 60, 100);
        let now = Instant::now();
        fail_n(&t, "alice", HOME, 3, now);
        assert_eq!(t.attempt("alice", HOME, now).unwrap_err(), 60);
    }

    #[test]
    fn attempts_in_flight_count_before_their_password_is_checked() {
        // Ten attempts arrive together; none has been answered yet.
        let t = throttle(3, 60, 100);
        let now = Instant::now();
        let through = (0..10).filter(|_| t.attempt("alice", HOME, now).is_ok()).count();
        assert_eq!(through, 3);
    }

    #[test]
    fn the_wait_ends_when_the_oldest_counted_failure_leaves_the_window() {
        let t = throttle(2, 60, 100);
        let start = Instant::now();
        fail_n(&t, "alice", HOME, 1, start);
        fail_n(&t, "alice", HOME, 1, start + secs(20));
        assert_eq!(t.attempt("alice", HOME, start + secs(30)).unwrap_err(), 30);
        // At 60 s the first failure has expired: this attempt gets through and counts.
        fail_n(&t, "alice", HOME, 1, start + secs(60));
        assert_eq!(
            t.attempt("alice", HOME, start + secs(62)).unwrap_err(),
            18,
            "now the failure at 20 s is the oldest of the two that count"
        );
    }

    #[test]
    fn a_wait_is_rounded_up_and_never_zero_seconds() {
        let t = throttle(1, 60, 100);
        let start = Instant::now();
        fail_n(&t, "alice", HOME, 1, start);
        assert_eq!(
            t.attempt("alice", HOME, start + Duration::from_millis(30_500))
                .unwrap_err(),
            30
        );
        let almost = start + secs(60) - Duration::from_millis(1);
        assert_eq!(t.attempt("alice", HOME, almost).unwrap_err(), 1);
    }

    #[test]
    fn a_correct_password_clears_the_failures_of_its_pair() {
        let t = throttle(3, 60, 100);
        let now = Instant::now();
        let tries = fail_n(&t, "alice", HOME, 2, now);
        t.succeeded(&tries[1]);
        fail_n(&t, "alice", HOME, 3, now);
        assert!(t.attempt("alice", HOME, now).is_err());
    }

    #[test]
    fn another_address_or_another_username_is_not_affected() {
        let t = throttle(2, 60, 100);
        let now = Instant::now();
        fail_n(&t, "admin", ELSEWHERE, 2, now);
        assert!(t.attempt("admin", ELSEWHERE, now).is_err());
        assert!(
            t.attempt("admin", HOME, now).is_ok(),
            "the owner elsewhere still logs in"
        );
        assert!(t.attempt("alice", ELSEWHERE, now).is_ok());
        assert!(t.attempt("admin", None, now).is_ok());
    }

    #[test]
    fn one_address_spraying_invented_usernames_is_cut_off_over_all_of_them() {
        let t = LoginThrottle::new(Limits {
            per_pair: 5,
            per_address: 4,
            window: secs(60),
            max_tracked: 100,
            nets_per_site: 1000,
        });
        let now = Instant::now();
        for i in 0..4 {
            fail_n(&t, &format!("user{i}"), HOME, 1, now);
        }
        assert_eq!(t.attempt("user99", HOME, now).unwrap_err(), 60);
        assert!(t.attempt("user99", ELSEWHERE, now).is_ok(), "other addresses go on");
    }

    #[test]
    fn a_correct_password_does_not_reset_the_address_s_other_failures() {
        let t = LoginThrottle::new(Limits {
            per_pair: 5,
            per_address: 3,
            window: secs(60),
            max_tracked: 100,
            nets_per_site: 1000,
        });
        let now = Instant::now();
        fail_n(&t, "victim1", HOME, 1, now);
        fail_n(&t, "victim2", HOME, 1, now);
        let mine = fail_n(&t, "me", HOME, 1, now);
        t.succeeded(&mine[0]);
        // The valid login took itself off the count, and nothing else.
        fail_n(&t, "victim3", HOME, 1, now);
        assert!(t.attempt("victim4", HOME, now).is_err());
    }

    #[test]
    fn an_ipv6_host_cannot_escape_by_changing_address_inside_its_64() {
        let t = LoginThrottle::new(Limits {
            per_pair: 5,
            per_address: 2,
            window: secs(60),
            max_tracked: 100,
            nets_per_site: 1000,
        });
        let now = Instant::now();
        let a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let other_net: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        fail_n(&t, "x", Some(a), 1, now);
        fail_n(&t, "y", Some(b), 1, now);
        assert!(t.attempt("z", Some(b), now).is_err(), "same /64");
        assert!(t.attempt("z", Some(other_net), now).is_ok());
    }

    #[test]
    fn one_ipv6_48_spraying_its_64s_takes_a_bounded_share_of_the_table() {
        let t = LoginThrottle::new(Limits {
            per_pair: 5,
            per_address: 20,
            window: secs(60),
            max_tracked: 10,
            nets_per_site: 3,
        });
        let now = Instant::now();
        for net in 0..23u16 {
            let ip: IpAddr = format!("2001:db8:abcd:{net:x}::1").parse().unwrap();
            t.attempt(&format!("invented-{net}"), Some(ip), now)
                .expect("under every limit");
        }
        // Three /64s on their own, the other 20 in one bucket for the rest of the /48...
        assert_eq!(t.tracked_places(), 4);
        // ...which has its own per-address limit (20 failures), now reached: the next from
        // that /48 is refused...
        let next: IpAddr = "2001:db8:abcd:ff::1".parse().unwrap();
        assert!(t.attempt("invented-99", Some(next), now).is_err());
        // ...while the table still has room for everybody else.
        let elsewhere: IpAddr = "2001:db8:beef::1".parse().unwrap();
        assert!(t.attempt("x", Some(elsewhere), now).is_ok());
        assert!(t.attempt("x", HOME, now).is_ok());
    }

    #[test]
    fn a_64_that_expires_gives_its_place_back_to_its_48() {
        let t = LoginThrottle::new(Limits {
            per_pair: 5,
            per_address: 20,
            window: secs(60),
            max_tracked: 2,
            nets_per_site: 1,
        });
        let start = Instant::now();
        let a: IpAddr = "2001:db8:1:1::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        t.attempt("x", Some(a), start).unwrap();
        t.attempt("x", Some(b), start).unwrap();
        assert_eq!(t.tracked_places(), 2, "a on its own, b in the rest of the /48");
        // Both expire; a full table purges them, and the /48's count with them.
        t.attempt("x", HOME, start + secs(61)).unwrap();
        let won = t.attempt("x", Some(b), start + secs(61)).unwrap();
        t.not_counted(&won);
        let again = t.attempt("x", Some(b), start + secs(61)).unwrap();
        assert_eq!(again.place, place_of(Some(b)), "b is tracked on its own now");
    }

    #[test]
    fn an_ipv4_mapped_address_is_the_same_place_as_the_ipv4_address() {
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(place_of(Some(mapped)), HOME);
    }

    #[test]
    fn an_attempt_that_ended_in_a_database_error_is_not_counted() {
        let t = throttle(2, 60, 100);
        let now = Instant::now();
        for _ in 0..10 {
            let a = t.attempt("alice", HOME, now).expect("never counted, never throttled");
            t.not_counted(&a);
        }
        assert_eq!(t.tracked(), 0);
        fail_n(&t, "alice", HOME, 2, now);
        assert!(t.attempt("alice", HOME, now).is_err());
    }

    #[test]
    fn refused_attempts_do_not_extend_the_wait() {
        let t = throttle(3, 60, 100);
        let now = Instant::now();
        fail_n(&t, "alice", HOME, 3, now);
        for s in 1..59 {
            assert!(t.attempt("alice", HOME, now + secs(s)).is_err());
        }
        assert_eq!(t.attempt("alice", HOME, now + secs(59)).unwrap_err(), 1);
        assert!(t.attempt("alice", HOME, now + secs(60)).is_ok());
    }

    #[test]
    fn expired_failures_are_forgotten() {
        let t = throttle(1, 60, 100);
        let now = Instant::now();
        fail_n(&t, "alice", HOME, 1, now);
        assert_eq!(t.tracked(), 1);
        let later = t.attempt("alice", HOME, now + secs(61)).unwrap();
        t.succeeded(&later);
        assert_eq!(t.tracked(), 0);
    }

    fn ip(n: u8) -> Option<IpAddr> {
        Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, n)))
    }

    #[test]
    fn a_full_table_forgets_expired_addresses_but_refuses_new_ones_rather_than_evict_a_live_one() {
        let t = throttle(3, 60, 3);
        let start = Instant::now();
        fail_n(&t, "x", ip(1), 1, start);
        fail_n(&t, "x", ip(2), 1, start + secs(30));
        fail_n(&t, "x", ip(3), 1, start + secs(40));
        // ip(1) expired at 60 s: it makes room for ip(4).
        fail_n(&t, "x", ip(4), 3, start + secs(61));
        assert!(t.attempt("x", ip(4), start + secs(61)).is_err());
        // Nothing has expired at 62 s: a new address is refused until ip(2) (last failure at
        // 30 s) leaves the window at 90 s...
        assert_eq!(t.attempt("x", ip(5), start + secs(62)).unwrap_err(), 28);
        // ...and every live counter is intact: spraying new addresses evicted none of them.
        assert!(
            t.attempt("x", ip(4), start + secs(62)).is_err(),
            "ip(4) keeps its three failures"
        );
        fail_n(&t, "x", ip(3), 2, start + secs(62));
        assert!(
            t.attempt("x", ip(3), start + secs(62)).is_err(),
            "ip(3) keeps its first failure"
        );
        fail_n(&t, "x", ip(5), 1, start + secs(90));
    }

    #[test]
    fn a_full_table_still_lets_a_known_address_try_a_username_it_has_not_tried() {
        // Pairs live inside their address: however many usernames the table holds, a new one
        // from a known address is judged by that address's limits alone.
        let t = LoginThrottle::new(Limits {
            per_pair: 5,
            per_address: 20,
            window: secs(60),
            max_tracked: 2,
            nets_per_site: 1000,
        });
        let now = Instant::now();
        for i in 0..19 {
            fail_n(&t, &format!("invented-{i}"), ip(1), 1, now);
        }
        fail_n(&t, "x", ip(2), 1, now);
        assert!(t.attempt("x", ip(3), now).is_err(), "the address table is full");
        assert!(
            t.attempt("admin", ip(2), now).is_ok(),
            "a known address is not refused for it"
        );
        assert_eq!(t.tracked(), 21);
    }

    #[test]
    fn very_long_usernames_share_a_bounded_key() {
        let t = throttle(1, 60, 100);
        let now = Instant::now();
        let long = "é".repeat(200);
        fail_n(&t, &long, HOME, 1, now);
        assert!(t.attempt(&format!("{long}x"), HOME, now).is_err());
    }
}
