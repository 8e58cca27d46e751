//! `/jobs/new`: the submit form for the five kinds, and beside it the live admission preview
//! ("starts now" / "will wait in the prequeue because …" / the error), asked from
//! `/jobs/preview` as the form changes. The schedule type is offered only while backfill is
//! enabled, and Elastic is disabled, with the reason, for PyTorch and TensorFlow. A normal job
//! may be kept from borrowing, and a queue that allows priorities asks for one
//! ([`sharing_fields`]).

use std::time::Duration;

use anteroom_shared::api::jobs::{Decision, Preview};
use anteroom_shared::scheduling::{JobKind, PreemptionPolicy, ScheduleType};
use leptos::prelude::*;
use leptos_router::hooks::{use_navigate, use_query_map};

use crate::api::ApiFailure;
use crate::components::badges::{kind_label, schedule_description, schedule_label};
use crate::components::field::Field;
use crate::components::reasons::Reasons;
use crate::components::toast::use_toasts;
use crate::components::{BUTTON, BUTTON_SECONDARY, CARD, INPUT, PageHeader, accelerator_names, loaded, use_fetch};
use crate::i18n::{k, use_i18n};

mod form;
mod sharing_fields;
mod task_fields;

use form::{FieldErrors, TaskForm, borrow_policy, build, read_priority, replicas_editable, task_names};
use sharing_fields::{BorrowSwitch, PriorityField};
use task_fields::TaskFields;

/// The admission preview's state.
#[derive(Clone, Debug, PartialEq)]
enum PreviewState {
    /// Nothing asked yet, or the form is incomplete.
    Idle,
    /// Asking.
    Asking,
    /// The server's answer.
    Answer(Preview),
    /// The server refused the body.
    Refused(ApiFailure),
}

