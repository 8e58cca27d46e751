//! Under "Why is this job waiting?": when it is likely to start, and the jobs the prequeue
//! considers before it (`GET /api/v1/jobs/{id}/ahead`), in the order it really follows.

use anteroom_shared::api::jobs::{EstimateBasis, JobsAhead, PrequeueStanding};
use chrono::{DateTime, Utc};
use leptos::prelude::*;

use crate::components::job_table::resources_text;
use crate::components::time::Time;
use crate::components::{LINK, TABLE, TD, TH, use_fetch};
use crate::format;
use crate::i18n::{I18n, k, use_i18n};

/// Jobs ahead shown at most.
const SHOWN: u32 = 20;

/// The estimate's sentence: likely within how long, or why there is none.
pub fn estimate_text(i18n: I18n, standing: &PrequeueStanding, now: DateTime<Utc>) -> String {
    match (standing.basis, standing.estimated_start_at) {
        (Some(EstimateBasis::Limits), Some(at)) if at > now + chrono::Duration::seconds(45) => {
            let seconds = (at - now).num_seconds();
            i18n.tf(
                k!("page.jobDetail.estimateWithin"),
                &[("within", &format::duration(i18n.locale(), rounded(seconds)))],
            )
        }
        (Some(EstimateBasis::Limits), Some(_)) => i18n.t(k!("page.jobDetail.estimateNow")).to_owned(),
        (Some(_), _) => i18n.t(k!("page.jobDetail.estimateUnknown")).to_owned(),
        (None, _) => i18n.t(k!("page.jobDetail.estimating")).to_owned(),
    }
}

/// A wait rounded up to what a person reads: minutes under two hours, then hours.
fn rounded(seconds: i64) -> i64 {
    if seconds < 7_200 {
        (seconds + 59) / 60 * 60
    } else {
        (seconds + 3_599) / 3_600 * 3_600
    }
}

/// The estimate and the jobs ahead of waiting job `id` (fetched anew with every new detail:
/// the page builds this part again then).
#[component]
pub fn Ahead(id: i64, standing: PrequeueStanding) -> impl IntoView {
    let i18n = use_i18n();
    let now = crate::components::time::ticking_now();
    // Without a forecast covering the job (no basis yet) the server has no list either.
    let covered = standing.basis.is_some();
    let ahead = use_fetch(move || async move {
        if covered {
            crate::api::jobs_ahead(id, SHOWN).await.map(Some)
        } else {
            Ok(None)
        }
    });
    let estimate = {
        let standing = standing.clone();
        move || estimate_text(i18n, &standing, now.get())
    };
    view! {
        <p class="text-sm font-medium" data-testid="estimate" data-basis=standing.basis.map(|b| match b { EstimateBasis::Limits => "limits", EstimateBasis::Unknown => "unknown" })>
            {estimate}
        </p>
        {move || match ahead.get() {
            None => view! { <p class="text-sm text-slate-600 dark:text-slate-300">{move || i18n.t(k!("common.loading"))}</p> }.into_any(),
            Some(Err(_)) => view! { <p class="text-sm text-slate-600 dark:text-slate-300" data-testid="ahead-unknown">{move || i18n.t(k!("page.jobDetail.aheadUnknown"))}</p> }.into_any(),
            Some(Ok(None)) => ().into_any(),
            Some(Ok(Some(list))) => view! { <AheadTable list=list /> }.into_any(),
        }}
    }
}

