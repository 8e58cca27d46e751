//! `/admin/queues`: the queue tree as a table — each queue indented under its parent with who
//! may use it, how many jobs wait in its line, and its capacity against current usage as bars
//! per resource — and, in a side panel, the form that creates or edits a queue (parent
//! select, capacity rows) and deletes it after confirmation. Tree errors (a
//! cycle, a capacity above the parent's, an unknown parent) are shown on their field.

use anteroom_shared::api::queues::{AdminQueue, QueueBody};
use anteroom_shared::scheduling::{Quantity, ResourceList};
use leptos::prelude::*;

use crate::components::bars::QueueCapacityBars;
use crate::components::confirm::use_confirm;
use crate::components::drawer::Drawer;
use crate::components::field::{AmountRows, Field};
use crate::components::toast::use_toasts;
use crate::components::{
    BUTTON, BUTTON_DANGER, BUTTON_SECONDARY, ErrorPanel, INPUT, PageHeader, TD, TH, loaded, use_fetch,
};
use crate::i18n::{k, use_i18n};

/// The queues in tree order (each after its parent, siblings by name) with their depth.
pub fn tree_order(queues: &[AdminQueue]) -> Vec<(usize, AdminQueue)> {
    fn visit(parent: Option<&str>, depth: usize, all: &[AdminQueue], out: &mut Vec<(usize, AdminQueue)>) {
        let mut children: Vec<&AdminQueue> = all.iter().filter(|q| q.parent.as_deref() == parent).collect();
        children.sort_by(|a, b| a.name.cmp(&b.name));
        for c in children {
            if out.iter().any(|(_, q)| q.name == c.name) {
                continue;
            }
            out.push((depth, c.clone()));
            visit(Some(&c.name), depth + 1, all, out);
        }
    }
    let mut out = Vec::new();
    visit(None, 0, queues, &mut out);
    // A queue whose parent is missing from the list still shows, at the root.
    for q in queues {
        if !out.iter().any(|(_, o)| o.name == q.name) {
            out.push((0, q.clone()));
        }
    }
    out
}

/// The indices in `order` (from [`tree_order`]) of the direct children of the queue at `at`
/// (`None`: the roots): the entries one level deeper that follow it before the next entry at
/// its level or above.
pub fn children_in(order: &[(usize, AdminQueue)], at: Option<usize>) -> Vec<usize> {
    let (start, depth) = match at {
        Some(i) => (i + 1, order[i].0 + 1),
        None => (0, 0),
    };
    let mut children = Vec::new();
    for (j, (d, _)) in order.iter().enumerate().skip(start) {
        if *d < depth {
            break;
        }
        if *d == depth {
            children.push(j);
        }
    }
    children
}

/// What the editor is doing.
#[derive(Clone, Debug, PartialEq)]
enum Editing {
    None,
    New,
    Queue(Box<AdminQueue>),
}

/// The page.
#[component]
pub fn AdminQueues() -> impl IntoView {
    let i18n = use_i18n();
    let reload = RwSignal::new(0u64);
    let queues = use_fetch(move || {
        reload.track();
        crate::api::admin_queues()
    });
    let editing = RwSignal::new(Editing::None);
    let names = Signal::derive(move || loaded(queues).into_iter().map(|q| q.name).collect::<Vec<_>>());
    let done = Callback::new(move |_: ()| {
        editing.set(Editing::None);
        reload.update(|r| *r += 1);
    });
    let drawer_title = Signal::derive(move || match editing.get() {
        Editing::Queue(q) => i18n.tf(k!("queue.editNamed"), &[("name", &q.name)]),
        _ => i18n.t(k!("queue.new")).to_owned(),
    });
    view! {
        <section class="space-y-6">
            <PageHeader title=k!("page.adminQueues.title") description=k!("page.adminQueues.description")>
                <button type="button" class=BUTTON on:click=move |_| editing.set(Editing::New) data-testid="add-queue">
                    {move || i18n.t(k!("queue.add"))}
                </button>
            </PageHeader>
            <Drawer open=Signal::derive(move || editing.get() != Editing::None) title=drawer_title
                on_close=Callback::new(move |_| editing.set(Editing::None))>
                {move || match editing.get() {
                    Editing::None => ().into_any(),
                    Editing::New => view! { <QueueForm queue=None names=names done=done /> }.into_any(),
                    Editing::Queue(q) => view! { <QueueForm queue=Some(*q) names=names done=done /> }.into_any(),
                }}
            </Drawer>
            {move || match queues.get() {
                None => view! { <crate::auth::Loading /> }.into_any(),
                Some(Err(f)) => view! { <ErrorPanel failure=f /> }.into_any(),
                Some(Ok(list)) => {
                    // Nested lists: a screen reader says each queue's level and how many
                    // siblings it has, as the indentation shows it; the rows share one grid,
                    // so the columns line up like a table's.
                    let order = std::sync::Arc::new(tree_order(&list));
                    view! {
                        <div class="overflow-x-auto rounded border border-slate-200 bg-white dark:border-slate-700 dark:bg-slate-900">
                            <div class=format!("{ROW} border-b border-slate-200 bg-slate-50 dark:border-slate-700 dark:bg-slate-950") aria-hidden="true">
                                <span class=TH>{move || i18n.t(k!("capacity.queue"))}</span>
                                <span class=TH>{move || i18n.t(k!("queue.access"))}</span>
                                <span class=format!("{TH} text-right")>{move || i18n.t(k!("capacity.waiting"))}</span>
                                <span class=TH>{move || i18n.t(k!("capacity.queueUse"))}</span>
                                <span class=TH></span>
                            </div>
                            <ul class="divide-y divide-slate-100 dark:divide-slate-800" data-testid="queue-tree" aria-label=move || i18n.t(k!("queue.tree"))>
                                {children_in(&order, None).into_iter().map(|i| view! { <QueueRow order=order.clone() at=i editing=editing /> }).collect_view()}
                            </ul>
                        </div>
                    }.into_any()
                }
            }}
        </section>
    }
}

