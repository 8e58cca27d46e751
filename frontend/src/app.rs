//! The root component: i18n context, the router and the page table of `spec/ui.md`.

use leptos::prelude::*;
use leptos_router::components::{Redirect, Route, Router, Routes};
use leptos_router::path;

use crate::i18n::I18n;
use crate::layout::Layout;
use crate::pages;

/// The application.
#[component]
pub fn App() -> impl IntoView {
    let i18n = I18n::detect();
    provide_context(i18n);
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
                    <Route path=path!("/jobs") view=pages::Jobs />
                    <Route path=path!("/jobs/new") view=pages::NewJob />
                    <Route path=path!("/jobs/:id") view=pages::JobDetail />
                    <Route path=path!("/admin/prequeue") view=pages::AdminPrequeue />
                    <Route path=path!("/admin/quotas") view=pages::AdminQuotas />
                    <Route path=path!("/admin/jobs") view=pages::AdminJobs />
                    <Route path=path!("/admin/cluster") view=pages::AdminCluster />
                    <Route path=path!("/admin/queues") view=pages::AdminQueues />
                    <Route path=path!("/admin/users") view=pages::AdminUsers />
                </Routes>
            </Layout>
        </Router>
    }
}
