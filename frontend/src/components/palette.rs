//! What each colour means, in one table: a hue stands for one thing in the whole UI, so a
//! reader who learnt "fuchsia is waiting to queue" is never told something else by the same
//! colour on the same screen. Every badge, bar and panel takes its classes from here.
//!
//! | meaning                     | hue                                                   |
//! |-----------------------------|-------------------------------------------------------|
//! | brand and actions           | violet (buttons, links, focus, the selected control) |
//! | schedule types              | Normal indigo, Elastic cyan (also the usage chart's normal and Elastic parts, a shade per queue or user) |
//! | phases                      | Waiting to Queue fuchsia, Pending yellow, Running blue, Restarting teal, Completed green, Aborted rose, Terminated stone, Failed red, Preempted orange (dashed), Deleted gray |
//! | levels of a bar             | ok slate, near amber, over red (red is "wrong" everywhere: over a limit or failed) |
//! | attention, success          | amber asks for attention elsewhere too (unsaved, retrying, reconnecting, a taint no rule tolerates); emerald says something went well (a toast, "starts now", live, delivered) |
//! | accelerator vendors (a dot) | NVIDIA lime, AMD pink, Intel sky                      |
//! | guaranteed room (sharing)   | zinc: a queue's guarantee on a bar, its idle part (what it lends) as a band |
//! | borrowed room (sharing)     | purple: use beyond a guarantee on a bar, the Borrowing badge (it may be reclaimed) |
//! | information panels          | slate                                                 |
//!
//! Each class list has its dark-mode half; the tests below check that no two meanings share a
//! hue (red's two uses being one meaning).

use anteroom_shared::scheduling::{JobPhase, ScheduleType};

// Every class is written out whole: the stylesheet is generated from the classes that appear
// literally in the source, so a class assembled at compile time would have no style.

/// The badge of a schedule type.
pub fn schedule_badge(t: ScheduleType) -> &'static str {
    match t {
        ScheduleType::Normal => {
            "inline-flex items-center whitespace-nowrap rounded-full border px-2 py-0.5 text-xs font-medium border-indigo-300 dark:border-indigo-700 bg-indigo-50 dark:bg-indigo-950 text-indigo-900 dark:text-indigo-100"
        }
        ScheduleType::Backfill => {
            "inline-flex items-center whitespace-nowrap rounded-full border px-2 py-0.5 text-xs font-medium border-cyan-300 dark:border-cyan-700 bg-cyan-50 dark:bg-cyan-950 text-cyan-900 dark:text-cyan-100"
        }
    }
}

/// The usage chart's normal parts: the Normal badge's indigo, a shade per queue or user (in the
/// legend's order), far apart for neighbours in a stack; dark shades on light, light on dark.
const USAGE_NORMAL: [&str; 6] = [
    "fill-indigo-800 dark:fill-indigo-300",
    "fill-indigo-500",
    "fill-indigo-300 dark:fill-indigo-700",
    "fill-indigo-950 dark:fill-indigo-100",
    "fill-indigo-600 dark:fill-indigo-400",
    "fill-indigo-200 dark:fill-indigo-600",
];

/// The usage chart's Elastic parts: the Elastic badge's cyan, the same shades (and hatched
/// over them: colour is never the only sign).
const USAGE_ELASTIC: [&str; 6] = [
    "fill-cyan-800 dark:fill-cyan-300",
    "fill-cyan-500",
    "fill-cyan-300 dark:fill-cyan-700",
    "fill-cyan-950 dark:fill-cyan-100",
    "fill-cyan-600 dark:fill-cyan-400",
    "fill-cyan-200 dark:fill-cyan-600",
];

/// The usage chart's part of the queues or users past the last shade: neutral, normal and
/// Elastic told apart by the hatching alone.
pub const USAGE_OTHER: &str = "fill-slate-400 dark:fill-slate-500";

/// How many queues or users the usage chart can tell apart by shade.
pub const USAGE_SHADES: usize = USAGE_NORMAL.len();

