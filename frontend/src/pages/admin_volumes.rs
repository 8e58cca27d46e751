//! `/admin/volumes`: the catalogue of data jobs may mount by name — a PersistentVolumeClaim or
//! an NFS export, where it is mounted, read-only or not, which queues may use it — one card
//! per volume, created, saved and deleted (after confirmation) here. The server checks every
//! field; what it refuses is marked on the field.

use anteroom_shared::api::volumes::{Volume, VolumeBody, VolumeSource};
use leptos::prelude::*;

use crate::components::confirm::use_confirm;
use crate::components::field::Field;
use crate::components::toast::use_toasts;
use crate::components::{BUTTON, BUTTON_DANGER, CARD, Empty, ErrorPanel, INPUT, PageHeader, use_fetch};
use crate::i18n::{k, use_i18n};

/// The page.
#[component]
pub fn AdminVolumes() -> impl IntoView {
    let i18n = use_i18n();
    let reload = RwSignal::new(0u64);
    let volumes = use_fetch(move || {
        reload.track();
        crate::api::admin_volumes()
    });
    let adding = RwSignal::new(false);
    let done = Callback::new(move |_: ()| {
        adding.set(false);
        reload.update(|r| *r += 1);
    });
    view! {
        <section class="space-y-6">
            <PageHeader title=k!("page.adminVolumes.title") description=k!("page.adminVolumes.description")>
                <button type="button" class=BUTTON on:click=move |_| adding.set(true) disabled=move || adding.get() data-testid="add-volume">
                    {move || i18n.t(k!("volume.add"))}
                </button>
            </PageHeader>
            <Show when=move || adding.get()>
                <VolumeCard volume=None done=done />
            </Show>
            {move || match volumes.get() {
                None => view! { <crate::auth::Loading /> }.into_any(),
                Some(Err(f)) => view! { <ErrorPanel failure=f /> }.into_any(),
                Some(Ok(list)) if list.is_empty() && !adding.get() => view! { <Empty text=k!("volume.empty") /> }.into_any(),
                Some(Ok(list)) => view! {
                    <div class="grid gap-4 xl:grid-cols-2">
                        {list.into_iter().map(|v| view! { <VolumeCard volume=Some(v) done=done /> }).collect_view()}
                    </div>
                }.into_any(),
            }}
        </section>
    }
}

#[component]
fn VolumeCard(volume: Option<Volume>, done: Callback<()>) -> impl IntoView {
    let i18n = use_i18n();
    let toasts = use_toasts();
    let confirm = use_confirm();
    let existing = volume.as_ref().map(|v| v.name.clone());
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
        let existing = existing.clone();
        move |ev: leptos::ev::SubmitEvent| {
            ev.prevent_default();
            let body = body();
            let existing = existing.clone();
            leptos::task::spawn_local(async move {
                match crate::api::save_volume(existing.as_deref(), &body).await {
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
        <form class=format!("{CARD} space-y-3") on:submit=save novalidate=true data-testid="volume-card"
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
