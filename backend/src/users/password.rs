//! Password hashing with Argon2id (the `argon2` crate's defaults: OWASP's recommended
//! parameters), stored as self-describing PHC strings so parameters can be raised later.
//!
//! Each hash takes about 19 MiB and tens of milliseconds of one core, on purpose. Run without a
//! bound, 200 concurrent logins took the release server from 39 MiB to 3.8 GiB resident, so
//! every hash the server computes for a request goes through [`PasswordWork`]: a few at a time
//! (about the core count), and past a short wait the caller is told the server is busy.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use argon2::Argon2;
use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};

/// Hashes a password with a fresh random salt.
pub fn hash(password: &str) -> Result<String, argon2::password_hash::Error> {
    // argon2 0.6 draws the salt from the OS generator itself.
    Ok(Argon2::default().hash_password(password.as_bytes())?.to_string())
}

/// True when `password` matches the stored PHC string; a malformed hash never matches.
pub fn verify(password: &str, phc: &str) -> bool {
    match PasswordHash::new(phc) {
        Ok(parsed) => Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok(),
        Err(_) => false,
    }
}

/// The most hashes at once whatever the core count: a pod on a 128-core GPU node without a CPU
/// limit sees all 128 cores, and 128 × 19 MiB would not fit its 1 GiB memory limit.
pub const MAX_SLOTS: usize = 4;

/// How long a request waits for a hashing slot before it is answered "busy".
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(3);

/// The caller waited [`PasswordWork`]'s whole patience for a slot: the server is busy hashing.
#[derive(Debug, thiserror::Error)]
#[error("the server is busy checking passwords")]
pub struct Busy;

/// Makes glibc give every large block (over 128 KiB) straight back to the OS when it is freed.
///
/// By default glibc raises its mmap threshold to the size of the last large block freed, so
/// from the second hash on, Argon2's 19 MiB block comes from the heap and stays there: measured
/// on the release server, each login kept 19 MiB resident for good (6 logins: 21 → 139 MiB;
/// 200: 3.8 GiB). Fixing the threshold turns that dynamic raise off; with it the same 6 logins
/// stay at 21 MiB. Process-wide and idempotent; a no-op off glibc.
fn return_hash_memory_to_the_os() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: mallopt only changes the allocator's tuning; 128 KiB is glibc's own default
        // threshold, and setting it explicitly is what disables the dynamic adjustment.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
        }
    });
}

/// A unit of work for a hashing thread.
type Job = Box<dyn FnOnce() + Send>;

/// Password hashing bounded to a few at a time, on a few threads of its own. Requests queue
/// (first come, first served) for a slot for at most `max_wait`; the slot is held by the job
/// itself, so a client that hangs up does not free a slot while its hash still runs.
///
/// Why threads of its own rather than tokio's blocking pool: glibc keeps a freed 19 MiB Argon2
/// block in the arena of the thread that freed it, and the blocking pool spreads jobs over many
/// threads (a new one whenever none is idle at that instant), each with its own arena; on a
/// few dedicated threads only a few arenas ever see such blocks. (The blocks themselves are
/// returned to the OS after each hash: see `return_hash_memory_to_the_os`.)
#[derive(Debug)]
pub struct PasswordWork {
    slots: Arc<tokio::sync::Semaphore>,
    jobs: std::sync::mpsc::SyncSender<Job>,
    max_wait: Duration,
    running: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
}

impl PasswordWork {
    /// At most `max_parallel` hashes at once (at least one), each on one of as many threads; a
    /// request waits at most `max_wait`. The threads end when this is dropped.
    pub fn new(max_parallel: usize, max_wait: Duration) -> Self {
        return_hash_memory_to_the_os();
        let max_parallel = max_parallel.max(1);
        let (jobs, queue) = std::sync::mpsc::sync_channel::<Job>(max_parallel);
        let queue = Arc::new(std::sync::Mutex::new(queue));
        for i in 0..max_parallel {
            let queue = queue.clone();
            std::thread::Builder::new()
                .name(format!("password-hash-{i}"))
                .spawn(move || {
                    loop {
                        // Take one job, then let go of the queue while running it.
                        let job = match queue.lock() {
                            Ok(q) => q.recv(),
                            Err(_) => return,
                        };
                        match job {
                            Ok(job) => job(),
                            Err(_) => return, // every sender dropped
                        }
                    }
                })
                .expect("start a password hashing thread");
        }
        Self {
            slots: Arc::new(tokio::sync::Semaphore::new(max_parallel)),
            jobs,
            max_wait,
            running: Arc::new(AtomicUsize::new(0)),
            peak: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// One slot per core this process may use, at most [`MAX_SLOTS`], and [`DEFAULT_MAX_WAIT`].
    pub fn for_this_machine() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        Self::new(cores.min(MAX_SLOTS), DEFAULT_MAX_WAIT)
    }

    /// The most hashes that ever ran at the same time (for tests and metrics).
    pub fn peak_running(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }

    /// [`hash`] in a slot.
    pub async fn hash(&self, password: String) -> Result<Result<String, argon2::password_hash::Error>, Busy> {
        self.run(move || hash(&password)).await
    }

    /// Runs `work` on a hashing thread once a slot is free, or gives up after `max_wait`.
    pub async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Result<T, Busy> {
        let slot = tokio::time::timeout(self.max_wait, self.slots.clone().acquire_owned())
            .await
            .map_err(|_| Busy)?
            .map_err(|_| Busy)?;
        let running = self.running.clone();
        let peak = self.peak.clone();
        let (done, result) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _slot = slot;
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
            running.fetch_sub(1, Ordering::SeqCst);
            let _ = done.send(out);
        });
        // Never blocks: a job is sent only with a slot, and the queue has room for every slot.
        self.jobs.send(job).map_err(|_| Busy)?;
        match result.await {
            Ok(Ok(out)) => Ok(out),
            // A panic in the hashing code is a bug, not a busy server: re-raise it here, where
            // the panic layer turns it into a 500.
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(_) => Err(Busy),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_more_hashes_run_at_once_than_there_are_slots() {
        let work = Arc::new(PasswordWork::new(2, Duration::from_secs(600)));
        let tasks: Vec<_> = (0..16)
            .map(|_| {
                let work = work.clone();
                tokio::spawn(async move { work.run(|| std::thread::sleep(Duration::from_millis(20))).await })
            })
            .collect();
        for t in tasks {
            t.await.unwrap().unwrap();
        }
        assert_eq!(work.peak_running(), 2, "two slots, sixteen callers");
    }

    #[tokio::test(start_paused = true)]
    async fn a_caller_that_finds_every_slot_taken_past_the_wait_is_told_busy() {
        let work = PasswordWork::new(1, Duration::from_secs(3));
        let held = work.slots.clone().acquire_owned().await.unwrap();
        assert!(matches!(work.run(|| 1).await, Err(Busy)));
        drop(held);
        assert_eq!(work.run(|| 1).await.unwrap(), 1);
    }

    #[test]
    fn a_hash_verifies_its_password_and_nothing_else() {
        let h = hash("correct horse battery staple").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify("correct horse battery staple", &h));
        assert!(!verify("correct horse battery stapl", &h));
        assert!(!verify("anything", "not a phc string"));
    }
}
