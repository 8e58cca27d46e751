//! `/admin/tolerations`: one card per toleration rule — its target (an accelerator resource
//! pattern or a queue), its tolerations as key / operator / value / effect rows, a description
//! — created, saved and deleted (after confirmation) here. Invalid input is marked on its field
//! before any request, by the same check the server runs (`TolerationRuleBody::problems`).

use anteroom_shared::api::tolerations::{TolerationRule, TolerationRuleBody};
use anteroom_shared::scheduling::{TaintEffect, Toleration, TolerationOperator};
use leptos::prelude::*;

use crate::components::confirm::use_confirm;
use crate::components::field::Field;
use crate::components::toast::use_toasts;
use crate::components::{
    BUTTON, BUTTON_DANGER, BUTTON_SECONDARY, CARD, Empty, ErrorPanel, INPUT, PageHeader, loaded, use_fetch,
};
use crate::i18n::{I18n, Key, k, use_i18n};

/// The page.
#[component]
pub fn AdminTolerations() -> impl IntoView {
    let i18n = use_i18n();
    let reload = RwSignal::new(0u64);
    let rules = use_fetch(move || {
        reload.track();
        crate::api::toleration_rules()
    });
    let queues = use_fetch(crate::api::admin_queues);
    let adding = RwSignal::new(false);
    let queue_names = Signal::derive(move || loaded(queues).into_iter().map(|q| q.name).collect::<Vec<_>>());
    let done = Callback::new(move |_: ()| {
        adding.set(false);
        reload.update(|r| *r += 1);
    });
    view! {
        <section class="space-y-6">
            <PageHeader title=k!("page.adminTolerations.title") description=k!("page.adminTolerations.description")>
                <button type="button" class=BUTTON on:click=move |_| adding.set(true) disabled=move || adding.get() data-testid="add-toleration-rule">
                    {move || i18n.t(k!("toleration.add"))}
                </button>
            </PageHeader>
            <p class="rounded border border-sky-200 bg-sky-50 p-3 text-sm text-sky-900" data-testid="toleration-explanation">
                {move || i18n.t(k!("toleration.explanation"))}
            </p>
            <Show when=move || adding.get()>
                <RuleCard rule=None queues=queue_names done=done />
            </Show>
            {move || match rules.get() {
                None => view! { <crate::auth::Loading /> }.into_any(),
                Some(Err(f)) => view! { <ErrorPanel failure=f /> }.into_any(),
                Some(Ok(list)) if list.is_empty() && !adding.get() => view! { <Empty text=k!("toleration.empty") /> }.into_any(),
                Some(Ok(list)) => view! {
                    <div class="grid gap-4 xl:grid-cols-2">
                        {list.into_iter().map(|r| view! { <RuleCard rule=Some(r) queues=queue_names done=done /> }).collect_view()}
                    </div>
                }.into_any(),
            }}
        </section>
    }
}

/// What a rule is for: jobs requesting an accelerator resource, or jobs in a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TargetKind {
    Resource,
    Queue,
}

impl TargetKind {
    fn code(self) -> &'static str {
        match self {
            TargetKind::Resource => "resource",
            TargetKind::Queue => "queue",
        }
    }

    fn from_code(code: &str) -> Self {
        if code == "queue" {
            TargetKind::Queue
        } else {
            TargetKind::Resource
        }
    }
}

/// A rule's target in words: the resource pattern as written, or "queue <name>".
fn target_text(i18n: I18n, resource: Option<&str>, queue: Option<&str>) -> String {
    match (resource, queue) {
        (Some(r), _) => r.to_owned(),
        (None, Some(q)) => i18n.tf(k!("toleration.queueTarget"), &[("name", q)]),
        (None, None) => String::new(),
    }
}

fn operator_code(op: TolerationOperator) -> &'static str {
    match op {
        TolerationOperator::Equal => "Equal",
        TolerationOperator::Exists => "Exists",
    }
}

fn operator_from_code(code: &str) -> TolerationOperator {
    if code == "Exists" {
        TolerationOperator::Exists
    } else {
        TolerationOperator::Equal
    }
}

/// The effects offered, `None` ("any effect") first: the select's value and label of each.
const EFFECTS: [(Option<TaintEffect>, &str); 4] = [
    (None, ""),
    (Some(TaintEffect::NoSchedule), "NoSchedule"),
    (Some(TaintEffect::PreferNoSchedule), "PreferNoSchedule"),
    (Some(TaintEffect::NoExecute), "NoExecute"),
];

fn effect_code(effect: Option<TaintEffect>) -> &'static str {
    EFFECTS.iter().find(|(e, _)| *e == effect).map_or("", |(_, c)| c)
}

fn effect_from_code(code: &str) -> Option<TaintEffect> {
    EFFECTS.iter().find(|(_, c)| *c == code).and_then(|(e, _)| *e)
}

fn effect_label(effect: Option<TaintEffect>) -> Key {
    match effect {
        None => k!("toleration.effectAny"),
        Some(TaintEffect::NoSchedule) => k!("toleration.effectNoSchedule"),
        Some(TaintEffect::PreferNoSchedule) => k!("toleration.effectPreferNoSchedule"),
        Some(TaintEffect::NoExecute) => k!("toleration.effectNoExecute"),
    }
}