/// The fill of a usage chart's part: normal or Elastic use (`t`) of the `shade`th queue or
/// user; past the shades, [`USAGE_OTHER`].
pub fn usage_part(t: ScheduleType, shade: usize) -> &'static str {
    let shades = match t {
        ScheduleType::Normal => &USAGE_NORMAL,
        ScheduleType::Backfill => &USAGE_ELASTIC,
    };
    shades.get(shade).copied().unwrap_or(USAGE_OTHER)
}

/// The stripes over an Elastic part of the usage chart (an SVG pattern's stripe).
pub const USAGE_HATCH: &str = "fill-white dark:fill-slate-950";

/// The badge of a phase; Preempted is dashed as well as orange (colour is never the only sign).
pub fn phase_badge(phase: JobPhase) -> &'static str {
    match phase {
        JobPhase::Prequeue => {
            "inline-flex items-center whitespace-nowrap rounded-full border px-2 py-0.5 text-xs font-medium border-fuchsia-300 dark:border-fuchsia-700 bg-fuchsia-50 dark:bg-fuchsia-950 text-fuchsia-900 dark:text-fuchsia-100"
        }
        JobPhase::Activating | JobPhase::Pending => {
            "inline-flex items-center whitespace-nowrap rounded-full border px-2 py-0.5 text-xs font-medium border-yellow-300 dark:border-yellow-700 bg-yellow-50 dark:bg-yellow-950 text-yellow-900 dark:text-yellow-100"
        }
        JobPhase::Running => {
            "inline-flex items-center whitespace-nowrap rounded-full border px-2 py-0.5 text-xs font-medium border-blue-300 dark:border-blue-700 bg-blue-50 dark:bg-blue-950 text-blue-900 dark:text-blue-100"
        }
        JobPhase::Restarting => {
            "inline-flex items-center whitespace-nowrap rounded-full border px-2 py-0.5 text-xs font-medium border-teal-300 dark:border-teal-700 bg-teal-50 dark:bg-teal-950 text-teal-900 dark:text-teal-100"
        }
        JobPhase::Completing | JobPhase::Completed => {
            "inline-flex items-center whitespace-nowrap rounded-full border px-2 py-0.5 text-xs font-medium border-green-300 dark:border-green-700 bg-green-50 dark:bg-green-950 text-green-900 dark:text-green-100"
        }
        JobPhase::Aborting | JobPhase::Aborted => {
            "inline-flex items-center whitespace-nowrap rounded-full border px-2 py-0.5 text-xs font-medium border-rose-300 dark:border-rose-700 bg-rose-50 dark:bg-rose-950 text-rose-900 dark:text-rose-100"
        }
        JobPhase::Terminating | JobPhase::Terminated => {
            "inline-flex items-center whitespace-nowrap rounded-full border px-2 py-0.5 text-xs font-medium border-stone-300 dark:border-stone-700 bg-stone-50 dark:bg-stone-950 text-stone-900 dark:text-stone-100"
        }
        JobPhase::Failed => {
            "inline-flex items-center whitespace-nowrap rounded-full border px-2 py-0.5 text-xs font-medium border-red-300 dark:border-red-700 bg-red-50 dark:bg-red-950 text-red-900 dark:text-red-100"
        }
        JobPhase::Preempted => {
            "inline-flex items-center whitespace-nowrap rounded-full border-2 border-dashed px-2 py-0.5 text-xs font-medium border-orange-400 bg-orange-50 dark:bg-orange-950 text-orange-900 dark:text-orange-100"
        }
        JobPhase::Deleted => {
            "inline-flex items-center whitespace-nowrap rounded-full border px-2 py-0.5 text-xs font-medium border-gray-300 dark:border-gray-700 bg-gray-50 dark:bg-gray-950 text-gray-900 dark:text-gray-100"
        }
    }
}

/// How full a bar is, against its limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Well within (or no limit).
    Ok,
    /// At 80 % of the limit or more, not over.
    Near,
    /// Over the limit.
    Over,
}

impl Level {
    /// The name tests and styles read (`data-level`).
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Near => "near",
            Level::Over => "over",
        }
    }
}

