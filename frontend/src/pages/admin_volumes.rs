//! `/admin/volumes`: the catalogue of data jobs may mount by name — a PersistentVolumeClaim or
//! an NFS export, where it is mounted, read-only or not, which queues may use it — as a table;
//! in a side panel, the form that creates, saves and deletes (after confirmation) a volume. The server checks every
//! field; what it refuses is marked on the field.

use anteroom_shared::api::volumes::{Volume, VolumeBody, VolumeSource};
use leptos::prelude::*;

use crate::components::confirm::use_confirm;
use crate::components::drawer::Drawer;
use crate::components::field::Field;
use crate::components::toast::use_toasts;
use crate::components::{
    BUTTON, BUTTON_DANGER, BUTTON_SECONDARY, Empty, ErrorPanel, INPUT, PageHeader, TABLE, TD, TH, use_fetch,
};
use crate::i18n::{k, use_i18n};

/// What the side panel edits.
#[derive(Clone, Debug, PartialEq)]
enum Editing {
    None,
    New,
    Volume(Box<Volume>),
}

/// The page.
#[component]
pub fn AdminVolumes() -> impl IntoView {
    let i18n = use_i18n();
    let reload = RwSignal::new(0u64);
    let volumes = use_fetch(move || {
        reload.track();
        crate::api::admin_volumes()
    });
    let editing = RwSignal::new(Editing::None);
    let done = Callback::new(move |_: ()| {
        editing.set(Editing::None);
        reload.update(|r| *r += 1);
    });
    let drawer_title = Signal::derive(move || match editing.get() {
        Editing::Volume(v) => i18n.tf(k!("volume.editNamed"), &[("name", &v.name)]),
        _ => i18n.t(k!("volume.add")).to_owned(),
    });
    view! {
        <section class="space-y-6">
            <PageHeader title=k!("page.adminVolumes.title") description=k!("page.adminVolumes.description")>
                <button type="button" class=BUTTON on:click=move |_| editing.set(Editing::New) data-testid="add-volume">
                    {move || i18n.t(k!("volume.add"))}
                </button>
            </PageHeader>
            <Drawer open=Signal::derive(move || editing.get() != Editing::None) title=drawer_title
                on_close=Callback::new(move |_| editing.set(Editing::None))>
                {move || match editing.get() {
                    Editing::None => ().into_any(),
                    Editing::New => view! { <VolumeCard volume=None done=done /> }.into_any(),
                    Editing::Volume(v) => view! { <VolumeCard volume=Some(*v) done=done /> }.into_any(),
                }}
            </Drawer>
            {move || match volumes.get() {
                None => view! { <crate::auth::Loading /> }.into_any(),
                Some(Err(f)) => view! { <ErrorPanel failure=f /> }.into_any(),
                Some(Ok(list)) if list.is_empty() => view! { <Empty text=k!("volume.empty") /> }.into_any(),
                Some(Ok(list)) => view! {
                    <div class="overflow-x-auto rounded border border-slate-200 bg-white dark:border-slate-700 dark:bg-slate-900">
                        <table class=TABLE data-testid="volume-table">
                            <thead class="bg-slate-50 dark:bg-slate-950"><tr>
                                <th scope="col" class=TH>{move || i18n.t(k!("volume.name"))}</th>
                                <th scope="col" class=TH>{move || i18n.t(k!("volume.source"))}</th>
                                <th scope="col" class=TH>{move || i18n.t(k!("volume.mountPath"))}</th>
                                <th scope="col" class=TH>{move || i18n.t(k!("volume.queues"))}</th>
                                <th scope="col" class=TH>{move || i18n.t(k!("volume.description"))}</th>
                                <th scope="col" class=TH><span class="sr-only">{move || i18n.t(k!("jobs.actions"))}</span></th>
                            </tr></thead>
                            <tbody class="divide-y divide-slate-100 dark:divide-slate-800">
                                {list.into_iter().map(|v| view! { <VolumeRow volume=v editing=editing /> }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any(),
            }}
        </section>
    }
}

/// A volume's row: where its data comes from, where it is mounted, who may mount it.
#[component]
fn VolumeRow(volume: Volume, editing: RwSignal<Editing>) -> impl IntoView {
    let i18n = use_i18n();
    let source = match &volume.source {
        VolumeSource::Pvc { claim_name } => format!("PVC {claim_name}"),
        VolumeSource::Nfs { server, path } => format!("NFS {server}:{path}"),
    };
    let read_only = volume.read_only;
    let queues = volume.queues.clone();
    let name = volume.name.clone();
    let for_edit = volume.clone();
    view! {
        <tr data-testid="volume-row" data-name=volume.name.clone()>
            <th scope="row" class=format!("{TD} text-left font-medium") translate="no">{volume.name.clone()}</th>
            <td class=TD><code class="text-xs" translate="no">{source}</code></td>
            <td class=TD>
                <code class="text-xs" translate="no">{volume.mount_path.clone()}</code>
                {read_only.then(|| view! { <span class=format!("ml-2 {}", crate::components::palette::TAG)>{move || i18n.t(k!("volume.readOnlyShort"))}</span> })}
            </td>
            <td class=format!("{TD} text-xs")>{move || if queues.is_empty() { i18n.t(k!("volume.allQueues")).to_owned() } else { queues.join(", ") }}</td>
            <td class=format!("{TD} text-xs") translate="no">{volume.description.clone()}</td>
            <td class=TD>
                <button type="button" class=BUTTON_SECONDARY data-testid="edit-volume"
                    aria-label=move || i18n.tf(k!("volume.editNamed"), &[("name", &name)])
                    on:click=move |_| editing.set(Editing::Volume(Box::new(for_edit.clone())))>
                    {move || i18n.t(k!("common.edit"))}
                </button>
            </td>
        </tr>
    }
}

#[component]
fn VolumeCard(volume: Option<Volume>, done: Callback<()>) -> impl IntoView {
    let i18n = use_i18n();
    let toasts = use_toasts();
    let confirm = use_confirm();
    let existing = volume.as_ref().map(|v| v.name.clone());
    // The volume the form was opened on: a change made on it is refused if it moved since.
    let shown = StoredValue::new(volume.clone());
    let prefix = match &existing {
        Some(name) => format!("vol-{name}"),
        None => "vol-new".to_owned(),
    };
    let (pvc, claim, server, path) = match volume.as_ref().map(|v| &v.source) {
        Some(VolumeSource::Pvc { claim_name }) => (true, claim_name.clone(), String::new(), String::new()),
        Some(VolumeSource::Nfs { server, path }) => (false, String::new(), server.clone(), path.clone()),
        None => (true, String::new(), String::new(), String::new()),
    };
    let name = RwSignal::new(volume.as_ref().map(|v| v.name.clone()).unwrap_or_default());
    let is_pvc = RwSignal::new(pvc);
    let claim = RwSignal::new(claim);
    let server = RwSignal::new(server);
    let path = RwSignal::new(path);
    let mount_path = RwSignal::new(volume.as_ref().map(|v| v.mount_path.clone()).unwrap_or_default());
    let read_only = RwSignal::new(volume.as_ref().is_some_and(|v| v.read_only));
    let queues = RwSignal::new(volume.as_ref().map(|v| v.queues.join(", ")).unwrap_or_default());
    let description = RwSignal::new(volume.as_ref().map(|v| v.description.clone()).unwrap_or_default());
    let errors: RwSignal<Vec<(String, String)>> = RwSignal::new(Vec::new());
    let error_of = move |field: &'static str| {
        Signal::derive(move || errors.with(|e| e.iter().find(|(f, _)| f.starts_with(field)).map(|(_, m)| m.clone())))
    };
    let body = move || VolumeBody {
        name: name.get().trim().to_owned(),
        source: if is_pvc.get() {
            VolumeSource::Pvc {
                claim_name: claim.get().trim().to_owned(),
            }
        } else {
            VolumeSource::Nfs {
                server: server.get().trim().to_owned(),
                path: path.get().trim().to_owned(),
            }
        },
        mount_path: mount_path.get().trim().to_owned(),
        read_only: read_only.get(),
        queues: queues
            .get()
            .split([',', ' '])
            .map(str::trim)
            .filter(|q| !q.is_empty())
            .map(str::to_owned)
            .collect(),
        description: description.get().trim().to_owned(),
    };
    let save = {
        move |ev: leptos::ev::SubmitEvent| {
            ev.prevent_default();
            let body = body();
            leptos::task::spawn_local(async move {
                let saved = match shown.get_value() {
                    Some(volume) => crate::api::replace_volume(&volume, &body).await,
                    None => crate::api::save_volume(None, &body).await,
                };
                match saved {
                    Ok(saved) => {
                        errors.set(Vec::new());
                        toasts.success(i18n.tf(k!("volume.saved"), &[("name", &saved.name)]));
                        done.run(());
                    }
                    Err(f) => {
                        errors.set(i18n.failure_fields(&f));
                        toasts.error(i18n.failure(&f));
                    }
                }
            });
        }
    };
    let delete = {
        let existing = existing.clone();
        move |_| {
            let Some(name) = existing.clone() else {
                done.run(());
                return;
            };
            confirm.ask(i18n.tf(k!("volume.confirmDelete"), &[("name", &name)]), move || {
                let name = name.clone();
                leptos::task::spawn_local(async move {
                    match crate::api::delete_volume(&name).await {
                        Ok(()) => {
                            toasts.success(i18n.tf(k!("volume.deleted"), &[("name", &name)]));
                            done.run(());
                        }
                        Err(f) => toasts.error(i18n.failure(&f)),
                    }
                });
            });
        }
    };
    let prefix = StoredValue::new(prefix);
    let id = move |what: &str| prefix.with_value(|p| format!("{p}-{what}"));
    let is_existing = existing.is_some();
    let card_name = existing.clone().unwrap_or_default();
    let text = move |what: &'static str, field: &'static str, label, value: RwSignal<String>, disabled: bool| {
        let err = error_of(field);
        let input_id = id(what);
        view! {
            <Field id=input_id.clone() label=label error=err>
                <input id=input_id.clone() class=INPUT type="text" bind:value=value disabled=disabled
                    aria-invalid=move || err.get().is_some().to_string() aria-describedby=format!("{input_id}-error") />
            </Field>
        }
    };
    let source_name = id("source");
    view! {
        <form class="space-y-3" on:submit=save novalidate=true data-testid="volume-card"
            data-name=card_name>
            <div class="grid gap-3 md:grid-cols-2">
                {text("name", "name", k!("volume.name"), name, is_existing)}
                {text("mount", "mountPath", k!("volume.mountPath"), mount_path, false)}
            </div>
            <fieldset class="flex flex-wrap gap-4 text-sm">
                <legend class="mb-1 font-medium text-slate-800 dark:text-slate-200">{move || i18n.t(k!("volume.source"))}</legend>
                <label class="flex items-center gap-2">
                    <input type="radio" name=source_name.clone() prop:checked=move || is_pvc.get() on:change=move |_| is_pvc.set(true) />
                    {move || i18n.t(k!("volume.pvc"))}
                </label>
                <label class="flex items-center gap-2">
                    <input type="radio" name=source_name prop:checked=move || !is_pvc.get() on:change=move |_| is_pvc.set(false) />
                    {move || i18n.t(k!("volume.nfs"))}
                </label>
            </fieldset>
            {move || if is_pvc.get() {
                text("claim", "source", k!("volume.claimName"), claim, false).into_any()
            } else {
                view! {
                    <div class="grid gap-3 md:grid-cols-2">
                        {text("server", "source", k!("volume.server"), server, false)}
                        {text("path", "source", k!("volume.path"), path, false)}
                    </div>
                }.into_any()
            }}
            <label class="flex items-center gap-2 text-sm">
                <input type="checkbox" prop:checked=move || read_only.get() on:change=move |ev| read_only.set(event_target_checked(&ev)) />
                {move || i18n.t(k!("volume.readOnly"))}
            </label>
            {text("queues", "queues", k!("volume.queues"), queues, false)}
            {text("description", "description", k!("volume.description"), description, false)}
            <div class="flex gap-2">
                <button type="submit" class=BUTTON data-testid="save-volume">{move || i18n.t(k!("volume.save"))}</button>
                <button type="button" class=BUTTON_DANGER on:click=delete data-testid="delete-volume">
                    {move || i18n.t(if is_existing { k!("volume.delete") } else { k!("volume.cancel") })}
                </button>
            </div>
        </form>
    }
}
