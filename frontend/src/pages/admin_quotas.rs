//! `/admin/quotas`: the quota rules across queues as one table — each per-user limit with a bar
//! of what the user closest to it uses now, how many users use the queue and how many are at
//! a limit — and, in a side panel, the form (queue, CPU, memory, accelerator limits as model +
//! count rows, maximum active jobs) that creates, saves and deletes (after confirmation) a
//! rule. Invalid input is marked on its field before any request.

use anteroom_shared::api::queues::{QueueQuotaBody, QueueQuotaRule, QueueUserUse};
use anteroom_shared::scheduling::{Quantity, ResourceList, is_accelerator};
use leptos::prelude::*;

use crate::components::bars::{Bar, BarInput, ResourceName};
use crate::components::confirm::use_confirm;
use crate::components::drawer::Drawer;
use crate::components::field::{AmountRow, AmountRows, Field};
use crate::components::toast::use_toasts;
use crate::components::{
    BUTTON, BUTTON_DANGER, BUTTON_SECONDARY, Empty, ErrorPanel, INPUT, PageHeader, TABLE, TD, TH, accelerator_names,
    loaded, use_fetch,
};
use crate::format;
use crate::i18n::{I18n, k, use_i18n};

/// What the side panel edits.
#[derive(Clone, Debug, PartialEq)]
enum Editing {
    None,
    New,
    Rule(Box<QueueQuotaRule>),
}

/// The page.
#[component]
pub fn AdminQuotas() -> impl IntoView {
    let i18n = use_i18n();
    let reload = RwSignal::new(0u64);
    let rules = use_fetch(move || {
        reload.track();
        crate::api::quotas()
    });
    let usage = use_fetch(move || {
        reload.track();
        crate::api::queue_usage()
    });
    let queues = use_fetch(crate::api::admin_queues);
    let models = use_fetch(crate::api::cluster_resources);
    let editing = RwSignal::new(Editing::None);
    let queue_names = Signal::derive(move || loaded(queues).into_iter().map(|q| q.name).collect::<Vec<_>>());
    let model_names = Signal::derive(move || accelerator_names(models));
    let done = Callback::new(move |_: ()| {
        editing.set(Editing::None);
        reload.update(|r| *r += 1);
    });
    let drawer_title = Signal::derive(move || match editing.get() {
        Editing::Rule(r) => i18n.tf(k!("quota.editNamed"), &[("queue", &r.queue)]),
        _ => i18n.t(k!("quota.add")).to_owned(),
    });
    view! {
        <section class="space-y-6">
            <PageHeader title=k!("page.adminQuotas.title") description=k!("page.adminQuotas.description")>
                <button type="button" class=BUTTON on:click=move |_| editing.set(Editing::New) data-testid="add-quota">
                    {move || i18n.t(k!("quota.add"))}
                </button>
            </PageHeader>
            <Drawer open=Signal::derive(move || editing.get() != Editing::None) title=drawer_title
                on_close=Callback::new(move |_| editing.set(Editing::None))>
                {move || match editing.get() {
                    Editing::None => ().into_any(),
                    Editing::New => view! { <QuotaCard rule=None queues=queue_names models=model_names done=done /> }.into_any(),
                    Editing::Rule(r) => view! { <QuotaCard rule=Some(*r) queues=queue_names models=model_names done=done /> }.into_any(),
                }}
            </Drawer>
            {move || match rules.get() {
                None => view! { <crate::auth::Loading /> }.into_any(),
                Some(Err(f)) => view! { <ErrorPanel failure=f /> }.into_any(),
                Some(Ok(list)) if list.is_empty() => view! { <Empty text=k!("quota.empty") /> }.into_any(),
                Some(Ok(list)) => {
                    let use_now = loaded(usage);
                    view! { <QuotaTable rules=list usage=use_now editing=editing /> }.into_any()
                }
            }}
        </section>
    }
}

