//! The root component: the contexts (i18n, session, live updates, toasts, confirm), the router
//! and the page table of `spec/ui.md`, each page behind its guard.

use leptos::prelude::*;
use leptos_router::components::{Redirect, Route, Router, Routes};
use leptos_router::path;

use crate::auth::{Auth, RequireAdmin, RequireUser};
use crate::components::confirm::Confirm;
use crate::components::toast::Toasts;
use crate::i18n::I18n;
use crate::layout::Layout;
use crate::live::Live;
use crate::pages;

/// The application.
#[component]
pub fn App() -> impl IntoView {
    let i18n = I18n::detect();
    provide_context(i18n);
    Auth::provide();
    Live::provide();
    Toasts::provide();
    Confirm::provide();
    // Keep <html lang> and the tab title in the current language (screen readers, fonts).
    Effect::new(move |_| {
        let locale = i18n.locale();
        if let Some(doc) = web_sys::window().and_then(|w| w.document()) {
            if let Some(root) = doc.document_element() {
                let _ = root.set_attribute("lang", locale.code());
            }
            doc.set_title(i18n.t(crate::i18n::k!("app.name")));
        }
    });

    view! {
        <Router>
            <Layout>
                <Routes fallback=pages::NotFound>
                    <Route path=path!("/") view=|| view! { <Redirect path="/jobs" /> } />
                    <Route path=path!("/login") view=pages::Login />
                    <Route path=path!("/jobs") view=|| view! { <RequireUser><pages::Jobs /></RequireUser> } />
                    <Route path=path!("/jobs/new") view=|| view! { <RequireUser><pages::NewJob /></RequireUser> } />
                    <Route path=path!("/jobs/:id") view=|| view! { <RequireUser><pages::JobDetail /></RequireUser> } />
                    <Route path=path!("/templates") view=|| view! { <RequireUser><pages::Templates /></RequireUser> } />
                    <Route path=path!("/cluster") view=|| view! { <RequireUser><pages::Capacity /></RequireUser> } />
                    <Route path=path!("/notifications") view=|| view! { <RequireUser><pages::Notifications /></RequireUser> } />
                    <Route path=path!("/usage") view=|| view! { <RequireUser><pages::Usage /></RequireUser> } />
                    <Route path=path!("/admin/prequeue") view=|| view! { <RequireAdmin><pages::AdminPrequeue /></RequireAdmin> } />
                    <Route path=path!("/admin/quotas") view=|| view! { <RequireAdmin><pages::AdminQuotas /></RequireAdmin> } />
                    <Route path=path!("/admin/jobs") view=|| view! { <RequireAdmin><pages::AdminJobs /></RequireAdmin> } />
                    <Route path=path!("/admin/cluster") view=|| view! { <RequireAdmin><pages::AdminCluster /></RequireAdmin> } />
                    <Route path=path!("/admin/queues") view=|| view! { <RequireAdmin><pages::AdminQueues /></RequireAdmin> } />
                    <Route path=path!("/admin/tolerations") view=|| view! { <RequireAdmin><pages::AdminTolerations /></RequireAdmin> } />
                    <Route path=path!("/admin/volumes") view=|| view! { <RequireAdmin><pages::AdminVolumes /></RequireAdmin> } />
                    <Route path=path!("/admin/users") view=|| view! { <RequireAdmin><pages::AdminUsers /></RequireAdmin> } />
                </Routes>
            </Layout>
        </Router>
    }
}