#[component]
fn AheadTable(list: JobsAhead) -> impl IntoView {
    let i18n = use_i18n();
    let total = list.total;
    if total == 0 {
        return view! { <p class="text-sm" data-testid="ahead-none">{move || i18n.t(k!("page.jobDetail.aheadNone"))}</p> }.into_any();
    }
    let shown = list.items.len() as u64;
    view! {
        <div class="space-y-2" data-testid="ahead">
            <h3 class="text-sm font-semibold">{move || i18n.tp(k!("page.jobDetail.ahead.one"), k!("page.jobDetail.ahead.other"), total, &[])}</h3>
            <div class="overflow-x-auto">
                <table class=TABLE>
                    <thead><tr>
                        <th scope="col" class=TH>"#"</th>
                        <th scope="col" class=TH>{move || i18n.t(k!("page.jobDetail.aheadJob"))}</th>
                        <th scope="col" class=TH>{move || i18n.t(k!("jobs.resources"))}</th>
                        <th scope="col" class=TH>{move || i18n.t(k!("page.jobDetail.aheadWhy"))}</th>
                        <th scope="col" class=TH>{move || i18n.t(k!("page.jobDetail.aheadStarts"))}</th>
                    </tr></thead>
                    <tbody class="divide-y divide-slate-100 dark:divide-slate-800">
                        {list.items.into_iter().enumerate().map(|(i, item)| {
                            let resources = item.resources.clone();
                            let who = match (item.id, item.name.clone(), item.owner.clone()) {
                                (Some(id), Some(name), Some(owner)) => view! {
                                    <a class=LINK href=format!("/jobs/{id}") translate="no">{name}</a>
                                    <span class="block text-xs text-slate-600 dark:text-slate-300" translate="no">{owner}</span>
                                }.into_any(),
                                _ => view! { <span class="italic text-slate-700 dark:text-slate-300">{move || i18n.t(k!("page.jobDetail.anotherUsersJob"))}</span> }.into_any(),
                            };
                            let why = item.reasons.iter().map(|r| i18n.t(crate::components::reasons::reason_short(&r.code))).collect::<Vec<_>>().join(", ");
                            let starts = match (item.basis, item.estimated_start_at) {
                                (EstimateBasis::Limits, Some(at)) => view! { <Time at=at /> }.into_any(),
                                _ => view! { <span>{move || i18n.t(k!("page.jobDetail.unknown"))}</span> }.into_any(),
                            };
                            view! {
                                <tr data-testid="ahead-row" data-mine=item.mine.to_string()>
                                    <td class=TD>{i + 1}</td>
                                    <td class=TD>{who}</td>
                                    <td class=TD>{move || resources_text(i18n, &resources)}</td>
                                    <td class=TD>{why}</td>
                                    <td class=TD>{starts}</td>
                                </tr>
                            }
                        }).collect_view()}
                    </tbody>
                </table>
            </div>
            {(shown < total).then(|| view! { <p class="text-xs text-slate-600 dark:text-slate-300">{move || i18n.tf(k!("page.jobDetail.aheadMore"), &[("count", &(total - shown).to_string())])}</p> })}
        </div>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::i18n::Locale;

    fn standing(basis: Option<EstimateBasis>, at: Option<DateTime<Utc>>) -> PrequeueStanding {
        PrequeueStanding {
            position: 1,
            reasons: Vec::new(),
            estimated_start_at: at,
            basis,
        }
    }

    #[test]
    fn a_wait_reads_in_round_minutes_then_hours() {
        assert_eq!(rounded(61), 120);
        assert_eq!(rounded(2_400), 2_400);
        assert_eq!(rounded(7_201), 10_800);
    }

    #[test]
    fn no_estimate_says_why_in_every_language() {
        let now = chrono::DateTime::UNIX_EPOCH;
        for locale in [Locale::En, Locale::Zh, Locale::Ja, Locale::Ko] {
            let i18n = I18n::fixed(locale);
            let unknown = estimate_text(i18n, &standing(Some(EstimateBasis::Unknown), None), now);
            let pending = estimate_text(i18n, &standing(None, None), now);
            let due = estimate_text(i18n, &standing(Some(EstimateBasis::Limits), Some(now)), now);
            assert!(
                !unknown.is_empty() && unknown != pending && due != unknown,
                "{locale:?}"
            );
        }
        assert!(
            estimate_text(
                I18n::fixed(Locale::En),
                &standing(Some(EstimateBasis::Unknown), None),
                now
            )
            .contains("runtime limit")
        );
    }
}
