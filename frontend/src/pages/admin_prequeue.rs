//! `/admin/prequeue`: first the live list of jobs waiting to queue with their positions and
//! reasons, paged (`?page=` in the URL); then the prequeue settings of `spec/prequeue.md` §3 in
//! groups — admission, activation, preemption and reclaim, default requests — with durations also written
//! as people say them ("5 min"), checked here by the shared crate's `PrequeueConfig::validate`
//! (the server's own rule) and again by the server; one Save in a bar that stays in view and
//! says when something is unsaved (Discard puts the saved values back).

use std::collections::BTreeMap;

use anteroom_shared::scheduling::{ActivationOrder, DefaultQuantity, PrequeueConfig, TaskDefaults, Weight};
use leptos::prelude::*;

use crate::components::field::Field;
use crate::components::toast::use_toasts;
use crate::components::{BUTTON, BUTTON_SECONDARY, CARD, ErrorPanel, INPUT, PageHeader, use_fetch};
use crate::format;
use crate::i18n::{Key, k, use_i18n};
use prequeued::PrequeuedList;

mod prequeued;

/// The integer settings, one variant each: a field this page does not know cannot be asked for
/// (no dispatch on field-name strings).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Number {
    Tolerance,
    Ticker,
    MaxActivations,
    Candidates,
    MinRuntime,
    MaxPrequeued,
    Grace,
    MaxUnfinished,
    PlanWindow,
    MaxRequeues,
    ReclaimDelay,
    UsageHalfLife,
}

impl Number {
    /// Every integer setting.
    const ALL: [Number; 12] = [
        Number::Tolerance,
        Number::Ticker,
        Number::MaxActivations,
        Number::Candidates,
        Number::MinRuntime,
        Number::MaxPrequeued,
        Number::Grace,
        Number::MaxUnfinished,
        Number::PlanWindow,
        Number::MaxRequeues,
        Number::ReclaimDelay,
        Number::UsageHalfLife,
    ];

    /// The API's field (also the input's id and where a server error lands).
    fn field(self) -> &'static str {
        match self {
            Number::Tolerance => "normalJobWaitingToleranceSeconds",
            Number::Ticker => "activateTickerIntervalSeconds",
            Number::MaxActivations => "maxTotalActivationsPerRound",
            Number::Candidates => "prequeueCandidateSize",
            Number::MinRuntime => "backfillMinRuntimeSeconds",
            Number::MaxPrequeued => "maxPrequeuedJobsPerUser",
            Number::Grace => "preemptionGracePeriodSeconds",
            Number::MaxUnfinished => "maxUnfinishedJobsPerUser",
            Number::PlanWindow => "preemptionPlanWindowSeconds",
            Number::MaxRequeues => "maxRequeues",
            Number::ReclaimDelay => "reclaimDelaySeconds",
            Number::UsageHalfLife => "usageHalfLifeSeconds",
        }
    }

    /// Its label and hint.
    fn words(self) -> (Key, Key) {
        match self {
            Number::Tolerance => (k!("settings.tolerance"), k!("settings.toleranceHint")),
            Number::Ticker => (k!("settings.ticker"), k!("settings.tickerHint")),
            Number::MaxActivations => (k!("settings.maxActivations"), k!("settings.maxActivationsHint")),
            Number::Candidates => (k!("settings.candidates"), k!("settings.candidatesHint")),
            Number::MinRuntime => (k!("settings.minRuntime"), k!("settings.minRuntimeHint")),
            Number::MaxPrequeued => (k!("settings.maxPrequeued"), k!("settings.maxPrequeuedHint")),
            Number::Grace => (k!("settings.grace"), k!("settings.graceHint")),
            Number::MaxUnfinished => (k!("settings.maxUnfinished"), k!("settings.maxUnfinishedHint")),
            Number::PlanWindow => (k!("settings.planWindow"), k!("settings.planWindowHint")),
            Number::MaxRequeues => (k!("settings.maxRequeues"), k!("settings.maxRequeuesHint")),
            Number::ReclaimDelay => (k!("settings.reclaimDelay"), k!("settings.reclaimDelayHint")),
            Number::UsageHalfLife => (k!("settings.usageHalfLife"), k!("settings.usageHalfLifeHint")),
        }
    }

    /// The smallest value allowed (`PrequeueConfig::validate` says the same).
    fn min(self) -> i64 {
        match self {
            Number::MinRuntime
            | Number::Grace
            | Number::PlanWindow
            | Number::MaxRequeues
            | Number::ReclaimDelay
            | Number::UsageHalfLife => 0,
            _ => 1,
        }
    }

    /// Its place in the settings.
    fn slot(self, c: &mut PrequeueConfig) -> &mut i64 {
        match self {
            Number::Tolerance => &mut c.normal_job_waiting_tolerance_seconds,
            Number::Ticker => &mut c.activate_ticker_interval_seconds,
            Number::MaxActivations => &mut c.max_total_activations_per_round,
            Number::Candidates => &mut c.prequeue_candidate_size,
            Number::MinRuntime => &mut c.backfill_min_runtime_seconds,
            Number::MaxPrequeued => &mut c.max_prequeued_jobs_per_user,
            Number::Grace => &mut c.preemption_grace_period_seconds,
            Number::MaxUnfinished => &mut c.max_unfinished_jobs_per_user,
            Number::PlanWindow => &mut c.preemption_plan_window_seconds,
            Number::MaxRequeues => &mut c.max_requeues,
            Number::ReclaimDelay => &mut c.reclaim_delay_seconds,
            Number::UsageHalfLife => &mut c.usage_half_life_seconds,
        }
    }

    /// Its value in `c`.
    fn get(self, c: &PrequeueConfig) -> i64 {
        match self {
            Number::Tolerance => c.normal_job_waiting_tolerance_seconds,
            Number::Ticker => c.activate_ticker_interval_seconds,
            Number::MaxActivations => c.max_total_activations_per_round,
            Number::Candidates => c.prequeue_candidate_size,
            Number::MinRuntime => c.backfill_min_runtime_seconds,
            Number::MaxPrequeued => c.max_prequeued_jobs_per_user,
            Number::Grace => c.preemption_grace_period_seconds,
            Number::MaxUnfinished => c.max_unfinished_jobs_per_user,
            Number::PlanWindow => c.preemption_plan_window_seconds,
            Number::MaxRequeues => c.max_requeues,
            Number::ReclaimDelay => c.reclaim_delay_seconds,
            Number::UsageHalfLife => c.usage_half_life_seconds,
        }
    }
}

