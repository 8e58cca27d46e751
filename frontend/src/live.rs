//! Live updates: one `EventSource` on `/api/v1/jobs/events/stream` while someone is logged in.
//! Every job event (submitted, activated, preempted, finished …) bumps a version that lists,
//! the job page, the summary and the admin prequeue list read, so they refetch on their own —
//! each only for the events that may change it ([`Live::job_version`],
//! [`Live::list_version`]). The browser reconnects by itself and sends `Last-Event-ID`, so nothing is missed across
//! a dropped connection; bursts are coalesced into one refetch per 300 ms.
//!
//! A stream refused with an error status (the session ended elsewhere, a 503) is not retried by
//! the browser: it is replaced 5 s later, after asking who the session is; the new stream
//! starts from now and the refetch on its `open` covers the gap.
//!
//! The stream is closed when the page is hidden (`pagehide`) and opened again when it shows:
//! Chromium keeps pages navigated away from in its back-forward cache with their streams open,
//! and with six connections per host the seventh page load waited a minute for a free one
//! (measured: 59 s; 0.2 s with the stream closed on `pagehide`).

use std::time::Duration;

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use web_sys::{EventSource, MessageEvent};

use anteroom_shared::api::jobs::JobEventItem;
use anteroom_shared::scheduling::JobPhase;

use crate::auth::use_auth;

const STREAM: &str = "/api/v1/jobs/events/stream";

/// The live version, shared through context.
#[derive(Clone, Copy)]
pub struct Live {
    version: RwSignal<u64>,
    scheduled: RwSignal<bool>,
    /// What the burst being coalesced touched; `None`: anything may have changed (a
    /// reconnect's catch-up, a change made from this page, an event naming no owner).
    pending: StoredValue<Option<Touched>>,
    /// What the last bump touched (`None`: anything).
    touched: RwSignal<Option<Touched>>,
    /// The stream's state, for the indicator in the header.
    state: RwSignal<StreamState>,
}

/// What a burst of events touched: the jobs, their owners, and the phases they may have
/// entered or left.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Touched {
    jobs: std::collections::BTreeSet<i64>,
    owners: std::collections::BTreeSet<String>,
    phases: std::collections::BTreeSet<JobPhase>,
}

/// The phases a job may have been in before an event of `kind`: a list showing one of them
/// may have lost the job (from a page it does not show, so its total moved).
fn left_by(kind: &str) -> &'static [JobPhase] {
    match kind {
        // A new job (`prequeued` follows `submitted` today; a requeue would change that), or
        // no change of phase.
        "submitted" | "prequeued" | "preempted_for" | "locked" | "unlocked" | "requeue_refused" => &[],
        // The watcher's claim (Prequeue → Activating) writes no event: the first one a claimed
        // job sends is its activation, or its failed create (then it is Activating).
        "activated" | "activation_failed" => &[JobPhase::Prequeue, JobPhase::Activating],
        // A preempted job back in the prequeue.
        "requeued" => &[JobPhase::Preempted],
        // Its pods run: it was Pending (or Activating, its create's answer late).
        "started" => &[JobPhase::Pending, JobPhase::Activating],
        // `failed`, `finished`, `deleted`, `preempted`, and kinds this build does not know.
        _ => JobPhase::ALL,
    }
}

/// Whether live updates arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamState {
    /// No stream yet (logged out, the page hidden, or the first connection not open yet).
    Off,
    /// Open: changes arrive as they happen.
    Live,
    /// Dropped: the browser (or, after an error status, this page) is connecting again.
    Reconnecting,
}