/// The grid every row of the tree shares (name, access, waiting, capacity and use, edit).
const ROW: &str =
    "grid min-w-[52rem] grid-cols-[minmax(12rem,16rem)_9rem_5rem_minmax(18rem,1fr)_auto] items-start gap-x-2";

/// A queue's row and, below it, the list of its children.
#[component]
fn QueueRow(order: std::sync::Arc<Vec<(usize, AdminQueue)>>, at: usize, editing: RwSignal<Editing>) -> AnyView {
    let i18n = use_i18n();
    let (depth, queue) = order[at].clone();
    let children = children_in(&order, Some(at));
    let capacity = queue.capacity.clone().unwrap_or_default();
    let row_name = queue.name.clone();
    let member_count = queue.members.len() as u64;
    let open = queue.open;
    let waiting = queue.waiting;
    let for_edit = queue.clone();
    let edit_name = queue.name.clone();
    let used = queue.used.clone();
    let indent = ["", "pl-5", "pl-10", "pl-14", "pl-20", "pl-24"][depth.min(5)];
    // The display name only when it says more than the name ("Default" for `default` does not).
    let display = Some(queue.display_name.clone()).filter(|d| !d.is_empty() && !d.eq_ignore_ascii_case(&queue.name));
    view! {
        <li>
          <div class=format!("{ROW} py-1") data-testid="queue-row" data-queue=row_name data-depth=depth.to_string()>
            <div class=format!("{TD} {indent}")>
                <span class="inline-flex items-center gap-1">
                    {(depth > 0).then(|| view! { <span aria-hidden="true" class="text-slate-400 dark:text-slate-500">"└"</span> })}
                    <span class="font-semibold" translate="no">{queue.name.clone()}</span>
                </span>
                {display.map(|d| view! { <p class="text-xs text-slate-600 dark:text-slate-300">{d}</p> })}
            </div>
            <div class=format!("{TD} text-xs") data-testid="queue-access">
                {move || if open {
                    i18n.t(k!("queue.openToAll")).to_owned()
                } else {
                    i18n.tp(k!("queue.members.one"), k!("queue.members.other"), member_count, &[])
                }}
            </div>
            // The column headings are for the eye only (the rows are a tree, not a table): each
            // figure says what it is to a screen reader.
            <div class=format!("{TD} text-right tabular-nums")>
                <span class="sr-only">{move || i18n.t(k!("capacity.waiting"))}": "</span>
                <span data-testid="queue-waiting">{move || crate::format::number(i18n.locale(), waiting as f64, 0)}</span>
            </div>
            <div class=TD>
                <QueueCapacityBars capacity=capacity used=used root=queue.parent.is_none() />
            </div>
            <div class=TD>
                <button type="button" class=BUTTON_SECONDARY data-testid="edit-queue"
                    aria-label=move || i18n.tf(k!("queue.editNamed"), &[("name", &edit_name)])
                    on:click=move |_| editing.set(Editing::Queue(Box::new(for_edit.clone())))>
                    {move || i18n.t(k!("common.edit"))}
                </button>
            </div>
          </div>
          {(!children.is_empty()).then(|| view! {
              <ul class="divide-y divide-slate-100 dark:divide-slate-800">
                  {children.into_iter().map(|i| view! { <QueueRow order=order.clone() at=i editing=editing /> }).collect_view()}
              </ul>
          })}
        </li>
    }
    .into_any()
}