/// The kinds of `defaultRequests`: API field and label.
const KINDS: [(&str, Key); 5] = [
    ("jupyter", k!("kind.jupyter")),
    ("webide", k!("kind.webide")),
    ("custom", k!("kind.custom")),
    ("pytorch", k!("kind.pytorch")),
    ("tensorflow", k!("kind.tensorflow")),
];

fn defaults_of<'c>(c: &'c mut PrequeueConfig, kind: &str) -> &'c mut TaskDefaults {
    let d = &mut c.default_requests;
    match kind {
        "jupyter" => &mut d.jupyter,
        "webide" => &mut d.webide,
        "custom" => &mut d.custom,
        "pytorch" => &mut d.pytorch,
        _ => &mut d.tensorflow,
    }
}

/// The settings page.
#[component]
pub fn AdminPrequeue() -> impl IntoView {
    let i18n = use_i18n();
    let config = use_fetch(crate::api::prequeue_config);
    view! {
        <section class="space-y-6">
            <PageHeader title=k!("page.adminPrequeue.title") description=k!("page.adminPrequeue.description") />
            // What waits comes first: it is what an admin opens this page to look at.
            <PrequeuedList />
            <h2 class="text-lg font-semibold">{move || i18n.t(k!("settings.title"))}</h2>
            {move || match config.get() {
                None => view! { <crate::auth::Loading /> }.into_any(),
                Some(Err(f)) => view! { <ErrorPanel failure=f /> }.into_any(),
                Some(Ok(c)) => view! { <SettingsForm initial=c.value etag=c.etag /> }.into_any(),
            }}
        </section>
    }
}

