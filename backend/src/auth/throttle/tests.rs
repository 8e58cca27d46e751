//! Tests of `throttle`.

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

#[test]
fn a_username_is_cut_to_64_characters_not_bytes() {
    let t = throttle(1, 60, 100);
    let now = Instant::now();
    // 65 characters: the 65th does not count, so these two are one key.
    fail_n(&t, &format!("{}x", "a".repeat(64)), HOME, 1, now);
    assert!(t.attempt(&format!("{}y", "a".repeat(64)), HOME, now).is_err());
    // 64 characters of two bytes each: all of them count, so these two are two keys.
    fail_n(&t, &format!("{}x", "é".repeat(63)), HOME, 1, now);
    assert!(t.attempt(&format!("{}y", "é".repeat(63)), HOME, now).is_ok());
}

#[test]
fn a_huge_username_is_kept_as_its_first_64_characters() {
    let t = throttle(5, 60, 100);
    let attempt = t.attempt(&"ü".repeat(1 << 20), HOME, Instant::now()).unwrap();
    assert_eq!(attempt.username, "ü".repeat(64));
    assert_eq!(login_name("short"), "short");
}
