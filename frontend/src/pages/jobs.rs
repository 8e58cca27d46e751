//! `/jobs`: the user's resource summary on top, then their jobs with filters, badges and
//! actions; both update live.

use leptos::prelude::*;

use crate::components::job_table::JobTable;
use crate::components::summary::ResourceSummaryCard;
use crate::components::{BUTTON, PageHeader};
use crate::i18n::{k, use_i18n};

/// The user's jobs.
#[component]
pub fn Jobs() -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <section class="space-y-6">
            <PageHeader title=k!("page.jobs.title") description=k!("page.jobs.description")>
                <a href="/jobs/new" class=BUTTON data-testid="new-job-link">{move || i18n.t(k!("nav.newJob"))}</a>
            </PageHeader>
            <ResourceSummaryCard />
            <JobTable />
        </section>
    }
}
