//! `/admin/tolerations`: the toleration rules as a table — each target (an accelerator
//! resource pattern or a queue), its tolerations, a description — beside the taints the nodes
//! carry and the rules that tolerate each; in a side panel, the form (key / operator / value /
//! effect rows) that creates, saves and deletes (after confirmation) a rule. Invalid input is marked on its field
//! before any request, by the same check the server runs (`TolerationRuleBody::problems`).

use anteroom_shared::api::tolerations::{TolerationRule, TolerationRuleBody};
use anteroom_shared::scheduling::TolerationOperator;
use leptos::prelude::*;

use crate::components::confirm::use_confirm;
use crate::components::drawer::Drawer;
use crate::components::field::Field;
use crate::components::toast::use_toasts;
use crate::components::{
    BUTTON, BUTTON_DANGER, BUTTON_SECONDARY, Empty, ErrorPanel, INPUT, PageHeader, loaded, use_fetch,
};
use crate::i18n::{k, use_i18n};

mod form;
mod overview;
use form::*;

/// What the side panel edits.
#[derive(Clone, Debug, PartialEq)]
enum Editing {
    None,
    New,
    Rule(Box<TolerationRule>),
}

/// The page.
#[component]
pub fn AdminTolerations() -> impl IntoView {
    let i18n = use_i18n();
    let reload = RwSignal::new(0u64);
    let rules = use_fetch(move || {
        reload.track();
        crate::api::toleration_rules()
    });
    let nodes = use_fetch(crate::api::nodes);
    let queues = use_fetch(crate::api::admin_queues);
    let editing = RwSignal::new(Editing::None);
    let queue_names = Signal::derive(move || loaded(queues).into_iter().map(|q| q.name).collect::<Vec<_>>());
    let done = Callback::new(move |_: ()| {
        editing.set(Editing::None);
        reload.update(|r| *r += 1);
    });
    let drawer_title = Signal::derive(move || match editing.get() {
        Editing::Rule(r) => i18n.tf(
            k!("toleration.editNamed"),
            &[("target", &target_text(i18n, r.resource.as_deref(), r.queue.as_deref()))],
        ),
        _ => i18n.t(k!("toleration.add")).to_owned(),
    });
    view! {
        <section class="space-y-6">
            <PageHeader title=k!("page.adminTolerations.title") description=k!("page.adminTolerations.description")>
                <button type="button" class=BUTTON on:click=move |_| editing.set(Editing::New) data-testid="add-toleration-rule">
                    {move || i18n.t(k!("toleration.add"))}
                </button>
            </PageHeader>
            <p class=format!("{} p-3 text-sm", crate::components::palette::PANEL) data-testid="toleration-explanation">
                {move || i18n.t(k!("toleration.explanation"))}
            </p>
            <Drawer open=Signal::derive(move || editing.get() != Editing::None) title=drawer_title
                on_close=Callback::new(move |_| editing.set(Editing::None))>
                {move || match editing.get() {
                    Editing::None => ().into_any(),
                    Editing::New => view! { <RuleCard rule=None queues=queue_names done=done /> }.into_any(),
                    Editing::Rule(r) => view! { <RuleCard rule=Some(*r) queues=queue_names done=done /> }.into_any(),
                }}
            </Drawer>
            <div class="grid gap-6 xl:grid-cols-[3fr_2fr]">
                <section class="space-y-2" aria-labelledby="rules-title">
                    <h2 id="rules-title" class="text-lg font-semibold">{move || i18n.t(k!("toleration.rules"))}</h2>
                    {move || match rules.get() {
                        None => view! { <crate::auth::Loading /> }.into_any(),
                        Some(Err(f)) => view! { <ErrorPanel failure=f /> }.into_any(),
                        Some(Ok(list)) if list.is_empty() => view! { <Empty text=k!("toleration.empty") /> }.into_any(),
                        Some(Ok(list)) => view! { <overview::RuleTable rules=list editing=editing /> }.into_any(),
                    }}
                </section>
                <section class="space-y-2" aria-labelledby="taints-title">
                    <h2 id="taints-title" class="text-lg font-semibold">{move || i18n.t(k!("toleration.nodeTaints"))}</h2>
                    {move || match nodes.get() {
                        None => view! { <crate::auth::Loading /> }.into_any(),
                        Some(Err(f)) => view! { <ErrorPanel failure=f /> }.into_any(),
                        Some(Ok(list)) => view! { <overview::TaintTable nodes=list rules=loaded(rules) /> }.into_any(),
                    }}
                </section>
            </div>
        </section>
    }
}

