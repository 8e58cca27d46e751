//! `/admin/queues`: the queue tree as a table — each queue indented under its parent with who
//! may use it, how many jobs wait in its line, and per resource its capacity and guarantee
//! against current usage as bars, with what it lends and borrows now — and, in a side panel,
//! the form that creates or edits a queue ([`form`]) and deletes it after confirmation; below,
//! the queues' budgets against this period's use ([`budgets`]).

mod budgets;
mod form;
mod sharing;

use std::collections::BTreeMap;

use anteroom_shared::api::queues::AdminQueue;
use anteroom_shared::scheduling::{PreemptWithinQueue, ResourceList};
use leptos::prelude::*;

use crate::components::drawer::Drawer;
use crate::components::sharing::{QueueUse, QueueUseBars, ShareLegend, effective_guarantees};
use crate::components::{BUTTON, BUTTON_SECONDARY, ErrorPanel, PageHeader, TD, TH, loaded, use_fetch};
use crate::i18n::{k, use_i18n};
use form::QueueForm;

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
    // The cluster's totals: the width of a guaranteed resource's bar without a capacity.
    let nodes = use_fetch(crate::api::nodes);
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
                    let named: Vec<(&str, Option<&str>, Option<&ResourceList>)> = list
                        .iter()
                        .map(|q| (q.name.as_str(), q.parent.as_deref(), q.sharing.guarantee.as_ref()))
                        .collect();
                    let guarantees = std::sync::Arc::new(effective_guarantees(&named));
                    let shares = guarantees.values().any(|g| !g.is_empty());
                    let room = std::sync::Arc::new(crate::components::capacity::cluster_totals(&loaded(nodes)).allocatable);
                    let tree = Tree { order: order.clone(), guarantees, room };
                    view! {
                        {shares.then(|| view! { <ShareLegend /> })}
                        <div class="overflow-x-auto rounded border border-slate-200 bg-white dark:border-slate-700 dark:bg-slate-900">
                            <div class=format!("{ROW} border-b border-slate-200 bg-slate-50 dark:border-slate-700 dark:bg-slate-950") aria-hidden="true">
                                <span class=TH>{move || i18n.t(k!("capacity.queue"))}</span>
                                <span class=TH>{move || i18n.t(k!("queue.access"))}</span>
                                <span class=format!("{TH} text-right")>{move || i18n.t(k!("capacity.waiting"))}</span>
                                <span class=TH>{move || i18n.t(k!("capacity.queueUse"))}</span>
                                <span class=TH></span>
                            </div>
                            <ul class="divide-y divide-slate-100 dark:divide-slate-800" data-testid="queue-tree" aria-label=move || i18n.t(k!("queue.tree"))>
                                {children_in(&order, None).into_iter().map(|i| view! { <QueueRow tree=tree.clone() at=i editing=editing /> }).collect_view()}
                            </ul>
                        </div>
                    }.into_any()
                }
            }}
            <budgets::Budgets queues=names />
        </section>
    }
}

/// The grid every row of the tree shares (name, access, waiting, capacity and use, edit).
const ROW: &str =
    "grid min-w-[52rem] grid-cols-[minmax(12rem,16rem)_9rem_5rem_minmax(18rem,1fr)_auto] items-start gap-x-2";

/// What every row of the tree reads: the queues in tree order, their effective guarantees and
/// the cluster's totals.
#[derive(Clone)]
struct Tree {
    order: std::sync::Arc<Vec<(usize, AdminQueue)>>,
    guarantees: std::sync::Arc<BTreeMap<String, ResourceList>>,
    room: std::sync::Arc<BTreeMap<String, f64>>,
}