/// The rules across queues, one row each: the per-user limits, how close the users who use
/// most are to each, and the limit on active jobs.
#[component]
fn QuotaTable(rules: Vec<QueueQuotaRule>, usage: Vec<QueueUserUse>, editing: RwSignal<Editing>) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <div class="overflow-x-auto rounded border border-slate-200 bg-white dark:border-slate-700 dark:bg-slate-900">
            <table class=TABLE data-testid="quota-table">
                <thead class="bg-slate-50 dark:bg-slate-950">
                    <tr>
                        <th scope="col" class=TH>{move || i18n.t(k!("capacity.queue"))}</th>
                        <th scope="col" class=format!("{TH} w-1/2")>{move || i18n.t(k!("quota.limitsAndUse"))}</th>
                        <th scope="col" class=TH>{move || i18n.t(k!("quota.maxActiveJobs"))}</th>
                        <th scope="col" class=TH>{move || i18n.t(k!("quota.users"))}</th>
                        <th scope="col" class=TH><span class="sr-only">{move || i18n.t(k!("jobs.actions"))}</span></th>
                    </tr>
                </thead>
                <tbody class="divide-y divide-slate-100 dark:divide-slate-800">
                    {rules.into_iter().map(|rule| {
                        let here: Vec<QueueUserUse> = usage.iter().filter(|u| u.queue == rule.queue).cloned().collect();
                        let users = here.len() as u64;
                        let at_limit = here.iter().filter(|u| rule_share(&rule, u) >= 1.0).count() as u64;
                        let for_edit = rule.clone();
                        let queue = rule.queue.clone();
                        view! {
                            <tr data-testid="quota-row" data-queue=rule.queue.clone()>
                                <th scope="row" class=format!("{TD} text-left font-semibold") translate="no">{rule.queue.clone()}</th>
                                <td class=TD>
                                    {if rule.limits.is_empty() {
                                        view! { <span class="text-xs text-slate-600 dark:text-slate-300">{move || i18n.t(k!("quota.noLimits"))}</span> }.into_any()
                                    } else {
                                        view! { <div class="space-y-1">
                                            {rule.limits.iter().map(|(res, limit)| {
                                                // The user closest to this limit.
                                                let top = here.iter()
                                                    .max_by(|a, b| format::value(&a.used.get(res)).total_cmp(&format::value(&b.used.get(res))))
                                                    .filter(|u| !u.used.get(res).is_zero())
                                                    .map(|u| (u.user.clone(), format::value(&u.used.get(res))));
                                                view! { <LimitUse resource=res.to_owned() limit=format::value(&limit) top=top /> }
                                            }).collect_view()}
                                        </div> }.into_any()
                                    }}
                                </td>
                                <td class=format!("{TD} tabular-nums")>{rule.max_active_jobs.map_or_else(|| "—".to_owned(), |m| m.to_string())}</td>
                                <td class=format!("{TD} text-xs") data-testid="quota-users">
                                    {move || i18n.tf(k!("quota.usersNow"), &[
                                        ("users", &format::number(i18n.locale(), users as f64, 0)),
                                        ("atLimit", &format::number(i18n.locale(), at_limit as f64, 0)),
                                    ])}
                                </td>
                                <td class=TD>
                                    <button type="button" class=BUTTON_SECONDARY data-testid="edit-quota"
                                        aria-label=move || i18n.tf(k!("quota.editNamed"), &[("queue", &queue)])
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

/// The largest share of any of `rule`'s limits that user `u` holds (1.0: at a limit), the
/// limit on active jobs included (the prequeue holds a job at `maxActiveJobs` too).
fn rule_share(rule: &QueueQuotaRule, u: &QueueUserUse) -> f64 {
    let jobs = rule.max_active_jobs.map_or(0.0, |max| {
        if max == 0 {
            f64::INFINITY
        } else {
            f64::from(u.active_jobs) / f64::from(max)
        }
    });
    rule.limits
        .iter()
        .map(|(res, limit)| {
            let l = format::value(&limit);
            let used = format::value(&u.used.get(res));
            if l <= 0.0 {
                if used > 0.0 { f64::INFINITY } else { 0.0 }
            } else {
                used / l
            }
        })
        .fold(jobs, f64::max)
}

/// One per-user limit with a bar of what the user closest to it uses.
#[component]
fn LimitUse(resource: String, limit: f64, top: Option<(String, f64)>) -> impl IntoView {
    let i18n = use_i18n();
    let used = top.as_ref().map_or(0.0, |t| t.1);
    let words = {
        let resource = resource.clone();
        move || {
            let l = i18n.locale();
            match &top {
                Some((user, used)) => i18n.tf(
                    k!("quota.topUser"),
                    &[
                        ("user", user),
                        ("used", &format::amount(l, &resource, *used)),
                        ("limit", &format::amount(l, &resource, limit)),
                    ],
                ),
                None => i18n.tf(
                    k!("quota.limitOnly"),
                    &[("limit", &format::amount(l, &resource, limit))],
                ),
            }
        }
    };
    let input = BarInput {
        used,
        limit: Some(limit),
        ..Default::default()
    };
    view! {
        <div class="grid grid-cols-[8rem_minmax(5rem,1fr)_minmax(9rem,14rem)] items-center gap-2 text-xs" data-testid="quota-limit" data-resource=resource.clone()>
            <ResourceName resource=resource.clone() />
            {let words = words.clone(); move || view! { <Bar input=input label=words() /> }}
            <span class="text-slate-700 dark:text-slate-300" data-testid="quota-words">{words}</span>
        </div>
    }
}

fn quantity_error(i18n: I18n, value: &str) -> Option<String> {
    let v = value.trim();
    if v.is_empty() {
        return None;
    }
    match Quantity::parse(v) {
        Ok(q) if !q.is_positive() && !q.is_zero() => Some(i18n.t(k!("form.quantity")).to_owned()),
        Ok(_) => None,
        Err(_) => Some(i18n.t(k!("form.quantity")).to_owned()),
    }
}

#[component]
fn QuotaCard(
    rule: Option<QueueQuotaRule>,
    #[prop(into)] queues: Signal<Vec<String>>,
    #[prop(into)] models: Signal<Vec<String>>,
    done: Callback<()>,
) -> impl IntoView {
    let i18n = use_i18n();
    let toasts = use_toasts();
    let confirm = use_confirm();
    let id = rule.as_ref().map(|r| r.id);
    let shown = StoredValue::new(rule.clone());
    let prefix = match id {
        Some(id) => format!("quota{id}"),
        None => "quota-new".to_owned(),
    };
    let limits = rule.as_ref().map(|r| r.limits.clone()).unwrap_or_default();
    let queue = RwSignal::new(
        rule.as_ref()
            .map(|r| r.queue.clone())
            .unwrap_or_else(|| "default".into()),
    );
    let cpu = RwSignal::new(limits.get_named("cpu").map(|q| q.to_string()).unwrap_or_default());
    let memory = RwSignal::new(limits.get_named("memory").map(|q| q.to_string()).unwrap_or_default());
    let max_active = RwSignal::new(
        rule.as_ref()
            .and_then(|r| r.max_active_jobs)
            .map(|m| m.to_string())
            .unwrap_or_default(),
    );
    let rows = AmountRows::new(
        limits
            .iter()
            .filter(|(name, _)| is_accelerator(name))
            .map(|(name, q)| (name.to_owned(), q.to_string())),
    );
    let saving = RwSignal::new(false);
    let server_errors = RwSignal::new(Vec::<(String, String)>::new());

    let cpu_error = Signal::derive(move || quantity_error(i18n, &cpu.get()));
    let memory_error = Signal::derive(move || quantity_error(i18n, &memory.get()));
    let max_error = Signal::derive(move || {
        let v = max_active.get();
        (!v.trim().is_empty() && v.trim().parse::<u32>().is_err())
            .then(|| i18n.t(k!("form.nonNegativeInteger")).to_owned())
    });
    let row_error = move |row: AmountRow| {
        Signal::derive(move || {
            if row.name.get().is_empty() {
                return Some(i18n.t(k!("form.chooseModel")).to_owned());
            }
            match row.amount.get().trim().parse::<i64>() {
                Ok(n) if n >= 0 => None,
                _ => Some(i18n.t(k!("form.nonNegativeInteger")).to_owned()),
            }
        })
    };
    let valid = move || {
        cpu_error.get().is_none()
            && memory_error.get().is_none()
            && max_error.get().is_none()
            && rows.get().into_iter().all(|r| row_error(r).get().is_none())
    };
    let body = move || -> Option<QueueQuotaBody> {
        let mut limits = ResourceList::new();
        for (name, v) in [("cpu", cpu.get()), ("memory", memory.get())] {
            if !v.trim().is_empty() {
                limits.insert(name, Quantity::parse(v.trim()).ok()?);
            }
        }
        for r in rows.get() {
            limits.insert(r.name.get(), Quantity::from_units(r.amount.get().trim().parse().ok()?));
        }
        let m = max_active.get();
        Some(QueueQuotaBody {
            queue: queue.get(),
            limits,
            max_active_jobs: if m.trim().is_empty() {
                None
            } else {
                Some(m.trim().parse().ok()?)
            },
        })
    };
    let save = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let Some(b) = body().filter(|_| valid()) else {
            toasts.error(i18n.t(k!("form.fixErrors")).to_owned());
            return;
        };
        saving.set(true);
        leptos::task::spawn_local(async move {
            // A change to a rule is made on the row it was opened from: refused if that moved.
            let saved = match shown.get_value() {
                Some(rule) => crate::api::replace_quota(&rule, &b).await,
                None => crate::api::save_quota(None, &b).await,
            };
            match saved {
                Ok(saved) => {
                    server_errors.set(Vec::new());
                    toasts.success(i18n.tf(k!("quota.saved"), &[("queue", &saved.queue)]));
                    done.try_run(());
                }
                Err(f) => {
                    server_errors.set(i18n.failure_fields(&f));
                    toasts.error(i18n.failure(&f));
                }
            }
            saving.set(false);
        });
    };
    let remove = move |_| {
        let Some(id) = id else {
            done.try_run(());
            return;
        };
        let q = queue.get_untracked();
        confirm.ask(i18n.tf(k!("quota.confirmDelete"), &[("queue", &q)]), move || {
            leptos::task::spawn_local(async move {
                match crate::api::delete_quota(id).await {
                    Ok(()) => {
                        toasts.success(i18n.tf(k!("quota.deleted"), &[("queue", &q)]));
                        done.try_run(());
                    }
                    Err(f) => toasts.error(i18n.failure(&f)),
                }
            });
        });
    };
    let stored_prefix = StoredValue::new(prefix.clone());
    let fid = move |what: &str| format!("{}-{what}", stored_prefix.get_value());
    let server_error = move |field: &'static str| {
        Signal::derive(move || {
            server_errors.with(|e| {
                e.iter()
                    .find(|(f, _)| f == field || f.starts_with(&format!("{field}.")))
                    .map(|(_, m)| m.clone())
            })
        })
    };
    let either =
        |a: Signal<Option<String>>, b: Signal<Option<String>>| Signal::derive(move || a.get().or_else(|| b.get()));
    let cpu_err = either(cpu_error, server_error("limits.cpu"));
    let mem_err = either(memory_error, server_error("limits.memory"));
    let max_err = either(max_error, server_error("maxActiveJobs"));
    let queue_err = server_error("queue");
    view! {
        <form class="space-y-4" on:submit=save novalidate=true data-testid="quota-card" data-queue=move || queue.get()>
            <div class="grid gap-3 md:grid-cols-2">
                <Field id=fid("queue") label=k!("jobs.queue") error=queue_err>
                    <select id=fid("queue") class=INPUT on:change=move |ev| queue.set(event_target_value(&ev)) prop:value=move || queue.get()
                        aria-describedby=fid("queue") + "-error">
                        {move || queues.get().into_iter().map(|q| { let v = q.clone(); view! { <option value=q.clone() selected=move || queue.get() == v>{q.clone()}</option> } }).collect_view()}
                    </select>
                </Field>
                <Field id=fid("max") label=k!("quota.maxActiveJobs") hint=Some(k!("quota.maxActiveJobsHint")) error=max_err>
                    <input id=fid("max") class=INPUT type="text" inputmode="numeric" bind:value=max_active
                        aria-invalid=move || max_err.get().is_some().to_string() aria-describedby=format!("{0}-error {0}-hint", fid("max")) />
                </Field>
                <Field id=fid("cpu") label=k!("task.cpu") hint=Some(k!("quota.cpuHint")) error=cpu_err>
                    <input id=fid("cpu") class=INPUT type="text" bind:value=cpu
                        aria-invalid=move || cpu_err.get().is_some().to_string() aria-describedby=format!("{0}-error {0}-hint", fid("cpu")) />
                </Field>
                <Field id=fid("memory") label=k!("task.memory") hint=Some(k!("quota.memoryHint")) error=mem_err>
                    <input id=fid("memory") class=INPUT type="text" bind:value=memory
                        aria-invalid=move || mem_err.get().is_some().to_string() aria-describedby=format!("{0}-error {0}-hint", fid("memory")) />
                </Field>
            </div>
            <fieldset class="space-y-2">
                <legend class="text-sm font-medium">{move || i18n.t(k!("quota.accelerators"))}</legend>
                <For each=move || rows.get() key=|r| r.id let:row>
                    {
                        let err = row_error(row);
                        let rid = format!("{}-acc{}", prefix, row.id);
                        view! {
                            <div class="flex flex-wrap items-end gap-2" data-testid="accelerator-row">
                                <label class="flex flex-col text-xs" for=format!("{rid}-model")>
                                    {move || i18n.t(k!("task.accelerator"))}
                                    <select id=format!("{rid}-model") class=format!("{INPUT} w-56") on:change=move |ev| row.name.set(event_target_value(&ev)) prop:value=move || row.name.get()>
                                        <option value="">{move || i18n.t(k!("quota.chooseModel"))}</option>
                                        {move || models.get().into_iter().map(|m| { let v = m.clone(); view! { <option value=m.clone() selected=move || row.name.get() == v>{m.clone()}</option> } }).collect_view()}
                                    </select>
                                </label>
                                <label class="flex flex-col text-xs" for=format!("{rid}-count")>
                                    {move || i18n.t(k!("quota.perUserCount"))}
                                    <input id=format!("{rid}-count") class=format!("{INPUT} w-24") type="text" inputmode="numeric" bind:value=row.amount
                                        aria-invalid=move || err.get().is_some().to_string() aria-describedby=format!("{rid}-error") />
                                </label>
                                <button type="button" class=BUTTON_SECONDARY on:click=move |_| rows.remove(row.id)>
                                    {move || i18n.t(k!("quota.removeRow"))}
                                </button>
                                <span id=format!("{rid}-error") class="text-xs font-medium text-red-700 dark:text-red-300">{move || err.get()}</span>
                            </div>
                        }
                    }
                </For>
                <button type="button" class=BUTTON_SECONDARY on:click=move |_| rows.push(String::new(), "1".into()) data-testid="add-accelerator">
                    {move || i18n.t(k!("quota.addRow"))}
                </button>
            </fieldset>
            <div class="flex gap-2">
                <button type="submit" class=BUTTON disabled=move || saving.get() data-testid="save-quota">
                    {move || if saving.get() { i18n.t(k!("common.saving")) } else { i18n.t(k!("common.save")) }}
                </button>
                <button type="button" class=BUTTON_DANGER on:click=remove data-testid="delete-quota">
                    {move || i18n.t(if id.is_some() { k!("common.delete") } else { k!("confirm.cancel") })}
                </button>
            </div>
        </form>
    }
}
