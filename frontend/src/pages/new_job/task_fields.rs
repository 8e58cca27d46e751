//! One task's inputs on the submit form: image, command, replicas, nodes, resources, an
//! accelerator, shared memory and environment, each with its error under it.

use anteroom_shared::scheduling::{JobKind, TaskDefaults};
use leptos::prelude::*;

use super::form::{TaskForm, replicas_editable};
use crate::components::INPUT;
use crate::components::field::Field;
use crate::i18n::{Key, k, use_i18n};

/// One task of the form: `index` in the kind's layout, its inputs bound to `form`, the
/// admin's defaults shown where an input is left empty.
#[component]
pub(super) fn TaskFields(
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
        <fieldset class="space-y-3 rounded border border-slate-200 dark:border-slate-700 p-3" data-testid="task-fields">
            <legend class="px-1 text-sm font-semibold">{move || super::form::task_title(i18n, task)}</legend>
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
