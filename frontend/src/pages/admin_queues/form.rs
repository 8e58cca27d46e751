//! The queue editor in the side panel: name, display name, parent, members, runtime limits,
//! the user its jobs run as, capacity rows and the sharing settings ([`super::sharing`]);
//! create, save (refused when the queue changed since it was shown) and delete after
//! confirmation. Tree errors (a cycle, a capacity or guarantee above the parent's, an unknown
//! parent) are shown on their field.

use anteroom_shared::api::queues::{AdminQueue, QueueBody};
use anteroom_shared::scheduling::{Quantity, ResourceList};
use leptos::prelude::*;

use super::sharing::{Inputs, SharingFields, into_body};
use crate::components::confirm::use_confirm;
use crate::components::field::{AmountList, AmountRows, Field, amount_invalid};
use crate::components::toast::use_toasts;
use crate::components::{BUTTON, BUTTON_DANGER, BUTTON_SECONDARY, INPUT};
use crate::i18n::{k, use_i18n};

/// The form for `queue` (`None`: a new one); `names` are the queues a parent may be chosen
/// from; `done` runs after a save or delete.
#[component]
pub(super) fn QueueForm(
    queue: Option<AdminQueue>,
    #[prop(into)] names: Signal<Vec<String>>,
    done: Callback<()>,
) -> impl IntoView {
    let i18n = use_i18n();
    let toasts = use_toasts();
    let confirm = use_confirm();
    let existing = queue.as_ref().map(|q| q.name.clone());
    let name = RwSignal::new(existing.clone().unwrap_or_default());
    let display = RwSignal::new(queue.as_ref().map(|q| q.display_name.clone()).unwrap_or_default());
    let open = RwSignal::new(queue.as_ref().is_none_or(|q| q.open));
    let members = RwSignal::new(queue.as_ref().map(|q| q.members.join(", ")).unwrap_or_default());
    let parent = RwSignal::new(queue.as_ref().and_then(|q| q.parent.clone()).unwrap_or_default());
    let rows = AmountRows::new(
        queue
            .as_ref()
            .and_then(|q| q.capacity.clone())
            .unwrap_or_default()
            .iter()
            .map(|(r, a)| (r.to_owned(), a.to_string())),
    );
    let hours = |seconds: Option<i64>| seconds.map(crate::format::hours_text).unwrap_or_default();
    let default_runtime = RwSignal::new(hours(queue.as_ref().and_then(|q| q.default_runtime_seconds)));
    let max_runtime = RwSignal::new(hours(queue.as_ref().and_then(|q| q.max_runtime_seconds)));
    // A new queue's jobs run as a non-root user unless the admin empties the field.
    let run_as_user = RwSignal::new(match &queue {
        Some(q) => q.run_as_user.map(|u| u.to_string()).unwrap_or_default(),
        None => anteroom_shared::api::queues::DEFAULT_RUN_AS_USER.to_string(),
    });
    let sharing = Inputs::new(&queue.as_ref().map(|q| q.sharing.clone()).unwrap_or_default());
    let errors = RwSignal::new(Vec::<(String, String)>::new());
    let saving = RwSignal::new(false);
    let error_of = move |field: &'static str| {
        Signal::derive(move || {
            errors.with(|e| {
                e.iter()
                    .find(|(f, _)| f == field || f.starts_with(&format!("{field}.")))
                    .map(|(_, m)| m.clone())
            })
        })
    };
    // Checked here as typed; the server's tree errors (a capacity above the parent's) come on
    // top until the next save.
    let capacity_invalid = Signal::derive(move || {
        rows.get()
            .iter()
            .any(|r| r.name.get().trim().is_empty() || amount_invalid(&r.amount.get()))
            .then(|| i18n.t(k!("form.quantity")).to_owned())
    });
    let capacity_error = Signal::derive(move || {
        capacity_invalid.get().or_else(|| {
            errors.with(|e| {
                e.iter()
                    .find(|(f, _)| f.starts_with("capacity"))
                    .map(|(_, m)| m.clone())
            })
        })
    });
    // The row the form was opened on: a change made on it is refused if the queue moved since.
    let shown = StoredValue::new(queue.clone());
    let save = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        errors.set(Vec::new());
        if name.get_untracked().trim().is_empty() {
            errors.set(vec![("name".into(), i18n.t(k!("form.required")).to_owned())]);
            return;
        }
        if capacity_invalid.get_untracked().is_some() {
            return;
        }
        let mut capacity = ResourceList::new();
        for r in rows.get_untracked() {
            if let Ok(q) = Quantity::parse(r.amount.get_untracked().trim()) {
                capacity.insert(r.name.get_untracked().trim().to_owned(), q);
            }
        }
        let mut limits = [None, None];
        let mut bad = Vec::new();
        for (slot, (field, typed)) in limits.iter_mut().zip([
            ("defaultRuntimeSeconds", default_runtime.get_untracked()),
            ("maxRuntimeSeconds", max_runtime.get_untracked()),
        ]) {
            match crate::format::runtime_seconds(&typed) {
                Ok(seconds) => *slot = seconds,
                Err(_) => bad.push((field.to_owned(), i18n.t(k!("newJob.runtimeInvalid")).to_owned())),
            }
        }
        let typed_user = run_as_user.get_untracked();
        let uid = match typed_user.trim() {
            "" => None,
            t => match t.parse::<i64>() {
                Ok(u) if (1..=anteroom_shared::api::queues::MAX_RUN_AS_USER).contains(&u) => Some(u),
                _ => {
                    bad.push((
                        "runAsUser".to_owned(),
                        i18n.t(k!("fieldError.runAsUserRange")).to_owned(),
                    ));
                    None
                }
            },
        };
        let shared = sharing.typed().read(i18n);
        if let Err(wrong) = &shared {
            bad.extend(wrong.iter().cloned());
        }
        let (true, Ok(shared)) = (bad.is_empty(), shared) else {
            errors.set(bad);
            return;
        };
        let p = parent.get_untracked();
        let mut body = QueueBody {
            run_as_user: Some(uid),
            default_runtime_seconds: Some(limits[0]),
            max_runtime_seconds: Some(limits[1]),
            name: name.get_untracked().trim().to_owned(),
            display_name: Some(display.get_untracked()).filter(|d| !d.trim().is_empty()),
            open: open.get_untracked(),
            members: members
                .get_untracked()
                .split([',', ' '])
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
            parent: if p.is_empty() { None } else { Some(p) },
            capacity: if capacity.is_empty() { None } else { Some(capacity) },
            // Filled in below: every sharing setting, as shown and edited.
            guarantee: None,
            lending_limit: None,
            weight: None,
            reclaim_min_runtime_seconds: None,
            priority_range: None,
            preempt_within_queue: None,
            max_per_job: None,
        };
        into_body(&mut body, shared);
        let shown = shown.get_value();
        saving.set(true);
        leptos::task::spawn_local(async move {
            let saved = match &shown {
                Some(shown) => crate::api::replace_queue(shown, &body).await,
                None => crate::api::create_queue(&body).await,
            };
            match saved {
                Ok(q) => {
                    toasts.success(i18n.tf(k!("queue.saved"), &[("name", &q.name)]));
                    done.try_run(());
                }
                Err(f) => {
                    let mut fields = i18n.failure_fields(&f);
                    // Tree errors name no field: put them on the one they are about.
                    match f.code.as_str() {
                        "queue_cycle" | "parent_not_found" => fields.push(("parent".into(), i18n.failure(&f))),
                        "capacity_exceeds_parent" => fields.push(("capacity".into(), i18n.failure(&f))),
                        "guarantee_exceeds_parent" | "guarantee_exceeds_capacity" => {
                            fields.push(("guarantee".into(), i18n.failure(&f)))
                        }
                        "queue_exists" => fields.push(("name".into(), i18n.failure(&f))),
                        _ => {}
                    }
                    errors.set(fields);
                    toasts.error(i18n.failure(&f));
                }
            }
            saving.set(false);
        });
    };
    let delete_name = existing.clone();
    let remove = move |_| {
        let Some(n) = delete_name.clone() else { return };
        confirm.ask(i18n.tf(k!("queue.confirmDelete"), &[("name", &n)]), move || {
            leptos::task::spawn_local(async move {
                match crate::api::delete_queue(&n).await {
                    Ok(()) => {
                        toasts.success(i18n.tf(k!("queue.deleted"), &[("name", &n)]));
                        done.try_run(());
                    }
                    Err(f) => toasts.error(i18n.failure(&f)),
                }
            });
        });
    };
    let is_new = existing.is_none();
    let own = existing.clone().unwrap_or_default();
    let name_err = error_of("name");
    let parent_err = error_of("parent");
    view! {
        <form class="space-y-4" on:submit=save novalidate=true data-testid="queue-form">
            <div class="grid gap-3 md:grid-cols-2">
                <Field id="queue-name".into() label=k!("queue.name") hint=Some(k!("queue.nameHint")) error=name_err>
                    <input id="queue-name" class=INPUT type="text" bind:value=name disabled=!is_new
                        aria-invalid=move || name_err.get().is_some().to_string() aria-describedby="queue-name-error queue-name-hint" />
                </Field>
                <Field id="queue-display".into() label=k!("queue.displayName") error=error_of("displayName")>
                    <input id="queue-display" class=INPUT type="text" bind:value=display aria-describedby="queue-display-error" />
                </Field>
                <Field id="queue-parent".into() label=k!("queue.parent") error=parent_err>
                    <select id="queue-parent" class=INPUT on:change=move |ev| parent.set(event_target_value(&ev)) prop:value=move || parent.get()
                        aria-invalid=move || parent_err.get().is_some().to_string() aria-describedby="queue-parent-error">
                        <option value="" selected=move || parent.get().is_empty()>{move || i18n.t(k!("queue.noParent"))}</option>
                        {move || names.get().into_iter().filter(|n| *n != own).map(|n| { let v = n.clone(); view! { <option value=n.clone() selected=move || parent.get() == v>{n.clone()}</option> } }).collect_view()}
                    </select>
                </Field>
                <Field id="queue-members".into() label=k!("queue.membersLabel") hint=Some(k!("queue.membersHint")) error=error_of("members")>
                    <input id="queue-members" class=INPUT type="text" bind:value=members aria-describedby="queue-members-error queue-members-hint" />
                </Field>
            </div>
            <div class="grid gap-3 md:grid-cols-2">
                <Field id="queue-default-runtime".into() label=k!("queue.defaultRuntime") hint=Some(k!("queue.runtimeHint")) error=error_of("defaultRuntimeSeconds")>
                    <input id="queue-default-runtime" class=INPUT type="text" inputmode="decimal" bind:value=default_runtime
                        aria-describedby="queue-default-runtime-error queue-default-runtime-hint" data-testid="queue-default-runtime" />
                </Field>
                <Field id="queue-max-runtime".into() label=k!("queue.maxRuntime") hint=Some(k!("queue.runtimeHint")) error=error_of("maxRuntimeSeconds")>
                    <input id="queue-max-runtime" class=INPUT type="text" inputmode="decimal" bind:value=max_runtime
                        aria-describedby="queue-max-runtime-error queue-max-runtime-hint" data-testid="queue-max-runtime" />
                </Field>
                <Field id="queue-run-as-user".into() label=k!("queue.runAsUser") hint=Some(k!("queue.runAsUserHint")) error=error_of("runAsUser")>
                    <input id="queue-run-as-user" class=INPUT type="text" inputmode="numeric" bind:value=run_as_user
                        aria-describedby="queue-run-as-user-error queue-run-as-user-hint" data-testid="queue-run-as-user" />
                </Field>
            </div>
            <label class="flex items-center gap-2 text-sm" for="queue-open">
                <input type="checkbox" id="queue-open" bind:checked=open />
                {move || i18n.t(k!("queue.openLabel"))}
            </label>
            <AmountList name="capacity" rows=rows legend=k!("queue.capacity") add=k!("queue.addCapacity") new_resource="cpu" error=capacity_error />
            <SharingFields inputs=sharing errors=errors />
            <div class="flex gap-2">
                <button type="submit" class=BUTTON disabled=move || saving.get() data-testid="save-queue">
                    {move || if saving.get() { i18n.t(k!("common.saving")) } else { i18n.t(k!("common.save")) }}
                </button>
                <button type="button" class=BUTTON_SECONDARY on:click=move |_| { done.try_run(()); }>{move || i18n.t(k!("confirm.cancel"))}</button>
                {(!is_new).then(|| view! {
                    <button type="button" class=format!("{BUTTON_DANGER} ml-auto") on:click=remove.clone() data-testid="delete-queue">{move || i18n.t(k!("common.delete"))}</button>
                })}
            </div>
        </form>
    }
}
