//! `/usage`: what jobs used, per day, week or month (`GET /api/v1/usage`) — a user their own,
//! stacked by queue; an admin everyone's, or one user's or queue's, stacked by queue or user —
//! as a chart of GPU-hours (or CPU-hours, memory GiB-hours) with normal and Elastic use apart,
//! the same numbers in a table beside it, a CSV of the report to download, and the user's fair
//! share over time (`GET /api/v1/me/fair-share`). The report's choices live in the page's URL.

mod chart;
mod controls;
mod fair_share;
mod model;
mod query;
mod table;

use anteroom_shared::api::usage::{UsagePeriod, UsageReport};
use chrono::{DateTime, Utc};
use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::hooks::{use_location, use_navigate, use_query_map};

use self::chart::UsageChart;
use self::controls::Controls;
use self::fair_share::FairShareCard;
use self::query::{Resource, Stack, UsageView};
use self::table::UsageTable;
use crate::components::{BUTTON_SECONDARY, CARD, Empty, PageHeader, show, use_fetch};
use crate::format::{self, DateLength};
use crate::i18n::{I18n, Key, k, use_i18n};

/// The box a wide table scrolls in: focusable, so a keyboard can scroll it too (it is named by
/// its `aria-label`).
const SCROLL: &str = "overflow-x-auto rounded focus:outline-none focus-visible:ring-2 focus-visible:ring-violet-500";

/// A period by its first instant, as people read it: a day, "Week of" its Monday, a month
/// (`short`: a day without its year, for the chart's axis).
fn period_label(i18n: I18n, start: DateTime<Utc>, by: UsagePeriod, short: bool) -> String {
    let locale = i18n.locale();
    let day = if short { DateLength::ShortDay } else { DateLength::Day };
    match by {
        UsagePeriod::Day => format::utc_date(locale, start, day),
        UsagePeriod::Week if short => format::utc_date(locale, start, day),
        UsagePeriod::Week => i18n.tf(k!("usage.weekOf"), &[("date", &format::utc_date(locale, start, day))]),
        UsagePeriod::Month => format::utc_date(locale, start, DateLength::Month),
    }
}

/// The unit of what is counted ("GPU-hours").
fn unit_key(resource: Resource) -> Key {
    match resource {
        Resource::Gpu => k!("usage.resource.gpu"),
        Resource::Cpu => k!("usage.resource.cpu"),
        Resource::Memory => k!("usage.resource.memory"),
    }
}

/// The page.
#[component]
pub fn Usage() -> impl IntoView {
    let i18n = use_i18n();
    let auth = crate::auth::use_auth();
    let admin = Memo::new(move |_| auth.is_admin());
    let url = use_query_map();
    let location = use_location();
    let navigate = StoredValue::new_local(use_navigate());
    // The URL is the report's state; what a user may not ask for is left out of it.
    let view = Memo::new(move |_| {
        url.with(|q| UsageView::from_url(|name| q.get(name)))
            .for_caller(admin.get())
    });
    // Today as the page opened: the default ranges stay put while it is open.
    let today = query::today();
    let go = Callback::new(move |next: UsageView| {
        let target = format!(
            "{}{}",
            location.pathname.get_untracked(),
            next.url_query(crate::api::encode)
        );
        navigate.with_value(|n| {
            n(
                &target,
                NavigateOptions {
                    scroll: false,
                    ..Default::default()
                },
            )
        });
    });
    let problem = Memo::new(move |_| view.with(|v| v.check(today).err()));
    let api_query = move || view.with(|v| v.api_query(today, crate::api::encode));
    // Nothing is asked while the range is wrong (the controls say why), and nothing again when
    // only the drawing changes (what is counted, how bars stack).
    let asked = Memo::new(move |_| problem.get().is_none().then(api_query));
    let report = use_fetch(move || {
        let asked = asked.get();
        async move {
            match asked {
                Some(q) => crate::api::usage(&q).await.map(Some),
                None => Ok(None),
            }
        }
    });
    let title = move || {
        view.with(|v| {
            let unit = i18n.t(unit_key(v.resource));
            let by = match v.by {
                UsagePeriod::Day => k!("usage.title.day"),
                UsagePeriod::Week => k!("usage.title.week"),
                UsagePeriod::Month => k!("usage.title.month"),
            };
            i18n.tf(by, &[("unit", unit)])
        })
    };
    view! {
        <section class="space-y-6">
            <PageHeader title=k!("page.usage.title") description=k!("page.usage.description")>
                <Show when=move || problem.get().is_none()>
                    <a class=BUTTON_SECONDARY href=move || crate::api::usage_csv_path(&api_query()) download=""
                        data-testid="usage-csv">{move || i18n.t(k!("usage.csv"))}</a>
                </Show>
            </PageHeader>
            <Controls view=view go=go admin=Signal::from(admin) today=today problem=Signal::from(problem) />
            <section class=CARD aria-labelledby="usage-title" data-testid="usage-report">
                <h2 id="usage-title" class="mb-3 text-lg font-semibold">{title}</h2>
                {show(report, move |r: &Option<UsageReport>| match r {
                    None => ().into_any(),
                    Some(r) if r.rows.is_empty() => view! { <Empty text=k!("usage.none") /> }.into_any(),
                    Some(r) => {
                        let v = view.get();
                        view! { <Report report=r.clone() resource=v.resource stack=v.stack show_user=admin.get() /> }.into_any()
                    }
                })}
            </section>
            <FairShareCard />
        </section>
    }
}

/// The chart of a report and, below it, its numbers.
#[component]
fn Report(report: UsageReport, resource: Resource, stack: Stack, show_user: bool) -> impl IntoView {
    let chart = model::chart(&report, resource, stack);
    let lines = model::lines(&report, resource, stack);
    view! {
        <div class="space-y-6">
            <UsageChart chart=chart by=report.by unit=unit_key(resource) stack=stack />
            <UsageTable lines=lines by=report.by unit=unit_key(resource) show_user=show_user />
        </div>
    }
}
