//! The frame around every page: one header row (the product name, whether the lists are live,
//! and the user menu with language, theme and logout), a sidebar of grouped navigation — Work,
//! Scheduling, Cluster, People; the admin groups only for admins — that folds behind a menu
//! button below 1024 px, and the toasts and the confirm dialog, once for every page.

use leptos::prelude::*;
use leptos_router::components::A;

use crate::auth::use_auth;
use crate::components::confirm::ConfirmDialog;
use crate::components::time::TooltipLayer;
use crate::components::toast::ToastRegion;
use crate::i18n::{Key, Locale, k, use_i18n};

/// Header, sidebar and the page beside them.
#[component]
pub fn Layout(children: Children) -> impl IntoView {
    let i18n = use_i18n();
    let auth = use_auth();
    let confirm = crate::components::confirm::use_confirm();
    // The sidebar as an overlay on narrow screens; closed again by every navigation.
    let menu_open = RwSignal::new(false);
    let location = leptos_router::hooks::use_location();
    Effect::new(move |_| {
        location.pathname.track();
        menu_open.set(false);
    });
    let signed_in = move || auth.user().is_some();
    view! {
        <div class="min-h-screen bg-slate-50 dark:bg-slate-950 text-slate-900 dark:text-slate-100">
            <header class="sticky top-0 z-30 flex h-12 items-center gap-3 bg-slate-900 px-4 text-white dark:border-b dark:border-slate-800"
                data-testid="top-bar" inert=move || confirm.is_open()>
                <Show when=signed_in>
                    <button type="button" class="rounded p-1.5 text-slate-200 hover:bg-slate-700 focus:outline-none focus-visible:ring-2 focus-visible:ring-sky-400 lg:hidden"
                        data-testid="menu-button" aria-controls="sidebar" aria-expanded=move || menu_open.get().to_string()
                        on:click=move |_| menu_open.update(|o| *o = !*o)>
                        <span aria-hidden="true">"☰"</span>
                        <span class="sr-only">{move || i18n.t(k!("nav.menu"))}</span>
                    </button>
                </Show>
                <a href="/jobs" class="whitespace-nowrap text-lg font-semibold tracking-tight" data-testid="brand">
                    {move || i18n.t(k!("app.name"))}
                </a>
                <div class="ml-auto flex items-center gap-3">
                    <LiveIndicator />
                    {move || if signed_in() {
                        view! { <UserMenu /> }.into_any()
                    } else {
                        view! { <LanguageSwitcher /> <ThemeSwitcher /> }.into_any()
                    }}
                </div>
            </header>
            <div class="lg:flex">
                <Show when=signed_in>
                    <Show when=move || menu_open.get()>
                        <div class="fixed inset-0 z-30 bg-slate-950/50 lg:hidden" aria-hidden="true" on:click=move |_| menu_open.set(false)></div>
                    </Show>
                    <Sidebar open=menu_open />
                </Show>
                <main class="min-w-0 flex-1 px-4 py-6 lg:px-8" inert=move || confirm.is_open()>
                    <div class="mx-auto max-w-7xl">{children()}</div>
                </main>
            </div>
            <ToastRegion />
            <ConfirmDialog />
            <TooltipLayer />
            <footer class="px-4 pb-6 text-xs text-slate-600 dark:text-slate-400 lg:pl-60">
                <a href="/api/docs" rel="external" class="underline hover:text-slate-800 dark:hover:text-slate-200">{move || i18n.t(k!("footer.apiDocs"))}</a>
            </footer>
        </div>
    }
}

