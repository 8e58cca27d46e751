//! `/admin/cluster`: each node with allocatable, used and free capacity per resource as bars,
//! its readiness, and the schedulable toggle (making a node schedulable wakes the watcher).

use anteroom_shared::api::ClusterNode;
use leptos::prelude::*;

use crate::components::bars::{Bar, BarInput, ResourceName};
use crate::components::confirm::use_confirm;
use crate::components::palette;
use crate::components::toast::use_toasts;
use crate::components::{CARD, Empty, PageHeader, show, use_fetch};
use crate::format;
use crate::i18n::{k, use_i18n};
use crate::live::use_live;

/// The page.
#[component]
pub fn AdminCluster() -> impl IntoView {
    let live = use_live();
    let reload = RwSignal::new(0u64);
    let nodes = use_fetch(move || {
        reload.track();
        live.version();
        crate::api::nodes()
    });
    view! {
        <section class="space-y-6">
            <PageHeader title=k!("page.adminCluster.title") description=k!("page.adminCluster.description") />
            {show(nodes, move |list: &Vec<ClusterNode>| {
                if list.is_empty() {
                    return view! { <Empty text=k!("cluster.empty") /> }.into_any();
                }
                view! {
                    <ul class="grid gap-4 xl:grid-cols-2" data-testid="nodes">
                        {list.iter().cloned().map(|n| view! { <NodeCard node=n reload=reload /> }).collect_view()}
                    </ul>
                }.into_any()
            })}
        </section>
    }
}

#[component]
fn NodeCard(node: ClusterNode, reload: RwSignal<u64>) -> impl IntoView {
    let i18n = use_i18n();
    let toasts = use_toasts();
    let confirm = use_confirm();
    let name = node.name.clone();
    // What the server says; the switch shows it, not what was clicked: a refused or failed
    // request puts the switch back (the browser flips a checkbox before anyone asks).
    let schedulable = RwSignal::new(node.schedulable);
    let busy = RwSignal::new(false);
    let toggle = {
        let name = name.clone();
        move |ev: leptos::ev::Event| {
            let input = event_target::<web_sys::HtmlInputElement>(&ev);
            let want = input.checked();
            let name = name.clone();
            let question = i18n.tf(k!("cluster.confirmCordon"), &[("name", &name)]);
            let switch = input.clone();
            let send = move || {
                busy.set(true);
                leptos::task::spawn_local(async move {
                    match crate::api::set_schedulable(&name, want).await {
                        Ok(n) => {
                            // (the card may have been rebuilt meanwhile: its signals then are gone)
                            schedulable.try_set(n.schedulable);
                            toasts.success(i18n.tf(
                                if n.schedulable {
                                    k!("cluster.nowSchedulable")
                                } else {
                                    k!("cluster.nowCordoned")
                                },
                                &[("name", &n.name)],
                            ));
                        }
                        Err(f) => toasts.error(i18n.failure(&f)),
                    }
                    if let Some(now) = schedulable.try_get_untracked() {
                        input.set_checked(now);
                    }
                    busy.try_set(false);
                    reload.try_update(|r| *r += 1);
                });
            };
            if want {
                send();
            } else {
                // Cordoning keeps every new job off the node: asked first, the switch stays on
                // until the admin says yes.
                switch.set_checked(true);
                confirm.ask(question, move || {
                    switch.set_checked(false);
                    send();
                });
            }
        }
    };
    let switch_id = format!("node-{}-schedulable", node.name);
    let switch_for = switch_id.clone();
    view! {
        <li class=format!("{CARD} space-y-3") data-testid="node" data-node=node.name.clone()>
            <div class="flex flex-wrap items-center gap-3">
                <h2 class="font-semibold" translate="no">{node.name.clone()}</h2>
                <span class=palette::node_ready(node.ready) data-testid="node-ready" data-ready=node.ready.to_string()>
                    <span aria-hidden="true" class="mr-1">{if node.ready { "✓" } else { "✕" }}</span>
                    {move || i18n.t(if node.ready { k!("cluster.ready") } else { k!("cluster.notReady") })}
                </span>
                <label class="ml-auto flex items-center gap-2 text-sm" for=switch_for>
                    <input type="checkbox" role="switch" id=switch_id.clone() prop:checked=move || schedulable.get() on:change=toggle disabled=move || busy.get()
                        data-testid="schedulable-toggle" />
                    {move || i18n.t(k!("cluster.schedulable"))}
                </label>
            </div>
            <div class="space-y-1">
                {node.allocatable.iter().map(|(res, alloc)| {
                    let a = format::value(&alloc);
                    let u = format::value(&node.used.get(res));
                    let f = format::value(&node.free.get(res));
                    let res = res.to_owned();
                    let input = BarInput { used: u, limit: Some(a), ..Default::default() };
                    let label = {
                        let res = res.clone();
                        move || {
                            let l = i18n.locale();
                            i18n.tf(k!("cluster.bar"), &[
                                ("resource", &i18n.resource_name(&res)),
                                ("used", &format::amount(l, &res, u)),
                                ("allocatable", &format::amount(l, &res, a)),
                                ("free", &format::amount(l, &res, f)),
                            ])
                        }
                    };
                    view! {
                        <div class="grid grid-cols-[8rem_minmax(6rem,1fr)_minmax(10rem,18rem)] items-center gap-2 text-xs" data-testid="node-resource" data-resource=res.clone()>
                            <ResourceName resource=res.clone() />
                            { let label = label.clone(); move || view! { <Bar input=input label=label() /> } }
                            <span class="text-slate-700 dark:text-slate-300">{label}</span>
                        </div>
                    }
                }).collect_view()}
            </div>
            <p class="flex flex-wrap items-center gap-2 text-xs" data-testid="node-taints">
                <span class="text-slate-700 dark:text-slate-300">{move || i18n.t(k!("cluster.taints"))}</span>
                {if node.taints.is_empty() {
                    view! { <span data-testid="node-no-taints">{move || i18n.t(k!("cluster.noTaints"))}</span> }.into_any()
                } else {
                    node.taints.iter().map(|t| view! {
                        <code class="rounded bg-slate-100 dark:bg-slate-800 px-1.5" translate="no" data-testid="node-taint">{crate::components::capacity::taint_text(t)}</code>
                    }).collect_view().into_any()
                }}
            </p>
        </li>
    }
}
