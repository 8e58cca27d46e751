//! Sharing between queues as a picture (`spec/prequeue.md` §9): per queue level and resource,
//! one bar that shows its guarantee, what it uses within it, the idle part it lends and what it
//! borrows beyond it, with the same in words ("8 used, 4 guaranteed · borrows 4"). The queue
//! tree, the capacity view and the resource summary draw every queue level with
//! [`QueueUseBars`]: a guaranteed resource as a shared bar, any other as a capacity bar.
//!
//! The geometry ([`share_geometry`]) and the effective guarantee of a grouping queue
//! ([`effective_guarantees`]) are pure functions, tested below.

use std::collections::BTreeMap;

use anteroom_shared::scheduling::{Quantity, QuantityFormat, ResourceList};
use leptos::prelude::*;

use crate::components::bars::{CapacityBar, ResourceName, Scale};
use crate::components::palette::{self, Level};
use crate::format;
use crate::i18n::{k, use_i18n};

/// What one shared bar shows, in the resource's own unit.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ShareInput {
    /// What all users' jobs use in the queue and below.
    pub used: f64,
    /// The queue's (effective) guarantee.
    pub guarantee: f64,
    /// The queue's capacity of the resource, if it has one: the bar's width and a tick.
    pub capacity: Option<f64>,
    /// The room the queue lives in without a capacity (the cluster's total of the resource).
    pub room: Option<f64>,
}

/// A shared bar's parts as shares of its width, in percent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShareGeometry {
    /// Used within the guarantee.
    pub within: f64,
    /// Guaranteed and idle: what the queue lends (or keeps) now.
    pub idle: f64,
    /// Used beyond the guarantee: borrowed.
    pub borrowed: f64,
    /// Where the guarantee ends.
    pub mark: f64,
    /// Where the capacity's tick stands; `None` without a capacity.
    pub tick: Option<f64>,
    /// Against the capacity: ok, near or over (ok without one).
    pub level: Level,
    /// What the width stands for.
    pub scale: Scale,
}

/// The parts of a shared bar: its width is the capacity (else the room it lives in), widened
/// when use or the guarantee passes it, so nothing is cut off; the used part is split at the
/// guarantee, and the guarantee left over is the idle band.
pub fn share_geometry(input: ShareInput) -> ShareGeometry {
    let sane = |v: f64| if v.is_finite() { v.max(0.0) } else { 0.0 };
    let used = sane(input.used);
    let guarantee = sane(input.guarantee);
    let capacity = input.capacity.filter(|c| c.is_finite() && *c >= 0.0);
    let room = input.room.filter(|r| r.is_finite() && *r > 0.0);
    let scale = match (capacity, room) {
        (Some(_), _) => Scale::Limit,
        (None, Some(_)) => Scale::Capacity,
        (None, None) => Scale::Unknown,
    };
    let width = capacity.or(room).unwrap_or(0.0).max(used).max(guarantee);
    let level = match capacity {
        Some(c) if used > c => Level::Over,
        Some(c) if c > 0.0 && used >= 0.8 * c => Level::Near,
        _ => Level::Ok,
    };
    if width <= 0.0 {
        return ShareGeometry {
            within: 0.0,
            idle: 0.0,
            borrowed: 0.0,
            mark: 0.0,
            tick: capacity.map(|_| 0.0),
            level,
            scale,
        };
    }
    let pct = |v: f64| (v / width * 100.0).clamp(0.0, 100.0);
    let within = used.min(guarantee);
    ShareGeometry {
        within: pct(within),
        idle: pct(guarantee - within),
        borrowed: pct(used - within),
        mark: pct(guarantee),
        tick: capacity.map(pct),
        level,
        scale,
    }
}