/// The navigation, in groups: what a researcher does (Work), how the waiting room runs
/// (Scheduling), what the cluster has (Cluster) and who uses it (People).
#[component]
fn Sidebar(open: RwSignal<bool>) -> impl IntoView {
    let i18n = use_i18n();
    let auth = use_auth();
    let confirm = crate::components::confirm::use_confirm();
    let admin = move || auth.is_admin();
    view! {
        <aside id="sidebar" data-testid="sidebar" inert=move || confirm.is_open()
            on:keydown=move |ev: leptos::ev::KeyboardEvent| if ev.key() == "Escape" && open.get_untracked() { open.set(false); }
            // Opened as an overlay on a narrow window, it is the plain sidebar again once the
            // window is wide (no overlay left floating without its close controls).
            class=move || if open.get() {
                "fixed inset-y-0 left-0 z-40 w-64 overflow-y-auto border-r border-slate-200 bg-white p-3 shadow-xl dark:border-slate-800 dark:bg-slate-900 lg:sticky lg:top-12 lg:z-auto lg:h-[calc(100vh-3rem)] lg:w-56 lg:shrink-0 lg:shadow-none"
            } else {
                "hidden lg:block lg:sticky lg:top-12 lg:h-[calc(100vh-3rem)] lg:w-56 lg:shrink-0 lg:overflow-y-auto border-r border-slate-200 bg-white p-3 dark:border-slate-800 dark:bg-slate-900"
            }>
            <nav class="space-y-5 text-sm" aria-label=move || i18n.t(k!("nav.main"))>
                <NavGroup id="nav-work" title=k!("nav.group.work")>
                    <NavLink href="/jobs" label=k!("nav.jobs") />
                    <NavLink href="/jobs/new" label=k!("nav.newJob") />
                    <NavLink href="/templates" label=k!("nav.templates") />
                    <NavLink href="/usage" label=k!("nav.usage") />
                    <NavLink href="/notifications" label=k!("nav.notifications") />
                </NavGroup>
                <Show when=admin>
                    <NavGroup id="nav-scheduling" title=k!("nav.group.scheduling")>
                        <NavLink href="/admin/prequeue" label=k!("nav.adminPrequeue") />
                        <NavLink href="/admin/queues" label=k!("nav.adminQueues") />
                        <NavLink href="/admin/quotas" label=k!("nav.adminQuotas") />
                        <NavLink href="/admin/jobs" label=k!("nav.adminJobs") />
                    </NavGroup>
                </Show>
                <NavGroup id="nav-cluster" title=k!("nav.group.cluster")>
                    <NavLink href="/cluster" label=k!("nav.capacity") />
                    <Show when=admin>
                        <NavLink href="/admin/cluster" label=k!("nav.adminCluster") />
                        <NavLink href="/admin/tolerations" label=k!("nav.adminTolerations") />
                        <NavLink href="/admin/volumes" label=k!("nav.adminVolumes") />
                    </Show>
                </NavGroup>
                <Show when=admin>
                    <NavGroup id="nav-people" title=k!("nav.group.people")>
                        <NavLink href="/admin/users" label=k!("nav.adminUsers") />
                    </NavGroup>
                </Show>
            </nav>
        </aside>
    }
}

/// A titled group of links (its title is what a screen reader says of the list).
#[component]
fn NavGroup(id: &'static str, title: Key, children: Children) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <div class="space-y-1" data-testid="nav-group">
            <h2 id=id class="px-2 text-xs font-semibold tracking-wide text-slate-500 dark:text-slate-400">{move || i18n.t(title)}</h2>
            <ul class="space-y-0.5" aria-labelledby=id>{children()}</ul>
        </div>
    }
}

/// A navigation link; the current page is marked for the eye and for screen readers.
#[component]
fn NavLink(href: &'static str, label: Key) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <li>
            <A
                href=href
                exact=true
                attr:class="block whitespace-nowrap rounded px-2 py-1.5 text-slate-700 hover:bg-slate-100 dark:text-slate-200 dark:hover:bg-slate-800 focus:outline-none focus-visible:ring-2 focus-visible:ring-violet-500 aria-[current=page]:bg-violet-50 aria-[current=page]:font-medium aria-[current=page]:text-violet-900 dark:aria-[current=page]:bg-violet-950 dark:aria-[current=page]:text-violet-100"
            >
                {move || i18n.t(label)}
            </A>
        </li>
    }
}

