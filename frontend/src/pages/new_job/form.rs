//! The submit form's model: one task's inputs as typed, the task layout each kind has, and
//! the reading of the inputs into a job body (or every field that is wrong).

use anteroom_shared::api::jobs::{EnvVar, JobBody, TaskBody};
use anteroom_shared::scheduling::{
    BorrowPolicy, JobKind, PreemptionPolicy, PriorityRange, Quantity, ResourceList, ScheduleType,
};
use leptos::prelude::*;

use crate::i18n::{I18n, k};

/// One task's inputs, as typed.
#[derive(Clone, Copy)]
pub(super) struct TaskForm {
    pub(super) replicas: RwSignal<String>,
    pub(super) image: RwSignal<String>,
    pub(super) command: RwSignal<String>,
    pub(super) cpu: RwSignal<String>,
    pub(super) memory: RwSignal<String>,
    pub(super) accelerator: RwSignal<String>,
    pub(super) accelerators: RwSignal<String>,
    pub(super) nodes: RwSignal<String>,
    /// `NAME=value`, one a line.
    pub(super) env: RwSignal<String>,
    /// The `/dev/shm` size; empty: the kind's default.
    pub(super) shm: RwSignal<String>,
}

impl TaskForm {
    /// Shows `task` in the inputs (a template's, or a kind's defaults).
    pub(super) fn fill(&self, task: &TaskBody) {
        self.replicas.set(task.replicas.to_string());
        self.image.set(task.image.clone());
        // Quoted as a shell would need it, so the line reads back as the same words.
        self.command.set(anteroom_shared::shell_words::join(&task.command));
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

    pub(super) fn new(image: &str, command: &str) -> Self {
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

/// A task's name as the form says it: its role (`main` is "Container", PyTorch's `master` is
/// "Master"…), not the raw id the cluster knows it by; an unknown name stays as written.
pub fn task_title(i18n: crate::i18n::I18n, task: &str) -> String {
    match task {
        "main" => i18n.t(k!("newJob.taskRole.main")).to_owned(),
        "master" => i18n.t(k!("newJob.taskRole.master")).to_owned(),
        "worker" => i18n.t(k!("newJob.taskRole.worker")).to_owned(),
        "ps" => i18n.t(k!("newJob.taskRole.ps")).to_owned(),
        other => i18n.tf(k!("newJob.task"), &[("task", other)]),
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

/// The words the form uses for the API's field path (`tasks[1].resources.cpu` → "Task worker ·
/// CPU (cores)"): what a person sees next to the input, not the JSON path. A path the form has
/// no input for keeps its own spelling.
pub(super) fn field_label(i18n: I18n, kind: JobKind, path: &str) -> String {
    let top = |name: &str| match name {
        "name" => Some(i18n.t(k!("jobs.name"))),
        "queue" => Some(i18n.t(k!("jobs.queue"))),
        "kind" => Some(i18n.t(k!("jobs.kind"))),
        "scheduleType" => Some(i18n.t(k!("jobs.scheduleType"))),
        "preemptionPolicy" => Some(i18n.t(k!("newJob.neverPreempt"))),
        "volumes" => Some(i18n.t(k!("newJob.volumes"))),
        "priority" => Some(i18n.t(k!("newJob.priority"))),
        "borrow" => Some(i18n.t(k!("newJob.mayBorrow"))),
        "tasks" => Some(i18n.t(k!("task.name"))),
        _ => None,
    };
    let task_field = |name: &str| match name {
        "name" => Some(i18n.t(k!("task.name"))),
        "replicas" => Some(i18n.t(k!("task.replicas"))),
        "image" => Some(i18n.t(k!("task.image"))),
        "command" => Some(i18n.t(k!("task.command"))),
        "env" => Some(i18n.t(k!("task.env"))),
        "shmSize" => Some(i18n.t(k!("task.shm"))),
        "nodeNames" => Some(i18n.t(k!("task.nodeNames"))),
        "resources.cpu" => Some(i18n.t(k!("task.cpu"))),
        "resources.memory" => Some(i18n.t(k!("task.memory"))),
        "resources" => Some(i18n.t(k!("jobs.resources"))),
        "accelerator" => Some(i18n.t(k!("task.accelerator"))),
        other if other.starts_with("resources.") => Some(i18n.t(k!("task.acceleratorCount"))),
        _ => None,
    };
    let Some(rest) = path.strip_prefix("tasks[") else {
        let head = path.split(['.', '[']).next().unwrap_or(path);
        return top(head).map_or_else(|| path.to_owned(), str::to_owned);
    };
    let Some((index, field)) = rest.split_once(']') else {
        return path.to_owned();
    };
    let task = index
        .parse::<usize>()
        .ok()
        .and_then(|i| task_names(kind).get(i))
        .map_or_else(|| index.to_owned(), |n| (*n).to_owned());
    let task = task_title(i18n, &task);
    let field = field.trim_start_matches('.');
    // `env[2].name`, `command[0]`, `nodeNames[1]`: the input holds the whole list.
    let base = field.split('[').next().unwrap_or(field);
    match (field.is_empty(), task_field(base)) {
        (true, _) => task,
        (false, Some(label)) => format!("{task} · {label}"),
        (false, None) => format!("{task} · {field}"),
    }
}

/// A form error: the API field and what is wrong, in words.
pub(super) type FieldErrors = Vec<(String, String)>;

/// The priority typed, for a queue whose priority range is `range` (`None`: the queue allows
/// no priorities, the field is hidden and nothing is sent). Empty or 0 sends nothing (0 is
/// every job's priority); a whole number outside the range is refused on the field.
pub(super) fn read_priority(i18n: I18n, typed: &str, range: Option<PriorityRange>) -> Result<Option<i32>, FieldErrors> {
    let Some(range) = range.filter(PriorityRange::is_on) else {
        return Ok(None);
    };
    match typed.trim() {
        "" => Ok(None),
        text => match text.parse::<i32>() {
            Ok(p) if range.allows(p) => Ok((p != 0).then_some(p)),
            _ => Err(vec![(
                "priority".to_owned(),
                i18n.tf(
                    k!("newJob.priorityInvalid"),
                    &[("min", &range.min.to_string()), ("max", &range.max.to_string())],
                ),
            )]),
        },
    }
}

/// What a job body says about borrowing: nothing (the default, `ifIdle`) unless the switch is
/// off on a normal job, which then waits for guaranteed room (`never`); an Elastic job never
/// borrows, so it says nothing.
pub(super) fn borrow_policy(schedule: ScheduleType, may_borrow: bool) -> Option<BorrowPolicy> {
    (schedule == ScheduleType::Normal && !may_borrow).then_some(BorrowPolicy::Never)
}

/// Reads the form into a job body, or lists every field that is wrong (checked as the server
/// checks quantities: the shared crate's parser).
pub(super) fn build(
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
        let command = match anteroom_shared::shell_words::split(&form.command.get()) {
            Ok(words) => words,
            Err(_) => {
                errors.push((format!("tasks[{i}].command"), i18n.t(k!("form.commandLine")).to_owned()));
                Vec::new()
            }
        };
        bodies.push(TaskBody {
            env,
            shm_size,
            name: (*task_name).to_owned(),
            replicas,
            image: image.trim().to_owned(),
            command,
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
        // Added by the caller, as the volumes.
        max_runtime_seconds: None,
        requeue: None,
        // Added by the caller when the queue allows priorities or the user keeps borrowing off.
        priority: None,
        borrow: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::i18n::Locale;

    #[test]
    fn a_runtime_limit_is_typed_in_hours() {
        use crate::format::{hours_text, runtime_seconds};
        assert_eq!(runtime_seconds(""), Ok(None));
        assert_eq!(runtime_seconds(" 1.5 "), Ok(Some(5400)));
        assert_eq!(runtime_seconds("2"), Ok(Some(7200)));
        for bad in ["0", "-1", "abc", "inf", "NaN"] {
            assert_eq!(runtime_seconds(bad), Err(crate::format::NotHours), "{bad}");
        }
        assert_eq!(hours_text(5400), "1.5");
        assert_eq!(hours_text(7200), "2");
        assert_eq!(hours_text(60), "0.0167");
        // Shown and read back, any whole number of seconds is itself.
        for seconds in [60, 61, 3_599, 5_000, 86_399, 31_536_000] {
            assert_eq!(runtime_seconds(&hours_text(seconds)), Ok(Some(seconds)), "{seconds}");
        }
    }

    #[test]
    fn a_priority_is_sent_only_where_the_queue_allows_one_and_within_its_range() {
        let en = I18n::fixed(Locale::En);
        let range = Some(PriorityRange { min: -5, max: 10 });
        assert_eq!(read_priority(en, "7", range), Ok(Some(7)));
        assert_eq!(read_priority(en, " -5 ", range), Ok(Some(-5)));
        assert_eq!(read_priority(en, "", range), Ok(None));
        assert_eq!(read_priority(en, "0", range), Ok(None), "0 is every job's priority");
        for bad in ["11", "-6", "1.5", "high"] {
            assert_eq!(
                read_priority(en, bad, range),
                Err(vec![(
                    "priority".to_owned(),
                    "A whole number from -5 to 10.".to_owned()
                )]),
                "{bad}"
            );
        }
        // A queue without priorities: the field is hidden, whatever it held is not sent.
        assert_eq!(read_priority(en, "7", None), Ok(None));
        assert_eq!(read_priority(en, "7", Some(PriorityRange::default())), Ok(None));
    }

    #[test]
    fn only_a_normal_job_with_borrowing_switched_off_says_never() {
        assert_eq!(borrow_policy(ScheduleType::Normal, true), None);
        assert_eq!(borrow_policy(ScheduleType::Normal, false), Some(BorrowPolicy::Never));
        assert_eq!(borrow_policy(ScheduleType::Backfill, false), None);
        let json = serde_json::to_value(BorrowPolicy::Never).unwrap();
        assert_eq!(json, "never");
    }

    #[test]
    fn a_field_path_reads_as_the_form_s_labels() {
        let (en, ja) = (I18n::fixed(Locale::En), I18n::fixed(Locale::Ja));
        let label = |i18n, kind, path| field_label(i18n, kind, path);
        assert_eq!(label(en, JobKind::Custom, "name"), "Name");
        assert_eq!(
            label(en, JobKind::Custom, "tasks[0].resources.cpu"),
            "Container · CPU (cores)"
        );
        assert_eq!(
            label(en, JobKind::Pytorch, "tasks[1].env[2].name"),
            "Worker · Environment"
        );
        assert_eq!(
            label(en, JobKind::Pytorch, "tasks[0].resources.nvidia.com/a100"),
            "Master · Accelerators per replica"
        );
        assert_eq!(
            label(en, JobKind::Custom, "tasks[0].resources"),
            "Container · Resources"
        );
        assert_eq!(label(en, JobKind::Custom, "tasks[0]"), "Container");
        // In another language, the labels of that language.
        assert_eq!(label(ja, JobKind::Custom, "tasks[0].image"), "コンテナー · イメージ");
        // What the form has no input for keeps the API's spelling.
        assert_eq!(
            label(en, JobKind::Custom, "tasks[0].somethingNew"),
            "Container · somethingNew"
        );
        assert_eq!(label(en, JobKind::Custom, "idempotency"), "idempotency");
        assert_eq!(label(en, JobKind::Custom, "priority"), "Priority in the queue");
        assert_eq!(label(en, JobKind::Custom, "tasks[9].image"), "Task 9 · Image");
    }
}
