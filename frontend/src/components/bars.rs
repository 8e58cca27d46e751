//! Usage bars that tell the truth: one resource each, never scaled against another resource's
//! numbers. A bar has a used part, an added part (pending jobs, this job's request), and — when
//! the total passes a limit — an over part in red for only what is past the limit; a tick marks
//! the limit; near a limit the bar changes tone. Without a limit it is scaled to the capacity
//! it lives in (the queue's, or the cluster's for that resource). The numbers are always written
//! beside the bar; the geometry is a pure function ([`geometry`]) tested with the values the
//! old bars drew wrongly.

use leptos::prelude::*;

use crate::components::palette::{self, Level};

/// From this share of a limit on, a bar reads "near".
const NEAR: f64 = 0.8;

/// What one bar shows, in the resource's own unit.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BarInput {
    /// Used now (running, allocated).
    pub used: f64,
    /// On top of it (pending, this job's request).
    pub added: f64,
    /// The limit that holds it, if any: the tick, the over part and the levels follow it.
    pub limit: Option<f64>,
    /// The room it lives in when there is no limit (queue or cluster capacity).
    pub capacity: Option<f64>,
}

/// A bar's parts as shares of its width, in percent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Geometry {
    /// The used part, up to the limit.
    pub used: f64,
    /// The added part, up to the limit.
    pub added: f64,
    /// What passes the limit (used or added), drawn red.
    pub over: f64,
    /// Where the limit's tick stands; `None` without a limit.
    pub tick: Option<f64>,
    /// Ok, near, over.
    pub level: Level,
    /// What the width stands for.
    pub scale: Scale,
}

/// What a bar's full width stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// The limit (stretched when the total passes it).
    Limit,
    /// The capacity it lives in.
    Capacity,
    /// Nothing known: the bar stays empty rather than draw the total as full.
    Unknown,
}

impl Scale {
    /// The name tests read (`data-scale`).
    pub fn as_str(self) -> &'static str {
        match self {
            Scale::Limit => "limit",
            Scale::Capacity => "capacity",
            Scale::Unknown => "unknown",
        }
    }
}

/// The parts of a bar. The width is the limit (or the capacity without one), stretched only
/// when the total passes it, so the over part is exactly the excess.
pub fn geometry(input: BarInput) -> Geometry {
    let used = input.used.max(0.0);
    let added = input.added.max(0.0);
    let total = used + added;
    let limit = input.limit.filter(|l| l.is_finite() && *l >= 0.0);
    let capacity = input.capacity.filter(|c| c.is_finite() && *c > 0.0);
    let kind = match (limit, capacity) {
        (Some(_), _) => Scale::Limit,
        (None, Some(_)) => Scale::Capacity,
        (None, None) => Scale::Unknown,
    };
    let scale = limit.or(capacity).map_or(0.0, |room| room.max(total));
    if scale <= 0.0 {
        return Geometry {
            used: 0.0,
            added: 0.0,
            over: 0.0,
            tick: limit.map(|_| 0.0),
            level: if limit.is_some() && total > 0.0 {
                Level::Over
            } else {
                Level::Ok
            },
            scale: kind,
        };
    }
    let pct = |v: f64| (v / scale * 100.0).clamp(0.0, 100.0);
    let within = limit.unwrap_or(f64::INFINITY);
    let used_in = used.min(within);
    let total_in = total.min(within);
    let level = match limit {
        Some(l) if total > l => Level::Over,
        Some(l) if l > 0.0 && total >= NEAR * l => Level::Near,
        _ => Level::Ok,
    };
    Geometry {
        used: pct(used_in),
        added: pct(total_in - used_in),
        over: pct(total - total_in),
        tick: limit.map(pct),
        level,
        scale: kind,
    }
}

/// A CSS width from a share in percent.
fn width(share: f64) -> String {
    format!("{share:.2}%")
}

