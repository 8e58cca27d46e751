//! The live list of jobs waiting to queue, first on `/admin/prequeue`: their positions and
//! reasons, paged (`?page=` in the URL), refreshed as jobs change.

use anteroom_shared::api::jobs::PrequeuedJob;
use leptos::prelude::*;

use crate::components::badges::ScheduleTypeBadge;
use crate::components::pager::Pager;
use crate::components::reasons::reason_text;
use crate::components::time::Time;
use crate::components::{Empty, LINK, TABLE, TD, TH, show, use_fetch};
use crate::format;
use crate::i18n::{k, use_i18n};
use crate::live::use_live;

/// The list, one page at a time.
#[component]
pub(super) fn PrequeuedList() -> impl IntoView {
    let i18n = use_i18n();
    let live = use_live();
    let query = leptos_router::hooks::use_query_map();
    let location = leptos_router::hooks::use_location();
    let navigate = StoredValue::new_local(leptos_router::hooks::use_navigate());
    let page = Memo::new(move |_| query.with(|q| crate::api::page_from(q.get("page").as_deref())));
    let go = move |p: u64, replace: bool| {
        let url = format!("{}?page={p}", location.pathname.get_untracked());
        navigate.with_value(|n| {
            n(
                &url,
                leptos_router::NavigateOptions {
                    replace,
                    scroll: false,
                    ..Default::default()
                },
            )
        });
    };
    let list = use_fetch(move || {
        live.version();
        crate::api::prequeued(page.get())
    });
    let total = Memo::new(move |_| list.get().and_then(|r| r.ok()).map_or(0, |p| p.total));
    let pages = Memo::new(move |_| total.get().div_ceil(crate::api::PAGE_SIZE).max(1));
    // Jobs activated since leave a last page empty: show the last page that has jobs instead.
    Effect::new(move |_| {
        let last = pages.get();
        if list.with(|l| matches!(l, Some(Ok(_)))) && page.get_untracked() > last {
            go(last, true);
        }
    });
    view! {
        <section class="space-y-3" aria-labelledby="prequeued-title">
            <h2 id="prequeued-title" class="text-lg font-semibold">{move || i18n.t(k!("settings.prequeuedTitle"))}</h2>
            {show(list, move |answer| {
                if answer.items.is_empty() && answer.total == 0 {
                    return view! { <Empty text=k!("settings.prequeuedEmpty") /> }.into_any();
                }
                let rows: Vec<PrequeuedJob> = answer.items.clone();
                view! {
                    <div class="overflow-x-auto rounded border border-slate-200 dark:border-slate-700 bg-white dark:bg-slate-900">
                        <table class=TABLE data-testid="prequeued-table">
                            <thead class="bg-slate-50 dark:bg-slate-950"><tr>
                                <th scope="col" class=TH>{move || i18n.t(k!("settings.position"))}</th>
                                <th scope="col" class=TH>{move || i18n.t(k!("jobs.name"))}</th>
                                <th scope="col" class=TH>{move || i18n.t(k!("jobs.owner"))}</th>
                                <th scope="col" class=TH>{move || i18n.t(k!("jobs.queue"))}</th>
                                <th scope="col" class=TH>{move || i18n.t(k!("jobs.scheduleType"))}</th>
                                <th scope="col" class=TH>{move || i18n.t(k!("jobs.submitted"))}</th>
                                <th scope="col" class=TH>{move || i18n.t(k!("settings.reasons"))}</th>
                            </tr></thead>
                            <tbody class="divide-y divide-slate-100 dark:divide-slate-800">
                                {rows.into_iter().map(|p| {
                                    let at = p.job.submitted_at;
                                    let reasons = p.reasons.clone();
                                    view! {
                                        <tr data-testid="prequeued-row" data-job-id=p.job.id.to_string()>
                                            <td class=TD>{move || format::number(i18n.locale(), p.position as f64, 0)}</td>
                                            <td class=TD><a class=LINK href=format!("/jobs/{}", p.job.id)>{p.job.name.clone()}</a></td>
                                            <td class=TD>{p.job.owner.clone()}</td>
                                            <td class=TD>{p.job.queue.clone()}</td>
                                            <td class=TD><ScheduleTypeBadge schedule_type=p.job.schedule_type /></td>
                                            <td class=TD><Time at=at /></td>
                                            <td class=TD><ul class="list-inside list-disc">{reasons.into_iter().map(|r| view! { <li>{move || reason_text(i18n, &r)}</li> }).collect_view()}</ul></td>
                                        </tr>
                                    }
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                    <Pager page=Signal::from(page) pages=Signal::from(pages) total=Signal::from(total)
                        go=move |p| go(p, false) />
                }.into_any()
            })}
        </section>
    }
}
