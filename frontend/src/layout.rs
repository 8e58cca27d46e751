//! The frame around every page: header with the product name, navigation (admin links only for
//! admins), language and theme switchers, who is logged in and the logout button; the toasts and the
//! confirm dialog live here once for every page.

use leptos::prelude::*;
use leptos_router::components::A;

use crate::auth::use_auth;
use crate::components::confirm::ConfirmDialog;
use crate::components::toast::ToastRegion;
use crate::i18n::{Key, Locale, k, use_i18n};

/// Header, navigation and the page below them.
#[component]
pub fn Layout(children: Children) -> impl IntoView {
    let i18n = use_i18n();
    let auth = use_auth();
    let toasts = crate::components::toast::use_toasts();
    let confirm = crate::components::confirm::use_confirm();
    let navigate = leptos_router::hooks::use_navigate();
    view! {
        <div class="min-h-screen bg-slate-50 dark:bg-slate-950 text-slate-900 dark:text-slate-100">
            <header class="bg-slate-900 text-white dark:border-b dark:border-slate-800" inert=move || confirm.is_open()>
                <div class="mx-auto max-w-7xl px-4 py-3 flex flex-wrap items-center gap-4">
                    <a href="/jobs" class="text-lg font-semibold tracking-tight" data-testid="brand">
                        {move || i18n.t(k!("app.name"))}
                    </a>
                    <Show when=move || auth.user().is_some()>
                        <nav class="flex flex-wrap items-center gap-1 text-sm" aria-label=move || i18n.t(k!("nav.main"))>
                            <NavLink href="/jobs" label=k!("nav.jobs") />
                            <NavLink href="/jobs/new" label=k!("nav.newJob") />
                            <NavLink href="/templates" label=k!("nav.templates") />
                            <NavLink href="/notifications" label=k!("nav.notifications") />
                            <Show when=move || auth.is_admin()>
                                <span class="mx-2 h-4 w-px bg-slate-600" aria-hidden="true"></span>
                                <span class="text-xs uppercase text-slate-300">{move || i18n.t(k!("nav.admin"))}</span>
                                <NavLink href="/admin/prequeue" label=k!("nav.adminPrequeue") />
                                <NavLink href="/admin/quotas" label=k!("nav.adminQuotas") />
                                <NavLink href="/admin/queues" label=k!("nav.adminQueues") />
                                <NavLink href="/admin/tolerations" label=k!("nav.adminTolerations") />
                                <NavLink href="/admin/volumes" label=k!("nav.adminVolumes") />
                                <NavLink href="/admin/jobs" label=k!("nav.adminJobs") />
                                <NavLink href="/admin/cluster" label=k!("nav.adminCluster") />
                                <NavLink href="/admin/users" label=k!("nav.adminUsers") />
                            </Show>
                        </nav>
                    </Show>
                    <div class="ml-auto flex items-center gap-3">
                        <LiveIndicator />
                        <LanguageSwitcher />
                        <ThemeSwitcher />
                        {move || match auth.user() {
                            Some(user) => {
                                let navigate = navigate.clone();
                                view! {
                                <span class="text-sm text-slate-300" data-testid="whoami" translate="no">{user.display_name.clone()}</span>
                                <button type="button" class="rounded px-2 py-1 text-sm text-slate-200 hover:bg-slate-700 hover:text-white focus:outline-none focus-visible:ring-2 focus-visible:ring-sky-400"
                                    data-testid="logout"
                                    on:click=move |_| {
                                        let navigate = navigate.clone();
                                        leptos::task::spawn_local(async move {
                                            match auth.logout().await {
                                                Ok(()) => navigate("/login", Default::default()),
                                                Err(_) => toasts.error(i18n.t(k!("nav.logoutFailed")).to_owned()),
                                            }
                                        });
                                    }>
                                    {move || i18n.t(k!("nav.logout"))}
                                </button>
                                }.into_any()
                            }
                            None => view! {
                                <a href="/login" class="text-sm text-slate-200 hover:text-white">{move || i18n.t(k!("nav.login"))}</a>
                            }.into_any(),
                        }}
                    </div>
                </div>
            </header>
            <main class="mx-auto max-w-7xl px-4 py-6" inert=move || confirm.is_open()>{children()}</main>
            <ToastRegion />
            <ConfirmDialog />
            <footer class="mx-auto max-w-7xl px-4 pb-6 text-xs text-slate-600 dark:text-slate-400">
                <a href="/api/docs" rel="external" class="underline hover:text-slate-800 dark:hover:text-slate-200">{move || i18n.t(k!("footer.apiDocs"))}</a>
            </footer>
        </div>
    }
}

