//! `/notifications`: the user's webhooks — where to be told when a job starts, is preempted,
//! fails, finishes or waits too long — made, listed and ended here, with the signing secret
//! shown once and the latest deliveries (delivered, retrying, given up). Admins also keep the
//! list of hosts webhooks may point at.

use anteroom_shared::api::notifications::{Delivery, NotifyOn, Webhook, WebhookBody, WebhookDestinations};
use leptos::prelude::*;

use crate::components::confirm::use_confirm;
use crate::components::field::Field;
use crate::components::time::Time;
use crate::components::toast::use_toasts;
use crate::components::{
    BUTTON, BUTTON_DANGER, CARD, Empty, ErrorPanel, INPUT, LINK, PageHeader, TABLE, TD, TH, use_fetch,
};
use crate::i18n::{I18n, Key, k, use_i18n};

/// A kind of notification in the reader's language.
pub fn notify_label(on: NotifyOn) -> Key {
    match on {
        NotifyOn::Started => k!("notify.started"),
        NotifyOn::Preempted => k!("notify.preempted"),
        NotifyOn::Failed => k!("notify.failed"),
        NotifyOn::Finished => k!("notify.finished"),
        NotifyOn::Waited => k!("notify.waited"),
    }
}

fn events_text(i18n: I18n, events: &[NotifyOn]) -> String {
    events
        .iter()
        .map(|e| i18n.t(notify_label(*e)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The page.
#[component]
pub fn Notifications() -> impl IntoView {
    let i18n = use_i18n();
    let auth = crate::auth::use_auth();
    let reload = RwSignal::new(0u64);
    let hooks = use_fetch(move || {
        reload.track();
        crate::api::get::<Vec<Webhook>>("/api/v1/webhooks")
    });
    let deliveries = use_fetch(move || {
        reload.track();
        crate::api::get::<Vec<Delivery>>("/api/v1/webhooks/deliveries?limit=50")
    });
    let done = Callback::new(move |_: ()| reload.update(|r| *r += 1));
    view! {
        <section class="space-y-6">
            <PageHeader title=k!("page.notifications.title") description=k!("page.notifications.description") />
            <NewWebhook done=done />
            {move || match hooks.get() {
                None => view! { <crate::auth::Loading /> }.into_any(),
                Some(Err(f)) => view! { <ErrorPanel failure=f /> }.into_any(),
                Some(Ok(list)) if list.is_empty() => view! { <Empty text=k!("notify.none") /> }.into_any(),
                Some(Ok(list)) => view! { <WebhookList list=list done=done /> }.into_any(),
            }}
            <section class=CARD aria-labelledby="deliveries-title">
                <h2 id="deliveries-title" class="mb-2 text-lg font-semibold">{move || i18n.t(k!("notify.deliveries"))}</h2>
                {move || match deliveries.get() {
                    None => view! { <crate::auth::Loading /> }.into_any(),
                    Some(Err(f)) => view! { <ErrorPanel failure=f /> }.into_any(),
                    Some(Ok(list)) if list.is_empty() => view! { <p class="text-sm text-slate-600 dark:text-slate-300">{move || i18n.t(k!("notify.noDeliveries"))}</p> }.into_any(),
                    Some(Ok(list)) => view! { <DeliveryTable list=list /> }.into_any(),
                }}
            </section>
            <Show when=move || auth.is_admin()>
                <Destinations />
            </Show>
        </section>
    }
}

#[component]
fn NewWebhook(done: Callback<()>) -> impl IntoView {
    let i18n = use_i18n();
    let toasts = use_toasts();
    let url = RwSignal::new(String::new());
    let chosen: RwSignal<Vec<NotifyOn>> = RwSignal::new(vec![NotifyOn::Started, NotifyOn::Failed, NotifyOn::Finished]);
    let waited_minutes = RwSignal::new("60".to_owned());
    let errors: RwSignal<Vec<(String, String)>> = RwSignal::new(Vec::new());
    let secret: RwSignal<Option<String>> = RwSignal::new(None);
    let saving = RwSignal::new(false);
    let error_of = move |field: &'static str| {
        Signal::derive(move || errors.with(|e| e.iter().find(|(f, _)| f == field).map(|(_, m)| m.clone())))
    };
    let save = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        errors.set(Vec::new());
        let events = chosen.get_untracked();
        let waited_seconds = if events.contains(&NotifyOn::Waited) {
            match waited_minutes.get_untracked().trim().parse::<i64>() {
                Ok(m) if m > 0 => Some(m.saturating_mul(60)),
                _ => {
                    errors.set(vec![(
                        "waitedSeconds".into(),
                        i18n.t(k!("fieldError.waitedSecondsRange")).to_owned(),
                    )]);
                    return;
                }
            }
        } else {
            None
        };
        let body = WebhookBody {
            url: url.get_untracked().trim().to_owned(),
            events,
            waited_seconds,
        };
        saving.set(true);
        leptos::task::spawn_local(async move {
            match crate::api::post::<_, anteroom_shared::api::notifications::CreatedWebhook>("/api/v1/webhooks", &body)
                .await
            {
                Ok(created) => {
                    secret.set(Some(created.secret));
                    url.set(String::new());
                    toasts.success(i18n.t(k!("notify.created")).to_owned());
                    done.run(());
                }
                Err(f) => {
                    errors.set(i18n.failure_fields(&f));
                    toasts.error(i18n.failure(&f));
                }
            }
            saving.set(false);
        });
    };
    view! {
        <form class=format!("{CARD} space-y-4") on:submit=save novalidate=true data-testid="webhook-form">
            <h2 class="text-lg font-semibold">{move || i18n.t(k!("notify.new"))}</h2>
            <Field id="webhook-url".into() label=k!("notify.url") hint=Some(k!("notify.urlHint")) error=error_of("url")>
                <input id="webhook-url" class=INPUT type="url" translate="no" bind:value=url placeholder="https://hooks.example.org/anteroom"
                    aria-invalid=move || error_of("url").get().is_some().to_string() aria-describedby="webhook-url-error webhook-url-hint" />
            </Field>
            <fieldset class="space-y-1" aria-describedby="webhook-events-error">
                <legend class="text-sm font-medium">{move || i18n.t(k!("notify.events"))}</legend>
                {NotifyOn::ALL.into_iter().map(|on| {
                    let id = format!("notify-{}", on.as_str());
                    let label_for = id.clone();
                    view! {
                        <label class="mr-4 inline-flex items-center gap-2 text-sm" for=label_for>
                            <input type="checkbox" id=id prop:checked=move || chosen.with(|c| c.contains(&on))
                                on:change=move |ev| { let on_now = event_target_checked(&ev); chosen.update(|c| { c.retain(|x| *x != on); if on_now { c.push(on); } }); } />
                            {move || i18n.t(notify_label(on))}
                        </label>
                    }
                }).collect_view()}
                <p id="webhook-events-error" class="text-xs font-medium text-red-700 dark:text-red-300">{move || error_of("events").get()}</p>
            </fieldset>
            <Show when=move || chosen.with(|c| c.contains(&NotifyOn::Waited))>
                <Field id="webhook-waited".into() label=k!("notify.waitedMinutes") error=error_of("waitedSeconds")>
                    <input id="webhook-waited" class=format!("{INPUT} w-32") type="text" inputmode="numeric" bind:value=waited_minutes aria-describedby="webhook-waited-error" />
                </Field>
            </Show>
            <button type="submit" class=BUTTON disabled=move || saving.get() data-testid="save-webhook">{move || i18n.t(k!("notify.create"))}</button>
            {move || secret.get().map(|s| view! {
                <div class="rounded border border-amber-300 dark:border-amber-700 bg-amber-50 dark:bg-amber-950 p-3 text-sm" role="status" data-testid="webhook-secret">
                    <p class="font-medium">{move || i18n.t(k!("notify.secretOnce"))}</p>
                    <code class="break-all" translate="no">{s}</code>
                </div>
            })}
        </form>
    }
}

#[component]
fn WebhookList(list: Vec<Webhook>, done: Callback<()>) -> impl IntoView {
    let i18n = use_i18n();
    let toasts = use_toasts();
    let confirm = use_confirm();
    view! {
        <section class=CARD aria-labelledby="webhooks-title">
            <h2 id="webhooks-title" class="mb-2 text-lg font-semibold">{move || i18n.t(k!("notify.list"))}</h2>
            <ul class="divide-y divide-slate-100 dark:divide-slate-800" data-testid="webhooks">
                {list.into_iter().map(|w| {
                    let id = w.id;
                    let url = w.url.clone();
                    let remove = move |_| {
                        let url = url.clone();
                        confirm.ask(i18n.tf(k!("notify.confirmDelete"), &[("url", &url)]), move || {
                            leptos::task::spawn_local(async move {
                                match crate::api::delete(&format!("/api/v1/webhooks/{id}")).await {
                                    Ok(()) => done.run(()),
                                    Err(f) => toasts.error(i18n.failure(&f)),
                                }
                            });
                        });
                    };
                    let events = w.events.clone();
                    view! {
                        <li class="flex flex-wrap items-center gap-3 py-2" data-testid="webhook">
                            <code class="break-all text-sm" translate="no">{w.url.clone()}</code>
                            <span class="text-sm text-slate-700 dark:text-slate-300">{move || events_text(i18n, &events)}</span>
                            {w.waited_seconds.map(|s| view! { <span class="text-xs text-slate-600 dark:text-slate-300">{move || i18n.tf(k!("notify.waitedAfter"), &[("minutes", &(s / 60).to_string())])}</span> })}
                            <button type="button" class=format!("{BUTTON_DANGER} ml-auto") on:click=remove>{move || i18n.t(k!("common.delete"))}</button>
                        </li>
                    }
                }).collect_view()}
            </ul>
        </section>
    }
}

#[component]
fn DeliveryTable(list: Vec<Delivery>) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <div class="overflow-x-auto">
            <table class=TABLE data-testid="deliveries">
                <thead><tr>
                    <th scope="col" class=TH>{move || i18n.t(k!("notify.when"))}</th>
                    <th scope="col" class=TH>{move || i18n.t(k!("notify.event"))}</th>
                    <th scope="col" class=TH>{move || i18n.t(k!("notify.job"))}</th>
                    <th scope="col" class=TH>{move || i18n.t(k!("notify.state"))}</th>
                    <th scope="col" class=TH>{move || i18n.t(k!("notify.attempts"))}</th>
                </tr></thead>
                <tbody class="divide-y divide-slate-100 dark:divide-slate-800">
                    {list.into_iter().map(|d| {
                        let state = if d.delivered_at.is_some() {
                            view! { <span class="text-emerald-800 dark:text-emerald-200">{move || i18n.t(k!("notify.delivered"))}</span> }.into_any()
                        } else if d.given_up {
                            let why = d.last_error.clone().unwrap_or_default();
                            view! { <span class="text-red-800 dark:text-red-200">{move || i18n.t(k!("notify.givenUp"))}</span>" "<span class="text-xs">{why}</span> }.into_any()
                        } else {
                            let why = d.last_error.clone().unwrap_or_default();
                            view! { <span class="text-amber-900 dark:text-amber-100">{move || i18n.t(k!("notify.retrying"))}</span>" "<span class="text-xs">{why}</span> }.into_any()
                        };
                        view! {
                            <tr data-testid="delivery">
                                <td class=TD><Time at=d.created_at /></td>
                                <td class=TD>{move || i18n.t(notify_label(d.event))}</td>
                                <td class=TD><a class=LINK href=format!("/jobs/{}", d.job_id)>{d.job_id}</a></td>
                                <td class=TD>{state}</td>
                                <td class=TD>{d.attempts}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
}

/// Admins: the hosts webhooks may point at, one a line.
#[component]
fn Destinations() -> impl IntoView {
    let i18n = use_i18n();
    let toasts = use_toasts();
    let text = RwSignal::new(String::new());
    let loaded = use_fetch(|| crate::api::get::<WebhookDestinations>("/api/v1/admin/webhook-destinations"));
    Effect::new(move |_| {
        if let Some(Ok(d)) = loaded.get() {
            text.set(d.hosts.join("\n"));
        }
    });
    let error = RwSignal::new(None::<String>);
    let save = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let hosts: Vec<String> = text
            .get_untracked()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect();
        leptos::task::spawn_local(async move {
            match crate::api::put::<_, WebhookDestinations>(
                "/api/v1/admin/webhook-destinations",
                &WebhookDestinations { hosts },
            )
            .await
            {
                Ok(saved) => {
                    error.set(None);
                    text.set(saved.hosts.join("\n"));
                    toasts.success(i18n.t(k!("notify.destinationsSaved")).to_owned());
                }
                Err(f) => {
                    error.set(
                        i18n.failure_fields(&f)
                            .into_iter()
                            .next()
                            .map(|(field, m)| format!("{field}: {m}")),
                    );
                    toasts.error(i18n.failure(&f));
                }
            }
        });
    };
    view! {
        <form class=format!("{CARD} space-y-3") on:submit=save data-testid="webhook-destinations">
            <h2 class="text-lg font-semibold">{move || i18n.t(k!("notify.destinations"))}</h2>
            <Field id="webhook-hosts".into() label=k!("notify.hosts") hint=Some(k!("notify.hostsHint")) error=Signal::derive(move || error.get())>
                <textarea id="webhook-hosts" class=INPUT rows="4" translate="no" bind:value=text aria-describedby="webhook-hosts-error webhook-hosts-hint"></textarea>
            </Field>
            <p class="text-xs text-slate-600 dark:text-slate-300" translate="no"><code>"hooks.example.org  *.example.org  10.0.0.5:8443"</code></p>
            <button type="submit" class=BUTTON>{move || i18n.t(k!("common.save"))}</button>
        </form>
    }
}
