//! `/admin/jobs`: every user's jobs, the same table with the owner column and filter, and
//! locks against preemption.

use leptos::prelude::*;

use crate::components::PageHeader;
use crate::components::job_table::JobTable;
use crate::i18n::k;

/// All jobs.
#[component]
pub fn AdminJobs() -> impl IntoView {
    view! {
        <section class="space-y-6">
            <PageHeader title=k!("page.adminJobs.title") description=k!("page.adminJobs.description") />
            <JobTable admin=true />
        </section>
    }
}