impl Live {
    /// Creates the context and keeps one stream open while a user is logged in.
    pub fn provide() -> Live {
        let live = Live {
            version: RwSignal::new(0),
            scheduled: RwSignal::new(false),
            pending: StoredValue::new(Some(Default::default())),
            touched: RwSignal::new(None),
            state: RwSignal::new(StreamState::Off),
        };
        provide_context(live);
        let auth = use_auth();
        let source = StoredValue::new_local(
            None::<(
                EventSource,
                Closure<dyn FnMut(MessageEvent)>,
                Closure<dyn FnMut(web_sys::Event)>,
                Closure<dyn FnMut(web_sys::Event)>,
            )>,
        );
        let shown = RwSignal::new(true);
        if let Some(window) = web_sys::window() {
            let on_hide = Closure::<dyn FnMut(web_sys::Event)>::new(move |_ev: web_sys::Event| {
                source.update_value(|s| {
                    if let Some((es, ..)) = s.take() {
                        es.close();
                    }
                });
                shown.set(false);
            });
            let on_show = Closure::<dyn FnMut(web_sys::Event)>::new(move |_ev: web_sys::Event| shown.set(true));
            let _ = window.add_event_listener_with_callback("pagehide", on_hide.as_ref().unchecked_ref());
            let _ = window.add_event_listener_with_callback("pageshow", on_show.as_ref().unchecked_ref());
            // Listeners for the page's whole life.
            on_hide.forget();
            on_show.forget();
        }
        let retry = RwSignal::new(0u64);
        Effect::new(move |_| {
            retry.track();
            let logged_in = auth.user().is_some() && shown.get();
            let open = source.with_value(|s| s.is_some());
            if logged_in && !open {
                if let Ok(es) = EventSource::new(STREAM) {
                    let on_job = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
                        let event = ev
                            .data()
                            .as_string()
                            .and_then(|d| serde_json::from_str::<anteroom_shared::api::jobs::JobEventItem>(&d).ok());
                        match event {
                            Some(e) => live.job_changed(&e),
                            None => live.changed(),
                        }
                    });
                    let on_open = Closure::<dyn FnMut(web_sys::Event)>::new(move |_ev: web_sys::Event| {
                        live.state.set(StreamState::Live);
                        // Catch up on anything that happened while disconnected.
                        live.changed();
                    });
                    let _ = es.add_event_listener_with_callback("job", on_job.as_ref().unchecked_ref());
                    es.set_onopen(Some(on_open.as_ref().unchecked_ref()));
                    // A network drop is retried by the browser itself; an error status (a 401
                    // after the session ended elsewhere, a 503) closes the stream for good: then
                    // drop it, ask who the session is, and open a new one 5 s later.
                    let on_error = Closure::<dyn FnMut(web_sys::Event)>::new(move |_ev: web_sys::Event| {
                        live.state.set(StreamState::Reconnecting);
                        let closed = source.with_value(|s| {
                            s.as_ref()
                                .is_some_and(|(es, ..)| es.ready_state() == EventSource::CLOSED)
                        });
                        if closed {
                            // Dropped later, not here: this handler is one of the closures the
                            // stored stream owns, and must not be freed while it runs.
                            set_timeout(
                                move || {
                                    source.update_value(|s| {
                                        if s.as_ref()
                                            .is_some_and(|(es, ..)| es.ready_state() == EventSource::CLOSED)
                                        {
                                            s.take();
                                        }
                                    });
                                    auth.recheck();
                                    retry.update(|r| *r += 1);
                                },
                                Duration::from_secs(5),
                            );
                        }
                    });
                    es.set_onerror(Some(on_error.as_ref().unchecked_ref()));
                    source.set_value(Some((es, on_job, on_open, on_error)));
                }
            } else if !logged_in && open {
                source.update_value(|s| {
                    if let Some((es, ..)) = s.take() {
                        es.close();
                    }
                });
            }
            // Nothing shown until the first connection opens (no "reconnecting" at every load).
            if !logged_in {
                live.state.set(StreamState::Off);
            }
        });
        live
    }

    /// The version (reactive): read it in an effect to refetch on every change.
    pub fn version(&self) -> u64 {
        self.version.get()
    }

    /// A version that moves only when job `id` (read reactively) may have changed: what a
    /// page about one job refetches on, so other jobs' events (an admin sees everyone's) cost
    /// it nothing.
    pub fn job_version(&self, id: impl Fn() -> Option<i64> + Send + Sync + 'static) -> Memo<u64> {
        let live = *self;
        Memo::new(move |previous: Option<&u64>| {
            let version = live.version.get();
            let mine = match (id(), live.touched.get()) {
                (_, None) | (None, _) => true,
                (Some(id), Some(t)) => t.jobs.contains(&id),
            };
            match previous {
                Some(previous) if !mine => *previous,
                _ => version,
            }
        })
    }

    /// A version that moves only when the last burst may have changed a list of the jobs of
    /// `owners` in `phases` (read reactively; empty: any) whose page shows `shown` (read
    /// untracked): a job shown changed, or a job of those owners entered or may have left one
    /// of those phases. So an admin's list of one user's running jobs costs nothing when
    /// others' jobs, or that user's waiting ones, change. (Checked over the whole burst: a
    /// burst of Bob's running job and Ann's waiting one moves a list of Bob's waiting jobs —
    /// a refetch too many, never one too few.)
    pub fn list_version(
        &self,
        owners: impl Fn() -> Vec<String> + Send + Sync + 'static,
        phases: impl Fn() -> Vec<JobPhase> + Send + Sync + 'static,
        shown: impl Fn() -> Vec<i64> + Send + Sync + 'static,
    ) -> Memo<u64> {
        let live = *self;
        Memo::new(move |previous: Option<&u64>| {
            let version = live.version.get();
            let (owners, phases) = (owners(), phases());
            let mine = match live.touched.get() {
                None => true,
                Some(t) => {
                    let owner = owners.is_empty() || owners.iter().any(|o| t.owners.contains(o));
                    let phase = phases.is_empty()
                        || phases.iter().any(|p| t.phases.contains(p))
                        || untrack(&shown).iter().any(|id| t.jobs.contains(id));
                    owner && phase
                }
            };
            match previous {
                Some(previous) if !mine => *previous,
                _ => version,
            }
        })
    }

    /// Whether live updates arrive (reactive).
    pub fn state(&self) -> StreamState {
        self.state.get()
    }

    /// Anything may have changed: bump the version once the burst is over.
    pub fn changed(&self) {
        self.pending.set_value(None);
        self.schedule();
    }

    /// A job changed (`event`): bump the version once the burst is over. An event that names
    /// no owner or phase (an older server) may touch any list.
    pub fn job_changed(&self, event: &JobEventItem) {
        self.note_job(event.job_id, event.owner.clone(), event.phase, &event.kind);
        self.schedule();
    }

    fn note_job(&self, id: i64, owner: Option<String>, phase: Option<JobPhase>, kind: &str) {
        self.pending.update_value(|p| match (p.as_mut(), owner, phase) {
            (Some(t), Some(owner), Some(phase)) => {
                t.jobs.insert(id);
                t.owners.insert(owner);
                t.phases.insert(phase);
                t.phases.extend(left_by(kind).iter().copied());
            }
            (Some(_), ..) => *p = None,
            (None, ..) => {}
        });
    }

    fn schedule(&self) {
        if self.scheduled.get_untracked() {
            return;
        }
        self.scheduled.set(true);
        let live = *self;
        set_timeout(move || live.flush(), Duration::from_millis(300));
    }

    /// The burst is over: what it touched becomes the new version.
    fn flush(&self) {
        self.scheduled.set(false);
        let jobs = self
            .pending
            .try_update_value(|p| p.replace(Default::default()))
            .flatten();
        self.touched.set(jobs);
        self.version.update(|v| *v += 1);
    }

    #[cfg(test)]
    fn detached() -> Live {
        Live {
            version: RwSignal::new(0),
            scheduled: RwSignal::new(false),
            pending: StoredValue::new(Some(Default::default())),
            touched: RwSignal::new(None),
            state: RwSignal::new(StreamState::Off),
        }
    }
}

