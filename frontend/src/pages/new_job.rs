//! `/jobs/new`: the submit form for the five kinds, and beside it the live admission preview
//! ("starts now" / "will wait in the prequeue because …" / the error), asked from
//! `/jobs/preview` as the form changes. The schedule type is offered only while backfill is
//! enabled, and Elastic is disabled, with the reason, for PyTorch and TensorFlow.

use std::time::Duration;

use anteroom_shared::api::jobs::{Decision, EnvVar, JobBody, Preview, TaskBody};
use anteroom_shared::scheduling::{JobKind, PreemptionPolicy, Quantity, ResourceList, ScheduleType, TaskDefaults};
use leptos::prelude::*;
use leptos_router::hooks::use_navigate;

use crate::api::ApiFailure;
use crate::components::badges::{kind_label, schedule_description, schedule_label};
use crate::components::field::Field;
use crate::components::reasons::Reasons;
use crate::components::toast::use_toasts;
use crate::components::{BUTTON, BUTTON_SECONDARY, CARD, INPUT, PageHeader, accelerator_names, loaded, use_fetch};
use crate::i18n::{I18n, Key, k, use_i18n};

/// One task's inputs, as typed.
#[derive(Clone, Copy)]
struct TaskForm {
    replicas: RwSignal<String>,
    image: RwSignal<String>,
    command: RwSignal<String>,
    cpu: RwSignal<String>,
    memory: RwSignal<String>,
    accelerator: RwSignal<String>,
    accelerators: RwSignal<String>,
    nodes: RwSignal<String>,
    /// `NAME=value`, one a line.
    env: RwSignal<String>,
    /// The `/dev/shm` size; empty: the kind's default.
    shm: RwSignal<String>,
}

impl TaskForm {
    /// Shows `task` in the inputs (a template's, or a kind's defaults).
    fn fill(&self, task: &TaskBody) {
        self.replicas.set(task.replicas.to_string());
        self.image.set(task.image.clone());
        self.command.set(task.command.join(" "));
        let quantity = |name: &str| {
            task.resources
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, q)| q.to_string())
        };
        self.cpu.set(quantity("cpu").unwrap_or_default());
        self.memory.set(quantity("memory").unwrap_or_default());
        match task.resources.iter().find(|(n, _)| n.contains('/')) {
            Some((model, count)) => {
                self.accelerator.set(model.to_string());
                self.accelerators.set(count.to_string());
            }
            None => {
                self.accelerator.set(String::new());
                self.accelerators.set("0".into());
            }
        }
        self.nodes.set(task.node_names.join(", "));
        self.env.set(
            task.env
                .iter()
                .map(|v| format!("{}={}", v.name, v.value))
                .collect::<Vec<_>>()
                .join("\n"),
        );
        self.shm.set(task.shm_size.map(|q| q.to_string()).unwrap_or_default());
    }

    fn new(image: &str, command: &str) -> Self {
        TaskForm {
            replicas: RwSignal::new("1".into()),
            image: RwSignal::new(image.into()),
            command: RwSignal::new(command.into()),
            // Empty: the server fills in the admin's default for the kind (shown as placeholder).
            cpu: RwSignal::new(String::new()),
            memory: RwSignal::new(String::new()),
            accelerator: RwSignal::new(String::new()),
            accelerators: RwSignal::new("0".into()),
            nodes: RwSignal::new(String::new()),
            env: RwSignal::new(String::new()),
            shm: RwSignal::new(String::new()),
        }
    }
}

/// The tasks a kind has, by name (`spec/prequeue.md` §1): one `main`, or PyTorch's master and
/// worker, or TensorFlow's ps and worker.
pub fn task_names(kind: JobKind) -> &'static [&'static str] {
    match kind {
        JobKind::Jupyter | JobKind::Webide | JobKind::Custom => &["main"],
        JobKind::Pytorch => &["master", "worker"],
        JobKind::Tensorflow => &["ps", "worker"],
    }
}

