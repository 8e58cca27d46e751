//! `/cluster`: what every user may know before submitting — free and total accelerators per
//! model (and CPU, memory), the biggest piece free on one node, and for each queue the caller
//! may use its capacity against what all its users use and how many jobs wait in its line;
//! where a queue has a guarantee, its bar shows the guaranteed part, what is idle (lent) and
//! what it borrows beyond it.
//! Refreshes every 15 s and on every job event.

use std::time::Duration;

use anteroom_shared::api::ClusterNode;
use anteroom_shared::api::queues::Queue;
use leptos::prelude::*;

use crate::components::bars::{Bar, BarInput, ResourceName};
use crate::components::capacity::{cluster_totals, tree_order};
use crate::components::sharing::{QueueUse, QueueUseBars, ShareLegend, effective_guarantees};
use crate::components::{CARD, PageHeader, TABLE, TD, TH, loaded, show, use_fetch};
use crate::format;
use crate::i18n::{k, use_i18n};
use crate::live::use_live;

/// The page.
#[component]
pub fn Capacity() -> impl IntoView {
    let i18n = use_i18n();
    let live = use_live();
    let tick = RwSignal::new(0u64);
    if let Ok(handle) = set_interval_with_handle(move || tick.update(|t| *t += 1), Duration::from_secs(15)) {
        on_cleanup(move || handle.clear());
    }
    let nodes = use_fetch(move || {
        tick.track();
        live.version();
        crate::api::nodes()
    });
    let queues = use_fetch(move || {
        tick.track();
        live.version();
        crate::api::queues()
    });
    view! {
        <section class="space-y-6">
            <PageHeader title=k!("page.capacity.title") description=k!("page.capacity.description") />
            <section class=CARD aria-labelledby="capacity-resources" data-testid="capacity-resources">
                <h2 id="capacity-resources" class="mb-3 text-lg font-semibold">{move || i18n.t(k!("capacity.resources"))}</h2>
                {show(nodes, |list: &Vec<ClusterNode>| view! { <ResourceTable nodes=list.clone() /> })}
            </section>
            <section class=CARD aria-labelledby="capacity-queues" data-testid="capacity-queues">
                <h2 id="capacity-queues" class="mb-3 text-lg font-semibold">{move || i18n.t(k!("capacity.queues"))}</h2>
                {show(queues, move |list: &Vec<Queue>| view! {
                    <QueueTable queues=list.clone() room=cluster_totals(&loaded(nodes)).allocatable />
                })}
            </section>
        </section>
    }
}