/// Per queue, its effective guarantee (`spec/prequeue.md` §9): per resource what it names,
/// else the sum of its children's — a grouping queue neither adds nor removes entitlement.
/// `queues` are (name, parent, named guarantee); only resources some queue guarantees above
/// zero appear, and a queue guaranteed nothing has an empty list.
pub fn effective_guarantees(queues: &[(&str, Option<&str>, Option<&ResourceList>)]) -> BTreeMap<String, ResourceList> {
    let mut resources: Vec<&str> = queues
        .iter()
        .filter_map(|(_, _, g)| *g)
        .flat_map(|g| g.iter())
        .filter(|(_, q)| q.is_positive())
        .map(|(name, _)| name)
        .collect();
    resources.sort_unstable();
    resources.dedup();
    /// Its guarantee of `resource`; `path` holds the queues above it in this walk, so a parent
    /// loop in the list (the server refuses one) ends instead of recursing for ever.
    fn of(
        at: usize,
        resource: &str,
        queues: &[(&str, Option<&str>, Option<&ResourceList>)],
        path: &mut Vec<usize>,
    ) -> i128 {
        if let Some(named) = queues[at].2.and_then(|g| g.get_named(resource)) {
            return named.milli().max(0);
        }
        path.push(at);
        let name = queues[at].0;
        let mut sum = 0_i128;
        for c in 0..queues.len() {
            if queues[c].1 == Some(name) && !path.contains(&c) {
                sum = sum.saturating_add(of(c, resource, queues, path));
            }
        }
        path.pop();
        sum
    }
    queues
        .iter()
        .enumerate()
        .map(|(at, (name, _, _))| {
            let mut list = ResourceList::new();
            for resource in &resources {
                let milli = of(at, resource, queues, &mut Vec::new());
                if milli > 0 {
                    list.insert(
                        *resource,
                        Quantity::from_milli_saturating(milli, QuantityFormat::DecimalSi),
                    );
                }
            }
            ((*name).to_owned(), list)
        })
        .collect()
}

/// Everything one queue level shows: its capacity, what all users use, its effective
/// guarantee and — while queues share — what it borrows and lends now.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueueUse {
    /// Its capacity; empty: none.
    pub capacity: ResourceList,
    /// What all users' normal jobs use in it and below.
    pub used: ResourceList,
    /// Its effective guarantee; empty: none.
    pub guarantee: ResourceList,
    /// What it holds beyond its guarantee now (the server's figure; empty unless sharing).
    pub borrowed: ResourceList,
    /// Its idle guarantee other queues may use now (the server's figure; empty unless
    /// sharing).
    pub lent: ResourceList,
}

impl QueueUse {
    /// The resources it draws, each once: those with a capacity, then those only guaranteed.
    pub fn resources(&self) -> Vec<String> {
        let mut out: Vec<String> = self.capacity.iter().map(|(r, _)| r.to_owned()).collect();
        for (r, q) in self.guarantee.iter() {
            if q.is_positive() && !out.iter().any(|o| o == r) {
                out.push(r.to_owned());
            }
        }
        out
    }
}

/// A queue level's bars: per resource a shared bar where it has a guarantee, a capacity bar
/// otherwise; a level with neither says so (a root queue has no parent whose limits could
/// apply).
#[component]
pub fn QueueUseBars(
    /// What the level shows.
    queue: QueueUse,
    /// The cluster's total per resource: the room a guaranteed resource without a capacity is
    /// drawn against.
    #[prop(optional)]
    room: BTreeMap<String, f64>,
    /// Whether it is a root queue.
    root: bool,
) -> impl IntoView {
    let i18n = use_i18n();
    let resources = queue.resources();
    if resources.is_empty() {
        let key = if root {
            k!("queue.noCapacityRoot")
        } else {
            k!("queue.noCapacity")
        };
        return view! { <p class="text-xs text-slate-600 dark:text-slate-300">{move || i18n.t(key)}</p> }.into_any();
    }
    view! {
        <div class="space-y-1">
            {resources.into_iter().map(|res| {
                let guarantee = queue.guarantee.get(&res);
                if guarantee.is_positive() {
                    view! { <SharedBar resource=res.clone() queue=queue.clone() room=room.get(&res).copied() /> }.into_any()
                } else {
                    view! { <CapacityBar resource=res.clone() used=queue.used.get(&res) capacity=queue.capacity.get(&res) /> }.into_any()
                }
            }).collect_view()}
        </div>
    }
    .into_any()
}

