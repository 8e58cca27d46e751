//! The queue form's sharing settings (`spec/prequeue.md` §9): guarantee, lending limit and
//! per-job limit as resource rows, weight, reclaim protection, priority range and preemption
//! inside the queue — each with a help text that says what it does and an example. The form
//! shows the stored values and sends them all back (it is a full editor); an emptied list is
//! sent as `null`, which clears it.

use anteroom_shared::api::queues::QueueBody;
use anteroom_shared::scheduling::{
    MAX_PRIORITY, MAX_QUEUE_WEIGHT, MAX_RECLAIM_MIN_RUNTIME_SECONDS, PreemptWithinQueue, PriorityRange, Quantity,
    QueueSharing, ResourceList,
};
use leptos::prelude::*;

use crate::components::INPUT;
use crate::components::field::{AmountList, AmountRows, Field, amount_invalid};
use crate::i18n::{I18n, Key, k, use_i18n};

/// A form error: the API's field and what is wrong, in words.
pub(super) type FieldErrors = Vec<(String, String)>;

/// The sharing settings as typed: plain text, so reading them is a pure function.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Typed {
    pub(super) guarantee: Vec<(String, String)>,
    pub(super) lending_limit: Vec<(String, String)>,
    pub(super) max_per_job: Vec<(String, String)>,
    pub(super) weight: String,
    pub(super) reclaim_min_runtime: String,
    pub(super) priority_min: String,
    pub(super) priority_max: String,
    pub(super) preempt: PreemptWithinQueue,
}

impl Typed {
    /// What the form shows for stored settings (a new queue: the defaults).
    pub(super) fn shown(sharing: &QueueSharing) -> Typed {
        let rows = |list: &Option<ResourceList>| {
            list.iter()
                .flat_map(|l| l.iter())
                .map(|(r, q)| (r.to_owned(), q.to_string()))
                .collect()
        };
        Typed {
            guarantee: rows(&sharing.guarantee),
            lending_limit: rows(&sharing.lending_limit),
            max_per_job: rows(&sharing.max_per_job),
            weight: sharing.weight.to_string(),
            reclaim_min_runtime: sharing.reclaim_min_runtime_seconds.to_string(),
            priority_min: sharing.priority_range.min.to_string(),
            priority_max: sharing.priority_range.max.to_string(),
            preempt: sharing.preempt_within_queue,
        }
    }

