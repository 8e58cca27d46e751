//! The browser session: who is logged in (asked once on load, set by the login page, cleared
//! by logout or by any 401), and the guards that send a visitor to `/login` and keep admin
//! pages from users. The session itself is the server's HttpOnly cookie; nothing here holds a
//! token.

use anteroom_shared::api::{Role, User};
use leptos::prelude::*;
use leptos_router::hooks::{use_location, use_navigate};

use crate::i18n::{k, use_i18n};

/// What the UI knows about the session.
#[derive(Clone, Debug, PartialEq)]
pub enum SessionState {
    /// The session is being asked for (first load).
    Checking,
    /// Nobody is logged in.
    Anonymous,
    /// This user is.
    User(User),
}

/// The session, shared through context.
#[derive(Clone, Copy)]
pub struct Auth {
    state: RwSignal<SessionState>,
}

impl Auth {
    /// Creates the session context and asks the server who the cookie belongs to.
    pub fn provide() -> Auth {
        let auth = Auth {
            state: RwSignal::new(SessionState::Checking),
        };
        provide_context(auth);
        crate::api::on_unauthorized(move || auth.state.set(SessionState::Anonymous));
        leptos::task::spawn_local(async move {
            let state = match crate::api::session().await {
                Ok(Some(user)) => SessionState::User(user),
                // A server that does not answer is not a login: show the login page, whose
                // submit will say what is wrong.
                Ok(None) | Err(_) => SessionState::Anonymous,
            };
            auth.state.set(state);
        });
        auth
    }

    /// Asks the server again who the session is (after a stream was refused): a session that
    /// ended elsewhere sends the user to the login page.
    pub fn recheck(&self) {
        let auth = *self;
        leptos::task::spawn_local(async move {
            if let Ok(None) = crate::api::session().await {
                auth.state.set(SessionState::Anonymous);
            }
        });
    }

    /// The session state (reactive).
    pub fn state(&self) -> SessionState {
        self.state.get()
    }

    /// The logged-in user (reactive).
    pub fn user(&self) -> Option<User> {
        match self.state.get() {
            SessionState::User(u) => Some(u),
            _ => None,
        }
    }

    /// True for a logged-in admin (reactive).
    pub fn is_admin(&self) -> bool {
        matches!(self.state.get(), SessionState::User(ref u) if u.role == Role::Admin)
    }

    /// Records a successful login.
    pub fn logged_in(&self, user: User) {
        self.state.set(SessionState::User(user));
    }

    /// Ends the session on the server (every token of the user) and then here; when the
    /// server did not end it (unreachable, 503), the user stays logged in and is told.
    pub async fn logout(&self) -> Result<(), crate::api::ApiFailure> {
        crate::api::logout().await?;
        self.state.set(SessionState::Anonymous);
        Ok(())
    }
}

/// The session of the app.
pub fn use_auth() -> Auth {
    expect_context::<Auth>()
}

/// Shown while the session or a page's data loads.
#[component]
pub fn Loading() -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <p class="p-4 text-sm text-slate-600 dark:text-slate-300" role="status" aria-live="polite" data-testid="loading">
            {move || i18n.t(k!("common.loading"))}
        </p>
    }
}

/// Renders its children for a logged-in user; sends anyone else to `/login`, remembering where
/// they wanted to go.
#[component]
pub fn RequireUser(children: ChildrenFn) -> impl IntoView {
    let auth = use_auth();
    let navigate = use_navigate();
    let location = use_location();
    Effect::new(move |_| {
        if auth.state() == SessionState::Anonymous {
            let here = location.pathname.get_untracked() + &location.search.get_untracked();
            let next = crate::api::encode(&here);
            navigate(&format!("/login?next={next}"), Default::default());
        }
    });
    move || match auth.state() {
        SessionState::User(_) => children().into_any(),
        _ => view! { <Loading /> }.into_any(),
    }
}

/// Renders its children for an admin; a user sees that the page is not theirs (the API would
/// refuse its data with 403 anyway).
#[component]
pub fn RequireAdmin(children: ChildrenFn) -> impl IntoView {
    let auth = use_auth();
    let i18n = use_i18n();
    view! {
        <RequireUser>
            {
                let children = children.clone();
                move || {
                    if auth.is_admin() {
                        children().into_any()
                    } else {
                        view! {
                            <section class="space-y-2" data-testid="forbidden">
                                <h1 class="text-2xl font-semibold" data-testid="page-title">{move || i18n.t(k!("auth.forbiddenTitle"))}</h1>
                                <p class="text-slate-700 dark:text-slate-300">{move || i18n.t(k!("auth.forbidden"))}</p>
                            </section>
                        }
                        .into_any()
                    }
                }
            }
        </RequireUser>
    }
}
