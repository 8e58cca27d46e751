//! Per-user caps on what a user holds open at once: event streams and followed logs, notebook
//! tunnels, proxied notebook requests. Each pool is its own, so one kind of use cannot starve
//! another (a JupyterLab with many kernels does not take the portal's event streams away).
//! It lives below the state and every handler that takes a slot: a small floor of its own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// One pool of slots, counted per user.
#[derive(Debug, Default)]
pub struct UserSlots {
    open: Mutex<HashMap<i64, usize>>,
}

/// One slot of a user; dropping it (the client went away, the stream or request ended) frees it.
#[derive(Debug)]
pub struct Slot {
    slots: Arc<UserSlots>,
    user: i64,
}

impl UserSlots {
    /// A slot for `user`, unless they already hold `max`.
    pub fn try_take(self: &Arc<Self>, user: i64, max: usize) -> Option<Slot> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(user).or_insert(0);
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(Slot {
            slots: self.clone(),
            user,
        })
    }

    /// Slots `user` holds now.
    pub fn open_for(&self, user: i64) -> usize {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.get(&user).copied().unwrap_or(0)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.slots.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.user) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.user);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_holds_at_most_max_slots_and_a_dropped_one_is_free_again() {
        let slots = Arc::new(UserSlots::default());
        let a = slots.try_take(1, 2).unwrap();
        let _b = slots.try_take(1, 2).unwrap();
        assert!(slots.try_take(1, 2).is_none());
        assert!(slots.try_take(2, 2).is_some(), "another user's pool count is their own");
        drop(a);
        assert_eq!(slots.open_for(1), 1);
        assert!(slots.try_take(1, 2).is_some());
    }
}