    /// The settings typed, or every field that is wrong (named as the API names it, so a
    /// server error lands on the same field). An emptied list is `None`: no guarantee, no
    /// lending limit (all of it is lent), no per-job limit.
    pub(super) fn read(&self, i18n: I18n) -> Result<QueueSharing, FieldErrors> {
        let mut errors = FieldErrors::new();
        let mut list = |field: &str, rows: &[(String, String)]| -> Option<ResourceList> {
            let mut out = ResourceList::new();
            for (name, amount) in rows {
                let name = name.trim();
                match Quantity::parse(amount.trim()) {
                    Ok(q) if !name.is_empty() && q.milli() >= 0 => out.insert(name, q),
                    _ => {
                        errors.push((field.to_owned(), i18n.t(k!("form.quantity")).to_owned()));
                        break;
                    }
                }
            }
            (!out.is_empty()).then_some(out)
        };
        let guarantee = list("guarantee", &self.guarantee);
        let lending_limit = list("lendingLimit", &self.lending_limit);
        let max_per_job = list("maxPerJob", &self.max_per_job);
        let between = |min: i64, max: i64| {
            i18n.tf(
                k!("fieldError.between"),
                &[("min", &min.to_string()), ("max", &max.to_string())],
            )
        };
        let mut int = |field: &str, typed: &str, min: i64, max: i64| -> i64 {
            match typed.trim().parse::<i64>() {
                Ok(v) if (min..=max).contains(&v) => v,
                _ => {
                    errors.push((field.to_owned(), between(min, max)));
                    0
                }
            }
        };
        let weight = int("weight", &self.weight, 1, i64::from(MAX_QUEUE_WEIGHT));
        let reclaim = int(
            "reclaimMinRuntimeSeconds",
            &self.reclaim_min_runtime,
            0,
            MAX_RECLAIM_MIN_RUNTIME_SECONDS,
        );
        let widest = i64::from(MAX_PRIORITY);
        let min = int("priorityRange.min", &self.priority_min, -widest, widest);
        let max = int("priorityRange.max", &self.priority_max, -widest, widest);
        let range = PriorityRange {
            min: i32::try_from(min).unwrap_or(0),
            max: i32::try_from(max).unwrap_or(0),
        };
        if !errors.iter().any(|(f, _)| f.starts_with("priorityRange")) {
            if range.min > range.max {
                errors.push((
                    "priorityRange".into(),
                    i18n.t(k!("fieldError.priorityRangeOrder")).to_owned(),
                ));
            } else if !range.allows(0) {
                errors.push((
                    "priorityRange".into(),
                    i18n.t(k!("fieldError.priorityRangeZero")).to_owned(),
                ));
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(QueueSharing {
            guarantee,
            lending_limit,
            weight: u32::try_from(weight).unwrap_or(1),
            reclaim_min_runtime_seconds: reclaim,
            priority_range: range,
            preempt_within_queue: self.preempt,
            max_per_job,
        })
    }
}

/// Puts every sharing setting into a queue body: all of them, a list emptied as `null`.
pub(super) fn into_body(body: &mut QueueBody, sharing: QueueSharing) {
    body.guarantee = Some(sharing.guarantee);
    body.lending_limit = Some(sharing.lending_limit);
    body.max_per_job = Some(sharing.max_per_job);
    body.weight = Some(sharing.weight);
    body.reclaim_min_runtime_seconds = Some(sharing.reclaim_min_runtime_seconds);
    body.priority_range = Some(sharing.priority_range);
    body.preempt_within_queue = Some(sharing.preempt_within_queue);
}

/// The inputs of the sharing settings, one signal each.
#[derive(Clone, Copy)]
pub(super) struct Inputs {
    guarantee: AmountRows,
    lending_limit: AmountRows,
    max_per_job: AmountRows,
    weight: RwSignal<String>,
    reclaim_min_runtime: RwSignal<String>,
    priority_min: RwSignal<String>,
    priority_max: RwSignal<String>,
    preempt: RwSignal<PreemptWithinQueue>,
}

impl Inputs {
    /// Inputs showing `sharing`.
    pub(super) fn new(sharing: &QueueSharing) -> Inputs {
        let t = Typed::shown(sharing);
        Inputs {
            guarantee: AmountRows::new(t.guarantee),
            lending_limit: AmountRows::new(t.lending_limit),
            max_per_job: AmountRows::new(t.max_per_job),
            weight: RwSignal::new(t.weight),
            reclaim_min_runtime: RwSignal::new(t.reclaim_min_runtime),
            priority_min: RwSignal::new(t.priority_min),
            priority_max: RwSignal::new(t.priority_max),
            preempt: RwSignal::new(t.preempt),
        }
    }

    /// What is typed now (not tracked).
    pub(super) fn typed(&self) -> Typed {
        let rows = |rows: AmountRows| {
            rows.get_untracked()
                .iter()
                .map(|r| (r.name.get_untracked(), r.amount.get_untracked()))
                .collect()
        };
        Typed {
            guarantee: rows(self.guarantee),
            lending_limit: rows(self.lending_limit),
            max_per_job: rows(self.max_per_job),
            weight: self.weight.get_untracked(),
            reclaim_min_runtime: self.reclaim_min_runtime.get_untracked(),
            priority_min: self.priority_min.get_untracked(),
            priority_max: self.priority_max.get_untracked(),
            preempt: self.preempt.get_untracked(),
        }
    }
}

/// The sharing part of the queue form; `errors` are the form's, by API field (its own checks at
/// save, or the server's).
#[component]
pub(super) fn SharingFields(inputs: Inputs, errors: RwSignal<FieldErrors>) -> impl IntoView {
    let i18n = use_i18n();
    // A field's error; a list's is also one of its entries' (`guarantee.nvidia.com/a100`).
    let error_of = move |field: &'static str| {
        Signal::derive(move || errors.with(|e| e.iter().find(|(f, _)| f == field).map(|(_, m)| m.clone())))
    };
    let list_error_of = move |field: &'static str| {
        Signal::derive(move || {
            errors.with(|e| {
                e.iter()
                    .find(|(f, _)| f == field || f.strip_prefix(field).is_some_and(|rest| rest.starts_with('.')))
                    .map(|(_, m)| m.clone())
            })
        })
    };
    // A row typed wrong is marked as typed, before any save.
    let list_error = move |field: &'static str, rows: AmountRows| {
        let saved = list_error_of(field);
        Signal::derive(move || {
            rows.get()
                .iter()
                .any(|r| amount_invalid(&r.amount.get()))
                .then(|| i18n.t(k!("form.quantity")).to_owned())
                .or_else(|| saved.get())
        })
    };
    let number = move |id: &'static str,
                       field: &'static str,
                       label: Key,
                       hint: Key,
                       value: RwSignal<String>,
                       min: i64,
                       max: i64| {
        let err = error_of(field);
        view! {
            <Field id=id.to_owned() label=label hint=Some(hint) error=err>
                <input id=id class=INPUT type="number" inputmode="numeric" step="1" min=min max=max bind:value=value
                    aria-invalid=move || err.get().is_some().to_string()
                    aria-describedby=format!("{id}-error {id}-hint") data-testid=id />
            </Field>
        }
    };
    let range_err = error_of("priorityRange");
    let widest = i64::from(MAX_PRIORITY);
    view! {
        <fieldset class="space-y-4 rounded border border-slate-200 p-3 dark:border-slate-700" data-testid="queue-sharing" aria-describedby="queue-sharing-intro">
            <legend class="px-1 text-sm font-semibold">{move || i18n.t(k!("queue.sharing.title"))}</legend>
            <p id="queue-sharing-intro" class="text-xs text-slate-600 dark:text-slate-300">{move || i18n.t(k!("queue.sharing.intro"))}</p>
            <AmountList name="guarantee" rows=inputs.guarantee legend=k!("queue.guarantee") hint=Some(k!("queue.guaranteeHint"))
                add=k!("queue.addGuarantee") error=list_error("guarantee", inputs.guarantee) />
            <AmountList name="lendingLimit" rows=inputs.lending_limit legend=k!("queue.lendingLimit") hint=Some(k!("queue.lendingLimitHint"))
                add=k!("queue.addLendingLimit") error=list_error("lendingLimit", inputs.lending_limit) />
            <AmountList name="maxPerJob" rows=inputs.max_per_job legend=k!("queue.maxPerJob") hint=Some(k!("queue.maxPerJobHint"))
                add=k!("queue.addMaxPerJob") error=list_error("maxPerJob", inputs.max_per_job) />
            <div class="grid gap-3 md:grid-cols-2">
                {number("queue-weight", "weight", k!("queue.weight"), k!("queue.weightHint"), inputs.weight, 1, i64::from(MAX_QUEUE_WEIGHT))}
                {number("queue-reclaim-min-runtime", "reclaimMinRuntimeSeconds", k!("queue.reclaimMinRuntime"), k!("queue.reclaimMinRuntimeHint"),
                    inputs.reclaim_min_runtime, 0, MAX_RECLAIM_MIN_RUNTIME_SECONDS)}
            </div>
            <fieldset class="space-y-2" aria-describedby="queue-priority-hint queue-priority-error">
                <legend class="text-sm font-medium">{move || i18n.t(k!("queue.priorityRange"))}</legend>
                <p id="queue-priority-hint" class="text-xs text-slate-600 dark:text-slate-300">{move || i18n.t(k!("queue.priorityHint"))}</p>
                <div class="flex flex-wrap gap-3">
                    {[("queue-priority-min", "priorityRange.min", k!("queue.priorityMin"), inputs.priority_min),
                      ("queue-priority-max", "priorityRange.max", k!("queue.priorityMax"), inputs.priority_max)]
                        .into_iter().map(|(id, field, label, value)| {
                            let err = error_of(field);
                            view! {
                                <label class="flex flex-col text-xs" for=id>
                                    {move || i18n.t(label)}
                                    <input id=id class=format!("{INPUT} w-32") type="number" inputmode="numeric" step="1" min=-widest max=widest bind:value=value
                                        aria-invalid=move || (err.get().is_some() || range_err.get().is_some()).to_string()
                                        aria-describedby="queue-priority-error" data-testid=id />
                                </label>
                            }
                        }).collect_view()}
                </div>
                <p id="queue-priority-error" class="text-xs font-medium text-red-700 dark:text-red-300" data-testid="field-error">
                    {move || range_err.get().or_else(|| error_of("priorityRange.min").get()).or_else(|| error_of("priorityRange.max").get())}
                </p>
            </fieldset>
            <Field id="queue-preempt".into() label=k!("queue.preemptWithinQueue") hint=Some(k!("queue.preemptWithinQueueHint")) error=error_of("preemptWithinQueue")>
                <select id="queue-preempt" class=INPUT aria-describedby="queue-preempt-hint queue-preempt-error" data-testid="queue-preempt"
                    on:change=move |ev| inputs.preempt.set(if event_target_value(&ev) == "lowerPriority" { PreemptWithinQueue::LowerPriority } else { PreemptWithinQueue::Never })
                    prop:value=move || if inputs.preempt.get() == PreemptWithinQueue::LowerPriority { "lowerPriority" } else { "never" }>
                    <option value="never" selected=move || inputs.preempt.get() == PreemptWithinQueue::Never>{move || i18n.t(k!("queue.preemptNever"))}</option>
                    <option value="lowerPriority" selected=move || inputs.preempt.get() == PreemptWithinQueue::LowerPriority>{move || i18n.t(k!("queue.preemptLowerPriority"))}</option>
                </select>
            </Field>
        </fieldset>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::i18n::Locale;

    fn gpus(n: i64) -> ResourceList {
        ResourceList::new().with("nvidia.com/a100", Quantity::from_units(n))
    }

    fn stored() -> QueueSharing {
        QueueSharing {
            guarantee: Some(gpus(4).with("cpu", Quantity::parse("500m").unwrap())),
            lending_limit: Some(gpus(2)),
            weight: 3,
            reclaim_min_runtime_seconds: 600,
            priority_range: PriorityRange { min: -5, max: 10 },
            preempt_within_queue: PreemptWithinQueue::LowerPriority,
            max_per_job: Some(gpus(8)),
        }
    }

    #[test]
    fn the_stored_settings_shown_and_read_back_are_the_same_settings() {
        let en = I18n::fixed(Locale::En);
        for sharing in [stored(), QueueSharing::default()] {
            assert_eq!(Typed::shown(&sharing).read(en), Ok(sharing));
        }
    }

    #[test]
    fn every_setting_is_sent_and_an_emptied_list_is_sent_as_null() {
        let en = I18n::fixed(Locale::En);
        let mut typed = Typed::shown(&stored());
        typed.guarantee.clear();
        typed.max_per_job.clear();
        let mut body: QueueBody = serde_json::from_value(serde_json::json!({"name": "cv", "open": true})).unwrap();
        into_body(&mut body, typed.read(en).unwrap());
        let json = serde_json::to_value(&body).unwrap();
        assert!(json.get("guarantee").is_some_and(|g| g.is_null()), "{json}");
        assert!(json.get("maxPerJob").is_some_and(|g| g.is_null()), "{json}");
        assert_eq!(json["lendingLimit"], serde_json::json!({"nvidia.com/a100": "2"}));
        assert_eq!(json["weight"], 3);
        assert_eq!(json["reclaimMinRuntimeSeconds"], 600);
        assert_eq!(json["priorityRange"], serde_json::json!({"min": -5, "max": 10}));
        assert_eq!(json["preemptWithinQueue"], "lowerPriority");
    }

    #[test]
    fn wrong_settings_are_named_as_the_api_names_them() {
        let en = I18n::fixed(Locale::En);
        let fields = |t: Typed| -> Vec<String> { t.read(en).unwrap_err().into_iter().map(|(f, _)| f).collect() };
        let ok = Typed::shown(&stored());
        assert_eq!(
            fields(Typed {
                guarantee: vec![("nvidia.com/a100".into(), "four".into())],
                lending_limit: vec![("".into(), "1".into())],
                max_per_job: vec![("cpu".into(), "-1".into())],
                ..ok.clone()
            }),
            ["guarantee", "lendingLimit", "maxPerJob"]
        );
        assert_eq!(
            fields(Typed {
                weight: "0".into(),
                ..ok.clone()
            }),
            ["weight"]
        );
        assert_eq!(
            fields(Typed {
                weight: "1001".into(),
                ..ok.clone()
            }),
            ["weight"]
        );
        assert_eq!(
            fields(Typed {
                reclaim_min_runtime: "-1".into(),
                ..ok.clone()
            }),
            ["reclaimMinRuntimeSeconds"]
        );
        assert_eq!(
            fields(Typed {
                priority_min: "x".into(),
                ..ok.clone()
            }),
            ["priorityRange.min"]
        );
        let order = Typed {
            priority_min: "5".into(),
            priority_max: "1".into(),
            ..ok.clone()
        };
        assert_eq!(
            order.read(en).unwrap_err(),
            [(
                "priorityRange".to_owned(),
                "The lowest priority must not be above the highest.".to_owned()
            )]
        );
        assert_eq!(
            fields(Typed {
                priority_min: "1".into(),
                priority_max: "5".into(),
                ..ok.clone()
            }),
            ["priorityRange"],
            "the range must include 0"
        );
        assert_eq!(
            Typed {
                weight: "0".into(),
                ..ok
            }
            .read(en)
            .unwrap_err()[0]
                .1,
            "Must be between 1 and 1000."
        );
    }
}