/// A queue's row and, below it, the list of its children.
#[component]
fn QueueRow(tree: Tree, at: usize, editing: RwSignal<Editing>) -> AnyView {
    let i18n = use_i18n();
    let (depth, queue) = tree.order[at].clone();
    let children = children_in(&tree.order, Some(at));
    let level = QueueUse {
        capacity: queue.capacity.clone().unwrap_or_default(),
        used: queue.used.clone(),
        guarantee: tree.guarantees.get(&queue.name).cloned().unwrap_or_default(),
        borrowed: queue.borrowed.clone(),
        lent: queue.lent.clone(),
    };
    let settings = sharing_settings(&queue);
    let row_name = queue.name.clone();
    let member_count = queue.members.len() as u64;
    let open = queue.open;
    let waiting = queue.waiting;
    let for_edit = queue.clone();
    let edit_name = queue.name.clone();
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
                {(!settings.is_empty()).then(|| view! {
                    <p class="text-xs text-slate-600 dark:text-slate-300" data-testid="queue-sharing-settings">
                        {move || settings.iter().map(|s| s.text(i18n)).collect::<Vec<_>>().join(i18n.t(k!("common.listSeparator")))}
                    </p>
                })}
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
                <QueueUseBars queue=level room=(*tree.room).clone() root=queue.parent.is_none() />
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
                  {children.into_iter().map(|i| view! { <QueueRow tree=tree.clone() at=i editing=editing /> }).collect_view()}
              </ul>
          })}
        </li>
    }
    .into_any()
}

/// A sharing setting of a queue that differs from the default, shown under its name in the
/// tree (its guarantee is on its bars).
#[derive(Clone, Debug, PartialEq)]
enum Setting {
    /// Borrowers share lent room by this weight.
    Weight(u32),
    /// Its jobs may ask for priorities in this range.
    Priorities(i32, i32),
    /// A higher-priority job preempts lower-priority ones of the queue.
    PreemptsLower,
    /// Borrowers of its room are not reclaimed before this many seconds.
    ReclaimAfter(i64),
}

impl Setting {
    fn text(&self, i18n: crate::i18n::I18n) -> String {
        match self {
            Setting::Weight(w) => i18n.tf(k!("queue.weightShort"), &[("weight", &w.to_string())]),
            Setting::Priorities(min, max) => i18n.tf(
                k!("queue.prioritiesShort"),
                &[("min", &min.to_string()), ("max", &max.to_string())],
            ),
            Setting::PreemptsLower => i18n.t(k!("queue.preemptsShort")).to_owned(),
            Setting::ReclaimAfter(s) => i18n.tf(
                k!("queue.reclaimAfterShort"),
                &[("duration", &crate::format::duration(i18n.locale(), *s))],
            ),
        }
    }
}

/// The settings of `queue` worth a word in the tree: those not at their default.
fn sharing_settings(queue: &AdminQueue) -> Vec<Setting> {
    let s = &queue.sharing;
    let mut out = Vec::new();
    if s.weight != 1 {
        out.push(Setting::Weight(s.weight));
    }
    if s.priority_range.is_on() {
        out.push(Setting::Priorities(s.priority_range.min, s.priority_range.max));
    }
    if s.preempt_within_queue == PreemptWithinQueue::LowerPriority {
        out.push(Setting::PreemptsLower);
    }
    if s.reclaim_min_runtime_seconds > 0 {
        out.push(Setting::ReclaimAfter(s.reclaim_min_runtime_seconds));
    }
    out
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
            borrowed: ResourceList::new(),
            lent: ResourceList::new(),
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

    #[test]
    fn only_settings_off_their_default_get_a_word() {
        assert!(sharing_settings(&q("plain", None)).is_empty());
        let mut queue = q("team", None);
        queue.sharing.weight = 2;
        queue.sharing.priority_range = anteroom_shared::scheduling::PriorityRange { min: -1, max: 5 };
        queue.sharing.preempt_within_queue = PreemptWithinQueue::LowerPriority;
        queue.sharing.reclaim_min_runtime_seconds = 600;
        assert_eq!(
            sharing_settings(&queue),
            [
                Setting::Weight(2),
                Setting::Priorities(-1, 5),
                Setting::PreemptsLower,
                Setting::ReclaimAfter(600)
            ]
        );
    }
}
