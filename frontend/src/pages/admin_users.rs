//! `/admin/users`: users, their roles and the queues they may use; create a user, change a
//! role, delete one after confirmation.

use anteroom_shared::api::{CreateUser, Role, UpdateUser, User};
use leptos::prelude::*;

use crate::components::confirm::use_confirm;
use crate::components::drawer::Drawer;
use crate::components::field::Field;
use crate::components::toast::use_toasts;
use crate::components::{BUTTON, BUTTON_DANGER, BUTTON_SECONDARY, INPUT, PageHeader, TABLE, TD, TH, show, use_fetch};
use crate::i18n::{k, use_i18n};

/// The page.
#[component]
pub fn AdminUsers() -> impl IntoView {
    let i18n = use_i18n();
    let reload = RwSignal::new(0u64);
    let users = use_fetch(move || {
        reload.track();
        crate::api::users()
    });
    let adding = RwSignal::new(false);
    view! {
        <section class="space-y-6">
            <PageHeader title=k!("page.adminUsers.title") description=k!("page.adminUsers.description")>
                <button type="button" class=BUTTON on:click=move |_| adding.set(true) data-testid="add-user">
                    {move || i18n.t(k!("users.add"))}
                </button>
            </PageHeader>
            <Drawer open=adding title=Signal::derive(move || i18n.t(k!("users.add")).to_owned())
                on_close=Callback::new(move |_| adding.set(false))>
                <NewUser reload=reload adding=adding />
            </Drawer>
            {show(users, move |page| {
                let rows: Vec<User> = page.items.clone();
                view! {
                    <div class="overflow-x-auto rounded border border-slate-200 dark:border-slate-700 bg-white dark:bg-slate-900">
                        <table class=TABLE data-testid="users-table">
                            <thead class="bg-slate-50 dark:bg-slate-950"><tr>
                                <th scope="col" class=TH>{move || i18n.t(k!("users.username"))}</th>
                                <th scope="col" class=TH>{move || i18n.t(k!("users.displayName"))}</th>
                                <th scope="col" class=TH>{move || i18n.t(k!("users.role"))}</th>
                                <th scope="col" class=TH>{move || i18n.t(k!("users.queues"))}</th>
                                <th scope="col" class=TH>{move || i18n.t(k!("jobs.actions"))}</th>
                            </tr></thead>
                            <tbody class="divide-y divide-slate-100 dark:divide-slate-800">
                                {rows.into_iter().map(|u| view! { <UserRow user=u reload=reload /> }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }
            })}
        </section>
    }
}

fn role_label(role: Role) -> crate::i18n::Key {
    match role {
        Role::Admin => k!("users.admin"),
        Role::User => k!("users.user"),
    }
}

#[component]
fn UserRow(user: User, reload: RwSignal<u64>) -> impl IntoView {
    let i18n = use_i18n();
    let toasts = use_toasts();
    let confirm = use_confirm();
    let id = user.id;
    let role = user.role;
    let name = user.username.clone();
    let row_name = name.clone();
    let label_name = name.clone();
    let change_role = {
        let name = name.clone();
        move |_| {
            let new_role = if role == Role::Admin { Role::User } else { Role::Admin };
            let name = name.clone();
            let question = i18n.tf(k!("users.confirmRole"), &[("name", &name)]);
            confirm.ask(question, move || {
                leptos::task::spawn_local(async move {
                    let body = UpdateUser {
                        role: Some(new_role),
                        ..UpdateUser::default()
                    };
                    match crate::api::update_user(id, &body).await {
                        Ok(_) => toasts.success(i18n.tf(k!("users.roleChanged"), &[("name", &name)])),
                        Err(f) => toasts.error(i18n.failure(&f)),
                    }
                    reload.try_update(|r| *r += 1);
                });
            });
        }
    };
    let remove = {
        let name = name.clone();
        move |_| {
            let name = name.clone();
            confirm.ask(i18n.tf(k!("users.confirmDelete"), &[("name", &name)]), move || {
                leptos::task::spawn_local(async move {
                    match crate::api::delete_user(id).await {
                        Ok(()) => toasts.success(i18n.tf(k!("users.deleted"), &[("name", &name)])),
                        Err(f) => toasts.error(i18n.failure(&f)),
                    }
                    reload.try_update(|r| *r += 1);
                });
            });
        }
    };
    view! {
        <tr data-testid="user-row" data-user=row_name>
            <td class=TD>{name.clone()}</td>
            <td class=TD>{user.display_name.clone()}</td>
            <td class=TD>{move || i18n.t(role_label(role))}</td>
            <td class=TD>{if user.queues.is_empty() { "—".to_owned() } else { user.queues.join(", ") }}</td>
            <td class=TD>
                <div class="flex gap-2">
                    <button type="button" class=BUTTON_SECONDARY on:click=change_role>
                        {move || i18n.t(if role == Role::Admin { k!("users.makeUser") } else { k!("users.makeAdmin") })}
                    </button>
                    <button type="button" class=BUTTON_DANGER on:click=remove aria-label=move || i18n.tf(k!("users.deleteNamed"), &[("name", &label_name)])>
                        {move || i18n.t(k!("common.delete"))}
                    </button>
                </div>
            </td>
        </tr>
    }
}

#[component]
fn NewUser(reload: RwSignal<u64>, adding: RwSignal<bool>) -> impl IntoView {
    let i18n = use_i18n();
    let toasts = use_toasts();
    let username = RwSignal::new(String::new());
    let password = RwSignal::new(String::new());
    let display = RwSignal::new(String::new());
    let admin = RwSignal::new(false);
    let errors = RwSignal::new(Vec::<(String, String)>::new());
    let error_of = move |field: &'static str| {
        Signal::derive(move || errors.with(|e| e.iter().find(|(f, _)| f == field).map(|(_, m)| m.clone())))
    };
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let mut errs = Vec::new();
        if username.get_untracked().trim().is_empty() {
            errs.push(("username".to_owned(), i18n.t(k!("form.required")).to_owned()));
        }
        if password.get_untracked().chars().count() < 8 {
            errs.push(("password".to_owned(), i18n.t(k!("users.passwordRule")).to_owned()));
        }
        errors.set(errs.clone());
        if !errs.is_empty() {
            return;
        }
        let body = CreateUser {
            username: username.get_untracked().trim().to_owned(),
            password: password.get_untracked(),
            display_name: Some(display.get_untracked()).filter(|d| !d.trim().is_empty()),
            role: if admin.get_untracked() { Role::Admin } else { Role::User },
        };
        leptos::task::spawn_local(async move {
            match crate::api::create_user(&body).await {
                Ok(u) => {
                    toasts.success(i18n.tf(k!("users.created"), &[("name", &u.username)]));
                    username.set(String::new());
                    password.set(String::new());
                    display.set(String::new());
                    adding.try_set(false);
                    reload.try_update(|r| *r += 1);
                }
                Err(f) => {
                    errors.set(i18n.failure_fields(&f));
                    toasts.error(i18n.failure(&f));
                }
            }
        });
    };
    let (u_err, p_err) = (error_of("username"), error_of("password"));
    view! {
        <form class="space-y-3" on:submit=submit novalidate=true data-testid="new-user">
            <div class="grid gap-3 md:grid-cols-2">
                <Field id="user-name".into() label=k!("users.username") error=u_err>
                    <input id="user-name" class=INPUT type="text" autocomplete="off" bind:value=username
                        aria-invalid=move || u_err.get().is_some().to_string() aria-describedby="user-name-error" />
                </Field>
                <Field id="user-password".into() label=k!("page.login.password") hint=Some(k!("users.passwordRule")) error=p_err>
                    <input id="user-password" class=INPUT type="password" autocomplete="new-password" bind:value=password
                        aria-invalid=move || p_err.get().is_some().to_string() aria-describedby="user-password-error user-password-hint" />
                </Field>
                <Field id="user-display".into() label=k!("users.displayName") error=error_of("displayName")>
                    <input id="user-display" class=INPUT type="text" bind:value=display aria-describedby="user-display-error" />
                </Field>
            </div>
            <label class="flex items-center gap-2 text-sm" for="user-admin">
                <input type="checkbox" id="user-admin" bind:checked=admin />
                {move || i18n.t(k!("users.makeAdminCheckbox"))}
            </label>
            <button type="submit" class=BUTTON>{move || i18n.t(k!("users.create"))}</button>
        </form>
    }
}