/// One guaranteed resource of a queue level: its name, the shared bar, and in words what it
/// uses of its guarantee (and capacity), and what it borrows or lends now.
#[component]
fn SharedBar(resource: String, queue: QueueUse, room: Option<f64>) -> impl IntoView {
    let i18n = use_i18n();
    let used = format::value(&queue.used.get(&resource));
    let guarantee = format::value(&queue.guarantee.get(&resource));
    let capacity = queue.capacity.get_named(&resource).map(|c| format::value(&c));
    // The server's figures: they count lending limits; nothing said while queues do not share.
    let borrowed = queue
        .borrowed
        .get_named(&resource)
        .map(|q| format::value(&q))
        .filter(|v| *v > 0.0);
    let lent = queue
        .lent
        .get_named(&resource)
        .map(|q| format::value(&q))
        .filter(|v| *v > 0.0);
    let g = share_geometry(ShareInput {
        used,
        guarantee,
        capacity,
        room,
    });
    let words = {
        let resource = resource.clone();
        move || {
            let l = i18n.locale();
            let amount = |v: f64| format::amount(l, &resource, v);
            let name = i18n.resource_name(&resource);
            match capacity {
                Some(c) => i18n.tf(
                    k!("share.barCapacity"),
                    &[
                        ("resource", &name),
                        ("used", &amount(used)),
                        ("guarantee", &amount(guarantee)),
                        ("capacity", &amount(c)),
                    ],
                ),
                None => i18n.tf(
                    k!("share.bar"),
                    &[
                        ("resource", &name),
                        ("used", &amount(used)),
                        ("guarantee", &amount(guarantee)),
                    ],
                ),
            }
        }
    };
    let borrows = {
        let resource = resource.clone();
        move || {
            borrowed.map(|v| {
                i18n.tf(
                    k!("share.borrows"),
                    &[("amount", &format::amount(i18n.locale(), &resource, v))],
                )
            })
        }
    };
    let lends = {
        let resource = resource.clone();
        move || {
            lent.map(|v| {
                i18n.tf(
                    k!("share.lends"),
                    &[("amount", &format::amount(i18n.locale(), &resource, v))],
                )
            })
        }
    };
    let label = {
        let (words, borrows, lends) = (words.clone(), borrows.clone(), lends.clone());
        move || {
            let mut all = vec![words()];
            all.extend(borrows());
            all.extend(lends());
            all.join(i18n.t(k!("common.listSeparator")))
        }
    };
    let width = |share: f64| format!("{share:.2}%");
    view! {
        <div class="grid grid-cols-[8rem_minmax(6rem,1fr)_minmax(10rem,16rem)] items-center gap-2 text-xs" data-testid="share-bar" data-resource=resource.clone()>
            <ResourceName resource=resource.clone() />
            <div class=format!("relative h-3 w-full rounded {}", palette::BAR_TRACK) role="img" aria-label=label
                data-testid="shared-bar" data-level=g.level.as_str() data-scale=g.scale.as_str()>
                <div class="flex h-full w-full overflow-hidden rounded">
                    <div class=format!("h-full {}", palette::bar_used(g.level)) style:width=width(g.within) data-part="within"></div>
                    <div class=format!("h-full {}", palette::BAR_GUARANTEED_IDLE) style:width=width(g.idle) data-part="idle"></div>
                    <div class=format!("h-full {}", palette::BAR_BORROWED) style:width=width(g.borrowed) data-part="borrowed"></div>
                </div>
                <div class=format!("absolute top-0 bottom-0 w-0 -translate-x-1/2 border-l-2 border-dashed {}", palette::BAR_GUARANTEE_MARK)
                    style:left=width(g.mark) data-part="mark" aria-hidden="true"></div>
                {g.tick.map(|t| view! {
                    <div class=format!("absolute -top-0.5 -bottom-0.5 w-0.5 -translate-x-1/2 {}", palette::BAR_TICK)
                        style:left=width(t) data-part="tick" aria-hidden="true"></div>
                })}
            </div>
            <span class="text-slate-700 dark:text-slate-300">
                <span class="block" data-testid="share-words">{words}</span>
                // What it borrows or lends now, on a line of its own: what an admin looks for.
                {move || borrows().map(|b| view! {
                    <span class="block font-medium text-purple-900 dark:text-purple-100" data-testid="share-borrows">{b}</span>
                })}
                {move || lends().map(|l| view! {
                    <span class="block font-medium" data-testid="share-lends">{l}</span>
                })}
            </span>
        </div>
    }
}

