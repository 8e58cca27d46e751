//! **Open** for a running notebook (Jupyter, WebIDE), the same on the job list and the job's
//! page: a one-time link to the notebook's own origin, in a new tab; someone else's notebook (an
//! admin's view) only after a warning, since its pages run that user's code.

use anteroom_shared::api::jobs::Job;
use anteroom_shared::scheduling::{JobKind, JobPhase};
use leptos::prelude::*;

use crate::components::confirm::use_confirm;
use crate::components::toast::{Toasts, use_toasts};
use crate::i18n::{I18n, k, use_i18n};

/// Whether `job` is a notebook one can open now.
pub fn can_open(job: &Job) -> bool {
    matches!(job.kind, JobKind::Jupyter | JobKind::Webide) && job.phase == JobPhase::Running
}

/// Opens job `id`'s notebook in a new tab: the tab opens at once (still the click's, so no
/// popup blocker stops it), then goes to the one-time link the API gives, on the notebook's own
/// origin; on an error it closes again and a toast says why. A browser that refuses the tab
/// gets the notebook in this one.
fn open_in_new_tab(id: i64, as_admin: bool, i18n: I18n, toasts: Toasts) {
    let window = web_sys::window();
    let tab = window
        .as_ref()
        .and_then(|w| w.open_with_url_and_target("about:blank", "_blank").ok().flatten());
    leptos::task::spawn_local(async move {
        match crate::api::open_notebook(id, as_admin).await {
            Ok(handoff) => {
                let location = match &tab {
                    Some(tab) => Some(tab.location()),
                    None => window.map(|w| w.location()),
                };
                if let Some(location) = location {
                    let _ = location.set_href(&handoff.url);
                }
            }
            Err(f) => {
                if let Some(tab) = tab {
                    let _ = tab.close();
                }
                toasts.error(i18n.failure(&f));
            }
        }
    });
}

/// The Open button of a running notebook (`data-testid=open-notebook`).
#[component]
pub fn OpenNotebook(
    /// The job.
    id: i64,
    /// Its owner: another user's notebook opens after a warning.
    owner: String,
    /// The button's classes.
    class: &'static str,
) -> impl IntoView {
    let i18n = use_i18n();
    let confirm = use_confirm();
    let toasts = use_toasts();
    let someone_elses = crate::auth::use_auth().user().is_some_and(|u| u.username != owner);
    let open = move |_| {
        if someone_elses {
            confirm.ask(
                i18n.tf(k!("jobs.openAsAdminWarning"), &[("owner", &owner)]),
                move || open_in_new_tab(id, true, i18n, toasts),
            );
        } else {
            open_in_new_tab(id, false, i18n, toasts);
        }
    };
    view! {
        <button type="button" class=class on:click=open data-testid="open-notebook">
            {move || i18n.t(if someone_elses { k!("jobs.openNotebookAsAdmin") } else { k!("jobs.openNotebook") })}
        </button>
    }
}