/// One bar. Widths and the tick's place are set through the CSS object model, which the UI's
/// strict Content-Security-Policy allows (inline `style` attributes it does not).
#[component]
pub fn Bar(
    /// What the bar shows.
    input: BarInput,
    /// Said to screen readers: what the bar shows, in words and numbers.
    label: String,
) -> impl IntoView {
    let g = geometry(input);
    view! {
        <div class=format!("relative h-3 w-full rounded {}", palette::BAR_TRACK) role="img" aria-label=label
            data-testid="usage-bar" data-level=g.level.as_str() data-scale=g.scale.as_str()>
            <div class="flex h-full w-full overflow-hidden rounded">
                <div class=format!("h-full {}", palette::bar_used(g.level)) style:width=width(g.used) data-part="used"></div>
                <div class=format!("h-full {}", palette::bar_added(g.level)) style:width=width(g.added) data-part="added"></div>
                <div class=format!("h-full {}", palette::BAR_OVER) style:width=width(g.over) data-part="over"></div>
            </div>
            {g.tick.map(|t| view! {
                <div class=format!("absolute -top-0.5 -bottom-0.5 w-0.5 -translate-x-1/2 {}", palette::BAR_TICK)
                    style:left=width(t) data-part="tick" aria-hidden="true"></div>
            })}
        </div>
    }
}

/// A resource's name for a bar's row, with its vendor's dot for accelerators.
#[component]
pub fn ResourceName(
    /// The resource (`cpu`, `memory`, `nvidia.com/a100`…).
    resource: String,
) -> impl IntoView {
    let i18n = crate::i18n::use_i18n();
    let dot = palette::vendor_dot(&resource);
    view! {
        <span class="inline-flex items-center gap-1.5 font-medium">
            {dot.map(|d| view! { <span class=format!("inline-block h-2 w-2 shrink-0 rounded-full {d}") aria-hidden="true"></span> })}
            <span>{move || i18n.resource_name(&resource)}</span>
        </span>
    }
}