/// What the parts of a shared bar mean, once above the bars that use them.
#[component]
pub fn ShareLegend() -> impl IntoView {
    let i18n = use_i18n();
    let swatch = |class: &'static str, key: crate::i18n::Key| {
        view! {
            <li class="inline-flex items-center gap-1.5">
                <span class=format!("inline-block h-3 w-5 rounded-sm {class}") aria-hidden="true"></span>
                <span>{move || i18n.t(key)}</span>
            </li>
        }
    };
    view! {
        <ul class="flex flex-wrap gap-x-4 gap-y-1 text-xs text-slate-700 dark:text-slate-300" data-testid="share-legend" aria-label=move || i18n.t(k!("share.legend.title"))>
            {swatch(palette::bar_used(Level::Ok), k!("share.legend.used"))}
            {swatch(palette::BAR_GUARANTEED_IDLE, k!("share.legend.idle"))}
            {swatch(palette::BAR_BORROWED, k!("share.legend.borrowed"))}
            <li class="inline-flex items-center gap-1.5">
                <span class=format!("inline-block h-3 w-0 border-l-2 border-dashed {}", palette::BAR_GUARANTEE_MARK) aria-hidden="true"></span>
                <span>{move || i18n.t(k!("share.legend.mark"))}</span>
            </li>
        </ul>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(used: f64, guarantee: f64, capacity: Option<f64>, room: Option<f64>) -> ShareGeometry {
        share_geometry(ShareInput {
            used,
            guarantee,
            capacity,
            room,
        })
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn a_queue_using_twice_its_guarantee_shows_half_within_and_half_borrowed() {
        // nlp: 4 guaranteed of the cluster's 8, all 8 in use.
        let g = bar(8.0, 4.0, None, Some(8.0));
        assert!(
            close(g.within, 50.0) && close(g.borrowed, 50.0) && close(g.idle, 0.0),
            "{g:?}"
        );
        assert!(close(g.mark, 50.0), "{g:?}");
        assert_eq!((g.tick, g.scale, g.level), (None, Scale::Capacity, Level::Ok));
    }

    #[test]
    fn an_idle_queue_shows_its_whole_guarantee_as_the_idle_band() {
        // cv: 4 guaranteed, nothing used: all of it lent.
        let g = bar(0.0, 4.0, None, Some(8.0));
        assert!(
            close(g.within, 0.0) && close(g.idle, 50.0) && close(g.borrowed, 0.0),
            "{g:?}"
        );
        // Partly used: the band is what is left of the guarantee.
        let g = bar(1.0, 4.0, None, Some(8.0));
        assert!(
            close(g.within, 12.5) && close(g.idle, 37.5) && close(g.mark, 50.0),
            "{g:?}"
        );
    }

    #[test]
    fn a_capacity_is_the_width_and_its_tick_and_sets_the_level() {
        let g = bar(5.0, 4.0, Some(6.0), Some(100.0));
        assert_eq!(g.scale, Scale::Limit);
        assert!(close(g.tick.unwrap(), 100.0), "{g:?}");
        assert!(close(g.within, 400.0 / 6.0) && close(g.borrowed, 100.0 / 6.0), "{g:?}");
        assert_eq!(g.level, Level::Near);
        assert_eq!(bar(1.0, 4.0, Some(6.0), None).level, Level::Ok);
    }

    #[test]
    fn nothing_is_cut_off_and_nothing_absurd_is_drawn() {
        // Use beyond the room known (a node went down): the bar widens to it.
        let g = bar(10.0, 4.0, None, Some(8.0));
        assert!(close(g.within + g.borrowed, 100.0) && close(g.mark, 40.0), "{g:?}");
        // No room known: scaled to what it shows, never empty when there is a guarantee.
        let g = bar(2.0, 4.0, None, None);
        assert_eq!(g.scale, Scale::Unknown);
        assert!(close(g.within, 50.0) && close(g.idle, 50.0), "{g:?}");
        let g = bar(f64::NAN, -1.0, Some(f64::INFINITY), Some(-3.0));
        assert_eq!((g.within, g.idle, g.borrowed), (0.0, 0.0, 0.0));
        for used in [0.0, 1.0, 4.0, 9.0] {
            for guarantee in [0.0, 2.0, 4.0, 16.0] {
                for capacity in [None, Some(0.0), Some(4.0), Some(8.0)] {
                    let g = bar(used, guarantee, capacity, Some(8.0));
                    let sum = g.within + g.idle + g.borrowed;
                    assert!(sum <= 100.0 + 1e-9, "{used} {guarantee} {capacity:?}: {g:?}");
                    assert_eq!(g.borrowed > 0.0, used > guarantee, "{used} {guarantee}: {g:?}");
                }
            }
        }
    }

    fn gpus(n: i64) -> ResourceList {
        ResourceList::new().with("nvidia.com/a100", Quantity::from_units(n))
    }

    #[test]
    fn a_grouping_queue_is_guaranteed_its_childrens_sum_and_a_named_guarantee_wins() {
        let (cv, nlp, lab) = (gpus(4), gpus(3), gpus(10));
        let cpu = ResourceList::new().with("cpu", Quantity::from_units(8));
        let queues = [
            ("research", None, None),
            ("cv", Some("research"), Some(&cv)),
            ("nlp", Some("research"), Some(&nlp)),
            ("lab", None, Some(&lab)),
            ("lab-a", Some("lab"), Some(&cpu)),
            ("default", None, None),
        ];
        let g = effective_guarantees(&queues);
        assert_eq!(g["research"], gpus(7));
        assert_eq!(g["cv"], gpus(4));
        // Per resource: what it names is its own; a resource it does not name is its
        // children's sum (as the server counts it).
        assert_eq!(g["lab"], gpus(10).with("cpu", Quantity::from_units(8)));
        assert_eq!(g["lab-a"], cpu);
        assert!(g["default"].is_empty());
        // A zero guarantee is none.
        let zero = gpus(0);
        let g = effective_guarantees(&[("x", None, Some(&zero))]);
        assert!(g["x"].is_empty());
        // A loop in the parents (refused by the server) ends.
        let g = effective_guarantees(&[
            ("a", Some("b"), None),
            ("b", Some("a"), None),
            ("c", Some("a"), Some(&cv)),
        ]);
        assert_eq!(g["a"], gpus(4));
    }

    #[test]
    fn a_level_draws_its_capacitys_resources_then_those_only_guaranteed() {
        let level = QueueUse {
            capacity: ResourceList::new().with("cpu", Quantity::from_units(8)),
            guarantee: gpus(4).with("cpu", Quantity::from_units(2)),
            ..QueueUse::default()
        };
        assert_eq!(level.resources(), ["cpu", "nvidia.com/a100"]);
        assert!(QueueUse::default().resources().is_empty());
    }
}
