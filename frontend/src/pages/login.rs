//! `/login`: username and password; on success the server sets the session cookie and the
//! user goes where they were sent from (or their jobs); a refusal is shown in their language.
//! Someone already logged in goes there at once.

use leptos::prelude::*;
use leptos_router::hooks::{use_navigate, use_query_map};

use crate::auth::use_auth;
use crate::components::{BUTTON, CARD, INPUT};
use crate::i18n::{k, use_i18n};

/// Where to go after login: a path of this site only, else `/jobs`. The candidate is resolved
/// the way the browser will resolve it (tabs and newlines stripped, `\\` read as `/`, dot
/// segments removed: `/.//evil.example` is `//evil.example`), and followed only when the result
/// is on this origin and its path does not start with `//`.
pub fn safe_next(next: Option<String>, origin: &str) -> String {
    const HOME: &str = "/jobs";
    let Some(n) = next.filter(|n| n.starts_with('/')) else {
        return HOME.into();
    };
    let Ok(url) = web_sys::Url::new_with_base(&n, origin) else {
        return HOME.into();
    };
    let path = url.pathname();
    if url.origin() != origin || path.starts_with("//") || path.trim_end_matches('/') == "/login" {
        return HOME.into();
    }
    format!("{path}{}{}", url.search(), url.hash())
}

/// The login form.
#[component]
pub fn Login() -> impl IntoView {
    let i18n = use_i18n();
    let auth = use_auth();
    let username = RwSignal::new(String::new());
    let password = RwSignal::new(String::new());
    let failure = RwSignal::new(None::<crate::api::ApiFailure>);
    let pending = RwSignal::new(false);
    let navigate = use_navigate();
    let query = use_query_map();
    // Logged in (already, or by this form): on to the page asked for. Replacing the entry, so
    // Back does not return to a login form for someone logged in.
    {
        let navigate = navigate.clone();
        Effect::new(move |_| {
            if let crate::auth::SessionState::User(_) = auth.state() {
                let origin = web_sys::window()
                    .and_then(|w| w.location().origin().ok())
                    .unwrap_or_default();
                let next = safe_next(query.get_untracked().get("next"), &origin);
                navigate(
                    &next,
                    leptos_router::NavigateOptions {
                        replace: true,
                        ..Default::default()
                    },
                );
            }
        });
    }
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if pending.get_untracked() {
            return;
        }
        pending.set(true);
        failure.set(None);
        let (user, pass) = (username.get_untracked(), password.get_untracked());
        leptos::task::spawn_local(async move {
            match crate::api::login(&user, &pass).await {
                // The effect above goes on to the page asked for.
                Ok(answer) => auth.logged_in(answer.user),
                Err(f) => failure.set(Some(f)),
            }
            pending.set(false);
        });
    };
    view! {
        <section class="mx-auto max-w-sm space-y-4">
            <h1 class="text-2xl font-semibold" data-testid="page-title">{move || i18n.t(k!("page.login.title"))}</h1>
            <p class="text-slate-600 dark:text-slate-300" data-testid="page-description">{move || i18n.t(k!("page.login.description"))}</p>
            <form class=format!("{CARD} space-y-4") on:submit=submit>
                <div class="space-y-1">
                    <label class="block text-sm font-medium" for="login-username">{move || i18n.t(k!("page.login.username"))}</label>
                    <input id="login-username" name="username" type="text" autocomplete="username" required class=INPUT bind:value=username />
                </div>
                <div class="space-y-1">
                    <label class="block text-sm font-medium" for="login-password">{move || i18n.t(k!("page.login.password"))}</label>
                    <input id="login-password" name="password" type="password" autocomplete="current-password" required class=INPUT bind:value=password />
                </div>
                <Show when=move || failure.get().is_some()>
                    <p role="alert" class="rounded border border-red-300 dark:border-red-700 bg-red-50 dark:bg-red-950 p-2 text-sm text-red-800 dark:text-red-200" data-testid="login-error">
                        {move || failure.get().map(|f| i18n.failure(&f)).unwrap_or_default()}
                    </p>
                </Show>
                <button type="submit" data-testid="login-submit" class=format!("{BUTTON} w-full justify-center") disabled=move || pending.get()>
                    {move || if pending.get() { i18n.t(k!("page.login.submitting")) } else { i18n.t(k!("page.login.submit")) }}
                </button>
            </form>
        </section>
    }
}