/// The live context.
pub fn use_live() -> Live {
    expect_context::<Live>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_s_version_moves_for_its_own_events_and_for_a_catch_up_only() {
        let owner = Owner::new();
        owner.with(|| {
            let live = Live::detached();
            let seven = live.job_version(|| Some(7));
            let first = seven.get_untracked();
            // Another job's events: the version stays.
            live.note_job(8, Some("ann".into()), Some(JobPhase::Running), "finished");
            live.note_job(9, Some("bob".into()), Some(JobPhase::Running), "finished");
            live.flush();
            assert_eq!(seven.get_untracked(), first, "moved for jobs 8 and 9");
            // A burst with this job in it: it moves.
            live.note_job(8, Some("ann".into()), Some(JobPhase::Running), "finished");
            live.note_job(7, Some("ann".into()), Some(JobPhase::Running), "finished");
            live.flush();
            let second = seven.get_untracked();
            assert_ne!(second, first);
            // A catch-up (anything may have changed): it moves.
            live.pending.set_value(None);
            live.flush();
            assert_ne!(seven.get_untracked(), second);
            // Every list follows every burst.
            assert_eq!(live.version.get_untracked(), 3);
        });
    }

    #[test]
    fn a_list_moves_for_its_owners_jobs_entering_or_leaving_its_phases_and_for_the_jobs_it_shows() {
        use JobPhase::*;
        let owner = Owner::new();
        owner.with(|| {
            let live = Live::detached();
            // Ann's running jobs, page showing job 10; and everyone's anything.
            let ann_running = live.list_version(|| vec!["ann".to_owned()], || vec![Running], || vec![10]);
            let anyone = live.list_version(Vec::new, Vec::new, Vec::new);
            let mut last = (ann_running.get_untracked(), anyone.get_untracked());
            let mut burst = |events: &[(i64, Option<&str>, Option<JobPhase>, &str)]| {
                for (id, who, phase, kind) in events {
                    live.note_job(*id, who.map(str::to_owned), *phase, kind);
                }
                live.flush();
                let now = (ann_running.get_untracked(), anyone.get_untracked());
                let moved = (now.0 != last.0, now.1 != last.1);
                last = now;
                moved
            };
            // Bob's job: only the unfiltered list.
            assert_eq!(burst(&[(1, Some("bob"), Some(Running), "finished")]), (false, true));
            // Ann's new job waiting: not her running ones.
            assert_eq!(
                burst(&[
                    (2, Some("ann"), Some(Prequeue), "submitted"),
                    (2, Some("ann"), Some(Prequeue), "prequeued")
                ]),
                (false, true)
            );
            // Ann's job sent to the cluster: it left the prequeue, not a running list.
            assert_eq!(burst(&[(2, Some("ann"), Some(Pending), "activated")]), (false, true));
            let ann_waiting = live.list_version(|| vec!["ann".to_owned()], || vec![Prequeue], Vec::new);
            let waiting = ann_waiting.get_untracked();
            // Claimed without an event, then a failed create: it may have left the prequeue.
            assert_eq!(
                burst(&[(6, Some("ann"), Some(Activating), "activation_failed")]),
                (false, true)
            );
            assert_ne!(
                ann_waiting.get_untracked(),
                waiting,
                "a failed create left the prequeue list as it was"
            );
            // Ann's job that ended may have left Running (on another page).
            assert_eq!(burst(&[(3, Some("ann"), Some(Completed), "finished")]), (true, true));
            // Ann's job now running (its phase says so).
            assert_eq!(burst(&[(4, Some("ann"), Some(Running), "unlocked")]), (true, true));
            // The job the page shows changed, whatever its phase.
            assert_eq!(burst(&[(10, Some("ann"), Some(Prequeue), "locked")]), (true, true));
            // An event naming no phase (an older server) may be anyone's anything.
            assert_eq!(burst(&[(5, Some("bob"), None, "locked")]), (true, true));
        });
    }

    #[test]
    fn an_owner_s_list_moves_for_that_owner_s_events_and_for_unnamed_ones() {
        let owner = Owner::new();
        owner.with(|| {
            let live = Live::detached();
            let ann = live.list_version(|| vec!["ann".to_owned()], Vec::new, Vec::new);
            let anyone = live.list_version(Vec::new, Vec::new, Vec::new);
            let (first, any_first) = (ann.get_untracked(), anyone.get_untracked());
            live.note_job(1, Some("bob".into()), Some(JobPhase::Running), "finished");
            live.flush();
            assert_eq!(ann.get_untracked(), first, "ann's list moved for bob's job");
            assert_ne!(anyone.get_untracked(), any_first, "the unfiltered list stayed");
            live.note_job(2, Some("bob".into()), Some(JobPhase::Running), "finished");
            live.note_job(3, Some("ann".into()), Some(JobPhase::Running), "finished");
            live.flush();
            let second = ann.get_untracked();
            assert_ne!(second, first, "ann's list stayed for ann's job");
            // An event naming no owner may be anyone's.
            live.note_job(4, None, None, "finished");
            live.note_job(5, Some("bob".into()), Some(JobPhase::Running), "finished");
            live.flush();
            assert_ne!(ann.get_untracked(), second, "ann's list stayed for an unnamed owner");
        });
    }
}
