//! The usage chart, drawn as inline SVG (no chart library, nothing fetched): a bar per period,
//! stacked by queue or user, normal use at the bottom in indigo shades and Elastic use above it
//! in cyan shades and hatched; a scale with round ticks, the period under every few bars, both
//! axes named, each part's numbers in its tooltip, and a legend. Screen readers get the
//! chart's name and the table below, which has the same numbers.

use anteroom_shared::api::usage::{UsagePeriod, period_name};
use anteroom_shared::scheduling::ScheduleType;
use leptos::prelude::*;

use super::model::{Chart, Group};
use super::query::Stack;
use crate::components::palette;
use crate::format;
use crate::i18n::{I18n, Key, k, use_i18n};

/// The drawing's size in its own units (it scales to the card's width).
const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 280.0;
/// Room for the scale's numbers and its name (left), and the periods and their name (below).
const LEFT: f64 = 64.0;
const RIGHT: f64 = 8.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 46.0;
/// The widest a bar is drawn.
const MAX_BAR: f64 = 56.0;
/// At most this many periods are written under the bars (every few bars one).
const X_LABELS: usize = 8;
/// The id of the hatching pattern the Elastic parts and their legend swatches are filled with.
const HATCH: &str = "usage-hatch";

/// A group's name: a queue or user as written, or "Other".
fn group_name(i18n: I18n, group: &Group) -> String {
    match group {
        Group::Named(name) => name.clone(),
        Group::Other => i18n.t(k!("usage.other")).to_owned(),
    }
}

/// The schedule type of a part.
fn schedule(elastic: bool) -> ScheduleType {
    if elastic {
        ScheduleType::Backfill
    } else {
        ScheduleType::Normal
    }
}

/// A coordinate as an attribute's value.
fn at(v: f64) -> String {
    format!("{v:.2}")
}