/// The solid part of a bar (what is used), by level.
pub fn bar_used(level: Level) -> &'static str {
    match level {
        Level::Ok => "bg-slate-600 dark:bg-slate-300",
        Level::Near | Level::Over => "bg-amber-500 dark:bg-amber-400",
    }
}

/// The lighter part of a bar (pending, this job's request) within the limit, by level.
pub fn bar_added(level: Level) -> &'static str {
    match level {
        Level::Ok => "bg-slate-300 dark:bg-slate-500",
        Level::Near | Level::Over => "bg-amber-200 dark:bg-amber-700",
    }
}

/// The part of a bar past its limit.
pub const BAR_OVER: &str = "bg-red-600 dark:bg-red-500";
/// A bar's track.
pub const BAR_TRACK: &str = "bg-slate-200 dark:bg-slate-800";
/// The tick that marks a limit on a bar.
pub const BAR_TICK: &str = "bg-slate-950 dark:bg-white";

/// The part of a shared bar (`components::sharing`) that is guaranteed and idle: lent to other
/// queues now. A band between the used part and the guarantee's end.
pub const BAR_GUARANTEED_IDLE: &str = "bg-zinc-400 dark:bg-zinc-500";
/// The dashed mark (a border colour) at the end of a guarantee on a shared bar: the band's
/// edge, also where use turns into borrowing.
pub const BAR_GUARANTEE_MARK: &str = "border-zinc-800 dark:border-zinc-200";
/// The part of a shared bar used beyond the guarantee: borrowed room, which may be reclaimed.
pub const BAR_BORROWED: &str = "bg-purple-600 dark:bg-purple-400";
/// The Borrowing badge of a job admitted beyond its queue's guarantee (it may be reclaimed);
/// dashed like the Preempted badge, as what may be taken back (colour is never the only sign).
pub const BORROWING_BADGE: &str = "inline-flex items-center whitespace-nowrap rounded-full border border-dashed px-2 py-0.5 text-xs font-medium border-purple-400 dark:border-purple-500 bg-purple-50 dark:bg-purple-950 text-purple-900 dark:text-purple-100";

/// The vendor dot beside an accelerator's name (`nvidia.com/…` lime, `amd.com/…` pink,
/// `intel.com/…` sky); `None` for CPU, memory and unknown vendors, named in words only.
pub fn vendor_dot(resource: &str) -> Option<&'static str> {
    if resource.starts_with("nvidia.com/") {
        Some("bg-lime-500")
    } else if resource.starts_with("amd.com/") {
        Some("bg-pink-500")
    } else if resource.starts_with("intel.com/") || resource.starts_with("gpu.intel.com/") {
        Some("bg-sky-500")
    } else {
        None
    }
}

