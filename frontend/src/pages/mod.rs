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

/// `/login`: username and password; on success the server sets the session cookie and the
/// user goes to their jobs; a refusal is shown in the user's language.
#[component]
pub fn Login() -> impl IntoView {
    let i18n = use_i18n();
    let username = RwSignal::new(String::new());
    let password = RwSignal::new(String::new());
    let failure = RwSignal::new(None::<crate::api::ApiFailure>);
    let pending = RwSignal::new(false);
    let navigate = leptos_router::hooks::use_navigate();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if pending.get_untracked() {
            return;
        }
        pending.set(true);
        failure.set(None);
        let (user, pass) = (username.get_untracked(), password.get_untracked());
        let navigate = navigate.clone();
        leptos::task::spawn_local(async move {
            match crate::api::login(&user, &pass).await {
                Ok(_) => navigate("/jobs", Default::default()),
                Err(f) => failure.set(Some(f)),
            }
            pending.set(false);
        });
    };
    view! {
        <section class="mx-auto max-w-sm space-y-4">
            <h1 class="text-2xl font-semibold" data-testid="page-title">{move || i18n.t(k!("page.login.title"))}</h1>
            <p class="text-slate-600" data-testid="page-description">{move || i18n.t(k!("page.login.description"))}</p>
            <form class="space-y-4 rounded border border-slate-200 bg-white p-4" on:submit=submit>
                <div class="space-y-1">
                    <label class="block text-sm font-medium" for="login-username">{move || i18n.t(k!("page.login.username"))}</label>
                    <input id="login-username" name="username" type="text" autocomplete="username" required
                        class="w-full rounded border border-slate-300 px-3 py-2 focus:outline-none focus:ring-2 focus:ring-violet-500"
                        bind:value=username />
                </div>
                <div class="space-y-1">
                    <label class="block text-sm font-medium" for="login-password">{move || i18n.t(k!("page.login.password"))}</label>
                    <input id="login-password" name="password" type="password" autocomplete="current-password" required
                        class="w-full rounded border border-slate-300 px-3 py-2 focus:outline-none focus:ring-2 focus:ring-violet-500"
                        bind:value=password />
                </div>
                <Show when=move || failure.get().is_some()>
                    <p role="alert" class="rounded border border-red-300 bg-red-50 p-2 text-sm text-red-800" data-testid="login-error">
                        {move || failure.get().map(|f| i18n.failure(&f)).unwrap_or_default()}
                    </p>
                </Show>
                <button type="submit" data-testid="login-submit"
                    class="w-full rounded bg-violet-700 px-4 py-2 font-medium text-white hover:bg-violet-800 focus:outline-none focus:ring-2 focus:ring-violet-500 focus:ring-offset-2 disabled:opacity-60"
                    disabled=move || pending.get()>
                    {move || if pending.get() { i18n.t(k!("page.login.submitting")) } else { i18n.t(k!("page.login.submit")) }}
                </button>
            </form>
        </section>
    }
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