/// The chart of a report, then its legend.
#[component]
pub fn UsageChart(
    /// What to draw.
    chart: Chart,
    /// The report's periods.
    by: UsagePeriod,
    /// The unit counted ("GPU-hours").
    unit: Key,
    /// What the parts are.
    stack: Stack,
) -> impl IntoView {
    let i18n = use_i18n();
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let base = TOP + plot_h;
    let (top, step) = chart.scale;
    let y = move |hours: f64| base - hours / top * plot_h;
    let n = chart.bars.len().max(1);
    let slot = plot_w / n as f64;
    let every = n.div_ceil(X_LABELS);
    let steps = (top / step).round() as usize;
    let label = move || {
        let key = match stack {
            Stack::Queue => k!("usage.chart.byQueue"),
            Stack::User => k!("usage.chart.byUser"),
        };
        i18n.tf(key, &[("unit", i18n.t(unit))])
    };
    let axis_x = match by {
        UsagePeriod::Day => k!("usage.axis.day"),
        UsagePeriod::Week => k!("usage.axis.week"),
        UsagePeriod::Month => k!("usage.axis.month"),
    };
    let groups = chart.groups.clone();
    let ticks = (0..=steps)
        .map(|i| {
            let value = i as f64 * step;
            view! {
                <line x1=at(LEFT) x2=at(WIDTH - RIGHT) y1=at(y(value)) y2=at(y(value))
                    class="stroke-slate-200 dark:stroke-slate-700" stroke-width="1"></line>
                <text x=at(LEFT - 6.0) y=at(y(value) + 4.0) text-anchor="end" font-size="11"
                    class="fill-slate-600 dark:fill-slate-300">{move || format::number(i18n.locale(), value, 2)}</text>
            }
        })
        .collect_view();
    let bars = chart
        .bars
        .iter()
        .enumerate()
        .map(|(i, bar)| {
            // A bar takes most of its slot, but stays a bar when the range has few periods.
            let w = (slot * 0.7).clamp(0.5, MAX_BAR);
            let x = LEFT + i as f64 * slot + (slot - w) / 2.0;
            let start = bar.start;
            let mut below = 0.0;
            let parts = bar
                .parts
                .iter()
                .map(|p| {
                    let (y1, h) = (y(below + p.hours), p.hours / top * plot_h);
                    below += p.hours;
                    let name = chart.groups.get(p.group).cloned().unwrap_or(Group::Other);
                    let hours = p.hours;
                    let elastic = p.elastic;
                    let tip = {
                        let name = name.clone();
                        move || {
                            let kind = if elastic {
                                k!("scheduleType.backfill")
                            } else {
                                k!("scheduleType.normal")
                            };
                            i18n.tf(
                                k!("usage.part"),
                                &[
                                    ("group", &group_name(i18n, &name)),
                                    ("period", &super::period_label(i18n, start, by, false)),
                                    ("hours", &format::fixed(i18n.locale(), hours, 2)),
                                    ("unit", i18n.t(unit)),
                                    ("kind", i18n.t(kind)),
                                ],
                            )
                        }
                    };
                    let fill = palette::usage_part(schedule(elastic), p.group);
                    let data_group = match &name {
                        Group::Named(n) => n.clone(),
                        Group::Other => String::new(),
                    };
                    view! {
                        <g data-testid="chart-part" data-group=data_group data-elastic=elastic.to_string()
                            data-hours=hours.to_string()>
                            <title>{tip}</title>
                            <rect x=at(x) y=at(y1) width=at(w) height=at(h) stroke-width="0.5"
                                class=format!("{fill} stroke-white dark:stroke-slate-900")></rect>
                            {elastic.then(|| view! {
                                <rect x=at(x) y=at(y1) width=at(w) height=at(h) fill=format!("url(#{HATCH})")></rect>
                            })}
                        </g>
                    }
                })
                .collect_view();
            let shown = i % every == 0;
            view! {
                <g data-testid="chart-bar" data-period=period_name(start, by)>
                    {parts}
                    {shown.then(|| view! {
                        <text x=at(x + w / 2.0) y=at(base + 16.0) text-anchor="middle" font-size="11"
                            class="fill-slate-600 dark:fill-slate-300">{move || super::period_label(i18n, start, by, true)}</text>
                    })}
                </g>
            }
        })
        .collect_view();
    view! {
        <figure class="space-y-3">
            <svg viewBox=format!("0 0 {WIDTH} {HEIGHT}") class="h-auto w-full" role="img"
                aria-label=label data-testid="usage-chart">
                <defs>
                    <pattern id=HATCH width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
                        <rect width="2.5" height="6" fill-opacity="0.7" class=palette::USAGE_HATCH></rect>
                    </pattern>
                </defs>
                {ticks}
                {bars}
                <line x1=at(LEFT) x2=at(WIDTH - RIGHT) y1=at(base) y2=at(base)
                    class="stroke-slate-500 dark:stroke-slate-400" stroke-width="1"></line>
                <text x=at(LEFT + plot_w / 2.0) y=at(HEIGHT - 6.0) text-anchor="middle" font-size="12"
                    class="fill-slate-700 dark:fill-slate-200">{move || i18n.t(axis_x)}</text>
                <text transform=format!("translate(14 {}) rotate(-90)", at(TOP + plot_h / 2.0)) text-anchor="middle"
                    font-size="12" class="fill-slate-700 dark:fill-slate-200">{move || i18n.t(unit)}</text>
            </svg>
            <figcaption>
                <Legend groups=groups />
            </figcaption>
        </figure>
    }
}

/// A legend swatch: a part's fill, hatched for Elastic use.
fn swatch(fill: &'static str, hatched: bool) -> impl IntoView {
    view! {
        <svg viewBox="0 0 16 10" class="h-2.5 w-4 shrink-0" aria-hidden="true">
            <rect width="16" height="10" class=fill></rect>
            {hatched.then(|| view! { <rect width="16" height="10" fill=format!("url(#{HATCH})")></rect> })}
        </svg>
    }
}

/// What solid and hatched mean, then each group with its two swatches.
#[component]
fn Legend(groups: Vec<Group>) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <ul class="flex flex-wrap gap-x-4 gap-y-1 text-xs text-slate-700 dark:text-slate-300"
            aria-label=move || i18n.t(k!("usage.legend")) data-testid="usage-legend">
            <li class="inline-flex items-center gap-1.5">
                {swatch(palette::USAGE_OTHER, false)}
                <span>{move || i18n.t(k!("usage.legendNormal"))}</span>
            </li>
            <li class="inline-flex items-center gap-1.5">
                {swatch(palette::USAGE_OTHER, true)}
                <span>{move || i18n.t(k!("usage.legendElastic"))}</span>
            </li>
            {groups.into_iter().enumerate().map(|(i, group)| view! {
                <li class="inline-flex items-center gap-1.5" data-testid="legend-group">
                    {swatch(palette::usage_part(ScheduleType::Normal, i), false)}
                    {swatch(palette::usage_part(ScheduleType::Backfill, i), true)}
                    {match group {
                        Group::Named(name) => view! { <span translate="no">{name}</span> }.into_any(),
                        Group::Other => view! { <span>{move || i18n.t(k!("usage.other"))}</span> }.into_any(),
                    }}
                </li>
            }).collect_view()}
        </ul>
    }
}