#[component]
fn RuleCard(
    rule: Option<TolerationRule>,
    #[prop(into)] queues: Signal<Vec<String>>,
    done: Callback<()>,
) -> impl IntoView {
    let i18n = use_i18n();
    let toasts = use_toasts();
    let confirm = use_confirm();
    let id = rule.as_ref().map(|r| r.id);
    // The rule the form was opened on: a change made on it is refused if it moved since.
    let shown = StoredValue::new(rule.clone());
    let prefix = match id {
        Some(id) => format!("tol{id}"),
        None => "tol-new".to_owned(),
    };
    let stored_resource = rule.as_ref().and_then(|r| r.resource.clone());
    let stored_queue = rule.as_ref().and_then(|r| r.queue.clone());
    let kind = RwSignal::new(if stored_queue.is_some() {
        TargetKind::Queue
    } else {
        TargetKind::Resource
    });
    let resource = RwSignal::new(stored_resource.clone().unwrap_or_default());
    let queue = RwSignal::new(stored_queue.clone().unwrap_or_default());
    let rows = TolerationRows::new(
        &rule
            .as_ref()
            .map_or_else(|| vec![new_toleration()], |r| r.tolerations.clone()),
    );
    let description = RwSignal::new(rule.as_ref().map(|r| r.description.clone()).unwrap_or_default());
    let saving = RwSignal::new(false);
    // A save was tried: from then on, empty required fields are marked too.
    let tried = RwSignal::new(false);
    let server_errors = RwSignal::new(Vec::<(String, Problem)>::new());

    let body = move || TolerationRuleBody {
        resource: (kind.get() == TargetKind::Resource).then(|| resource.get().trim().to_owned()),
        queue: (kind.get() == TargetKind::Queue).then(|| queue.get()),
        tolerations: rows.get().iter().map(TolerationRow::toleration).collect(),
        description: description.get().trim().to_owned(),
    };
    let problems = Memo::new(move |_| body().problems());
    // The problem of `field`: the shared check's (when `shown`), else the server's last answer.
    let problem_of = move |field: &str, shown: bool| -> Option<Problem> {
        let client = problems.with(|ps| ps.iter().find(|(f, _)| f == field).map(|(_, m)| Problem::of(m)));
        client
            .filter(|_| shown)
            .or_else(|| server_errors.with(|e| e.iter().find(|(f, _)| f == field).map(|(_, p)| *p)))
    };
    let text_of = move |p: Option<Problem>| p.map(|p| i18n.t(p.key()).to_owned());
    let resource_err =
        Signal::derive(move || text_of(problem_of("resource", tried.get() || !resource.get().trim().is_empty())));
    let queue_err = Signal::derive(move || text_of(problem_of("queue", tried.get())));
    let count_err = Signal::derive(move || text_of(problem_of("tolerations", true)));
    let description_err = Signal::derive(move || text_of(problem_of("description", true)));
    let row_problem = move |row: TolerationRow| {
        Signal::derive(move || {
            let i = rows.index_of(row.id)?;
            problem_of(&format!("tolerations[{i}]"), tried.get() || row.typed())
        })
    };

    let save = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        tried.set(true);
        if !problems.get_untracked().is_empty() {
            toasts.error(i18n.t(k!("form.fixErrors")).to_owned());
            return;
        }
        let b = body();
        saving.set(true);
        leptos::task::spawn_local(async move {
            let saved = match shown.get_value() {
                Some(rule) => crate::api::replace_toleration_rule(&rule, &b).await,
                None => crate::api::save_toleration_rule(None, &b).await,
            };
            match saved {
                Ok(saved) => {
                    server_errors.set(Vec::new());
                    let target = target_text(i18n, saved.resource.as_deref(), saved.queue.as_deref());
                    toasts.success(i18n.tf(k!("toleration.saved"), &[("target", &target)]));
                    done.try_run(());
                }
                Err(f) => {
                    let mut fields: Vec<(String, Problem)> = i18n
                        .failure_fields(&f)
                        .into_iter()
                        .map(|(field, m)| (field, Problem::of(&m)))
                        .collect();
                    if f.code == "queue_not_found" {
                        fields.push(("queue".into(), Problem::UnknownQueue));
                    }
                    server_errors.set(fields);
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
        // The rule as stored is the one deleted, whatever was typed since.
        let target = target_text(i18n, stored_resource.as_deref(), stored_queue.as_deref());
        confirm.ask(
            i18n.tf(k!("toleration.confirmDelete"), &[("target", &target)]),
            move || {
                leptos::task::spawn_local(async move {
                    match crate::api::delete_toleration_rule(id).await {
                        Ok(()) => {
                            toasts.success(i18n.tf(k!("toleration.deleted"), &[("target", &target)]));
                            done.try_run(());
                        }
                        Err(f) => toasts.error(i18n.failure(&f)),
                    }
                });
            },
        );
    };

    let stored_prefix = StoredValue::new(prefix.clone());
    let fid = move |what: &str| format!("{}-{what}", stored_prefix.get_value());
    let described = move |what: &str| format!("{0}-error {0}-hint", fid(what));
    view! {
        <form class="space-y-4" on:submit=save novalidate=true data-testid="toleration-card"
            data-rule=id.map_or_else(|| "new".to_owned(), |id| id.to_string())
            data-kind=move || kind.get().code()
            data-target=move || if kind.get() == TargetKind::Queue { queue.get() } else { resource.get() }>
            <div class="grid gap-3 md:grid-cols-2">
                <Field id=fid("kind") label=k!("toleration.targetKind") error=Signal::derive(|| None::<String>)>
                    <select id=fid("kind") class=INPUT on:change=move |ev| kind.set(TargetKind::from_code(&event_target_value(&ev)))
                        prop:value=move || kind.get().code() aria-describedby=fid("kind") + "-error">
                        <option value="resource" selected=move || kind.get() == TargetKind::Resource>{move || i18n.t(k!("toleration.kindResource"))}</option>
                        <option value="queue" selected=move || kind.get() == TargetKind::Queue>{move || i18n.t(k!("toleration.kindQueue"))}</option>
                    </select>
                </Field>
                {move || match kind.get() {
                    TargetKind::Resource => view! {
                        <Field id=fid("resource") label=k!("toleration.resource") hint=Some(k!("toleration.resourceHint")) error=resource_err>
                            <input id=fid("resource") class=INPUT type="text" bind:value=resource spellcheck="false"
                                autocomplete="off" aria-invalid=move || resource_err.get().is_some().to_string() aria-describedby=described("resource") />
                        </Field>
                    }.into_any(),
                    TargetKind::Queue => view! {
                        <Field id=fid("queue") label=k!("toleration.queue") hint=Some(k!("toleration.queueHint")) error=queue_err>
                            <select id=fid("queue") class=INPUT on:change=move |ev| queue.set(event_target_value(&ev)) prop:value=move || queue.get()
                                aria-invalid=move || queue_err.get().is_some().to_string() aria-describedby=described("queue")>
                                <option value="" selected=move || queue.get().is_empty()>{move || i18n.t(k!("toleration.queueChoose"))}</option>
                                {move || queues.get().into_iter().map(|q| { let v = q.clone(); view! { <option value=q.clone() selected=move || queue.get() == v>{q.clone()}</option> } }).collect_view()}
                            </select>
                        </Field>
                    }.into_any(),
                }}
            </div>
            <fieldset class="space-y-2" aria-describedby=described("tolerations")>
                <legend class="text-sm font-medium">{move || i18n.t(k!("toleration.tolerations"))}</legend>
                <p id=fid("tolerations-hint") class="text-xs text-slate-600 dark:text-slate-300">{move || i18n.t(k!("toleration.tolerationsHint"))}</p>
                <For each=move || rows.get() key=|r| r.id let:row>
                    {
                        let problem = row_problem(row);
                        let key_invalid = move || problem.get().is_some_and(|p| !p.on_value());
                        let value_invalid = move || problem.get().is_some_and(Problem::on_value);
                        let rid = format!("{}-t{}", prefix, row.id);
                        view! {
                            <div class="flex flex-wrap items-end gap-2" data-testid="toleration-row">
                                <label class="flex flex-col text-xs" for=format!("{rid}-key")>
                                    {move || i18n.t(k!("toleration.key"))}
                                    <input id=format!("{rid}-key") class=format!("{INPUT} w-40") type="text" bind:value=row.key
                                        spellcheck="false" autocomplete="off"
                                        aria-invalid=move || key_invalid().to_string() aria-describedby=format!("{rid}-error") />
                                </label>
                                <label class="flex flex-col text-xs" for=format!("{rid}-operator")>
                                    {move || i18n.t(k!("toleration.operator"))}
                                    <select id=format!("{rid}-operator") class=format!("{INPUT} w-28") prop:value=move || operator_code(row.operator.get())
                                        on:change=move |ev| row.operator.set(operator_from_code(&event_target_value(&ev)))>
                                        <option value="Equal" selected=move || row.operator.get() == TolerationOperator::Equal>{move || i18n.t(k!("toleration.operatorEqual"))}</option>
                                        <option value="Exists" selected=move || row.operator.get() == TolerationOperator::Exists>{move || i18n.t(k!("toleration.operatorExists"))}</option>
                                    </select>
                                </label>
                                <label class="flex flex-col text-xs" for=format!("{rid}-value")>
                                    {move || i18n.t(k!("toleration.value"))}
                                    <input id=format!("{rid}-value") class=format!("{INPUT} w-24") type="text" bind:value=row.value
                                        spellcheck="false" autocomplete="off"
                                        aria-invalid=move || value_invalid().to_string() aria-describedby=format!("{rid}-error") />
                                </label>
                                <label class="flex flex-col text-xs" for=format!("{rid}-effect")>
                                    {move || i18n.t(k!("toleration.effect"))}
                                    <select id=format!("{rid}-effect") class=format!("{INPUT} w-44") prop:value=move || effect_code(row.effect.get())
                                        on:change=move |ev| row.effect.set(effect_from_code(&event_target_value(&ev)))>
                                        {EFFECTS.into_iter().map(|(e, code)| view! {
                                            <option value=code selected=move || row.effect.get() == e>{move || i18n.t(effect_label(e))}</option>
                                        }).collect_view()}
                                    </select>
                                </label>
                                <button type="button" class=BUTTON_SECONDARY on:click=move |_| rows.remove(row.id) data-testid="remove-toleration">
                                    {move || i18n.t(k!("toleration.removeRow"))}
                                </button>
                                <span id=format!("{rid}-error") class="basis-full text-xs font-medium text-red-700 dark:text-red-300" data-testid="field-error">
                                    {move || problem.get().map(|p| view! { <span aria-hidden="true">"⚠ "</span>{i18n.t(p.key())} })}
                                </span>
                            </div>
                        }
                    }
                </For>
                <p id=fid("tolerations-error") class="text-xs font-medium text-red-700 dark:text-red-300" data-testid="field-error">
                    {move || count_err.get().map(|e| view! { <span aria-hidden="true">"⚠ "</span>{e} })}
                </p>
                <button type="button" class=BUTTON_SECONDARY on:click=move |_| rows.push(&new_toleration()) data-testid="add-toleration">
                    {move || i18n.t(k!("toleration.addRow"))}
                </button>
            </fieldset>
            <Field id=fid("description") label=k!("toleration.description") hint=Some(k!("toleration.descriptionHint")) error=description_err>
                <input id=fid("description") class=INPUT type="text" bind:value=description
                    aria-invalid=move || description_err.get().is_some().to_string() aria-describedby=described("description") />
            </Field>
            <div class="flex gap-2">
                <button type="submit" class=BUTTON disabled=move || saving.get() data-testid="save-toleration-rule">
                    {move || if saving.get() { i18n.t(k!("common.saving")) } else { i18n.t(k!("common.save")) }}
                </button>
                <button type="button" class=BUTTON_DANGER on:click=remove data-testid="delete-toleration-rule">
                    {move || i18n.t(if id.is_some() { k!("common.delete") } else { k!("confirm.cancel") })}
                </button>
            </div>
        </form>
    }
}
