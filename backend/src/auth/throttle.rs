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
/// A login's username is cut to this many characters (not bytes) before it is used as a key or
/// written to a log: no real username is longer (`users::username_problem`), and a key cut
/// this short keeps a flood of 1 MiB usernames from growing the table.
pub const MAX_LOGIN_USERNAME_CHARS: usize = 64;

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
        let username = login_name(username).to_owned();
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

/// `username` cut to its first [`MAX_LOGIN_USERNAME_CHARS`] characters: what the login keys
/// the throttle on and writes to its log.
pub fn login_name(username: &str) -> &str {
    match username.char_indices().nth(MAX_LOGIN_USERNAME_CHARS) {
        Some((end, _)) => &username[..end],
        None => username,
    }
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
mod tests;