/// A navigation link; the current page is marked for the eye and for screen readers.
#[component]
fn NavLink(href: &'static str, label: Key) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <A
            href=href
            exact=true
            attr:class="rounded px-2 py-1 text-slate-200 hover:bg-slate-700 hover:text-white focus:outline-none focus:ring-2 focus:ring-sky-400 aria-[current=page]:bg-slate-700 aria-[current=page]:text-white"
        >
            {move || i18n.t(label)}
        </A>
    }
}

/// The language select; the choice is remembered across visits.
#[component]
fn LanguageSwitcher() -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <label class="flex items-center gap-2 text-sm text-slate-300">
            <span>{move || i18n.t(k!("lang.label"))}</span>
            <select
                id="lang-select"
                class="rounded bg-slate-800 px-2 py-1 text-white focus:outline-none focus:ring-2 focus:ring-sky-400"
                on:change=move |ev| {
                    if let Some(l) = Locale::from_tag(&event_target_value(&ev)) {
                        i18n.set_locale(l);
                    }
                }
                prop:value=move || i18n.locale().code()
            >
                {Locale::ALL
                    .into_iter()
                    .map(|l| view! { <option value=l.code() selected=move || i18n.locale() == l>{l.native_name()}</option> })
                    .collect_view()}
            </select>
        </label>
    }
}

/// The theme select: the system's preference, light or dark; remembered in this browser.
#[component]
fn ThemeSwitcher() -> impl IntoView {
    use crate::theme::{self, ThemeChoice};
    let i18n = use_i18n();
    let choice = RwSignal::new(theme::saved());
    let label = |c: ThemeChoice| match c {
        ThemeChoice::System => k!("theme.system"),
        ThemeChoice::Light => k!("theme.light"),
        ThemeChoice::Dark => k!("theme.dark"),
    };
    view! {
        <label class="flex items-center gap-2 text-sm text-slate-300">
            <span>{move || i18n.t(k!("theme.label"))}</span>
            <select
                id="theme-select"
                data-testid="theme-select"
                class="rounded bg-slate-800 px-2 py-1 text-white focus:outline-none focus:ring-2 focus:ring-sky-400"
                on:change=move |ev| {
                    let c = ThemeChoice::from_code(&event_target_value(&ev));
                    theme::choose(c);
                    choice.set(c);
                }
                prop:value=move || choice.get().code()
            >
                {ThemeChoice::ALL
                    .into_iter()
                    .map(|c| view! { <option value=c.code() selected=move || choice.get() == c>{move || i18n.t(label(c))}</option> })
                    .collect_view()}
            </select>
        </label>
    }
}

/// Whether the page's lists update by themselves: "Live" while the event stream is open,
/// "Reconnecting…" while it is not (announced politely); nothing when logged out.
#[component]
fn LiveIndicator() -> impl IntoView {
    use crate::live::StreamState;
    let i18n = use_i18n();
    let live = crate::live::use_live();
    let on = move || live.state() == StreamState::Live;
    view! {
        <span class="flex items-center gap-1.5 text-xs text-slate-300" role="status" data-testid="live-state"
            hidden=move || live.state() == StreamState::Off
            data-state=move || if on() { "live" } else { "reconnecting" }>
            <span aria-hidden="true" class=move || if on() {
                "h-2 w-2 rounded-full bg-emerald-400"
            } else {
                "h-2 w-2 rounded-full bg-amber-400"
            }></span>
            {move || i18n.t(if on() { k!("live.on") } else { k!("live.reconnecting") })}
        </span>
    }
}