/// A problem of a rule, from the shared check (the client's, or the server's 422 with the same
/// English messages) or the server's `queue_not_found`; shown translated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Problem {
    Target,
    Resource,
    Queue,
    UnknownQueue,
    Count,
    Key,
    KeyRequired,
    ExistsValue,
    Value,
    Description,
    /// A message this page was not taught (a newer server): the generic validation text.
    Other,
}

impl Problem {
    /// The problem a message of `TolerationRuleBody::problems` names (a test keeps every
    /// message the shared check can give known here).
    fn of(message: &str) -> Problem {
        match message {
            "a rule names a resource or a queue, not both" | "a rule names a resource or a queue" => Problem::Target,
            "must be 1 to 63 characters" => Problem::Queue,
            "must hold 1 to 16 tolerations" => Problem::Count,
            "at most 200 characters" => Problem::Description,
            "operator Equal needs a key (Exists with no key tolerates every taint)" => Problem::KeyRequired,
            "a rule names the taint key it tolerates" => Problem::KeyRequired,
            "operator Exists takes no value" => Problem::ExistsValue,
            m if m.starts_with("key must") => Problem::Key,
            m if m.starts_with("value must") => Problem::Value,
            m if m.starts_with("must be an accelerator resource") => Problem::Resource,
            _ => Problem::Other,
        }
    }

    fn key(self) -> Key {
        match self {
            Problem::Target => k!("toleration.problem.target"),
            Problem::Resource => k!("toleration.problem.resource"),
            Problem::Queue => k!("toleration.problem.queue"),
            Problem::UnknownQueue => k!("error.queue_not_found"),
            Problem::Count => k!("toleration.problem.count"),
            Problem::Key => k!("toleration.problem.key"),
            Problem::KeyRequired => k!("toleration.problem.keyRequired"),
            Problem::ExistsValue => k!("toleration.problem.existsValue"),
            Problem::Value => k!("toleration.problem.value"),
            Problem::Description => k!("toleration.problem.description"),
            Problem::Other => k!("error.validation_failed"),
        }
    }

    /// Whether a toleration's problem is its value's (else its key's, the operator's partner).
    fn on_value(self) -> bool {
        matches!(self, Problem::ExistsValue | Problem::Value)
    }
}

/// One toleration row as edited.
#[derive(Clone, Copy, Debug)]
struct TolerationRow {
    /// Stable id: the key of the row in its `<For>`, and part of its inputs' ids.
    id: u64,
    key: RwSignal<String>,
    operator: RwSignal<TolerationOperator>,
    value: RwSignal<String>,
    effect: RwSignal<Option<TaintEffect>>,
}

impl TolerationRow {
    /// The toleration the row says (reactive); blank key and value are absent, as Kubernetes
    /// writes them.
    fn toleration(&self) -> Toleration {
        let text = |s: RwSignal<String>| Some(s.get().trim().to_owned()).filter(|t| !t.is_empty());
        Toleration {
            key: text(self.key),
            operator: self.operator.get(),
            value: text(self.value),
            effect: self.effect.get(),
        }
    }

    /// Whether anything was typed into the row.
    fn typed(&self) -> bool {
        !self.key.get().trim().is_empty() || !self.value.get().trim().is_empty()
    }
}

/// The rows of a rule, with the ids handed out so far.
#[derive(Clone, Copy)]
struct TolerationRows {
    rows: RwSignal<Vec<TolerationRow>>,
    next: StoredValue<u64>,
}

impl TolerationRows {
    fn new(initial: &[Toleration]) -> Self {
        let list = TolerationRows {
            rows: RwSignal::new(Vec::new()),
            next: StoredValue::new(0),
        };
        for t in initial {
            list.push(t);
        }
        list
    }

    fn push(&self, t: &Toleration) {
        self.next.update_value(|n| *n += 1);
        let row = TolerationRow {
            id: self.next.get_value(),
            key: RwSignal::new(t.key.clone().unwrap_or_default()),
            operator: RwSignal::new(t.operator),
            value: RwSignal::new(t.value.clone().unwrap_or_default()),
            effect: RwSignal::new(t.effect),
        };
        self.rows.update(|rs| rs.push(row));
    }

    fn remove(&self, id: u64) {
        self.rows.update(|rs| rs.retain(|r| r.id != id));
    }

    fn get(&self) -> Vec<TolerationRow> {
        self.rows.get()
    }

    /// The position of row `id`, which is the index the check's `tolerations[i]` names.
    fn index_of(&self, id: u64) -> Option<usize> {
        self.rows.with(|rs| rs.iter().position(|r| r.id == id))
    }
}

