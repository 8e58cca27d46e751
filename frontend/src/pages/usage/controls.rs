//! The report's choices: period, first and last day, what is counted; for admins also how bars
//! stack and whose or which queue's use. Each change is a new URL (Back undoes it); a range the
//! server would refuse is said here, on the field, and not asked.

use anteroom_shared::api::usage::{MAX_REPORT_DAYS, UsagePeriod};
use chrono::NaiveDate;
use leptos::prelude::*;

use super::query::{RangeProblem, Resource, Stack, UsageView, parse_day};
use crate::components::{INPUT, loaded, use_fetch};
use crate::i18n::{Key, k, use_i18n};

/// The classes of a control's label (the job lists' filters look the same).
const LABEL: &str = "flex flex-col gap-1 text-xs font-medium text-slate-700 dark:text-slate-300";

/// Shows `view` changed by `edit`.
fn show_changed(view: Memo<UsageView>, go: Callback<UsageView>, edit: impl FnOnce(&mut UsageView)) {
    let mut next = view.get_untracked();
    edit(&mut next);
    go.run(next);
}

/// A period's name in the select.
fn period_key(by: UsagePeriod) -> Key {
    match by {
        UsagePeriod::Day => k!("usage.by.day"),
        UsagePeriod::Week => k!("usage.by.week"),
        UsagePeriod::Month => k!("usage.by.month"),
    }
}

/// The controls of the report `view`; `go` shows another.
#[component]
pub fn Controls(
    /// The report shown.
    view: Memo<UsageView>,
    /// Shows another report (a new URL).
    go: Callback<UsageView>,
    /// The caller is an admin: the stacking, user and queue controls.
    admin: Signal<bool>,
    /// Today (UTC), the end of a range that names none.
    today: NaiveDate,
    /// What is wrong with the range, if anything.
    problem: Signal<Option<RangeProblem>>,
) -> impl IntoView {
    let i18n = use_i18n();
    let change = move |edit: &dyn Fn(&mut UsageView)| show_changed(view, go, edit);
    let days = Memo::new(move |_| view.with(|v| v.days(today)));
    let problem_text = move || {
        problem.get().map(|p| match p {
            RangeProblem::Backwards => i18n.t(k!("usage.rangeBackwards")).to_owned(),
            RangeProblem::TooLong => i18n.tf(
                k!("usage.rangeTooLong"),
                &[("max", &crate::format::number(i18n.locale(), MAX_REPORT_DAYS as f64, 0))],
            ),
        })
    };
    let invalid = move || problem.get().is_some().to_string();
    view! {
        <div class="space-y-2" data-testid="usage-controls">
            <div class="flex flex-wrap items-end gap-3" role="group" aria-label=move || i18n.t(k!("usage.controls"))>
                <label class=LABEL for="usage-by">
                    {move || i18n.t(k!("usage.period"))}
                    <select id="usage-by" class=format!("{INPUT} w-32")
                        on:change=move |ev| {
                            let by = match event_target_value(&ev).as_str() {
                                "week" => UsagePeriod::Week,
                                "month" => UsagePeriod::Month,
                                _ => UsagePeriod::Day,
                            };
                            go.run(view.get_untracked().with_period(by));
                        }
                        prop:value=move || view.with(|v| v.by.as_str())>
                        {[UsagePeriod::Day, UsagePeriod::Week, UsagePeriod::Month].into_iter().map(|by| view! {
                            <option value=by.as_str() selected=move || view.with(|v| v.by == by)>{move || i18n.t(period_key(by))}</option>
                        }).collect_view()}
                    </select>
                </label>
                <label class=LABEL for="usage-from">
                    {move || i18n.t(k!("usage.from"))}
                    <input id="usage-from" type="date" class=format!("{INPUT} w-40")
                        aria-invalid=invalid aria-describedby="usage-range-error"
                        prop:value=move || days.get().0.format("%Y-%m-%d").to_string()
                        on:change=move |ev| {
                            let day = parse_day(&event_target_value(&ev));
                            change(&|v| v.from = day);
                        } />
                </label>
                <label class=LABEL for="usage-to">
                    {move || i18n.t(k!("usage.to"))}
                    <input id="usage-to" type="date" class=format!("{INPUT} w-40")
                        aria-invalid=invalid aria-describedby="usage-range-error"
                        prop:value=move || days.get().1.format("%Y-%m-%d").to_string()
                        on:change=move |ev| {
                            let day = parse_day(&event_target_value(&ev));
                            change(&|v| v.to = day);
                        } />
                </label>
                <label class=LABEL for="usage-resource">
                    {move || i18n.t(k!("usage.resource.label"))}
                    <select id="usage-resource" class=format!("{INPUT} w-48")
                        on:change=move |ev| {
                            let resource = Resource::from_code(&event_target_value(&ev)).unwrap_or_default();
                            change(&|v| v.resource = resource);
                        }
                        prop:value=move || view.with(|v| v.resource.code())>
                        {Resource::ALL.into_iter().map(|r| view! {
                            <option value=r.code() selected=move || view.with(|v| v.resource == r)>{move || i18n.t(super::unit_key(r))}</option>
                        }).collect_view()}
                    </select>
                </label>
                <Show when=move || admin.get()>
                    <AdminControls view=view go=go />
                </Show>
            </div>
            <p id="usage-range-error" class="text-xs font-medium text-red-700 dark:text-red-300" role="alert"
                data-testid="usage-range-error">{problem_text}</p>
        </div>
    }
}

