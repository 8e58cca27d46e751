//! The toleration rules as a table, beside the taints the nodes carry: for each taint, which
//! nodes have it and which rules tolerate it — what an admin reads to see that a GPU node's
//! taint is covered, or that a taint keeps every job off a node.

use anteroom_shared::api::ClusterNode;
use anteroom_shared::api::tolerations::TolerationRule;
use anteroom_shared::scheduling::{Taint, TaintEffect, Toleration, TolerationOperator};
use leptos::prelude::*;

use super::Editing;
use super::form::target_text;
use crate::components::capacity::taint_text;
use crate::components::{BUTTON_SECONDARY, TABLE, TD, TH};
use crate::i18n::{k, use_i18n};

/// A toleration as `kubectl` would read it: `key=value:Effect`, `key (any value)`, `*`.
pub fn toleration_text(t: &Toleration) -> String {
    let key = t.key.clone().unwrap_or_else(|| "*".into());
    let value = match (t.operator, t.value.as_deref()) {
        (TolerationOperator::Equal, Some(v)) if !v.is_empty() => format!("={v}"),
        (TolerationOperator::Equal, _) => "=".into(),
        (TolerationOperator::Exists, _) => String::new(),
    };
    let effect = t.effect.map(|e| format!(":{e:?}")).unwrap_or_default();
    format!("{key}{value}{effect}")
}

/// The distinct taints of the nodes, each with the nodes carrying it (by name, in order).
pub fn taints_of(nodes: &[ClusterNode]) -> Vec<(Taint, Vec<String>)> {
    let mut out: Vec<(Taint, Vec<String>)> = Vec::new();
    for node in nodes {
        for taint in &node.taints {
            match out.iter_mut().find(|(t, _)| t == taint) {
                Some((_, names)) => names.push(node.name.clone()),
                None => out.push((taint.clone(), vec![node.name.clone()])),
            }
        }
    }
    out
}