#[component]
fn QueueForm(queue: Option<AdminQueue>, #[prop(into)] names: Signal<Vec<String>>, done: Callback<()>) -> impl IntoView {
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
            .any(|r| r.name.get().trim().is_empty() || Quantity::parse(r.amount.get().trim()).is_err())
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
        if !bad.is_empty() {
            errors.set(bad);
            return;
        }
        let p = parent.get_untracked();
        let body = QueueBody {
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
            // Not on this form yet: left out, so a save keeps what the queue has.
            guarantee: None,
            lending_limit: None,
            weight: None,
            reclaim_min_runtime_seconds: None,
            priority_range: None,
            preempt_within_queue: None,
            max_per_job: None,
        };
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
            <fieldset class="space-y-2" aria-describedby="queue-capacity-error">
                <legend class="text-sm font-medium">{move || i18n.t(k!("queue.capacity"))}</legend>
                <For each=move || rows.get() key=|r| r.id let:r>
                    <div class="flex flex-wrap items-end gap-2" data-testid="capacity-row">
                        <label class="flex flex-col text-xs" for=format!("cap{}-resource", r.id)>
                            {move || i18n.t(k!("queue.resource"))}
                            <input id=format!("cap{}-resource", r.id) class=format!("{INPUT} w-56") type="text" bind:value=r.name placeholder="nvidia.com/a100" />
                        </label>
                        <label class="flex flex-col text-xs" for=format!("cap{}-amount", r.id)>
                            {move || i18n.t(k!("queue.amount"))}
                            <input id=format!("cap{}-amount", r.id) class=format!("{INPUT} w-32") type="text" bind:value=r.amount
                                aria-invalid=move || Quantity::parse(r.amount.get().trim()).is_err().to_string() aria-describedby="queue-capacity-error" />
                        </label>
                        <button type="button" class=BUTTON_SECONDARY on:click=move |_| rows.remove(r.id)>
                            {move || i18n.t(k!("quota.removeRow"))}
                        </button>
                    </div>
                </For>
                <p id="queue-capacity-error" class="text-xs font-medium text-red-700 dark:text-red-300" data-testid="field-error">{move || capacity_error.get()}</p>
                <button type="button" class=BUTTON_SECONDARY on:click=move |_| rows.push("cpu".into(), String::new()) data-testid="add-capacity">
                    {move || i18n.t(k!("queue.addCapacity"))}
                </button>
            </fieldset>
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

#[cfg(test)]
mod tests {
    use super::*;

    fn q(name: &str, parent: Option<&str>) -> AdminQueue {
        AdminQueue {
            name: name.into(),
            display_name: name.into(),
            open: true,
            members: vec![],
            parent: parent.map(Into::into),
            capacity: None,
            used: ResourceList::new(),
            waiting: 0,
            default_runtime_seconds: None,
            max_runtime_seconds: None,
            run_as_user: None,
            sharing: Default::default(),
        }
    }

    #[test]
    fn the_tree_puts_each_queue_under_its_parent_with_its_depth() {
        let order = tree_order(&[
            q("b", Some("root")),
            q("default", None),
            q("root", None),
            q("a1", Some("a")),
            q("a", Some("root")),
        ]);
        let flat: Vec<(usize, &str)> = order.iter().map(|(d, q)| (*d, q.name.as_str())).collect();
        assert_eq!(flat, [(0, "default"), (0, "root"), (1, "a"), (2, "a1"), (1, "b")]);
        // Nested: the roots, then each one's direct children.
        assert_eq!(children_in(&order, None), [0, 1]);
        assert_eq!(children_in(&order, Some(1)), [2, 4]);
        assert_eq!(children_in(&order, Some(2)), [3]);
        assert_eq!(children_in(&order, Some(3)), Vec::<usize>::new());
        assert_eq!(children_in(&order, Some(0)), Vec::<usize>::new());
    }

    #[test]
    fn an_orphan_still_shows() {
        let order = tree_order(&[q("x", Some("gone"))]);
        assert_eq!(order.len(), 1);
    }
}
