//! One component per page of `spec/ui.md`, one file each. Pages get their data from the typed
//! client (`crate::api`), refetch on the live version (`crate::live`), and take every word
//! from the translations.

mod admin_cluster;
mod admin_jobs;
mod admin_prequeue;
mod admin_queues;
mod admin_quotas;
mod admin_tolerations;
mod admin_users;
mod admin_volumes;
mod capacity;
mod job_detail;
mod jobs;
mod login;
mod new_job;
mod notifications;
mod templates;
mod usage;

pub use admin_cluster::AdminCluster;
pub use admin_jobs::AdminJobs;
pub use admin_prequeue::AdminPrequeue;
pub use admin_queues::AdminQueues;
pub use admin_quotas::AdminQuotas;
pub use admin_tolerations::AdminTolerations;
pub use admin_users::AdminUsers;
pub use admin_volumes::AdminVolumes;
pub use capacity::Capacity;
pub use job_detail::JobDetail;
pub use jobs::Jobs;
pub use login::Login;
pub use new_job::NewJob;
pub use notifications::Notifications;
pub use templates::Templates;
pub use usage::Usage;

use leptos::prelude::*;

use crate::components::LINK;
use crate::i18n::{k, use_i18n};

/// Any path no page claims.
#[component]
pub fn NotFound() -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <section class="space-y-4">
            <h1 class="text-2xl font-semibold" data-testid="page-title">{move || i18n.t(k!("page.notFound.title"))}</h1>
            <a href="/jobs" class=LINK>{move || i18n.t(k!("page.notFound.back"))}</a>
        </section>
    }
}