/// A new row's toleration: the effect GPU and dedicated node pools commonly taint with.
fn new_toleration() -> Toleration {
    Toleration {
        effect: Some(TaintEffect::NoSchedule),
        ..Toleration::default()
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
            match crate::api::save_toleration_rule(id, &b).await {
                Ok(saved) => {
                    server_errors.set(Vec::new());
                    let target = target_text(i18n, saved.resource.as_deref(), saved.queue.as_deref());
                    toasts.success(i18n.tf(k!("toleration.saved"), &[("target", &target)]));
                    done.try_run(());
                }
                Err(f) => {
                    let mut fields: Vec<(String, Problem)> = f
                        .fields()
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
        <form class=format!("{CARD} space-y-4") on:submit=save novalidate=true data-testid="toleration-card"
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
                <p id=fid("tolerations-hint") class="text-xs text-slate-600">{move || i18n.t(k!("toleration.tolerationsHint"))}</p>
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
                                <span id=format!("{rid}-error") class="basis-full text-xs font-medium text-red-700" data-testid="field-error">
                                    {move || problem.get().map(|p| view! { <span aria-hidden="true">"⚠ "</span>{i18n.t(p.key())} })}
                                </span>
                            </div>
                        }
                    }
                </For>
                <p id=fid("tolerations-error") class="text-xs font-medium text-red-700" data-testid="field-error">
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

#[cfg(test)]
mod tests {
    use anteroom_shared::scheduling::{resource_pattern_problem, toleration_problem};

    use super::*;

    fn body(
        resource: Option<&str>,
        queue: Option<&str>,
        tolerations: Vec<Toleration>,
        description: &str,
    ) -> TolerationRuleBody {
        TolerationRuleBody {
            resource: resource.map(str::to_owned),
            queue: queue.map(str::to_owned),
            tolerations,
            description: description.to_owned(),
        }
    }

    fn problem(b: &TolerationRuleBody, field: &str) -> Problem {
        let ps = b.problems();
        let (_, m) = ps
            .iter()
            .find(|(f, _)| f == field)
            .unwrap_or_else(|| panic!("{field}: {ps:?}"));
        Problem::of(m)
    }

    #[test]
    fn every_problem_the_shared_check_gives_is_translated_as_itself() {
        let ok = Toleration {
            key: Some("dedicated".into()),
            value: Some("ml".into()),
            ..Toleration::default()
        };
        let with = |key: Option<&str>, operator, value: Option<&str>| Toleration {
            key: key.map(str::to_owned),
            operator,
            value: value.map(str::to_owned),
            effect: None,
        };
        use TolerationOperator::{Equal, Exists};
        let one = |t: Toleration| vec![t];
        let cases = [
            (
                body(Some("x/y"), Some("q"), one(ok.clone()), ""),
                "queue",
                Problem::Target,
            ),
            (body(None, None, one(ok.clone()), ""), "resource", Problem::Target),
            (
                body(Some("a100"), None, one(ok.clone()), ""),
                "resource",
                Problem::Resource,
            ),
            (body(None, Some(""), one(ok.clone()), ""), "queue", Problem::Queue),
            (body(None, Some("q"), vec![], ""), "tolerations", Problem::Count),
            (
                body(None, Some("q"), one(with(Some("Bad Key"), Equal, None)), ""),
                "tolerations[0]",
                Problem::Key,
            ),
            (
                body(None, Some("q"), one(with(None, Equal, None)), ""),
                "tolerations[0]",
                Problem::KeyRequired,
            ),
            (
                body(None, Some("q"), one(with(Some("k"), Exists, Some("v"))), ""),
                "tolerations[0]",
                Problem::ExistsValue,
            ),
            (
                body(None, Some("q"), one(with(Some("k"), Equal, Some("bad value"))), ""),
                "tolerations[0]",
                Problem::Value,
            ),
            (
                body(None, Some("q"), one(ok.clone()), &"x".repeat(201)),
                "description",
                Problem::Description,
            ),
        ];
        for (b, field, want) in cases {
            assert_eq!(problem(&b, field), want, "{b:?}");
        }
        // The shared functions' messages directly, so a new message cannot slip by as Other.
        for t in [
            with(Some("Bad Key"), Equal, None),
            with(None, Equal, None),
            with(Some("k"), Exists, Some("v")),
            with(Some("k"), Equal, Some("-v")),
        ] {
            let m = toleration_problem(&t).expect("a problem");
            assert_ne!(Problem::of(m), Problem::Other, "{m}");
        }
        assert_eq!(
            Problem::of(resource_pattern_problem("nope").unwrap()),
            Problem::Resource
        );
        assert_eq!(Problem::of("something new"), Problem::Other);
    }

    #[test]
    fn a_value_problem_marks_the_value_and_a_key_problem_the_key() {
        assert!(Problem::Value.on_value() && Problem::ExistsValue.on_value());
        assert!(!Problem::Key.on_value() && !Problem::KeyRequired.on_value() && !Problem::Other.on_value());
    }

    #[test]
    fn the_select_codes_round_trip() {
        for (e, code) in EFFECTS {
            assert_eq!(effect_code(e), code);
            assert_eq!(effect_from_code(code), e);
        }
        for op in [TolerationOperator::Equal, TolerationOperator::Exists] {
            assert_eq!(operator_from_code(operator_code(op)), op);
        }
        for kind in [TargetKind::Resource, TargetKind::Queue] {
            assert_eq!(TargetKind::from_code(kind.code()), kind);
        }
    }
}