/// Who is signed in, as a button that opens language, theme and logout (a disclosure: Escape
/// or a click elsewhere closes it).
#[component]
fn UserMenu() -> impl IntoView {
    let i18n = use_i18n();
    let auth = use_auth();
    let toasts = crate::components::toast::use_toasts();
    let navigate = leptos_router::hooks::use_navigate();
    let menu: NodeRef<leptos::html::Details> = NodeRef::new();
    let close = move || {
        if let Some(d) = menu.get_untracked()
            && d.open()
        {
            d.set_open(false);
        }
    };
    let outside = window_event_listener(leptos::ev::click, move |ev| {
        use wasm_bindgen::JsCast;
        let inside = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Node>().ok())
            .zip(menu.get_untracked())
            .is_some_and(|(t, d)| d.contains(Some(&t)));
        if !inside {
            close();
        }
    });
    on_cleanup(move || outside.remove());
    let name = move || auth.user().map(|u| u.display_name).unwrap_or_default();
    view! {
        <details node_ref=menu class="relative" data-testid="user-menu"
            on:keydown=move |ev: leptos::ev::KeyboardEvent| if ev.key() == "Escape" {
                close();
                // Back on the button that opened it (the focus may have been on a select inside).
                use wasm_bindgen::JsCast;
                if let Some(summary) = menu
                    .get_untracked()
                    .and_then(|d| d.query_selector("summary").ok().flatten())
                    .and_then(|s| s.dyn_into::<web_sys::HtmlElement>().ok())
                {
                    let _ = summary.focus();
                }
            }>
            <summary class="flex cursor-pointer list-none items-center gap-1 whitespace-nowrap rounded px-2 py-1 text-sm text-slate-200 hover:bg-slate-700 focus:outline-none focus-visible:ring-2 focus-visible:ring-sky-400 [&::-webkit-details-marker]:hidden">
                <span data-testid="whoami" translate="no">{name}</span>
                <span aria-hidden="true">"▾"</span>
                <span class="sr-only">{move || i18n.t(k!("nav.userMenu"))}</span>
            </summary>
            <div class="absolute right-0 z-50 mt-2 w-72 space-y-3 rounded border border-slate-200 bg-white p-3 text-slate-900 shadow-lg dark:border-slate-700 dark:bg-slate-900 dark:text-slate-100">
                <LanguageSwitcher />
                <ThemeSwitcher />
                <button type="button" class="w-full rounded border border-slate-300 px-2 py-1.5 text-left text-sm hover:bg-slate-100 focus:outline-none focus-visible:ring-2 focus-visible:ring-violet-500 dark:border-slate-600 dark:hover:bg-slate-800"
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
            </div>
        </details>
    }
}

/// The language select; the choice is remembered across visits.
#[component]
fn LanguageSwitcher() -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <label class="flex items-center justify-between gap-2 whitespace-nowrap text-sm">
            <span>{move || i18n.t(k!("lang.label"))}</span>
            <select
                id="lang-select"
                class="rounded border border-slate-400 bg-white px-2 py-1 text-slate-900 focus:outline-none focus:ring-2 focus:ring-sky-400 dark:border-slate-500 dark:bg-slate-800 dark:text-white"
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
        <label class="flex items-center justify-between gap-2 whitespace-nowrap text-sm">
            <span>{move || i18n.t(k!("theme.label"))}</span>
            <select
                id="theme-select"
                data-testid="theme-select"
                class="rounded border border-slate-400 bg-white px-2 py-1 text-slate-900 focus:outline-none focus:ring-2 focus:ring-sky-400 dark:border-slate-500 dark:bg-slate-800 dark:text-white"
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
        <span class="flex items-center gap-1.5 whitespace-nowrap text-xs text-slate-300" role="status" data-testid="live-state"
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
