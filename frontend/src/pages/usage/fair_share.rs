//! "Your fair share" (`GET /api/v1/me/fair-share`, `spec/prequeue.md` §10): per queue where the
//! caller has usage, the decayed usage, their share, the factor (0–1) as a number and a bar,
//! and what drives it; whether the prequeue orders by it now (otherwise the factor is only
//! informational) and how fast past usage decays.

use anteroom_shared::api::usage::{FairShare, FairShareQueue};
use leptos::prelude::*;

use crate::components::bars::{Bar, BarInput};
use crate::components::{CARD, TABLE, TD, TH, show, use_fetch};
use crate::format;
use crate::i18n::{I18n, k, use_i18n};

/// The card.
#[component]
pub fn FairShareCard() -> impl IntoView {
    let i18n = use_i18n();
    let share = use_fetch(crate::api::my_fair_share);
    view! {
        <section class=CARD aria-labelledby="fair-share-title" data-testid="fair-share">
            <h2 id="fair-share-title" class="mb-2 text-lg font-semibold">{move || i18n.t(k!("usage.fairShare.title"))}</h2>
            {show(share, |s: &FairShare| view! { <FairShareBody share=s.clone() /> })}
        </section>
    }
}

/// What drives a queue's usage: each resource's decayed units, the largest first
/// ("a100 12.50, CPU 0.40").
fn drivers(i18n: I18n, queue: &FairShareQueue) -> String {
    let mut list: Vec<(&String, &f64)> = queue.drivers.iter().filter(|(_, u)| **u > 0.0).collect();
    list.sort_by(|a, b| b.1.total_cmp(a.1).then(a.0.cmp(b.0)));
    list.into_iter()
        .map(|(name, units)| {
            format!(
                "{} {}",
                i18n.resource_name(name),
                format::fixed(i18n.locale(), *units, 2)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether the factor orders anything and how fast usage decays, then the table (or that
/// nothing counts against the user).
#[component]
fn FairShareBody(share: FairShare) -> impl IntoView {
    let i18n = use_i18n();
    let in_effect = share.in_effect;
    let half_life = share.half_life_seconds;
    let mode = move || {
        let key = if in_effect {
            k!("usage.fairShare.inEffect")
        } else {
            k!("usage.fairShare.informational")
        };
        let decay = if half_life > 0 {
            i18n.tf(
                k!("usage.fairShare.halfLife"),
                &[("halfLife", &format::duration(i18n.locale(), half_life))],
            )
        } else {
            i18n.t(k!("usage.fairShare.noDecay")).to_owned()
        };
        format!("{} {decay}", i18n.t(key))
    };
    view! {
        <div class="space-y-3">
            <p class="text-sm text-slate-700 dark:text-slate-300" data-testid="fair-share-mode" data-in-effect=in_effect.to_string()>{mode}</p>
            {if share.queues.is_empty() {
                view! { <p class="text-sm text-slate-600 dark:text-slate-300" data-testid="fair-share-none">{move || i18n.t(k!("usage.fairShare.none"))}</p> }.into_any()
            } else {
                view! {
                    <p class="text-xs text-slate-600 dark:text-slate-300">{move || i18n.t(k!("usage.fairShare.factorHelp"))}</p>
                    <FairShareTable queues=share.queues.clone() />
                }.into_any()
            }}
        </div>
    }
}

/// A line per queue: factor (number and bar), decayed usage, share, what drives it.
#[component]
fn FairShareTable(queues: Vec<FairShareQueue>) -> impl IntoView {
    let i18n = use_i18n();
    let num = format!("{TD} text-right tabular-nums");
    view! {
        <div class=super::SCROLL tabindex="0" role="region" aria-label=move || i18n.t(k!("usage.fairShare.title"))>
            <table class=TABLE data-testid="fair-share-table">
                <thead>
                    <tr>
                        <th scope="col" class=TH>{move || i18n.t(k!("usage.table.queue"))}</th>
                        <th scope="col" class=format!("{TH} w-1/4")>{move || i18n.t(k!("usage.fairShare.factor"))}</th>
                        <th scope="col" class=format!("{TH} text-right")>{move || i18n.t(k!("usage.fairShare.decayed"))}</th>
                        <th scope="col" class=format!("{TH} text-right")>{move || i18n.t(k!("usage.fairShare.share"))}</th>
                        <th scope="col" class=TH>{move || i18n.t(k!("usage.fairShare.drivers"))}</th>
                    </tr>
                </thead>
                <tbody class="divide-y divide-slate-100 dark:divide-slate-800">
                    {queues.into_iter().map(|q| {
                        let factor = q.factor;
                        // Three decimals: a factor moves in small steps (0.996 is not 1).
                        let factor_text = move || format::fixed(i18n.locale(), factor, 3);
                        let label = move || i18n.tf(k!("usage.fairShare.factorBar"), &[("factor", &factor_text())]);
                        let input = BarInput { used: factor, capacity: Some(1.0), ..Default::default() };
                        let decayed = {
                            let (usage, fraction) = (q.decayed_usage, q.usage_fraction);
                            move || i18n.tf(k!("usage.fairShare.decayedValue"), &[
                                ("usage", &format::fixed(i18n.locale(), usage, 2)),
                                ("fraction", &format::percent(i18n.locale(), fraction)),
                            ])
                        };
                        let share = q.share;
                        let driven = {
                            let q = q.clone();
                            move || drivers(i18n, &q)
                        };
                        view! {
                            <tr data-testid="fair-share-row" data-queue=q.queue.clone()>
                                <th scope="row" class=format!("{TD} text-left font-medium")><span translate="no">{q.queue.clone()}</span></th>
                                <td class=TD>
                                    <div class="flex items-center gap-2">
                                        <span class="w-12 text-right tabular-nums" data-testid="fair-share-factor">{factor_text}</span>
                                        <div class="min-w-16 flex-1">{move || view! { <Bar input=input label=label() /> }}</div>
                                    </div>
                                </td>
                                <td class=num.clone() data-testid="fair-share-decayed">{decayed}</td>
                                <td class=num.clone() data-testid="fair-share-share">{move || format::percent(i18n.locale(), share)}</td>
                                <td class=TD data-testid="fair-share-drivers">{driven}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
}
