//! The usage chart's numbers as a table: a line per period, queue and user as the report has
//! them — hours of normal and Elastic use of what the chart counts, runs, median and 90th
//! percentile waits, preemptions and reclaims — and their totals (waits have none).

use anteroom_shared::api::usage::UsagePeriod;
use leptos::prelude::*;

use super::model::{Line, totals};
use crate::components::{TABLE, TD, TH};
use crate::format;
use crate::i18n::{Key, k, use_i18n};

/// The table of `lines`; `show_user`: a column for the user (an admin's report of several).
#[component]
pub fn UsageTable(
    /// The lines, in order.
    lines: Vec<Line>,
    /// The report's periods.
    by: UsagePeriod,
    /// The unit counted ("GPU-hours").
    unit: Key,
    /// Whether the user column is shown.
    show_user: bool,
) -> impl IntoView {
    let i18n = use_i18n();
    let sum = totals(&lines);
    let hours = move |v: f64| format::fixed(i18n.locale(), v, 2);
    let count = move |v: u64| format::number(i18n.locale(), v as f64, 0);
    let wait =
        move |s: Option<f64>| s.map_or_else(|| "—".to_owned(), |s| format::duration(i18n.locale(), s.round() as i64));
    let th_num = format!("{TH} text-right");
    let num = format!("{TD} text-right tabular-nums");
    view! {
        <div class=super::SCROLL tabindex="0" role="region" aria-label=move || i18n.t(k!("usage.table.caption"))>
            <table class=TABLE data-testid="usage-table">
                <caption class="sr-only">{move || i18n.t(k!("usage.table.caption"))}</caption>
                // Hours and waits are each two columns under one heading.
                <thead>
                    <tr>
                        <th scope="col" rowspan="2" class=TH>{move || i18n.t(k!("usage.table.period"))}</th>
                        <th scope="col" rowspan="2" class=TH>{move || i18n.t(k!("usage.table.queue"))}</th>
                        {show_user.then(|| view! { <th scope="col" rowspan="2" class=TH>{move || i18n.t(k!("usage.table.user"))}</th> })}
                        <th scope="colgroup" colspan="2" class=th_num.clone()>{move || i18n.t(unit)}</th>
                        <th scope="col" rowspan="2" class=th_num.clone()>{move || i18n.t(k!("usage.table.runs"))}</th>
                        <th scope="colgroup" colspan="2" class=th_num.clone()>{move || i18n.t(k!("usage.table.wait"))}</th>
                        <th scope="col" rowspan="2" class=th_num.clone()>{move || i18n.t(k!("usage.table.preempted"))}</th>
                        <th scope="col" rowspan="2" class=th_num.clone()>{move || i18n.t(k!("usage.table.reclaimed"))}</th>
                    </tr>
                    <tr>
                        <th scope="col" class=th_num.clone()>{move || i18n.t(k!("usage.table.normal"))}</th>
                        <th scope="col" class=th_num.clone()>{move || i18n.t(k!("usage.table.elastic"))}</th>
                        <th scope="col" class=th_num.clone()>{move || i18n.t(k!("usage.table.waitMedian"))}</th>
                        <th scope="col" class=th_num>{move || i18n.t(k!("usage.table.waitP90"))}</th>
                    </tr>
                </thead>
                <tbody class="divide-y divide-slate-100 dark:divide-slate-800">
                    {lines.into_iter().map(|line| {
                        let Line { row, normal, elastic } = line;
                        let start = row.period_start;
                        let num = num.clone();
                        view! {
                            <tr data-testid="usage-row" data-period=row.period.clone() data-queue=row.queue.clone() data-user=row.user.clone()>
                                <th scope="row" class=format!("{TD} whitespace-nowrap text-left font-normal")>
                                    {move || super::period_label(i18n, start, by, false)}
                                </th>
                                <td class=TD translate="no">{row.queue.clone()}</td>
                                {show_user.then(|| view! { <td class=TD translate="no">{row.user.clone()}</td> })}
                                <td class=num.clone() data-testid="usage-normal">{move || hours(normal)}</td>
                                <td class=num.clone() data-testid="usage-elastic">{move || hours(elastic)}</td>
                                <td class=num.clone() data-testid="usage-runs">{move || count(row.jobs)}</td>
                                <td class=num.clone() data-testid="usage-wait-median">{move || wait(row.wait_median_seconds)}</td>
                                <td class=num.clone() data-testid="usage-wait-p90">{move || wait(row.wait_p90_seconds)}</td>
                                <td class=num.clone() data-testid="usage-preempted">{move || count(row.preempted)}</td>
                                <td class=num.clone() data-testid="usage-reclaimed">{move || count(row.reclaimed)}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
                <tfoot class="border-t-2 border-slate-300 dark:border-slate-600 font-semibold">
                    <tr data-testid="usage-total">
                        <th scope="row" colspan=if show_user { "3" } else { "2" } class=format!("{TD} text-left")>
                            {move || i18n.t(k!("usage.table.total"))}
                        </th>
                        <td class=num.clone() data-testid="usage-normal">{move || hours(sum.normal)}</td>
                        <td class=num.clone() data-testid="usage-elastic">{move || hours(sum.elastic)}</td>
                        <td class=num.clone() data-testid="usage-runs">{move || count(sum.runs)}</td>
                        <td class=num.clone()></td>
                        <td class=num.clone()></td>
                        <td class=num.clone() data-testid="usage-preempted">{move || count(sum.preempted)}</td>
                        <td class=num.clone() data-testid="usage-reclaimed">{move || count(sum.reclaimed)}</td>
                    </tr>
                </tfoot>
            </table>
        </div>
    }
}