/// How bars stack, and whose and which queue's use: the users and queues to choose from are
/// read once (the lists only an admin may read).
#[component]
fn AdminControls(view: Memo<UsageView>, go: Callback<UsageView>) -> impl IntoView {
    let i18n = use_i18n();
    let users = use_fetch(|| async { crate::api::users().await.map(|page| page.items) });
    let queues = use_fetch(crate::api::admin_queues);
    let change = move |edit: &dyn Fn(&mut UsageView)| show_changed(view, go, edit);
    let chosen = |text: String| (!text.is_empty()).then_some(text);
    let user_names = move || {
        let mut names: Vec<String> = loaded(users).into_iter().map(|u| u.username).collect();
        names.sort();
        names
    };
    let queue_names = move || {
        let mut names: Vec<String> = loaded(queues).into_iter().map(|q| q.name).collect();
        names.sort();
        names
    };
    view! {
        <label class=LABEL for="usage-stack">
            {move || i18n.t(k!("usage.stack.label"))}
            <select id="usage-stack" class=format!("{INPUT} w-36")
                on:change=move |ev| {
                    let stack = if event_target_value(&ev) == "user" { Stack::User } else { Stack::Queue };
                    change(&|v| v.stack = stack);
                }
                prop:value=move || view.with(|v| v.stack.code())>
                <option value="queue" selected=move || view.with(|v| v.stack == Stack::Queue)>{move || i18n.t(k!("usage.stack.queue"))}</option>
                <option value="user" selected=move || view.with(|v| v.stack == Stack::User)>{move || i18n.t(k!("usage.stack.user"))}</option>
            </select>
        </label>
        <label class=LABEL for="usage-user">
            {move || i18n.t(k!("usage.table.user"))}
            <select id="usage-user" class=format!("{INPUT} w-44")
                on:change=move |ev| {
                    let user = chosen(event_target_value(&ev));
                    change(&|v| v.user = user.clone());
                }
                prop:value=move || view.with(|v| v.user.clone().unwrap_or_default())>
                <option value="">{move || i18n.t(k!("usage.allUsers"))}</option>
                {move || user_names().into_iter().map(|name| {
                    let value = name.clone();
                    let is = name.clone();
                    view! { <option value=value translate="no" selected=move || view.with(|v| v.user.as_deref() == Some(is.as_str()))>{name}</option> }
                }).collect_view()}
            </select>
        </label>
        <label class=LABEL for="usage-queue">
            {move || i18n.t(k!("usage.table.queue"))}
            <select id="usage-queue" class=format!("{INPUT} w-44")
                on:change=move |ev| {
                    let queue = chosen(event_target_value(&ev));
                    change(&|v| v.queue = queue.clone());
                }
                prop:value=move || view.with(|v| v.queue.clone().unwrap_or_default())>
                <option value="">{move || i18n.t(k!("usage.allQueues"))}</option>
                {move || queue_names().into_iter().map(|name| {
                    let value = name.clone();
                    let is = name.clone();
                    view! { <option value=value translate="no" selected=move || view.with(|v| v.queue.as_deref() == Some(is.as_str()))>{name}</option> }
                }).collect_view()}
            </select>
        </label>
    }
}