#[component]
fn SettingsForm(
    /// The settings as read.
    initial: PrequeueConfig,
    /// Their version, sent back with a save (someone else's save in between: refused).
    etag: Option<String>,
) -> impl IntoView {
    let i18n = use_i18n();
    let toasts = use_toasts();
    let etag = RwSignal::new(etag);
    let backfill = RwSignal::new(initial.backfill_enabled);
    let quota = RwSignal::new(initial.queue_quota_enabled);
    let order = RwSignal::new(initial.activation_order);
    let requeue = RwSignal::new(initial.requeue_by_default);
    let time_aware = RwSignal::new(initial.time_aware_backfill);
    let numbers: Vec<(Number, RwSignal<String>)> = Number::ALL
        .iter()
        .map(|n| (*n, RwSignal::new(n.get(&initial).to_string())))
        .collect();
    let numbers = StoredValue::new(numbers);
    // Fair share over time (§10): the Elastic weight and the weights per resource, as typed.
    let elastic_weight = RwSignal::new(initial.backfill_usage_weight.as_f64().to_string());
    let usage_weights = RwSignal::new(weights_text(&initial.usage_weights));
    // Per kind: (kind, label, cpu, memory) as typed.
    let mut start = initial.clone();
    let requests: Vec<(&'static str, Key, RwSignal<String>, RwSignal<String>)> = KINDS
        .iter()
        .map(|(kind, label)| {
            let d = defaults_of(&mut start, kind);
            (
                *kind,
                *label,
                RwSignal::new(d.cpu.to_string()),
                RwSignal::new(d.memory.to_string()),
            )
        })
        .collect();
    let requests = StoredValue::new(requests);
    // What the server holds now: the form is "unsaved" while what is typed differs from it.
    let saved = RwSignal::new(initial.clone());
    let initial = StoredValue::new(initial);
    let errors = RwSignal::new(Vec::<(String, String)>::new());
    let saving = RwSignal::new(false);

    // The config as typed, or the fields that are not integers / out of range.
    let read = move || -> Result<PrequeueConfig, Vec<(String, String)>> {
        // From what was loaded, so a field this form does not show is written back unchanged.
        let mut c = PrequeueConfig {
            backfill_enabled: backfill.get(),
            queue_quota_enabled: quota.get(),
            activation_order: order.get(),
            requeue_by_default: requeue.get(),
            time_aware_backfill: time_aware.get(),
            ..initial.get_value()
        };
        let mut errs = Vec::new();
        requests.with_value(|rs| {
            for (kind, _, cpu, memory) in rs {
                for (name, value) in [("cpu", cpu.get()), ("memory", memory.get())] {
                    match DefaultQuantity::parse(value.trim()) {
                        Ok(q) if name == "cpu" => defaults_of(&mut c, kind).cpu = q,
                        Ok(q) => defaults_of(&mut c, kind).memory = q,
                        Err(_) => errs.push((
                            format!("defaultRequests.{kind}.{name}"),
                            i18n.t(k!("form.positiveQuantity")).to_owned(),
                        )),
                    }
                }
            }
        });
        match serde_json::from_str::<Weight>(elastic_weight.get().trim()) {
            Ok(w) => c.backfill_usage_weight = w,
            Err(_) => errs.push(("backfillUsageWeight".to_owned(), i18n.t(k!("form.weight")).to_owned())),
        }
        match parse_weights(&usage_weights.get()) {
            Some(weights) => c.usage_weights = weights,
            None => errs.push((
                "usageWeights".to_owned(),
                i18n.t(k!("settings.usageWeightsInvalid")).to_owned(),
            )),
        }
        numbers.with_value(|ns| {
            for (n, value) in ns {
                match value.get().trim().parse::<i64>() {
                    Ok(v) => *n.slot(&mut c) = v,
                    Err(_) => errs.push((n.field().to_owned(), min_message(i18n, n.min()))),
                }
            }
        });
        if let Err(invalid) = c.validate() {
            for e in invalid {
                if errs.iter().any(|(f, _)| *f == e.field) {
                    continue;
                }
                let message = if e.field.starts_with("defaultRequests.") {
                    i18n.t(k!("form.positiveQuantity")).to_owned()
                } else {
                    let min = Number::ALL.iter().find(|n| n.field() == e.field).map_or(1, |n| n.min());
                    min_message(i18n, min)
                };
                errs.push((e.field.to_string(), message));
            }
        }
        if errs.is_empty() { Ok(c) } else { Err(errs) }
    };
    Effect::new(move |_| {
        errors.set(read().err().unwrap_or_default());
    });
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let Ok(c) = read() else {
            toasts.error(i18n.t(k!("form.fixErrors")).to_owned());
            return;
        };
        saving.set(true);
        leptos::task::spawn_local(async move {
            match crate::api::save_prequeue_config(&c, etag.get_untracked().as_deref()).await {
                Ok(answer) => {
                    etag.set(answer.etag);
                    saved.set(c);
                    toasts.success(i18n.t(k!("settings.saved")).to_owned());
                }
                Err(f) => {
                    let fields = i18n.failure_fields(&f);
                    if !fields.is_empty() {
                        errors.set(fields);
                    }
                    toasts.error(i18n.failure(&f));
                }
            }
            saving.set(false);
        });
    };
    let error_of = move |field: String| {
        Signal::derive(move || errors.with(|e| e.iter().find(|(f, _)| *f == field).map(|(_, m)| m.clone())))
    };
    let switch = move |id: &'static str, value: RwSignal<bool>, label: Key, hint: Key| {
        view! {
            <label class="flex items-start gap-3" for=id>
                <input type="checkbox" role="switch" id=id class="mt-1 h-4 w-4 shrink-0 accent-violet-700" bind:checked=value aria-describedby=format!("{id}-hint") />
                <span>
                    <span class="block text-sm font-medium">{move || i18n.t(label)}</span>
                    <span id=format!("{id}-hint") class="block text-xs text-slate-600 dark:text-slate-300">{move || i18n.t(hint)}</span>
                </span>
            </label>
        }
    };
    let dirty = Memo::new(move |_| read().map_or(true, |c| c != saved.get()));
    // Back to what the server holds.
    let discard = move |_| {
        let c = saved.get_untracked();
        backfill.set(c.backfill_enabled);
        quota.set(c.queue_quota_enabled);
        order.set(c.activation_order);
        requeue.set(c.requeue_by_default);
        time_aware.set(c.time_aware_backfill);
        elastic_weight.set(c.backfill_usage_weight.as_f64().to_string());
        usage_weights.set(weights_text(&c.usage_weights));
        numbers.with_value(|ns| {
            for (n, value) in ns {
                value.set(n.get(&c).to_string());
            }
        });
        let mut c = c;
        requests.with_value(|rs| {
            for (kind, _, cpu, memory) in rs {
                let d = defaults_of(&mut c, kind);
                cpu.set(d.cpu.to_string());
                memory.set(d.memory.to_string());
            }
        });
    };
    // One number field; a duration in seconds also reads as people say it ("5 min").
    let number = move |wanted: Number| {
        let Some(value) = numbers.with_value(|ns| ns.iter().find(|n| n.0 == wanted).map(|n| n.1)) else {
            return ().into_any();
        };
        let (field, (label, hint), min) = (wanted.field(), wanted.words(), wanted.min());
        let err = error_of(field.to_owned());
        let seconds = field.ends_with("Seconds");
        view! {
            <Field id=field.to_owned() label=label hint=Some(hint) error=err>
                <div class="flex items-center gap-2">
                    <input id=field class=INPUT type="number" inputmode="numeric" min=min step="1" bind:value=value
                        aria-invalid=move || err.get().is_some().to_string()
                        aria-describedby=if seconds { format!("{field}-error {field}-hint {field}-human") } else { format!("{field}-error {field}-hint") } />
                    {seconds.then(|| view! {
                        <span id=format!("{field}-human") class="w-24 shrink-0 text-sm text-slate-700 dark:text-slate-300" data-testid="human-duration">
                            {move || value.get().trim().parse::<i64>().ok().filter(|s| *s >= 0).map(|s| format!("= {}", format::duration(i18n.locale(), s)))}
                        </span>
                    })}
                </div>
            </Field>
        }
        .into_any()
    };
    // A setting typed as text (a weight, a list of them).
    let text = move |field: &'static str, value: RwSignal<String>, label: Key, hint: Key| {
        let err = error_of(field.to_owned());
        view! {
            <Field id=field.to_owned() label=label hint=Some(hint) error=err>
                <input id=field class=INPUT type="text" bind:value=value spellcheck="false"
                    aria-invalid=move || err.get().is_some().to_string()
                    aria-describedby=format!("{field}-error {field}-hint") />
            </Field>
        }
    };
    let group = move |title: Key, body: AnyView| {
        view! {
            <fieldset class="space-y-4 rounded border border-slate-200 p-4 dark:border-slate-700">
                <legend class="px-1 text-sm font-semibold">{move || i18n.t(title)}</legend>
                {body}
            </fieldset>
        }
    };
    view! {
        <form class=format!("{CARD} space-y-5") on:submit=submit novalidate=true data-testid="settings-form">
            {group(k!("settings.group.admission"), view! {
                <div class="grid gap-4 md:grid-cols-2">
                    {switch("queueQuotaEnabled", quota, k!("settings.quota"), k!("settings.quotaHint"))}
                    {switch("backfillEnabled", backfill, k!("settings.backfill"), k!("settings.backfillHint"))}
                    {number(Number::MaxPrequeued)}
                    {number(Number::MaxUnfinished)}
                </div>
            }.into_any())}
            {group(k!("settings.group.activation"), view! {
                <div class="grid gap-4 md:grid-cols-2">
                    <Field id="activationOrder".into() label=k!("settings.order") hint=Some(k!("settings.orderHint")) error=Signal::derive(|| None::<String>)>
                        <select id="activationOrder" class=INPUT aria-describedby="activationOrder-hint"
                            on:change=move |ev| order.set(event_target_value(&ev).parse().unwrap_or(ActivationOrder::Fcfs))
                            prop:value=move || order.get().as_str()>
                            <option value="fcfs" selected=move || order.get() == ActivationOrder::Fcfs>{move || i18n.t(k!("settings.orderFcfs"))}</option>
                            <option value="fairShare" selected=move || order.get() == ActivationOrder::FairShare>{move || i18n.t(k!("settings.orderFairShare"))}</option>
                            <option value="fairShareHistory" selected=move || order.get() == ActivationOrder::FairShareHistory>{move || i18n.t(k!("settings.orderFairShareHistory"))}</option>
                        </select>
                    </Field>
                    {switch("timeAwareBackfill", time_aware, k!("settings.timeAware"), k!("settings.timeAwareHint"))}
                    {number(Number::Ticker)}
                    {number(Number::MaxActivations)}
                    {number(Number::Candidates)}
                    {number(Number::UsageHalfLife)}
                    {text("backfillUsageWeight", elastic_weight, k!("settings.backfillUsageWeight"), k!("settings.backfillUsageWeightHint"))}
                    {text("usageWeights", usage_weights, k!("settings.usageWeights"), k!("settings.usageWeightsHint"))}
                </div>
            }.into_any())}
            {group(k!("settings.group.preemption"), view! {
                <div class="grid gap-4 md:grid-cols-2">
                    {number(Number::Tolerance)}
                    {number(Number::MinRuntime)}
                    {number(Number::Grace)}
                    {number(Number::PlanWindow)}
                    {switch("requeueByDefault", requeue, k!("settings.requeue"), k!("settings.requeueHint"))}
                    {number(Number::MaxRequeues)}
                    {number(Number::ReclaimDelay)}
                </div>
            }.into_any())}
            <fieldset class="space-y-3 rounded border border-slate-200 p-4 dark:border-slate-700" aria-describedby="defaultRequests-hint">
                <legend class="px-1 text-sm font-semibold">{move || i18n.t(k!("settings.defaultRequests"))}</legend>
                <p id="defaultRequests-hint" class="text-xs text-slate-600 dark:text-slate-300">{move || i18n.t(k!("settings.defaultRequestsHint"))}</p>
                <div class="grid gap-4 md:grid-cols-2 xl:grid-cols-5">
                    {requests.get_value().into_iter().map(|(kind, label, cpu, memory)| {
                        let input = move |name: &'static str, what: Key, value: RwSignal<String>| {
                            let id = format!("defaultRequests.{kind}.{name}");
                            let err = error_of(id.clone());
                            let field_label = move || format!("{} · {}", i18n.t(label), i18n.t(what));
                            view! {
                                <div class="space-y-1">
                                    <label for=id.clone() class="block text-sm font-medium text-slate-800 dark:text-slate-200">{field_label}</label>
                                    <input id=id.clone() class=INPUT type="text" bind:value=value
                                        aria-invalid=move || err.get().is_some().to_string() aria-describedby=format!("{id}-error") />
                                    <p id=format!("{id}-error") class="text-xs font-medium text-red-700 dark:text-red-300" data-testid="field-error">
                                        {move || err.get().map(|e| view! { <span aria-hidden="true">"⚠ "</span>{e} })}
                                    </p>
                                </div>
                            }
                        };
                        view! {
                            <div class="space-y-2" data-testid=format!("default-requests-{kind}")>
                                {input("cpu", k!("task.cpu"), cpu)}
                                {input("memory", k!("task.memory"), memory)}
                            </div>
                        }
                    }).collect_view()}
                </div>
            </fieldset>
            // Save stays in view while the settings scroll, and says whether anything is unsaved.
            <div class="sticky bottom-0 -mx-4 -mb-4 flex flex-wrap items-center gap-3 rounded-b border-t border-slate-200 bg-white/95 px-4 py-3 dark:border-slate-700 dark:bg-slate-900/95"
                data-testid="save-bar" data-dirty=move || dirty.get().to_string()>
                <button type="submit" class=BUTTON disabled=move || saving.get() data-testid="save-settings">
                    {move || if saving.get() { i18n.t(k!("common.saving")) } else { i18n.t(k!("settings.save")) }}
                </button>
                <Show when=move || dirty.get()>
                    <button type="button" class=BUTTON_SECONDARY on:click=discard data-testid="discard-settings">{move || i18n.t(k!("settings.discard"))}</button>
                    <span class="text-sm font-medium text-amber-800 dark:text-amber-200" role="status" data-testid="unsaved">
                        <span aria-hidden="true">"● "</span>{move || i18n.t(k!("settings.unsaved"))}
                    </span>
                </Show>
            </div>
        </form>
    }
}

