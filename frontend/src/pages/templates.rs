//! `/templates`: the caller's saved templates and the published ones — start a job from one,
//! delete one after confirmation. Admins also publish and withdraw templates here and choose,
//! per kind, the published template the submission form starts from (the kind defaults).

use anteroom_shared::api::templates::{JobTemplate, TemplateWrite};
use anteroom_shared::scheduling::JobKind;
use leptos::prelude::*;

use crate::components::badges::kind_label;
use crate::components::confirm::use_confirm;
use crate::components::toast::use_toasts;
use crate::components::{
    BUTTON_DANGER, BUTTON_SECONDARY, CARD, Empty, LINK, PageHeader, TABLE, TD, TH, show, use_fetch,
};
use crate::i18n::{k, use_i18n};

/// The page.
#[component]
pub fn Templates() -> impl IntoView {
    let i18n = use_i18n();
    let auth = crate::auth::use_auth();
    let reload = RwSignal::new(0u64);
    let templates = use_fetch(move || {
        reload.track();
        crate::api::templates()
    });
    view! {
        <section class="space-y-6">
            <PageHeader title=k!("page.templates.title") description=k!("page.templates.description") />
            {show(templates, move |list| {
                let list = list.clone();
                let defaults = list.clone();
                view! {
                    <Show when=move || auth.is_admin()>
                        <KindDefaults templates=defaults.clone() />
                    </Show>
                    {if list.is_empty() {
                        view! { <Empty text=k!("templates.empty") /> }.into_any()
                    } else {
                        view! {
                            <div class="overflow-x-auto rounded border border-slate-200 dark:border-slate-700 bg-white dark:bg-slate-900">
                                <table class=TABLE data-testid="templates-table">
                                    <thead class="bg-slate-50 dark:bg-slate-950"><tr>
                                        <th scope="col" class=TH>{move || i18n.t(k!("templates.name"))}</th>
                                        <th scope="col" class=TH>{move || i18n.t(k!("jobs.kind"))}</th>
                                        <th scope="col" class=TH>{move || i18n.t(k!("templates.image"))}</th>
                                        <th scope="col" class=TH>{move || i18n.t(k!("templates.owner"))}</th>
                                        <th scope="col" class=TH>{move || i18n.t(k!("templates.status"))}</th>
                                        <th scope="col" class=TH>{move || i18n.t(k!("jobs.actions"))}</th>
                                    </tr></thead>
                                    <tbody class="divide-y divide-slate-100 dark:divide-slate-800">
                                        {list.into_iter().map(|t| view! { <TemplateRow template=t reload=reload /> }).collect_view()}
                                    </tbody>
                                </table>
                            </div>
                        }.into_any()
                    }}
                }
            })}
        </section>
    }
}

/// For admins: which published template each kind's form starts from.
#[component]
fn KindDefaults(templates: Vec<JobTemplate>) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <section class=format!("{CARD} space-y-2") data-testid="kind-defaults" aria-labelledby="kind-defaults-title">
            <h2 id="kind-defaults-title" class="text-lg font-semibold">{move || i18n.t(k!("templates.kindDefaults"))}</h2>
            <p class="text-sm text-slate-600 dark:text-slate-300">{move || i18n.t(k!("templates.kindDefaultsHelp"))}</p>
            <dl class="grid gap-x-6 gap-y-1 text-sm sm:grid-cols-[auto_1fr]">
                {JobKind::ALL.iter().map(|kind| {
                    let kind = *kind;
                    let default = templates.iter().find(|t| t.default_for_kind && t.body.kind == kind).map(|t| t.name.clone());
                    view! {
                        <dt class="font-medium">{move || i18n.t(kind_label(kind))}</dt>
                        <dd data-testid="kind-default" data-kind=kind.as_str()>
                            {match default {
                                Some(name) => view! { <span>{name}</span> }.into_any(),
                                None => view! { <span class="text-slate-500 dark:text-slate-400">{move || i18n.t(k!("templates.noDefault"))}</span> }.into_any(),
                            }}
                        </dd>
                    }
                }).collect_view()}
            </dl>
        </section>
    }
}

/// The same template with `change` applied, as a `PUT` body.
fn rewritten(t: &JobTemplate, change: impl FnOnce(&mut TemplateWrite)) -> TemplateWrite {
    let mut write = TemplateWrite {
        name: t.name.clone(),
        description: t.description.clone(),
        published: t.published,
        default_for_kind: t.default_for_kind,
        body: t.body.clone(),
    };
    change(&mut write);
    write
}