/// One resource of a queue's capacity: its name, a bar of what all users use against the
/// capacity (its limit), and the same in words (the queue tree, the capacity view and the
/// resource summary show these alike, through [`crate::components::sharing::QueueUseBars`]).
#[component]
pub fn CapacityBar(
    /// The resource name.
    resource: String,
    /// What all users use.
    used: anteroom_shared::scheduling::Quantity,
    /// The capacity.
    capacity: anteroom_shared::scheduling::Quantity,
) -> impl IntoView {
    let i18n = crate::i18n::use_i18n();
    let (u, c) = (crate::format::value(&used), crate::format::value(&capacity));
    let label = {
        let resource = resource.clone();
        move || {
            let l = i18n.locale();
            i18n.tf(
                crate::i18n::k!("summary.capacityBar"),
                &[
                    ("resource", &i18n.resource_name(&resource)),
                    ("used", &crate::format::amount(l, &resource, u)),
                    ("capacity", &crate::format::amount(l, &resource, c)),
                ],
            )
        }
    };
    let input = BarInput {
        used: u,
        limit: Some(c),
        ..Default::default()
    };
    view! {
        <div class="grid grid-cols-[8rem_minmax(6rem,1fr)_minmax(10rem,16rem)] items-center gap-2 text-xs" data-testid="capacity-bar" data-resource=resource.clone()>
            <ResourceName resource=resource.clone() />
            {
                let label = label.clone();
                move || view! { <Bar input=input label=label() /> }
            }
            <span class="text-slate-700 dark:text-slate-300">{label}</span>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(used: f64, added: f64, limit: Option<f64>, capacity: Option<f64>) -> Geometry {
        geometry(BarInput {
            used,
            added,
            limit,
            capacity,
        })
    }

    #[test]
    fn a_request_over_a_limit_by_one_is_an_overage_of_one() {
        // 3 used + 2 asked against a limit of 4: the old bar painted both asked units red.
        let g = bar(3.0, 2.0, Some(4.0), None);
        assert_eq!(g.level, Level::Over);
        assert!((g.used - 60.0).abs() < 1e-9, "{g:?}");
        assert!((g.added - 20.0).abs() < 1e-9, "{g:?}");
        assert!((g.over - 20.0).abs() < 1e-9, "{g:?}");
        assert!((g.tick.unwrap() - 80.0).abs() < 1e-9, "{g:?}");
    }

    #[test]
    fn without_a_limit_a_resource_is_scaled_to_its_own_capacity_not_to_another_resources_number() {
        // 128 Mi of memory (134,217,728 bytes) in a queue of 64 Gi: a sliver, not a full bar.
        let g = bar(134_217_728.0, 0.0, None, Some(64.0 * 1024.0 * 1024.0 * 1024.0));
        assert!(g.used < 1.0, "{g:?}");
        assert_eq!(g.tick, None);
        assert_eq!(g.level, Level::Ok);
        assert_eq!(g.over, 0.0);
        // 2 cores of 16: an eighth.
        assert!((bar(2.0, 0.0, None, Some(16.0)).used - 12.5).abs() < 1e-9);
    }

    #[test]
    fn the_tone_changes_near_the_limit_and_not_before() {
        assert_eq!(bar(7.0, 0.0, Some(10.0), None).level, Level::Ok);
        assert_eq!(bar(7.0, 1.0, Some(10.0), None).level, Level::Near);
        assert_eq!(bar(10.0, 0.0, Some(10.0), None).level, Level::Near);
        assert_eq!(bar(10.0, 0.5, Some(10.0), None).level, Level::Over);
    }

    #[test]
    fn within_the_limit_nothing_is_red_and_the_tick_is_at_the_end() {
        let g = bar(2.0, 1.0, Some(4.0), None);
        assert_eq!(g.over, 0.0);
        assert_eq!(g.tick, Some(100.0));
        assert!((g.used - 50.0).abs() < 1e-9 && (g.added - 25.0).abs() < 1e-9);
    }

    #[test]
    fn usage_already_over_the_limit_shows_its_own_excess_and_the_whole_request_past_it() {
        // 5 used of 4, asking 1 more: 1 of the used and the 1 asked are past the limit.
        let g = bar(5.0, 1.0, Some(4.0), None);
        assert!((g.used - 400.0 / 6.0).abs() < 1e-9, "{g:?}");
        assert_eq!(g.added, 0.0);
        assert!((g.over - 200.0 / 6.0).abs() < 1e-9, "{g:?}");
    }

    #[test]
    fn empty_and_absurd_inputs_draw_nothing_wrong() {
        assert_eq!(bar(0.0, 0.0, None, None).used, 0.0);
        let zero_limit = bar(0.0, 1.0, Some(0.0), None);
        assert_eq!(zero_limit.level, Level::Over);
        assert!((zero_limit.over - 100.0).abs() < 1e-9);
        let g = bar(-3.0, f64::NAN.max(0.0), Some(f64::INFINITY), Some(-1.0));
        assert_eq!((g.used, g.added, g.over), (0.0, 0.0, 0.0));
        // No room known at all (the cluster's total not read yet): an empty bar, not the total
        // drawn as full.
        let g = bar(3.0, 1.0, None, None);
        assert_eq!(
            (g.used, g.added, g.over, g.level, g.scale),
            (0.0, 0.0, 0.0, Level::Ok, Scale::Unknown)
        );
    }

    #[test]
    fn parts_never_exceed_the_width() {
        for used in [0.0, 0.5, 1.0, 3.0, 7.0, 1e12] {
            for added in [0.0, 0.25, 2.0, 9.0] {
                for limit in [None, Some(0.0), Some(1.0), Some(4.0), Some(1e12)] {
                    for capacity in [None, Some(2.0), Some(1e15)] {
                        let g = bar(used, added, limit, capacity);
                        let sum = g.used + g.added + g.over;
                        assert!(sum <= 100.0 + 1e-9, "{used} {added} {limit:?} {capacity:?}: {g:?}");
                        if let (Some(l), true) = (limit, used + added > 0.0) {
                            assert_eq!(g.over > 0.0, used + added > l, "{used} {added} {l}: {g:?}");
                        }
                    }
                }
            }
        }
    }
}
