//! `/login`: username and password; on success the server sets the session cookie and the
//! user goes where they were sent from (or their jobs); a refusal is shown in their language.

use leptos::prelude::*;
use leptos_router::hooks::{use_navigate, use_query_map};

use crate::auth::use_auth;
use crate::components::{BUTTON, CARD, INPUT};
use crate::i18n::{k, use_i18n};

/// Where to go after login: a path of this site only, else `/jobs`. A browser strips tabs and
/// newlines from a URL and reads `\\` as `/`, so `/\t/evil.example` would be `//evil.example`:
/// only a `/` followed by characters that are neither slashes, backslashes, whitespace nor
/// control characters at the start is followed, and nothing with a control character anywhere.
pub fn safe_next(next: Option<String>) -> String {
    match next {
        Some(n)
            if n.starts_with('/')
                && !n[1..].starts_with(['/', '\\'])
                && !n.chars().any(|c| c.is_control() || c == '\\' || c.is_whitespace())
                && n != "/login" =>
        {
            n
        }
        _ => "/jobs".into(),
    }
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
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if pending.get_untracked() {
            return;
        }
        pending.set(true);
        failure.set(None);
        let (user, pass) = (username.get_untracked(), password.get_untracked());
        let navigate = navigate.clone();
        let next = safe_next(query.get_untracked().get("next"));
        leptos::task::spawn_local(async move {
            match crate::api::login(&user, &pass).await {
                Ok(answer) => {
                    auth.logged_in(answer.user);
                    navigate(&next, Default::default());
                }
                Err(f) => failure.set(Some(f)),
            }
            pending.set(false);
        });
    };
    view! {
        <section class="mx-auto max-w-sm space-y-4">
            <h1 class="text-2xl font-semibold" data-testid="page-title">{move || i18n.t(k!("page.login.title"))}</h1>
            <p class="text-slate-600" data-testid="page-description">{move || i18n.t(k!("page.login.description"))}</p>
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
                    <p role="alert" class="rounded border border-red-300 bg-red-50 p-2 text-sm text-red-800" data-testid="login-error">
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_of_this_site_are_followed_after_login() {
        assert_eq!(safe_next(Some("/admin/quotas".into())), "/admin/quotas");
        assert_eq!(safe_next(Some("//evil.example/x".into())), "/jobs");
        assert_eq!(safe_next(Some("/\\evil.example".into())), "/jobs");
        assert_eq!(safe_next(Some("https://evil.example".into())), "/jobs");
        assert_eq!(safe_next(Some("/login".into())), "/jobs");
        for evil in [
            "/\t/evil.example",
            "/\n/evil.example",
            "/\r/evil.example",
            "/ /evil.example",
            "/x\\y",
        ] {
            assert_eq!(safe_next(Some(evil.into())), "/jobs", "{evil:?}");
        }
        assert_eq!(safe_next(Some("/jobs/7".into())), "/jobs/7");
        assert_eq!(safe_next(None), "/jobs");
    }
}
