//! The resource summary card on top of `/jobs`: per resource a bar with the running part solid
//! and the pending part lighter, scaled to the limit when there is one (`running/limit`, a
//! tick at the limit), otherwise to the queue's capacity of that resource or the cluster's; the
//! queue and each ancestor with a capacity or a guarantee (guaranteed against borrowed room,
//! [`crate::components::sharing`]); the counts of running, pending and prequeued jobs. Collapsible; refreshes every 10 s and on every job
//! event.

use std::time::Duration;

use anteroom_shared::api::prequeue::ResourceSummary;
use leptos::prelude::*;

use crate::components::bars::{Bar, BarInput, ResourceName};
use crate::components::sharing::{QueueUse, QueueUseBars, ShareLegend};
use crate::components::{CARD, INPUT, loaded, show, use_fetch};
use crate::format;
use crate::i18n::{k, use_i18n};
use crate::live::use_live;

/// The card, for the queue chosen in its select (the user's usable queues).
#[component]
pub fn ResourceSummaryCard() -> impl IntoView {
    let i18n = use_i18n();
    let live = use_live();
    let open = RwSignal::new(true);
    let queue = RwSignal::new(String::from("default"));
    let tick = RwSignal::new(0u64);
    if let Ok(handle) = set_interval_with_handle(move || tick.update(|t| *t += 1), Duration::from_secs(10)) {
        on_cleanup(move || handle.clear());
    }
    let queues = use_fetch(crate::api::queues);
    let nodes = use_fetch(crate::api::nodes);
    let summary = use_fetch(move || {
        tick.track();
        live.version();
        let q = queue.get();
        async move { crate::api::resource_summary(&q).await }
    });
    view! {
        <section class=CARD aria-labelledby="summary-title" data-testid="resource-summary">
            <div class="flex flex-wrap items-center gap-3">
                <h2 id="summary-title" class="text-lg font-semibold">{move || i18n.t(k!("summary.title"))}</h2>
                <label class="flex items-center gap-2 text-sm">
                    <span>{move || i18n.t(k!("summary.queue"))}</span>
                    <select class=format!("{INPUT} w-auto") id="summary-queue" on:change=move |ev| queue.set(event_target_value(&ev)) prop:value=move || queue.get()>
                        {move || loaded(queues).into_iter()
                            .map(|q| { let n = q.name.clone(); view! { <option value=q.name.clone() selected=move || queue.get() == n>{q.name.clone()}</option> } })
                            .collect_view()}
                    </select>
                </label>
                <button type="button" class="ml-auto rounded px-2 py-1 text-sm text-violet-800 dark:text-violet-200 underline focus:outline-none focus-visible:ring-2 focus-visible:ring-violet-500"
                    aria-expanded=move || open.get().to_string() aria-controls="summary-body"
                    on:click=move |_| open.update(|o| *o = !*o)>
                    {move || if open.get() { i18n.t(k!("summary.collapse")) } else { i18n.t(k!("summary.expand")) }}
                </button>
            </div>
            <div id="summary-body" class="mt-3" class:hidden=move || !open.get()>
                {show(summary, move |s: &ResourceSummary| view! {
                    <SummaryBody summary=s.clone() cluster=crate::components::capacity::cluster_totals(&loaded(nodes)).allocatable />
                })}
            </div>
        </section>
    }
}