/// The form and its preview.
#[component]
pub fn NewJob() -> impl IntoView {
    let i18n = use_i18n();
    let toasts = use_toasts();
    let navigate = use_navigate();
    let status = use_fetch(crate::api::prequeue_status);
    let queues = use_fetch(crate::api::queues);
    let resources = use_fetch(crate::api::cluster_resources);

    let kind = RwSignal::new(JobKind::Custom);
    let name = RwSignal::new(String::new());
    let queue = RwSignal::new(String::from("default"));
    let schedule = RwSignal::new(ScheduleType::Normal);
    let never_preempt = RwSignal::new(false);
    // On by default: the body then says nothing (the server's default, `ifIdle`).
    let may_borrow = RwSignal::new(true);
    // The priority as typed; empty: none (0).
    let priority = RwSignal::new(String::new());
    // The runtime limit in hours as typed; empty: the queue's default.
    let runtime_hours = RwSignal::new(String::new());
    // `None` until the user chooses: then the admin's default applies.
    let requeue: RwSignal<Option<bool>> = RwSignal::new(None);
    let tasks = [TaskForm::new("", ""), TaskForm::new("", "")];
    let chosen_volumes: RwSignal<Vec<String>> = RwSignal::new(Vec::new());
    // The volumes offered, with the queue they are offered to (the answer for the previous
    // queue may still be here while the new one's is asked).
    let offered_to = use_fetch(move || {
        let queue = queue.get();
        async move { crate::api::volumes_of(&queue).await.map(|list| (queue, list)) }
    });
    let offered_volumes = move || loaded(offered_to).1;
    // A volume the queue is not offered is not chosen (after a queue change, or a template
    // naming one withdrawn since): judged on the answer for the queue chosen now.
    Effect::new(move |_| {
        let (offered_queue, offered) = loaded(offered_to);
        let chosen = chosen_volumes.get();
        if offered_queue != queue.get() || offered_to.with(|o| !matches!(o, Some(Ok(_)))) {
            return;
        }
        if chosen.iter().any(|n| !offered.iter().any(|v| v.name == *n)) {
            chosen_volumes.set(
                chosen
                    .into_iter()
                    .filter(|n| offered.iter().any(|v| v.name == *n))
                    .collect(),
            );
        }
    });
    let errors = RwSignal::new(FieldErrors::new());
    let touched = RwSignal::new(false);
    let preview = RwSignal::new(PreviewState::Idle);
    let submitting = RwSignal::new(false);
    let backfill_enabled = move || status.get().and_then(|s| s.ok()).is_some_and(|s| s.backfill_enabled);
    let templates = use_fetch(crate::api::templates);
    let kind_defaults = use_fetch(crate::api::job_defaults);
    // The image the last kind default filled in: while the first task still shows it (or
    // nothing), another kind's default may replace it.
    let filled_image = StoredValue::new(String::new());
    // Shows a template's body in the form (its kind first: the tasks follow from it).
    let fill = move |body: &anteroom_shared::api::templates::TemplateBody| {
        kind.set(body.kind);
        queue.set(body.queue.clone());
        schedule.set(body.schedule_type);
        never_preempt.set(body.preemption_policy == Some(PreemptionPolicy::Never));
        for (form, task) in tasks.iter().zip(&body.tasks) {
            form.fill(task);
        }
        chosen_volumes.set(body.volumes.clone());
        runtime_hours.set(
            body.max_runtime_seconds
                .map(crate::format::hours_text)
                .unwrap_or_default(),
        );
        requeue.set(body.requeue);
        // What a template filled in is the user's from now on: no kind default replaces it.
        filled_image.set_value("\u{0}".to_owned());
    };
    // The template picked, shown by the picker; `/jobs/new?template=ID` (the templates page's
    // "Use") picks one as soon as the list is here.
    let picked = RwSignal::new(String::new());
    let query = use_query_map();
    let from_url = StoredValue::new(query.with_untracked(|q| q.get("template")));
    Effect::new(move |_| {
        let Some(wanted) = from_url.get_value() else { return };
        let list = loaded(templates);
        if let Some(t) = list.iter().find(|t| t.id.to_string() == wanted) {
            from_url.set_value(None);
            picked.set(wanted);
            fill(&t.body);
        }
    });
    // A kind the admins gave a default starts from it, while the first task shows nothing the
    // user typed (empty, or the default another kind filled in).
    Effect::new(move |_| {
        let kd = kind.get();
        let default = loaded(kind_defaults).into_iter().find(|d| d.kind == kd);
        let image = tasks[0].image.get_untracked();
        if let Some(default) = default
            && (image.is_empty() || filled_image.with_value(|f| *f == image))
        {
            for (form, task) in tasks.iter().zip(&default.template.body.tasks) {
                form.fill(task);
            }
            filled_image.set_value(tasks[0].image.get_untracked());
        }
    });

    // The chosen queue's priority range, while it allows more than 0.
    let priority_range = Signal::derive(move || {
        let chosen = queue.get();
        loaded(queues)
            .into_iter()
            .find(|q| q.name == chosen)
            .map(|q| q.sharing.priority_range)
            .filter(|r| r.is_on())
    });
    let body = move || {
        let schedule = if backfill_enabled() {
            schedule.get()
        } else {
            ScheduleType::Normal
        };
        build(
            i18n,
            kind.get(),
            &name.get(),
            &queue.get(),
            schedule,
            never_preempt.get(),
            &tasks,
        )
        .and_then(|mut job| {
            job.volumes = chosen_volumes.get();
            job.max_runtime_seconds = crate::format::runtime_seconds(&runtime_hours.get()).map_err(|_| {
                vec![(
                    "maxRuntimeSeconds".to_owned(),
                    i18n.t(k!("newJob.runtimeInvalid")).to_owned(),
                )]
            })?;
            job.requeue = (job.schedule_type == ScheduleType::Backfill)
                .then(|| requeue.get())
                .flatten();
            job.borrow = borrow_policy(job.schedule_type, may_borrow.get());
            job.priority = read_priority(i18n, &priority.get(), priority_range.get())?;
            Ok(job)
        })
    };
    // The chosen queue's runtime limits, shown beside the input.
    let queue_limits = move || {
        let chosen = queue.get();
        loaded(queues)
            .into_iter()
            .find(|q| q.name == chosen)
            .map(|q| (q.default_runtime_seconds, q.max_runtime_seconds))
            .unwrap_or_default()
    };
    let requeue_by_default = move || status.get().and_then(|s| s.ok()).is_some_and(|s| s.requeue_by_default);
    let error_of = move |field: String| {
        Signal::derive(move || {
            if !touched.get() {
                return None;
            }
            errors.with(|e| e.iter().find(|(f, _)| *f == field).map(|(_, m)| m.clone()))
        })
    };

    let save_template = move |_| {
        let Ok(job) = body() else {
            touched.set(true);
            toasts.error(i18n.t(k!("form.fixErrors")).to_owned());
            return;
        };
        let write = anteroom_shared::api::templates::TemplateWrite {
            name: job.name.clone(),
            description: String::new(),
            published: false,
            default_for_kind: false,
            body: job.into(),
        };
        leptos::task::spawn_local(async move {
            match crate::api::save_template(&write).await {
                Ok(saved) => toasts.success(i18n.tf(k!("newJob.templateSaved"), &[("name", &saved.name)])),
                Err(f) => toasts.error(i18n.failure(&f)),
            }
        });
    };

    // A task whose replicas the kind fixes shows (and sends) one.
    Effect::new(move |_| {
        let kd = kind.get();
        for (i, form) in tasks.iter().enumerate() {
            if !replicas_editable(kd, i) {
                form.replicas.set("1".into());
            }
        }
    });

    // The live preview: asked 400 ms after the last change; a later answer wins.
    let generation = StoredValue::new(0u64);
    Effect::new(move |_| {
        let built = body();
        generation.update_value(|g| *g += 1);
        let mine = generation.get_value();
        match built {
            Err(e) => {
                errors.set(e);
                preview.set(PreviewState::Idle);
            }
            Ok(job) => {
                errors.set(Vec::new());
                set_timeout(
                    move || {
                        // The form may be gone (submitted, navigated away): then do nothing.
                        if generation.try_get_value() != Some(mine) {
                            return;
                        }
                        preview.set(PreviewState::Asking);
                        leptos::task::spawn_local(async move {
                            let answer = crate::api::preview(&job).await;
                            if generation.try_get_value() == Some(mine) {
                                preview.try_set(match answer {
                                    Ok(p) => PreviewState::Answer(p),
                                    Err(f) => PreviewState::Refused(f),
                                });
                            }
                        });
                    },
                    Duration::from_millis(400),
                );
            }
        }
    });

    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        touched.set(true);
        if submitting.get_untracked() {
            return;
        }
        let Ok(job) = body() else {
            toasts.error(i18n.t(k!("form.fixErrors")).to_owned());
            return;
        };
        submitting.set(true);
        let navigate = navigate.clone();
        leptos::task::spawn_local(async move {
            match crate::api::submit(&job).await {
                Ok(answer) => {
                    let key = match answer.admission.decision {
                        // Started on room beyond its queue's guarantee: it may be reclaimed.
                        Decision::Activated if answer.admission.borrowing => k!("newJob.submittedBorrowing"),
                        Decision::Activated => k!("newJob.submittedActivated"),
                        Decision::Prequeued => k!("newJob.submittedPrequeued"),
                    };
                    toasts.success(i18n.tf(key, &[("name", &answer.job.name)]));
                    navigate(&format!("/jobs/{}", answer.job.id), Default::default());
                }
                Err(f) => {
                    let fields = i18n.failure_fields(&f);
                    if !fields.is_empty() {
                        errors.set(fields);
                    }
                    toasts.error(i18n.failure(&f));
                    preview.set(PreviewState::Refused(f));
                }
            }
            submitting.set(false);
        });
    };

    let accelerator_models = move || accelerator_names(resources);

    view! {
        <section class="space-y-6">
            <PageHeader title=k!("page.newJob.title") description=k!("page.newJob.description")>
                {move || {
                    let list = loaded(templates);
                    (!list.is_empty()).then(|| {
                        let choices = StoredValue::new(list.clone());
                        view! {
                            <label class="space-y-1 text-sm">
                                <span class="block font-medium">{move || i18n.t(k!("newJob.template"))}</span>
                                <select id="template-picker" class=INPUT data-testid="template-picker" prop:value=move || picked.get() on:change=move |ev| {
                                    picked.set(event_target_value(&ev));
                                    let id = event_target_value(&ev).parse::<i64>().ok();
                                    if let Some(t) = choices.with_value(|c| c.iter().find(|t| Some(t.id) == id).cloned()) {
                                        fill(&t.body);
                                    }
                                }>
                                    <option value="">{move || i18n.t(k!("newJob.templateNone"))}</option>
                                    {list.into_iter().map(|t| { let value = t.id.to_string(); let mine = value.clone();
                                        view! { <option value=value selected=move || picked.get() == mine>{t.name.clone()}</option> } }).collect_view()}
                                </select>
                            </label>
                        }
                    })
                }}
            </PageHeader>
            <div class="grid gap-6 lg:grid-cols-[1fr_24rem]">
                <form class=format!("{CARD} space-y-5") on:submit=submit novalidate=true data-testid="job-form">
                    <fieldset class="space-y-2">
                        <legend class="text-sm font-medium text-slate-800 dark:text-slate-200">{move || i18n.t(k!("jobs.kind"))}</legend>
                        <div class="flex flex-wrap gap-3">
                            {JobKind::ALL.iter().map(|kd| {
                                let kd = *kd;
                                let id = format!("kind-{}", kd.as_str());
                                let label_for = id.clone();
                                view! {
                                    <label class="flex items-center gap-2 rounded border border-slate-300 dark:border-slate-600 px-3 py-1.5 text-sm has-[:checked]:border-violet-600 has-[:checked]:bg-violet-50 dark:has-[:checked]:bg-violet-950 dark:has-[:checked]:border-violet-400" for=label_for>
                                        <input type="radio" name="kind" id=id value=kd.as_str() prop:checked=move || kind.get() == kd
                                            on:change=move |_| kind.set(kd) class="focus:ring-2 focus:ring-violet-500" />
                                        {move || i18n.t(kind_label(kd))}
                                    </label>
                                }
                            }).collect_view()}
                        </div>
                    </fieldset>
                    <div class="grid gap-4 md:grid-cols-2">
                        <Field id="job-name".into() label=k!("jobs.name") error=error_of("name".into())>
                            <input id="job-name" class=INPUT type="text" required bind:value=name
                                aria-invalid=move || error_of("name".into()).get().is_some().to_string() aria-describedby="job-name-error" />
                        </Field>
                        <Field id="job-queue".into() label=k!("jobs.queue") error=error_of("queue".into())>
                            <select id="job-queue" class=INPUT on:change=move |ev| queue.set(event_target_value(&ev)) prop:value=move || queue.get()>
                                {move || loaded(queues).into_iter()
                                    .map(|q| { let label = if q.display_name.is_empty() || q.display_name.eq_ignore_ascii_case(&q.name) { q.name.clone() } else { format!("{} ({})", q.display_name, q.name) };
                                        let n = q.name.clone(); view! { <option value=q.name.clone() selected=move || queue.get() == n>{label}</option> } })
                                    .collect_view()}
                            </select>
                        </Field>
                    </div>
                    <PriorityField priority=priority range=priority_range error=error_of("priority".into()) />
                    {move || {
                        let kd = kind.get();
                        task_names(kd).iter().enumerate().map(|(i, task)| {
                            let form = tasks[i];
                            let models = accelerator_models();
                            let defaults = status.get().and_then(|s| s.ok()).map(|s| s.default_requests.of(kd).clone());
                            view! { <TaskFields index=i task=task kind=kd form=form models=models defaults=defaults error_of=error_of /> }
                        }).collect_view()
                    }}
                    {move || {
                        let offered = offered_volumes();
                        (!offered.is_empty()).then(|| view! {
                            <fieldset class="space-y-2" data-testid="volume-picker">
                                <legend class="text-sm font-medium text-slate-800 dark:text-slate-200">{move || i18n.t(k!("newJob.volumes"))}</legend>
                                <p class="text-xs text-slate-600 dark:text-slate-300">{move || i18n.t(k!("newJob.volumesHelp"))}</p>
                                {offered.into_iter().map(|v| {
                                    let id = format!("volume-{}", v.name);
                                    let label_for = id.clone();
                                    let name = v.name.clone();
                                    let checked_name = v.name.clone();
                                    view! {
                                        <label class="flex items-start gap-2 text-sm" for=label_for>
                                            <input type="checkbox" id=id value=v.name.clone()
                                                prop:checked=move || chosen_volumes.with(|c| c.contains(&checked_name))
                                                on:change=move |ev| {
                                                    let on = event_target_checked(&ev);
                                                    let name = name.clone();
                                                    chosen_volumes.update(|c| { c.retain(|n| *n != name); if on { c.push(name); } });
                                                } />
                                            <span>
                                                <span class="font-medium">{v.name.clone()}</span>" "
                                                <code class="text-xs">{v.mount_path.clone()}</code>
                                                {v.read_only.then(|| view! { " "<span class="text-xs text-slate-600 dark:text-slate-300">{move || i18n.t(k!("newJob.readOnly"))}</span> })}
                                                <span class="block text-xs text-slate-600 dark:text-slate-300">{v.description.clone()}</span>
                                            </span>
                                        </label>
                                    }
                                }).collect_view()}
                            </fieldset>
                        })
                    }}
                    <Show when=backfill_enabled>
                        <fieldset class="space-y-2" data-testid="schedule-type">
                            <legend class="text-sm font-medium text-slate-800 dark:text-slate-200">{move || i18n.t(k!("jobs.scheduleType"))}</legend>
                            <p class="text-xs text-slate-600 dark:text-slate-300">{move || i18n.t(k!("newJob.scheduleHelp"))}</p>
                            {[ScheduleType::Normal, ScheduleType::Backfill].into_iter().map(|t| {
                                let id = format!("schedule-{}", t.as_str());
                                let label_for = id.clone();
                                let disabled = move || t == ScheduleType::Backfill && !kind.get().may_backfill();
                                view! {
                                    <label class="flex items-start gap-2 text-sm" for=label_for>
                                        <input type="radio" name="schedule" id=id value=t.as_str()
                                            prop:checked=move || schedule.get() == t && !disabled()
                                            || (t == ScheduleType::Normal && disabled_backfill(kind.get(), schedule.get()))
                                            disabled=disabled on:change=move |_| schedule.set(t) />
                                        <span>
                                            <span class="font-medium">{move || i18n.t(schedule_label(t))}</span>
                                            " — "
                                            <span class="text-slate-600 dark:text-slate-300">{move || i18n.t(schedule_description(t))}</span>
                                        </span>
                                    </label>
                                }
                            }).collect_view()}
                            <Show when=move || !kind.get().may_backfill()>
                                <p class="text-xs text-amber-900 dark:text-amber-100" data-testid="backfill-unavailable">{move || i18n.t(k!("newJob.backfillUnavailable"))}</p>
                            </Show>
                        </fieldset>
                    </Show>
                    <Field id="job-runtime".into() label=k!("newJob.runtimeLimit") error=error_of("maxRuntimeSeconds".into())>
                        <input id="job-runtime" class=INPUT type="text" inputmode="decimal" bind:value=runtime_hours
                            placeholder=move || queue_limits().0.or(queue_limits().1).map(crate::format::hours_text).unwrap_or_default()
                            aria-invalid=move || error_of("maxRuntimeSeconds".into()).get().is_some().to_string()
                            aria-describedby="job-runtime-help job-runtime-error" data-testid="runtime-limit" />
                        <p id="job-runtime-help" class="text-xs text-slate-600 dark:text-slate-300">
                            {move || match queue_limits() {
                                (_, Some(max)) => i18n.tf(k!("newJob.runtimeHelpMax"), &[("max", &crate::format::hours_text(max))]),
                                (Some(default), None) => i18n.tf(k!("newJob.runtimeHelpDefault"), &[("default", &crate::format::hours_text(default))]),
                                (None, None) => i18n.t(k!("newJob.runtimeHelp")).to_owned(),
                            }}
                        </p>
                    </Field>
                    <Show when=move || backfill_enabled() && schedule.get() == ScheduleType::Backfill && kind.get().may_backfill()>
                        <label class="flex items-start gap-2 text-sm" for="requeue">
                            <input type="checkbox" id="requeue" data-testid="requeue"
                                prop:checked=move || requeue.get().unwrap_or_else(requeue_by_default)
                                on:change=move |ev| requeue.set(Some(event_target_checked(&ev))) />
                            <span>
                                <span class="font-medium">{move || i18n.t(k!("newJob.requeue"))}</span>
                                <span class="block text-xs text-slate-600 dark:text-slate-300">{move || i18n.t(k!("newJob.requeueHelp"))}</span>
                            </span>
                        </label>
                    </Show>
                    <Show when=move || !backfill_enabled() || schedule.get() == ScheduleType::Normal || !kind.get().may_backfill()>
                        <label class="flex items-start gap-2 text-sm" for="never-preempt">
                            <input type="checkbox" id="never-preempt" bind:checked=never_preempt />
                            <span>
                                <span class="font-medium">{move || i18n.t(k!("newJob.neverPreempt"))}</span>
                                <span class="block text-xs text-slate-600 dark:text-slate-300">{move || i18n.t(k!("newJob.neverPreemptHelp"))}</span>
                            </span>
                        </label>
                        <BorrowSwitch may_borrow=may_borrow />
                    </Show>
                    <div class="flex flex-wrap gap-2">
                        <button type="submit" class=BUTTON disabled=move || submitting.get() data-testid="submit-job">
                            {move || if submitting.get() { i18n.t(k!("newJob.submitting")) } else { i18n.t(k!("newJob.submit")) }}
                        </button>
                        <button type="button" class=BUTTON_SECONDARY on:click=save_template data-testid="save-template">
                            {move || i18n.t(k!("newJob.saveTemplate"))}
                        </button>
                    </div>
                </form>
                <aside class=format!("{CARD} h-fit space-y-3 lg:sticky lg:top-4") aria-labelledby="preview-title" aria-live="polite" data-testid="preview">
                    <h2 id="preview-title" class="text-lg font-semibold">{move || i18n.t(k!("newJob.previewTitle"))}</h2>
                    {move || match preview.get() {
                        // Says what is missing (only the name, say), not "fill in the form".
                        PreviewState::Idle => view! { <p class="text-sm text-slate-600 dark:text-slate-300" data-testid="preview-idle">{move || {
                            let missing = errors.with(|e| {
                                let mut labels: Vec<String> = Vec::new();
                                for (field, _) in e {
                                    let l = form::field_label(i18n, kind.get(), field);
                                    if !labels.contains(&l) {
                                        labels.push(l);
                                    }
                                }
                                labels
                            });
                            if missing.is_empty() {
                                i18n.t(k!("newJob.previewIdle")).to_owned()
                            } else {
                                i18n.tf(k!("newJob.previewNeeds"), &[("fields", &missing.join(i18n.t(k!("common.listSeparator"))))])
                            }
                        }}</p> }.into_any(),
                        PreviewState::Asking => view! { <p class="text-sm text-slate-600 dark:text-slate-300">{move || i18n.t(k!("newJob.previewAsking"))}</p> }.into_any(),
                        PreviewState::Answer(p) => match p.decision {
                            Decision::Activated => view! {
                                <p class="rounded border border-emerald-300 dark:border-emerald-700 bg-emerald-50 dark:bg-emerald-950 p-2 text-sm font-medium text-emerald-900 dark:text-emerald-100" data-testid="preview-decision" data-decision="activated">
                                    <span aria-hidden="true">"▶ "</span>{move || i18n.t(k!("newJob.startsNow"))}
                                </p>
                            }.into_any(),
                            Decision::Prequeued => view! {
                                <div class="space-y-2">
                                    <p class=format!("{} p-2 text-sm font-medium", crate::components::palette::PANEL) data-testid="preview-decision" data-decision="prequeued">
                                        // A pause sign drawn, not a glyph: ⏸ has no shape in many CJK fonts (a tofu box).
                                        <span aria-hidden="true" class="mr-1.5 inline-flex gap-0.5 align-[-1px]"><span class="h-3 w-1 rounded-sm bg-current"></span><span class="h-3 w-1 rounded-sm bg-current"></span></span>{move || i18n.t(k!("newJob.willWait"))}
                                    </p>
                                    <Reasons reasons=p.reasons.clone() />
                                </div>
                            }.into_any(),
                        },
                        PreviewState::Refused(f) => {
                            let fields = i18n.failure_fields(&f);
                            view! {
                                <div class="space-y-2" data-testid="preview-error">
                                    <p role="alert" class="rounded border border-red-300 dark:border-red-700 bg-red-50 dark:bg-red-950 p-2 text-sm text-red-900 dark:text-red-100">{move || i18n.failure(&f)}</p>
                                    <ul class="list-inside list-disc text-xs text-red-900 dark:text-red-100">
                                        {fields.into_iter().map(|(field, message)| {
                                            let label = form::field_label(i18n, kind.get_untracked(), &field);
                                            let text = i18n.tf(k!("form.fieldProblem"), &[("field", &label), ("problem", &message)]);
                                            view! { <li data-field=field>{text}</li> }
                                        }).collect_view()}
                                    </ul>
                                </div>
                            }.into_any()
                        }
                    }}
                </aside>
            </div>
        </section>
    }
}

/// True when Elastic is chosen but the kind cannot backfill (the Normal radio shows checked).
fn disabled_backfill(kind: JobKind, schedule: ScheduleType) -> bool {
    schedule == ScheduleType::Backfill && !kind.may_backfill()
}
