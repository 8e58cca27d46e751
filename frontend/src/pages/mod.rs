//! One component per page of `spec/ui.md`. Until each page's issue lands, a page shows its
//! title and what it will hold, so every route is reachable and deep links work.

use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

use crate::i18n::{Key, k, use_i18n};

/// A page's title and a line on what it is for.
#[component]
fn PageFrame(title: Key, description: Key, #[prop(optional)] children: Option<Children>) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <section class="space-y-4">
            <h1 class="text-2xl font-semibold" data-testid="page-title">{move || i18n.t(title)}</h1>
            <p class="text-slate-600" data-testid="page-description">{move || i18n.t(description)}</p>
            {children.map(|c| c())}
            <p class="rounded border border-dashed border-slate-300 bg-white p-4 text-sm text-slate-500">
                {move || i18n.t(k!("common.comingSoon"))}
            </p>
        </section>
    }
}

/// `/login`.
#[component]
pub fn Login() -> impl IntoView {
    view! { <PageFrame title=k!("page.login.title") description=k!("page.login.description") /> }
}

/// `/jobs`.
#[component]
pub fn Jobs() -> impl IntoView {
    view! { <PageFrame title=k!("page.jobs.title") description=k!("page.jobs.description") /> }
}

/// `/jobs/new`.
#[component]
pub fn NewJob() -> impl IntoView {
    view! { <PageFrame title=k!("page.newJob.title") description=k!("page.newJob.description") /> }
}

/// `/jobs/{id}`.
#[component]
pub fn JobDetail() -> impl IntoView {
    let i18n = use_i18n();
    let params = use_params_map();
    let id = move || params.read().get("id").unwrap_or_default();
    view! {
        <PageFrame title=k!("page.jobDetail.title") description=k!("page.jobDetail.description")>
            <p class="font-mono text-sm" data-testid="job-id">{move || format!("{} {}", i18n.t(k!("page.jobDetail.id")), id())}</p>
        </PageFrame>
    }
}

/// `/admin/prequeue`.
#[component]
pub fn AdminPrequeue() -> impl IntoView {
    view! { <PageFrame title=k!("page.adminPrequeue.title") description=k!("page.adminPrequeue.description") /> }
}

/// `/admin/quotas`.
#[component]
pub fn AdminQuotas() -> impl IntoView {
    view! { <PageFrame title=k!("page.adminQuotas.title") description=k!("page.adminQuotas.description") /> }
}

/// `/admin/jobs`.
#[component]
pub fn AdminJobs() -> impl IntoView {
    view! { <PageFrame title=k!("page.adminJobs.title") description=k!("page.adminJobs.description") /> }
}

/// `/admin/cluster`.
#[component]
pub fn AdminCluster() -> impl IntoView {
    view! { <PageFrame title=k!("page.adminCluster.title") description=k!("page.adminCluster.description") /> }
}

/// `/admin/queues`.
#[component]
pub fn AdminQueues() -> impl IntoView {
    view! { <PageFrame title=k!("page.adminQueues.title") description=k!("page.adminQueues.description") /> }
}

/// `/admin/users`.
#[component]
pub fn AdminUsers() -> impl IntoView {
    view! { <PageFrame title=k!("page.adminUsers.title") description=k!("page.adminUsers.description") /> }
}

/// Any path no page claims.
#[component]
pub fn NotFound() -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <section class="space-y-4">
            <h1 class="text-2xl font-semibold" data-testid="page-title">{move || i18n.t(k!("page.notFound.title"))}</h1>
            <a href="/jobs" class="text-sky-700 underline">{move || i18n.t(k!("page.notFound.back"))}</a>
        </section>
    }
}