#[component]
fn SummaryBody(
    summary: ResourceSummary,
    /// The cluster's total per resource (ready nodes' allocatable), the room of a resource that
    /// has neither a limit nor a queue capacity.
    cluster: std::collections::BTreeMap<String, f64>,
) -> impl IntoView {
    let i18n = use_i18n();
    let counts = summary.jobs;
    // A resource without a limit is drawn against the nearest queue capacity that names it,
    // else against the cluster's total of it: never against another resource's number.
    let room_of = |resource: &str| {
        summary
            .queues
            .iter()
            .find_map(|q| q.capacity.get_named(resource).map(|c| format::value(&c)))
            .or_else(|| cluster.get(resource).copied())
    };
    view! {
        <div class="space-y-3">
            <p class="flex flex-wrap gap-4 text-sm" data-testid="summary-counts">
                <span data-testid="count-running">{move || i18n.tf(k!("summary.running"), &[("count", &format::number(i18n.locale(), counts.running as f64, 0))])}</span>
                <span data-testid="count-pending">{move || i18n.tf(k!("summary.pending"), &[("count", &format::number(i18n.locale(), counts.pending as f64, 0))])}</span>
                <span data-testid="count-prequeued">{move || i18n.tf(k!("summary.prequeued"), &[("count", &format::number(i18n.locale(), counts.prequeued as f64, 0))])}</span>
                <span class="text-slate-600 dark:text-slate-300">{move || if summary.quota_enabled { i18n.t(k!("summary.quotaOn")) } else { i18n.t(k!("summary.quotaOff")) }}</span>
            </p>
            {if summary.resources.is_empty() {
                view! { <p class="text-sm text-slate-600 dark:text-slate-300">{move || i18n.t(k!("summary.nothing"))}</p> }.into_any()
            } else {
                view! {
                    <ul class="grid gap-3 md:grid-cols-2">
                        {summary.resources.iter().map(|r| {
                            let resource = r.resource.clone();
                            let running = format::value(&r.running);
                            let pending = format::value(&r.pending);
                            let prequeued = format::value(&r.prequeued);
                            let limit = r.limit.as_ref().map(format::value);
                            let input = BarInput { used: running, added: pending, limit, capacity: room_of(&resource) };
                            let words = {
                                let resource = resource.clone();
                                move || {
                                    let l = i18n.locale();
                                    let amount = |v: f64| format::amount(l, &resource, v);
                                    match limit {
                                        Some(lim) => i18n.tf(k!("summary.barLimited"), &[
                                            ("running", &amount(running)), ("pending", &amount(pending)), ("limit", &amount(lim)), ("prequeued", &amount(prequeued))]),
                                        None => i18n.tf(k!("summary.barUnlimited"), &[
                                            ("running", &amount(running)), ("pending", &amount(pending)), ("prequeued", &amount(prequeued))]),
                                    }
                                }
                            };
                            view! {
                                <li class="space-y-1" data-testid="summary-resource" data-resource=resource.clone()>
                                    <div class="flex justify-between text-sm">
                                        <ResourceName resource=resource.clone() />
                                        <span class="text-slate-700 dark:text-slate-300" data-testid="summary-value">{
                                            let resource = resource.clone();
                                            move || match limit {
                                                Some(lim) => format!("{} / {}", format::amount(i18n.locale(), &resource, running), format::amount(i18n.locale(), &resource, lim)),
                                                None => format::amount(i18n.locale(), &resource, running + pending),
                                            }
                                        }</span>
                                    </div>
                                    {
                                        let words = words.clone();
                                        move || view! { <Bar input=input label=words() /> }
                                    }
                                    <p class="text-xs text-slate-600 dark:text-slate-300">{words}</p>
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                }.into_any()
            }}
            {(!summary.queues.is_empty()).then(|| view! {
                <div class="space-y-2">
                    <h3 class="text-sm font-semibold">{move || i18n.t(k!("summary.queueCapacity"))}</h3>
                    {summary.queues.iter().any(|q| !q.guarantee.is_empty()).then(|| view! { <ShareLegend /> })}
                    {summary.queues.iter().map(|q| {
                        let name = q.queue.clone();
                        let level = QueueUse {
                            capacity: q.capacity.clone(),
                            used: q.used.clone(),
                            guarantee: q.guarantee.clone(),
                            borrowed: q.borrowed.clone(),
                            lent: q.lent.clone(),
                        };
                        view! {
                            <div class="space-y-1 text-xs" data-testid="summary-queue-capacity" data-queue=name.clone()>
                                <span class="font-medium" translate="no">{name.clone()}</span>
                                <QueueUseBars queue=level room=cluster.clone() root=false />
                            </div>
                        }
                    }).collect_view()}
                </div>
            })}
            <p class="text-xs text-slate-600 dark:text-slate-300">{move || i18n.tf(k!("summary.backfill"), &[("count", &format::number(i18n.locale(), summary.backfill.jobs.running as f64 + summary.backfill.jobs.pending as f64, 0))])}</p>
        </div>
    }
}
