//! The users that authenticated requests reload, kept for a moment: every request checks its
//! token's user (deleted? token version still current?), and reading that row was one
//! statement of every request (issue 25, the list's latency).
//!
//! Kept per user id with the time it was read, for at most [`SessionCache::TTL`]. A write to a
//! user in this process (role, password, display name, logout, deletion) forgets it at once
//! ([`SessionCache::forget`]), so here a token stops working at the change, as before. Another
//! replica's change (PostgreSQL) is seen once the entry expires: within a second.
//!
//! A request that read the row before a change and stores it after the change was forgotten
//! would bring the old row back: every change bumps a generation, and a row read under an
//! older generation is not stored.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::entity;

/// Users of recent requests, by id.
#[derive(Debug, Default)]
pub struct SessionCache {
    users: Mutex<HashMap<i64, (entity::Model, Instant)>>,
    /// Bumped by every [`SessionCache::forget`].
    generation: AtomicU64,
}

/// A read of a user about to begin: see [`SessionCache::generation`].
#[derive(Debug, Clone, Copy)]
pub struct ReadTicket {
    generation: u64,
    began: Instant,
}

/// Most users kept: past it, the cache starts again empty (a flood of distinct users cannot
/// grow it).
const MAX_USERS: usize = 10_000;

impl SessionCache {
    /// How long a user read from the store answers for it.
    pub const TTL: Duration = Duration::from_secs(1);

    /// What to pass to [`SessionCache::keep`] for a row read after this call: the generation,
    /// and the moment the read began, from which the row's second counts (a read that waited
    /// for a connection is not kept for longer).
    pub fn generation(&self) -> ReadTicket {
        ReadTicket {
            generation: self.generation.load(Ordering::Acquire),
            began: Instant::now(),
        }
    }

    /// User `id`, if read less than [`SessionCache::TTL`] ago and not changed here since.
    pub fn get(&self, id: i64) -> Option<entity::Model> {
        let users = self.users.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        users
            .get(&id)
            .filter(|(_, read)| read.elapsed() < Self::TTL)
            .map(|(user, _)| user.clone())
    }

    /// Keeps `user`, read from the store after [`SessionCache::generation`] answered
    /// `ticket`; dropped if a change was made since (the row may be older than it).
    pub fn keep(&self, user: entity::Model, ticket: ReadTicket) {
        let mut users = self.users.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // Checked under the lock `forget` takes: a change either bumped it already, or will
        // remove this entry after it is stored.
        if self.generation.load(Ordering::Acquire) != ticket.generation {
            return;
        }
        if users.len() >= MAX_USERS {
            users.clear();
        }
        users.insert(user.id, (user, ticket.began));
    }

    /// User `id` changed (after the change committed): the next request reads it again.
    pub fn forget(&self, id: i64) {
        let mut users = self.users.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        self.generation.fetch_add(1, Ordering::AcqRel);
        users.remove(&id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(id: i64, version: i64) -> entity::Model {
        entity::Model {
            id,
            username: format!("u{id}"),
            display_name: String::new(),
            password_hash: String::new(),
            role: "user".into(),
            created_at: chrono::DateTime::UNIX_EPOCH,
            updated_at: chrono::DateTime::UNIX_EPOCH,
            token_version: version,
        }
    }

    #[test]
    fn a_kept_user_answers_until_forgotten() {
        let cache = SessionCache::default();
        assert!(cache.get(1).is_none());
        cache.keep(user(1, 0), cache.generation());
        assert_eq!(cache.get(1).map(|u| u.token_version), Some(0));
        cache.forget(1);
        assert!(cache.get(1).is_none());
    }

    #[test]
    fn a_row_read_before_a_change_is_not_kept_after_it() {
        let cache = SessionCache::default();
        let generation = cache.generation();
        // The change commits and is forgotten while the request still holds the old row.
        cache.forget(1);
        cache.keep(user(1, 0), generation);
        assert!(cache.get(1).is_none(), "the old row came back");
        // A row read after the change is kept.
        cache.keep(user(1, 1), cache.generation());
        assert_eq!(cache.get(1).map(|u| u.token_version), Some(1));
    }

    #[test]
    fn a_row_counts_its_second_from_when_its_read_began() {
        let cache = SessionCache::default();
        let mut ticket = cache.generation();
        // The read waited two seconds for a connection: the row is already too old to answer.
        ticket.began = Instant::now()
            .checked_sub(Duration::from_secs(2))
            .expect("the machine has been up for two seconds");
        cache.keep(user(1, 0), ticket);
        assert!(cache.get(1).is_none(), "a row older than the TTL answered");
    }
}