/// The rules, one row each.
#[component]
pub fn RuleTable(rules: Vec<TolerationRule>, editing: RwSignal<Editing>) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <div class="overflow-x-auto rounded border border-slate-200 bg-white dark:border-slate-700 dark:bg-slate-900">
            <table class=TABLE data-testid="toleration-table">
                <thead class="bg-slate-50 dark:bg-slate-950"><tr>
                    <th scope="col" class=TH>{move || i18n.t(k!("toleration.target"))}</th>
                    <th scope="col" class=TH>{move || i18n.t(k!("toleration.tolerations"))}</th>
                    <th scope="col" class=TH>{move || i18n.t(k!("toleration.description"))}</th>
                    <th scope="col" class=TH><span class="sr-only">{move || i18n.t(k!("jobs.actions"))}</span></th>
                </tr></thead>
                <tbody class="divide-y divide-slate-100 dark:divide-slate-800">
                    {rules.into_iter().map(|rule| {
                        let kind = if rule.queue.is_some() { "queue" } else { "resource" };
                        let target = rule.resource.clone().or_else(|| rule.queue.clone()).unwrap_or_default();
                        let shown = {
                            let (r, q) = (rule.resource.clone(), rule.queue.clone());
                            move || target_text(i18n, r.as_deref(), q.as_deref())
                        };
                        let label = {
                            let shown = shown.clone();
                            move || i18n.tf(k!("toleration.editNamed"), &[("target", &shown())])
                        };
                        let for_edit = rule.clone();
                        view! {
                            <tr data-testid="toleration-rule-row" data-rule=rule.id.to_string() data-kind=kind data-target=target>
                                <th scope="row" class=format!("{TD} text-left font-medium") translate="no">{shown}</th>
                                <td class=TD>
                                    <ul class="space-y-0.5">
                                        {rule.tolerations.iter().map(|t| view! {
                                            <li><code class="rounded bg-slate-100 px-1.5 text-xs dark:bg-slate-800" translate="no">{toleration_text(t)}</code></li>
                                        }).collect_view()}
                                    </ul>
                                </td>
                                // The admin's own words, in whatever language they wrote them.
                                <td class=format!("{TD} text-xs") translate="no">{rule.description.clone()}</td>
                                <td class=TD>
                                    <button type="button" class=BUTTON_SECONDARY data-testid="edit-toleration-rule" aria-label=label
                                        on:click=move |_| editing.set(Editing::Rule(Box::new(for_edit.clone())))>
                                        {move || i18n.t(k!("common.edit"))}
                                    </button>
                                </td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
}

/// The nodes' taints, each with its nodes and the rules that tolerate it.
#[component]
pub fn TaintTable(nodes: Vec<ClusterNode>, rules: Vec<TolerationRule>) -> impl IntoView {
    let i18n = use_i18n();
    let taints = taints_of(&nodes);
    if taints.is_empty() {
        return view! { <p class="text-sm text-slate-600 dark:text-slate-300" data-testid="no-node-taints">{move || i18n.t(k!("toleration.noNodeTaints"))}</p> }.into_any();
    }
    view! {
        <div class="overflow-x-auto rounded border border-slate-200 bg-white dark:border-slate-700 dark:bg-slate-900">
            <table class=TABLE data-testid="taint-table">
                <thead class="bg-slate-50 dark:bg-slate-950"><tr>
                    <th scope="col" class=TH>{move || i18n.t(k!("toleration.taint"))}</th>
                    <th scope="col" class=TH>{move || i18n.t(k!("toleration.onNodes"))}</th>
                    <th scope="col" class=TH>{move || i18n.t(k!("toleration.toleratedBy"))}</th>
                </tr></thead>
                <tbody class="divide-y divide-slate-100 dark:divide-slate-800">
                    {taints.into_iter().map(|(taint, on)| {
                        let by: Vec<TolerationRule> = rules.iter()
                            .filter(|r| r.tolerations.iter().any(|t| t.tolerates(&taint)))
                            .cloned()
                            .collect();
                        let covered = !by.is_empty();
                        view! {
                            <tr data-testid="taint-row" data-taint=taint_text(&taint) data-tolerated=covered.to_string()>
                                <th scope="row" class=format!("{TD} text-left font-normal")>
                                    <code class="rounded bg-slate-100 px-1.5 text-xs dark:bg-slate-800" translate="no">{taint_text(&taint)}</code>
                                </th>
                                <td class=format!("{TD} text-xs") translate="no">{on.join(", ")}</td>
                                <td class=format!("{TD} text-xs")>
                                    {if covered {
                                        by.into_iter().map(|r| {
                                            let (res, q) = (r.resource.clone(), r.queue.clone());
                                            view! { <p>{move || target_text(i18n, res.as_deref(), q.as_deref())}</p> }
                                        }).collect_view().into_any()
                                    } else {
                                        // PreferNoSchedule only steers pods away; the other effects keep them off.
                                        let key = if taint.effect == TaintEffect::PreferNoSchedule { k!("toleration.noRulePreferred") } else { k!("toleration.noRule") };
                                        view! { <span class="font-medium text-amber-800 dark:text-amber-200">{move || i18n.t(key)}</span> }.into_any()
                                    }}
                                </td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_toleration_reads_as_kubectl_writes_it() {
        let t = |key: Option<&str>, operator, value: Option<&str>, effect| Toleration {
            key: key.map(Into::into),
            operator,
            value: value.map(Into::into),
            effect,
        };
        assert_eq!(
            toleration_text(&t(
                Some("nvidia.com/gpu"),
                TolerationOperator::Exists,
                None,
                Some(TaintEffect::NoSchedule)
            )),
            "nvidia.com/gpu:NoSchedule"
        );
        assert_eq!(
            toleration_text(&t(Some("dedicated"), TolerationOperator::Equal, Some("ml"), None)),
            "dedicated=ml"
        );
        assert_eq!(toleration_text(&t(None, TolerationOperator::Exists, None, None)), "*");
    }
}