#[component]
fn TemplateRow(template: JobTemplate, reload: RwSignal<u64>) -> impl IntoView {
    let i18n = use_i18n();
    let auth = crate::auth::use_auth();
    let toasts = use_toasts();
    let confirm = use_confirm();
    let id = template.id;
    let t = StoredValue::new(template.clone());
    let mine = move || {
        auth.user()
            .is_some_and(|u| u.username == t.with_value(|t| t.owner.clone()))
    };
    // The server decides; these are the buttons it would accept: a user's own private
    // templates, and for admins every template they can see.
    let can_delete = move || auth.is_admin() || (mine() && !t.with_value(|t| t.published));
    let update = move |write: TemplateWrite, done: crate::i18n::Key| {
        let shown = t.get_value();
        leptos::task::spawn_local(async move {
            match crate::api::update_template(&shown, &write).await {
                Ok(saved) => toasts.success(i18n.tf(done, &[("name", &saved.name)])),
                Err(f) => toasts.error(i18n.failure(&f)),
            }
            reload.try_update(|r| *r += 1);
        });
    };
    let toggle_published = move |_| {
        let (write, done) = t.with_value(|t| {
            if t.published {
                // A withdrawn template can no longer be a kind's default.
                (
                    rewritten(t, |w| {
                        w.published = false;
                        w.default_for_kind = false;
                    }),
                    k!("templates.withdrawn"),
                )
            } else {
                (rewritten(t, |w| w.published = true), k!("templates.published"))
            }
        });
        update(write, done);
    };
    let toggle_default = move |_| {
        let (write, done) = t.with_value(|t| {
            let on = !t.default_for_kind;
            (
                rewritten(t, |w| w.default_for_kind = on),
                if on {
                    k!("templates.madeDefault")
                } else {
                    k!("templates.defaultRemoved")
                },
            )
        });
        update(write, done);
    };
    let remove = move |_| {
        let name = t.with_value(|t| t.name.clone());
        confirm.ask(i18n.tf(k!("templates.confirmDelete"), &[("name", &name)]), move || {
            let name = name.clone();
            leptos::task::spawn_local(async move {
                match crate::api::delete_template(id).await {
                    Ok(()) => toasts.success(i18n.tf(k!("templates.deleted"), &[("name", &name)])),
                    Err(f) => toasts.error(i18n.failure(&f)),
                }
                reload.try_update(|r| *r += 1);
            });
        });
    };
    let kind = template.body.kind;
    let image = template
        .body
        .tasks
        .first()
        .map(|task| task.image.clone())
        .unwrap_or_default();
    let published = template.published;
    let is_default = template.default_for_kind;
    let name = template.name.clone();
    let label_name = name.clone();
    let delete_label = name.clone();
    // The admin's buttons say which template they act on, to a screen reader too.
    let row_label = StoredValue::new(name.clone());
    let publish_text = move || {
        i18n.t(if published {
            k!("templates.withdraw")
        } else {
            k!("templates.publish")
        })
    };
    let default_text = move || {
        if is_default {
            i18n.t(k!("templates.removeDefault")).to_owned()
        } else {
            i18n.tf(k!("templates.makeDefault"), &[("kind", i18n.t(kind_label(kind)))])
        }
    };
    view! {
        <tr data-testid="template-row" data-name=name.clone()>
            <td class=TD>
                <span class="block font-medium">{name.clone()}</span>
                {(!template.description.is_empty()).then(|| view! { <span class="block text-slate-600 dark:text-slate-300">{template.description.clone()}</span> })}
            </td>
            <td class=TD>{move || i18n.t(kind_label(kind))}</td>
            <td class=format!("{TD} font-mono text-xs break-all")>{image}</td>
            <td class=TD>{template.owner.clone()}</td>
            <td class=TD>
                <span class="flex flex-wrap gap-1">
                    {published.then(|| view! {
                        <span class="rounded bg-sky-100 dark:bg-sky-900 px-2 py-0.5 text-xs text-sky-900 dark:text-sky-100" data-testid="template-published">{move || i18n.t(k!("templates.isPublished"))}</span>
                    })}
                    {is_default.then(|| view! {
                        <span class=crate::components::palette::TAG data-testid="template-default">{move || i18n.t(k!("templates.isDefault"))}</span>
                    })}
                    {(!published).then(|| view! {
                        <span class="rounded bg-slate-100 dark:bg-slate-800 px-2 py-0.5 text-xs text-slate-700 dark:text-slate-300">{move || i18n.t(k!("templates.isPrivate"))}</span>
                    })}
                </span>
            </td>
            <td class=TD>
                <div class="flex flex-wrap gap-2">
                    <a class=LINK href=format!("/jobs/new?template={id}") data-testid="use-template"
                        aria-label=move || i18n.tf(k!("templates.useNamed"), &[("name", &label_name)])>
                        {move || i18n.t(k!("templates.use"))}
                    </a>
                    <Show when=move || auth.is_admin()>
                        <button type="button" class=BUTTON_SECONDARY on:click=toggle_published data-testid="toggle-published"
                            aria-label=move || format!("{} — {}", publish_text(), row_label.get_value())>
                            {publish_text}
                        </button>
                        {published.then(|| view! {
                            <button type="button" class=BUTTON_SECONDARY on:click=toggle_default data-testid="toggle-default"
                                aria-label=move || format!("{} — {}", default_text(), row_label.get_value())>
                                {default_text}
                            </button>
                        })}
                    </Show>
                    <Show when=can_delete>
                        {
                            let delete_label = delete_label.clone();
                            view! {
                                <button type="button" class=BUTTON_DANGER on:click=remove data-testid="delete-template"
                                    aria-label=move || i18n.tf(k!("templates.deleteNamed"), &[("name", &delete_label)])>
                                    {move || i18n.t(k!("common.delete"))}
                                </button>
                            }
                        }
                    </Show>
                </div>
            </td>
        </tr>
    }
}