/// `usageWeights` as an admin types it: `nvidia.com/a100=1, cpu=0.125`.
fn weights_text(weights: &BTreeMap<String, Weight>) -> String {
    weights
        .iter()
        .map(|(name, w)| format!("{name}={}", w.as_f64()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// [`weights_text`] read back; `None` when a part is not `resource=weight` (a weight from 0 to
/// 1000 with at most three decimals, as the server reads it). Empty: no weights named.
fn parse_weights(text: &str) -> Option<BTreeMap<String, Weight>> {
    let mut out = BTreeMap::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, weight) = part.split_once('=')?;
        let name = name.trim();
        if name.is_empty() {
            return None;
        }
        out.insert(name.to_owned(), serde_json::from_str::<Weight>(weight.trim()).ok()?);
    }
    Some(out)
}

fn min_message(i18n: crate::i18n::I18n, min: i64) -> String {
    if min == 0 {
        i18n.t(k!("form.nonNegativeInteger")).to_owned()
    } else {
        i18n.t(k!("form.positiveInteger")).to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_read_back_what_they_write_and_refuse_what_the_server_would() {
        let weights = parse_weights(" nvidia.com/a100 = 1, cpu=0.125 ,").expect("valid");
        assert_eq!(weights.len(), 2);
        assert_eq!(weights["cpu"].as_f64(), 0.125);
        assert_eq!(parse_weights(&weights_text(&weights)), Some(weights));
        assert_eq!(parse_weights(""), Some(BTreeMap::new()));
        for bad in ["cpu", "=1", "cpu=-1", "cpu=0.0001", "cpu=1001", "cpu=many"] {
            assert_eq!(parse_weights(bad), None, "{bad}");
        }
    }

    #[test]
    fn every_number_reads_and_writes_its_own_field_with_the_servers_minimum() {
        for n in Number::ALL {
            let mut c = PrequeueConfig::default();
            *n.slot(&mut c) = 4242;
            assert_eq!(n.get(&c), 4242, "{n:?}");
            assert_eq!(
                Number::ALL.iter().filter(|m| m.get(&c) == 4242).count(),
                1,
                "{n:?} writes another field too"
            );
            // The shared rule the server applies agrees with the minimum the input shows.
            *n.slot(&mut c) = n.min() - 1;
            let refused: Vec<String> = c
                .validate()
                .unwrap_err()
                .into_iter()
                .map(|e| e.field.to_string())
                .collect();
            assert_eq!(refused, [n.field()], "{n:?}");
            *n.slot(&mut c) = n.min();
            assert!(c.validate().is_ok(), "{n:?}");
        }
        assert_eq!(Number::ReclaimDelay.get(&PrequeueConfig::default()), 10);
    }
}