/// Whether the replicas of task `index` of `kind` can be changed (a notebook and PyTorch's
/// master have exactly one).
pub fn replicas_editable(kind: JobKind, index: usize) -> bool {
    match kind {
        JobKind::Jupyter | JobKind::Webide => false,
        JobKind::Pytorch => index == 1,
        _ => true,
    }
}

/// A form error: the API field and what is wrong, in words.
type FieldErrors = Vec<(String, String)>;

/// Reads the form into a job body, or lists every field that is wrong (checked as the server
/// checks quantities: the shared crate's parser).
fn build(
    i18n: I18n,
    kind: JobKind,
    name: &str,
    queue: &str,
    schedule: ScheduleType,
    never_preempt: bool,
    tasks: &[TaskForm],
) -> Result<JobBody, FieldErrors> {
    let mut errors = FieldErrors::new();
    let required = i18n.t(k!("form.required")).to_owned();
    if name.trim().is_empty() {
        errors.push(("name".into(), required.clone()));
    }
    let mut bodies = Vec::new();
    for (i, (task_name, form)) in task_names(kind).iter().zip(tasks).enumerate() {
        let replicas = if replicas_editable(kind, i) {
            form.replicas.get()
        } else {
            "1".to_owned()
        };
        let replicas = match replicas.trim().parse::<u32>() {
            Ok(r) if r >= 1 => r,
            _ => {
                errors.push((
                    format!("tasks[{i}].replicas"),
                    i18n.t(k!("form.positiveInteger")).to_owned(),
                ));
                1
            }
        };
        let image = form.image.get();
        if image.trim().is_empty() {
            errors.push((format!("tasks[{i}].image"), required.clone()));
        }
        let mut resources = ResourceList::new();
        for (resource, value) in [("cpu", form.cpu.get()), ("memory", form.memory.get())] {
            if value.trim().is_empty() {
                continue;
            }
            match Quantity::parse(value.trim()) {
                Ok(q) if q.milli() > 0 => resources.insert(resource, q),
                Ok(_) => errors.push((
                    format!("tasks[{i}].resources.{resource}"),
                    i18n.t(k!("form.positiveQuantity")).to_owned(),
                )),
                Err(_) => errors.push((
                    format!("tasks[{i}].resources.{resource}"),
                    i18n.t(k!("form.quantity")).to_owned(),
                )),
            }
        }
        let model = form.accelerator.get();
        let count = form.accelerators.get();
        match count.trim().parse::<i64>() {
            Ok(0) => {}
            Ok(n) if n > 0 && !model.is_empty() => resources.insert(model.clone(), Quantity::from_units(n)),
            Ok(n) if n > 0 => errors.push((
                format!("tasks[{i}].accelerator"),
                i18n.t(k!("form.chooseModel")).to_owned(),
            )),
            _ => errors.push((
                format!("tasks[{i}].accelerators"),
                i18n.t(k!("form.nonNegativeInteger")).to_owned(),
            )),
        }
        let node_names: Vec<String> = form
            .nodes
            .get()
            .split([',', ' '])
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        let mut env = Vec::new();
        for line in form.env.get().lines().map(str::trim).filter(|l| !l.is_empty()) {
            match line.split_once('=') {
                Some((name, value)) if !name.trim().is_empty() => env.push(EnvVar {
                    name: name.trim().to_owned(),
                    value: value.to_owned(),
                }),
                _ => errors.push((format!("tasks[{i}].env"), i18n.t(k!("form.envLine")).to_owned())),
            }
        }
        let shm = form.shm.get();
        let shm_size = match shm.trim() {
            "" => None,
            text => match Quantity::parse(text) {
                Ok(q) if q.milli() >= 0 => Some(q),
                _ => {
                    errors.push((format!("tasks[{i}].shmSize"), i18n.t(k!("form.quantity")).to_owned()));
                    None
                }
            },
        };
        bodies.push(TaskBody {
            env,
            shm_size,
            name: (*task_name).to_owned(),
            replicas,
            image: image.trim().to_owned(),
            command: form.command.get().split_whitespace().map(str::to_owned).collect(),
            resources,
            node_names,
        });
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let schedule_type = if kind.may_backfill() {
        schedule
    } else {
        ScheduleType::Normal
    };
    Ok(JobBody {
        // The picker's choice is added by the caller.
        volumes: Vec::new(),
        name: name.trim().to_owned(),
        kind,
        queue: queue.to_owned(),
        schedule_type,
        preemption_policy: (schedule_type == ScheduleType::Normal && never_preempt).then_some(PreemptionPolicy::Never),
        tasks: bodies,
    })
}

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
    let tasks = [TaskForm::new("", ""), TaskForm::new("", "")];
    let chosen_volumes: RwSignal<Vec<String>> = RwSignal::new(Vec::new());
    let offered_volumes = use_fetch(move || {
        let queue = queue.get();
        async move { crate::api::volumes_of(&queue).await }
    });
    // A volume the new queue is not offered is no longer chosen.
    Effect::new(move |_| {
        let offered: Vec<String> = loaded(offered_volumes).into_iter().map(|v| v.name).collect();
        chosen_volumes.update(|chosen| chosen.retain(|n| offered.contains(n)));
    });
    let errors = RwSignal::new(FieldErrors::new());
    let touched = RwSignal::new(false);
    let preview = RwSignal::new(PreviewState::Idle);
    let submitting = RwSignal::new(false);
    let backfill_enabled = move || status.get().and_then(|s| s.ok()).is_some_and(|s| s.backfill_enabled);
    let templates = use_fetch(crate::api::templates);
    let kind_defaults = use_fetch(crate::api::job_defaults);
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
    };
    // A kind the admins gave a default starts from it, while the first task shows nothing the
    // user typed (empty, or the default another kind filled in).
    let filled_image = StoredValue::new(String::new());
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
        .map(|mut job| {
            job.volumes = chosen_volumes.get();
            job
        })
    };
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
                        Decision::Activated => k!("newJob.submittedActivated"),
                        Decision::Prequeued => k!("newJob.submittedPrequeued"),
                    };
                    toasts.success(i18n.tf(key, &[("name", &answer.job.name)]));
                    navigate(&format!("/jobs/{}", answer.job.id), Default::default());
                }
                Err(f) => {
                    let fields = f.fields();
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
                                <select id="template-picker" class=INPUT data-testid="template-picker" on:change=move |ev| {
                                    let id = event_target_value(&ev).parse::<i64>().ok();
                                    if let Some(t) = choices.with_value(|c| c.iter().find(|t| Some(t.id) == id).cloned()) {
                                        fill(&t.body);
                                    }
                                }>
                                    <option value="">{move || i18n.t(k!("newJob.templateNone"))}</option>
                                    {list.into_iter().map(|t| view! { <option value=t.id.to_string()>{t.name.clone()}</option> }).collect_view()}
                                </select>
                            </label>
                        }
                    })
                }}
            </PageHeader>
            <div class="grid gap-6 lg:grid-cols-[1fr_24rem]">
                <form class=format!("{CARD} space-y-5") on:submit=submit novalidate=true data-testid="job-form">
                    <fieldset class="space-y-2">
                        <legend class="text-sm font-medium text-slate-800">{move || i18n.t(k!("jobs.kind"))}</legend>
                        <div class="flex flex-wrap gap-3">
                            {JobKind::ALL.iter().map(|kd| {
                                let kd = *kd;
                                let id = format!("kind-{}", kd.as_str());
                                let label_for = id.clone();
                                view! {
                                    <label class="flex items-center gap-2 rounded border border-slate-300 px-3 py-1.5 text-sm has-[:checked]:border-violet-600 has-[:checked]:bg-violet-50" for=label_for>
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
                                    .map(|q| { let label = if q.display_name.is_empty() || q.display_name == q.name { q.name.clone() } else { format!("{} ({})", q.display_name, q.name) };
                                        let n = q.name.clone(); view! { <option value=q.name.clone() selected=move || queue.get() == n>{label}</option> } })
                                    .collect_view()}
                            </select>
                        </Field>
                    </div>
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
                        let offered = loaded(offered_volumes);
                        (!offered.is_empty()).then(|| view! {
                            <fieldset class="space-y-2" data-testid="volume-picker">
                                <legend class="text-sm font-medium text-slate-800">{move || i18n.t(k!("newJob.volumes"))}</legend>
                                <p class="text-xs text-slate-600">{move || i18n.t(k!("newJob.volumesHelp"))}</p>
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
                                                {v.read_only.then(|| view! { " "<span class="text-xs text-slate-600">{move || i18n.t(k!("newJob.readOnly"))}</span> })}
                                                <span class="block text-xs text-slate-600">{v.description.clone()}</span>
                                            </span>
                                        </label>
                                    }
                                }).collect_view()}
                            </fieldset>
                        })
                    }}
                    <Show when=backfill_enabled>
                        <fieldset class="space-y-2" data-testid="schedule-type">
                            <legend class="text-sm font-medium text-slate-800">{move || i18n.t(k!("jobs.scheduleType"))}</legend>
                            <p class="text-xs text-slate-600">{move || i18n.t(k!("newJob.scheduleHelp"))}</p>
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
                                            <span class="text-slate-600">{move || i18n.t(schedule_description(t))}</span>
                                        </span>
                                    </label>
                                }
                            }).collect_view()}
                            <Show when=move || !kind.get().may_backfill()>
                                <p class="text-xs text-amber-900" data-testid="backfill-unavailable">{move || i18n.t(k!("newJob.backfillUnavailable"))}</p>
                            </Show>
                        </fieldset>
                    </Show>
                    <Show when=move || !backfill_enabled() || schedule.get() == ScheduleType::Normal || !kind.get().may_backfill()>
                        <label class="flex items-start gap-2 text-sm" for="never-preempt">
                            <input type="checkbox" id="never-preempt" bind:checked=never_preempt />
                            <span>
                                <span class="font-medium">{move || i18n.t(k!("newJob.neverPreempt"))}</span>
                                <span class="block text-xs text-slate-600">{move || i18n.t(k!("newJob.neverPreemptHelp"))}</span>
                            </span>
                        </label>
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
                        PreviewState::Idle => view! { <p class="text-sm text-slate-600" data-testid="preview-idle">{move || i18n.t(k!("newJob.previewIdle"))}</p> }.into_any(),
                        PreviewState::Asking => view! { <p class="text-sm text-slate-600">{move || i18n.t(k!("newJob.previewAsking"))}</p> }.into_any(),
                        PreviewState::Answer(p) => match p.decision {
                            Decision::Activated => view! {
                                <p class="rounded border border-emerald-300 bg-emerald-50 p-2 text-sm font-medium text-emerald-900" data-testid="preview-decision" data-decision="activated">
                                    <span aria-hidden="true">"▶ "</span>{move || i18n.t(k!("newJob.startsNow"))}
                                </p>
                            }.into_any(),
                            Decision::Prequeued => view! {
                                <div class="space-y-2">
                                    <p class="rounded border border-violet-300 bg-violet-50 p-2 text-sm font-medium text-violet-900" data-testid="preview-decision" data-decision="prequeued">
                                        <span aria-hidden="true">"⏸ "</span>{move || i18n.t(k!("newJob.willWait"))}
                                    </p>
                                    <Reasons reasons=p.reasons.clone() />
                                </div>
                            }.into_any(),
                        },
                        PreviewState::Refused(f) => {
                            let fields = f.fields();
                            view! {
                                <div class="space-y-2" data-testid="preview-error">
                                    <p role="alert" class="rounded border border-red-300 bg-red-50 p-2 text-sm text-red-900">{move || i18n.failure(&f)}</p>
                                    <ul class="list-inside list-disc text-xs text-red-900">
                                        {fields.into_iter().map(|(field, message)| view! { <li><code>{field}</code>": "{message}</li> }).collect_view()}
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

#[component]
fn TaskFields(
    index: usize,
    task: &'static str,
    kind: JobKind,
    form: TaskForm,
    models: Vec<String>,
    /// The admin's CPU and memory for this kind, shown where the inputs are left empty.
    defaults: Option<TaskDefaults>,
    error_of: impl Fn(String) -> Signal<Option<String>> + Copy + 'static,
) -> impl IntoView {
    let (cpu_default, memory_default) = match &defaults {
        Some(d) => (d.cpu.to_string(), d.memory.to_string()),
        None => (String::new(), String::new()),
    };
    let placeholders = StoredValue::new((cpu_default, memory_default));
    let placeholder = move |what: &str| -> String {
        placeholders.with_value(|(cpu, memory)| match what {
            "resources.cpu" => cpu.clone(),
            "resources.memory" => memory.clone(),
            _ => String::new(),
        })
    };
    let i18n = use_i18n();
    let id = move |what: &str| format!("task{index}-{what}");
    let field = move |what: &str| format!("tasks[{index}].{what}");
    let input = move |what: &'static str, label: Key, hint: Option<Key>, value: RwSignal<String>, disabled: bool| {
        let err = error_of(field(what));
        view! {
            <Field id=id(what) label=label hint=hint error=err>
                <input id=id(what) class=INPUT type="text" bind:value=value disabled=disabled placeholder=placeholder(what)
                    aria-invalid=move || err.get().is_some().to_string()
                    aria-describedby=if hint.is_some() { format!("{0}-error {0}-hint", id(what)) } else { format!("{}-error", id(what)) } />
            </Field>
        }
    };
    view! {
        <fieldset class="space-y-3 rounded border border-slate-200 p-3" data-testid="task-fields">
            <legend class="px-1 text-sm font-semibold">{move || i18n.tf(k!("newJob.task"), &[("task", task)])}</legend>
            <div class="grid gap-3 md:grid-cols-2">
                {input("image", k!("task.image"), Some(k!("task.imageHint")), form.image, false)}
                {input("command", k!("task.command"), Some(k!("task.commandHint")), form.command, false)}
                {input("replicas", k!("task.replicas"), None, form.replicas, !replicas_editable(kind, index))}
                {input("nodeNames", k!("task.nodeNames"), Some(k!("task.nodeNamesHint")), form.nodes, false)}
                {input("resources.cpu", k!("task.cpu"), Some(k!("task.cpuHint")), form.cpu, false)}
                {input("resources.memory", k!("task.memory"), Some(k!("task.memoryHint")), form.memory, false)}
                <Field id=id("accelerator") label=k!("task.accelerator") error=error_of(field("accelerator"))>
                    <select id=id("accelerator") class=INPUT on:change=move |ev| form.accelerator.set(event_target_value(&ev)) prop:value=move || form.accelerator.get()>
                        <option value="">{move || i18n.t(k!("task.noAccelerator"))}</option>
                        {models.into_iter().map(|m| { let n = m.clone(); view! { <option value=m.clone() selected=move || form.accelerator.get() == n>{m.clone()}</option> } }).collect_view()}
                    </select>
                </Field>
                {input("accelerators", k!("task.acceleratorCount"), None, form.accelerators, false)}
                {input("shmSize", k!("task.shm"), Some(k!("task.shmHint")), form.shm, false)}
            </div>
            {
                let err = error_of(field("env"));
                view! {
                    <Field id=id("env") label=k!("task.env") hint=Some(k!("task.envHint")) error=err>
                        <textarea id=id("env") class=format!("{INPUT} font-mono") rows="3" bind:value=form.env
                            aria-invalid=move || err.get().is_some().to_string()
                            aria-describedby=format!("{0}-error {0}-hint", id("env"))></textarea>
                    </Field>
                }
            }
        </fieldset>
    }
}