/// One row per resource, accelerators first: free (on schedulable nodes), total, what the
/// nodes use as a bar, the largest free piece on one node.
#[component]
fn ResourceTable(nodes: Vec<ClusterNode>) -> impl IntoView {
    let i18n = use_i18n();
    let totals = cluster_totals(&nodes);
    let mut names: Vec<String> = totals.allocatable.keys().cloned().collect();
    // Accelerators (a vendor's domain in the name) first, then CPU and memory.
    names.sort_by_key(|n| (!n.contains('/'), n.clone()));
    if names.is_empty() {
        return view! { <p class="text-sm text-slate-600 dark:text-slate-300">{move || i18n.t(k!("cluster.empty"))}</p> }.into_any();
    }
    view! {
        <div class="overflow-x-auto">
            <table class=TABLE data-testid="capacity-table">
                <thead>
                    <tr>
                        <th scope="col" class=TH>{move || i18n.t(k!("capacity.resource"))}</th>
                        <th scope="col" class=format!("{TH} text-right")>{move || i18n.t(k!("capacity.free"))}</th>
                        <th scope="col" class=format!("{TH} text-right")>{move || i18n.t(k!("capacity.total"))}</th>
                        <th scope="col" class=format!("{TH} w-1/3")>{move || i18n.t(k!("capacity.inUse"))}</th>
                        <th scope="col" class=format!("{TH} text-right")>{move || i18n.t(k!("capacity.largestFree"))}</th>
                    </tr>
                </thead>
                <tbody class="divide-y divide-slate-100 dark:divide-slate-800">
                    {names.into_iter().map(|name| {
                        let total = totals.allocatable.get(&name).copied().unwrap_or(0.0);
                        let free = totals.free.get(&name).copied().unwrap_or(0.0);
                        let largest = totals.largest_free.get(&name).copied().unwrap_or(0.0);
                        let in_use = totals.used.get(&name).copied().unwrap_or(0.0);
                        let amount = {
                            let name = name.clone();
                            move |v: f64| format::amount(i18n.locale(), &name, v)
                        };
                        let label = {
                            let amount = amount.clone();
                            move || i18n.tf(k!("capacity.bar"), &[("free", &amount(free)), ("total", &amount(total))])
                        };
                        let input = BarInput { used: in_use, capacity: Some(total), ..Default::default() };
                        view! {
                            <tr data-testid="capacity-row" data-resource=name.clone()>
                                <th scope="row" class=format!("{TD} text-left font-normal")><ResourceName resource=name.clone() /></th>
                                <td class=format!("{TD} text-right tabular-nums") data-testid="capacity-free">{let a = amount.clone(); move || a(free)}</td>
                                <td class=format!("{TD} text-right tabular-nums") data-testid="capacity-total">{let a = amount.clone(); move || a(total)}</td>
                                <td class=TD>{move || view! { <Bar input=input label=label() /> }}</td>
                                <td class=format!("{TD} text-right tabular-nums")>{move || amount(largest)}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

/// The caller's queues in tree order: how many wait in each line, and each capacity and
/// guarantee against what all its users use (`room`: the cluster's total per resource, the
/// width of a guaranteed resource's bar without a capacity).
#[component]
fn QueueTable(queues: Vec<Queue>, room: std::collections::BTreeMap<String, f64>) -> impl IntoView {
    let i18n = use_i18n();
    let pairs: Vec<(&str, Option<&str>)> = queues.iter().map(|q| (q.name.as_str(), q.parent.as_deref())).collect();
    let order = tree_order(&pairs);
    // A grouping queue's children the caller may not use are not in the list: its guarantee
    // is the sum of the visible ones' unless it names its own.
    let named: Vec<(&str, Option<&str>, Option<&anteroom_shared::scheduling::ResourceList>)> = queues
        .iter()
        .map(|q| (q.name.as_str(), q.parent.as_deref(), q.sharing.guarantee.as_ref()))
        .collect();
    let mut guarantees = effective_guarantees(&named);
    let shares = guarantees.values().any(|g| !g.is_empty());
    view! {
        {shares.then(|| view! { <div class="mb-3"><ShareLegend /></div> })}
        <div class="overflow-x-auto">
            <table class=TABLE data-testid="capacity-queue-table">
                <thead>
                    <tr>
                        <th scope="col" class=TH>{move || i18n.t(k!("capacity.queue"))}</th>
                        <th scope="col" class=format!("{TH} text-right")>{move || i18n.t(k!("capacity.waiting"))}</th>
                        <th scope="col" class=format!("{TH} w-2/3")>{move || i18n.t(k!("capacity.queueUse"))}</th>
                    </tr>
                </thead>
                <tbody class="divide-y divide-slate-100 dark:divide-slate-800">
                    {order.into_iter().map(|(depth, i)| {
                        let q = queues[i].clone();
                        let level = QueueUse {
                            capacity: q.capacity.clone().unwrap_or_default(),
                            used: q.used.clone(),
                            guarantee: guarantees.remove(&q.name).unwrap_or_default(),
                            borrowed: q.borrowed.clone(),
                            lent: q.lent.clone(),
                        };
                        let waiting = q.waiting;
                        let indent = ["", "pl-5", "pl-10", "pl-14", "pl-20"][depth.min(4)];
                        view! {
                            <tr data-testid="capacity-queue" data-queue=q.name.clone() data-depth=depth.to_string()>
                                <th scope="row" class=format!("{TD} text-left font-medium")>
                                    <span class=format!("inline-flex items-center gap-1 {indent}")>
                                        {(depth > 0).then(|| view! { <span aria-hidden="true" class="text-slate-400">"└"</span> })}
                                        <span translate="no">{q.name.clone()}</span>
                                    </span>
                                </th>
                                <td class=format!("{TD} text-right tabular-nums") data-testid="queue-waiting">
                                    {move || format::number(i18n.locale(), waiting as f64, 0)}
                                </td>
                                <td class=TD>
                                    <QueueUseBars queue=level room=room.clone() root=q.parent.is_none() />
                                </td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
}
