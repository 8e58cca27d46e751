//! The budgets section of `/admin/queues` (§10): every queue's budget — GPU-hours per week or
//! month for the normal jobs of it and its sub-queues — as a bar of this period's use against
//! it, with what Elastic jobs used beside, whether its jobs are held, and when it renews; and a
//! form that sets, changes or removes one. The server measures the use; the page only shows it.

use anteroom_shared::api::usage::BudgetStatus;
use anteroom_shared::scheduling::{BudgetPeriod, GpuHours, QueueBudgetBody};
use leptos::prelude::*;

use crate::components::bars::{Bar, BarInput};
use crate::components::confirm::use_confirm;
use crate::components::field::Field;
use crate::components::toast::use_toasts;
use crate::components::{BUTTON, BUTTON_DANGER, BUTTON_SECONDARY, Empty, ErrorPanel, INPUT, TABLE, TD, TH, use_fetch};
use crate::i18n::{k, use_i18n};

const BUDGETS: &str = "/api/v1/admin/budgets";

fn path_of(queue: &str) -> String {
    format!("/api/v1/admin/queues/{}/budget", crate::api::encode(queue))
}

/// The section: the budgets' table and, when asked, the form.
#[component]
pub fn Budgets(
    /// Every queue's name, for the form's choice.
    #[prop(into)]
    queues: Signal<Vec<String>>,
) -> impl IntoView {
    let i18n = use_i18n();
    let reload = RwSignal::new(0u64);
    let budgets = use_fetch(move || {
        reload.track();
        crate::api::get::<Vec<BudgetStatus>>(BUDGETS)
    });
    // `Some(None)`: a new budget; `Some(Some(b))`: editing `b`.
    let editing: RwSignal<Option<Option<BudgetStatus>>> = RwSignal::new(None);
    let done = Callback::new(move |_: ()| {
        editing.set(None);
        reload.update(|r| *r += 1);
    });
    view! {
        <section class="space-y-3" aria-labelledby="budgets-title" data-testid="budgets">
            <div class="flex flex-wrap items-end justify-between gap-2">
                <div>
                    <h2 id="budgets-title" class="text-lg font-semibold">{move || i18n.t(k!("budget.title"))}</h2>
                    <p class="text-sm text-slate-600 dark:text-slate-300">{move || i18n.t(k!("budget.description"))}</p>
                </div>
                <button type="button" class=BUTTON_SECONDARY data-testid="add-budget" on:click=move |_| editing.set(Some(None))>
                    {move || i18n.t(k!("budget.add"))}
                </button>
            </div>
            {move || editing.get().map(|b| view! { <BudgetForm budget=b queues=queues done=done /> })}
            {move || match budgets.get() {
                None => view! { <crate::auth::Loading /> }.into_any(),
                Some(Err(f)) => view! { <ErrorPanel failure=f /> }.into_any(),
                Some(Ok(list)) if list.is_empty() => view! { <Empty text=k!("budget.empty") /> }.into_any(),
                Some(Ok(list)) => view! {
                    <div class="overflow-x-auto rounded border border-slate-200 bg-white dark:border-slate-700 dark:bg-slate-900">
                        <table class=TABLE data-testid="budget-table">
                            <thead class="bg-slate-50 dark:bg-slate-950"><tr>
                                <th scope="col" class=TH>{move || i18n.t(k!("capacity.queue"))}</th>
                                <th scope="col" class=TH>{move || i18n.t(k!("budget.period"))}</th>
                                <th scope="col" class=TH>{move || i18n.t(k!("budget.use"))}</th>
                                <th scope="col" class=format!("{TH} text-right")>{move || i18n.t(k!("budget.elastic"))}</th>
                                <th scope="col" class=TH>{move || i18n.t(k!("budget.status"))}</th>
                                <th scope="col" class=TH>{move || i18n.t(k!("budget.renews"))}</th>
                                <th scope="col" class=TH><span class="sr-only">{move || i18n.t(k!("jobs.actions"))}</span></th>
                            </tr></thead>
                            <tbody class="divide-y divide-slate-100 dark:divide-slate-800">
                                {list.into_iter().map(|b| view! { <BudgetRow budget=b editing=editing /> }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any(),
            }}
        </section>
    }
}

/// One budget: its use as a bar against it, in words for screen readers.
#[component]
fn BudgetRow(budget: BudgetStatus, editing: RwSignal<Option<Option<BudgetStatus>>>) -> impl IntoView {
    let i18n = use_i18n();
    let used = budget.used_gpu_hours.hours();
    let limit = budget.gpu_hours.hours();
    let elastic = budget.backfill_gpu_hours.hours();
    let (holding, exhausted, hold) = (budget.holding, budget.exhausted, budget.hold_when_exhausted);
    let period = budget.period;
    let end = budget.period_end;
    let name = budget.queue.clone();
    let for_edit = budget.clone();
    let figures = move || {
        let l = i18n.locale();
        i18n.tf(
            k!("budget.usedOf"),
            &[
                ("used", &crate::format::number(l, used, 3)),
                ("budget", &crate::format::number(l, limit, 3)),
            ],
        )
    };
    view! {
        <tr data-testid="budget-row" data-queue=budget.queue.clone()>
            <th scope="row" class=format!("{TD} text-left font-medium") translate="no">{budget.queue.clone()}</th>
            <td class=TD>{move || i18n.t(period_key(period))}</td>
            <td class=format!("{TD} min-w-[14rem]")>
                // Drawn again when the language changes: its label is in words.
                {move || view! { <Bar input=BarInput { used, added: 0.0, limit: Some(limit), capacity: None } label=figures() /> }}
                <p class="mt-1 text-xs tabular-nums" data-testid="budget-used">{figures}</p>
            </td>
            <td class=format!("{TD} text-right tabular-nums") data-testid="budget-elastic">
                {move || crate::format::number(i18n.locale(), elastic, 3)}
            </td>
            <td class=format!("{TD} text-xs") data-testid="budget-status">
                {move || i18n.t(match (holding, exhausted, hold) {
                    (true, _, _) => k!("budget.holding"),
                    (false, true, false) => k!("budget.overShown"),
                    (false, true, true) => k!("budget.exhausted"),
                    (false, false, true) => k!("budget.withinHold"),
                    (false, false, false) => k!("budget.within"),
                })}
            </td>
            <td class=format!("{TD} text-xs")>{move || crate::format::datetime(i18n.locale(), end)}</td>
            <td class=TD>
                <button type="button" class=BUTTON_SECONDARY data-testid="edit-budget"
                    aria-label=move || i18n.tf(k!("budget.editNamed"), &[("queue", &name)])
                    on:click=move |_| editing.set(Some(Some(for_edit.clone())))>
                    {move || i18n.t(k!("common.edit"))}
                </button>
            </td>
        </tr>
    }
}

fn period_key(period: BudgetPeriod) -> crate::i18n::Key {
    match period {
        BudgetPeriod::Week => k!("budget.week"),
        BudgetPeriod::Month => k!("budget.month"),
    }
}

/// Sets, changes or removes a budget; what the server refuses is marked on the field.
#[component]
fn BudgetForm(
    budget: Option<BudgetStatus>,
    #[prop(into)] queues: Signal<Vec<String>>,
    done: Callback<()>,
) -> impl IntoView {
    let i18n = use_i18n();
    let toasts = use_toasts();
    let confirm = use_confirm();
    let existing = budget.as_ref().map(|b| b.queue.clone());
    let queue = RwSignal::new(existing.clone().unwrap_or_default());
    let period = RwSignal::new(budget.as_ref().map_or(BudgetPeriod::Month, |b| b.period));
    let hours = RwSignal::new(
        budget
            .as_ref()
            .map(|b| b.gpu_hours.hours().to_string())
            .unwrap_or_default(),
    );
    let hold = RwSignal::new(budget.as_ref().is_some_and(|b| b.hold_when_exhausted));
    let errors: RwSignal<Vec<(String, String)>> = RwSignal::new(Vec::new());
    let error_of = move |field: &'static str| {
        Signal::derive(move || errors.with(|e| e.iter().find(|(f, _)| f.starts_with(field)).map(|(_, m)| m.clone())))
    };
    let save = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let name = queue.get();
        if name.is_empty() {
            errors.set(vec![("queue".into(), i18n.t(k!("budget.pickQueue")).to_owned())]);
            return;
        }
        let Some(gpu_hours) = hours.get().trim().parse::<f64>().ok().and_then(GpuHours::from_hours) else {
            errors.set(vec![("gpuHours".into(), i18n.t(k!("budget.badHours")).to_owned())]);
            return;
        };
        let body = QueueBudgetBody {
            period: period.get(),
            gpu_hours,
            hold_when_exhausted: Some(hold.get()),
        };
        leptos::task::spawn_local(async move {
            match crate::api::put::<_, BudgetStatus>(&path_of(&name), &body).await {
                Ok(saved) => {
                    errors.set(Vec::new());
                    toasts.success(i18n.tf(k!("budget.saved"), &[("queue", &saved.queue)]));
                    done.run(());
                }
                Err(f) => {
                    errors.set(i18n.failure_fields(&f));
                    toasts.error(i18n.failure(&f));
                }
            }
        });
    };
    let remove = {
        let existing = existing.clone();
        move |_| {
            let Some(name) = existing.clone() else {
                done.run(());
                return;
            };
            confirm.ask(i18n.tf(k!("budget.confirmRemove"), &[("queue", &name)]), move || {
                let name = name.clone();
                leptos::task::spawn_local(async move {
                    match crate::api::delete(&path_of(&name)).await {
                        Ok(()) => {
                            toasts.success(i18n.tf(k!("budget.removed"), &[("queue", &name)]));
                            done.run(());
                        }
                        Err(f) => toasts.error(i18n.failure(&f)),
                    }
                });
            });
        }
    };
    let is_existing = existing.is_some();
    let hours_error = error_of("gpuHours");
    let queue_error = error_of("queue");
    view! {
        <form class="space-y-3 rounded border border-slate-200 bg-white p-3 dark:border-slate-700 dark:bg-slate-900"
            on:submit=save novalidate=true data-testid="budget-form">
            <div class="grid gap-3 md:grid-cols-3">
                <Field id="budget-queue".to_owned() label=k!("capacity.queue") error=queue_error>
                    <select id="budget-queue" class=INPUT disabled=is_existing
                        aria-describedby="budget-queue-error"
                        on:change=move |ev| queue.set(event_target_value(&ev))>
                        <option value="" selected=move || queue.get().is_empty()>{move || i18n.t(k!("budget.pickQueue"))}</option>
                        {move || queues.get().into_iter().map(|q| {
                            let selected = q == queue.get();
                            view! { <option value=q.clone() selected=selected translate="no">{q.clone()}</option> }
                        }).collect_view()}
                    </select>
                </Field>
                <Field id="budget-period".to_owned() label=k!("budget.period") error=error_of("period")>
                    <select id="budget-period" class=INPUT aria-describedby="budget-period-error"
                        on:change=move |ev| period.set(if event_target_value(&ev) == "week" { BudgetPeriod::Week } else { BudgetPeriod::Month })>
                        <option value="month" selected=move || period.get() == BudgetPeriod::Month>{move || i18n.t(k!("budget.month"))}</option>
                        <option value="week" selected=move || period.get() == BudgetPeriod::Week>{move || i18n.t(k!("budget.week"))}</option>
                    </select>
                </Field>
                <Field id="budget-hours".to_owned() label=k!("budget.gpuHours") error=hours_error>
                    <input id="budget-hours" class=INPUT type="number" min="0" step="any" inputmode="decimal" bind:value=hours
                        aria-invalid=move || hours_error.get().is_some().to_string() aria-describedby="budget-hours-error" />
                </Field>
            </div>
            <label class="flex items-start gap-2 text-sm">
                <input type="checkbox" class="mt-1" prop:checked=move || hold.get() on:change=move |ev| hold.set(event_target_checked(&ev))
                    data-testid="budget-hold" />
                <span>
                    {move || i18n.t(k!("budget.hold"))}
                    <span class="block text-xs text-slate-600 dark:text-slate-300">{move || i18n.t(k!("budget.holdHint"))}</span>
                </span>
            </label>
            <div class="flex gap-2">
                <button type="submit" class=BUTTON data-testid="save-budget">{move || i18n.t(k!("budget.save"))}</button>
                <button type="button" class=BUTTON_DANGER on:click=remove data-testid="remove-budget">
                    {move || i18n.t(if is_existing { k!("budget.remove") } else { k!("budget.cancel") })}
                </button>
            </div>
        </form>
    }
}