/// An information panel (a reason, the waiting card, a preview's verdict): neutral, so the
/// badges inside it keep their meaning.
pub const PANEL: &str = "rounded border border-slate-300 dark:border-slate-600 bg-slate-50 dark:bg-slate-950";
/// A tag that marks one item of a list (the default template), neutral for the same reason.
pub const TAG: &str = "rounded border border-slate-300 dark:border-slate-600 bg-white dark:bg-slate-900 px-2 py-0.5 text-xs font-medium text-slate-800 dark:text-slate-200";
/// A node's readiness: a filled green check for Ready, a hollow red cross for Not ready (they
/// read apart without colour).
pub fn node_ready(ready: bool) -> &'static str {
    if ready {
        "inline-flex items-center whitespace-nowrap rounded-full border px-2 py-0.5 text-xs font-medium border-green-300 dark:border-green-700 bg-green-50 dark:bg-green-950 text-green-900 dark:text-green-100"
    } else {
        "inline-flex items-center whitespace-nowrap rounded-full border-2 px-2 py-0.5 text-xs font-semibold border-red-600 dark:border-red-400 bg-white dark:bg-slate-900 text-red-800 dark:text-red-200"
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    const HUES: [&str; 22] = [
        "slate", "gray", "zinc", "neutral", "stone", "red", "orange", "amber", "yellow", "lime", "green", "emerald",
        "teal", "cyan", "sky", "blue", "indigo", "violet", "purple", "fuchsia", "pink", "rose",
    ];

    /// The hues a class list paints with.
    fn hues(classes: &str) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = HUES
            .iter()
            .copied()
            .filter(|h| classes.split_whitespace().any(|c| c.contains(&format!("-{h}-"))))
            .collect();
        out.dedup();
        out
    }

    /// Every meaning with its classes (brand as the primary button paints it).
    fn meanings() -> Vec<(String, String)> {
        let mut m: Vec<(String, String)> = Vec::new();
        m.push(("brand".into(), crate::components::BUTTON.into()));
        for t in [ScheduleType::Normal, ScheduleType::Backfill] {
            // The usage chart's shades of the type mean the type too.
            let chart: Vec<&str> = (0..USAGE_SHADES).map(|i| usage_part(t, i)).collect();
            m.push((
                format!("schedule {}", t.as_str()),
                format!("{} {}", schedule_badge(t), chart.join(" ")),
            ));
        }
        for p in [
            JobPhase::Prequeue,
            JobPhase::Pending,
            JobPhase::Running,
            JobPhase::Restarting,
            JobPhase::Completed,
            JobPhase::Aborted,
            JobPhase::Terminated,
            JobPhase::Failed,
            JobPhase::Preempted,
            JobPhase::Deleted,
        ] {
            m.push((format!("phase {}", p.as_str()), phase_badge(p).into()));
        }
        m.push(("level near".into(), bar_used(Level::Near).into()));
        m.push(("level over".into(), BAR_OVER.into()));
        for v in ["nvidia.com/a100", "amd.com/mi300", "intel.com/max"] {
            m.push((format!("vendor {v}"), vendor_dot(v).unwrap().into()));
        }
        m.push((
            "guaranteed".into(),
            format!("{BAR_GUARANTEED_IDLE} {BAR_GUARANTEE_MARK}"),
        ));
        m.push(("borrowed".into(), format!("{BAR_BORROWED} {BORROWING_BADGE}")));
        m
    }

    #[test]
    fn no_two_meanings_share_a_hue() {
        // The neutral greys (slate for "ok" and panels, stone, gray) are allowed their own
        // phases; red is "wrong": over a limit, failed, not ready.
        let shared_ok = |a: &str, b: &str| {
            let wrong = |s: &str| s == "level over" || s == "phase Failed";
            wrong(a) && wrong(b)
        };
        let mut owner: BTreeMap<&str, String> = BTreeMap::new();
        for (meaning, classes) in meanings() {
            let found = hues(&classes);
            assert!(!found.is_empty(), "{meaning} paints with no hue: {classes}");
            for hue in found {
                if let Some(first) = owner.get(hue) {
                    assert!(shared_ok(first, &meaning), "{hue} means both {first} and {meaning}");
                } else {
                    owner.insert(hue, meaning.clone());
                }
            }
        }
    }

    #[test]
    fn every_class_is_written_out_whole_so_the_stylesheet_has_it() {
        // The CSS is generated from the class names found in the source text.
        let source = [include_str!("palette.rs"), include_str!("mod.rs")].concat();
        for (meaning, classes) in meanings() {
            for class in classes.split_whitespace() {
                let quoted_or_spaced = [
                    format!("\"{class} "),
                    format!(" {class} "),
                    format!(" {class}\""),
                    format!("\"{class}\""),
                ];
                assert!(
                    quoted_or_spaced.iter().any(|q| source.contains(q.as_str())),
                    "{meaning}: `{class}` is not in the source as written"
                );
            }
        }
    }

    #[test]
    fn every_badge_has_a_dark_half() {
        for (meaning, classes) in meanings()
            .into_iter()
            .filter(|(m, _)| m.starts_with("phase") || m.starts_with("schedule") || m == "borrowed")
        {
            assert!(classes.contains("dark:bg-"), "{meaning}: {classes}");
            assert!(classes.contains("dark:text-"), "{meaning}: {classes}");
        }
    }
}
