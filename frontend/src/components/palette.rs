//! What each colour means, in one table: a hue stands for one thing in the whole UI, so a
//! reader who learnt "fuchsia is waiting to queue" is never told something else by the same
//! colour on the same screen. Every badge, bar and panel takes its classes from here.
//!
//! | meaning                     | hue                                                   |
//! |-----------------------------|-------------------------------------------------------|
//! | brand and actions           | violet (buttons, links, focus, the selected control) |
//! | schedule types              | Normal indigo, Elastic cyan                           |
//! | phases                      | Waiting to Queue fuchsia, Pending yellow, Running blue, Restarting teal, Completed green, Aborted rose, Terminated stone, Failed red, Preempted orange (dashed), Deleted gray |
//! | levels of a bar             | ok slate, near amber, over red (red is "wrong" everywhere: over a limit or failed) |
//! | accelerator vendors (a dot) | NVIDIA lime, AMD pink, Intel sky                      |
//! | information panels          | slate                                                 |
//!
//! Each class list has its dark-mode half; the tests below check that no two meanings share a
//! hue (red's two uses being one meaning).

use anteroom_shared::scheduling::{JobPhase, ScheduleType};

/// A tinted pill badge in `hue` (light and dark halves).
macro_rules! pill {
    ($hue:literal) => {
        concat!(
            "inline-flex items-center whitespace-nowrap rounded-full border px-2 py-0.5 text-xs font-medium ",
            "border-", $hue, "-300 dark:border-", $hue, "-700 bg-", $hue, "-50 dark:bg-", $hue, "-950 text-", $hue,
            "-900 dark:text-", $hue, "-100"
        )
    };
}

/// The badge of a schedule type.
pub fn schedule_badge(t: ScheduleType) -> &'static str {
    match t {
        ScheduleType::Normal => pill!("indigo"),
        ScheduleType::Backfill => pill!("cyan"),
    }
}

/// The badge of a phase; Preempted is dashed as well as orange (colour is never the only sign).
pub fn phase_badge(phase: JobPhase) -> &'static str {
    match phase {
        JobPhase::Prequeue => pill!("fuchsia"),
        JobPhase::Activating | JobPhase::Pending => pill!("yellow"),
        JobPhase::Running => pill!("blue"),
        JobPhase::Restarting => pill!("teal"),
        JobPhase::Completing | JobPhase::Completed => pill!("green"),
        JobPhase::Aborting | JobPhase::Aborted => pill!("rose"),
        JobPhase::Terminating | JobPhase::Terminated => pill!("stone"),
        JobPhase::Failed => pill!("red"),
        JobPhase::Preempted => concat!(
            "inline-flex items-center whitespace-nowrap rounded-full border-2 border-dashed px-2 py-0.5 text-xs font-medium ",
            "border-orange-400 bg-orange-50 dark:bg-orange-950 text-orange-900 dark:text-orange-100"
        ),
        JobPhase::Deleted => pill!("gray"),
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
        pill!("green")
    } else {
        concat!(
            "inline-flex items-center whitespace-nowrap rounded-full border-2 px-2 py-0.5 text-xs font-semibold ",
            "border-red-600 dark:border-red-400 bg-white dark:bg-slate-900 text-red-800 dark:text-red-200"
        )
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
            m.push((format!("schedule {}", t.as_str()), schedule_badge(t).into()));
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
    fn every_badge_has_a_dark_half() {
        for (meaning, classes) in meanings().into_iter().filter(|(m, _)| m.starts_with("phase") || m.starts_with("schedule")) {
            assert!(classes.contains("dark:bg-"), "{meaning}: {classes}");
            assert!(classes.contains("dark:text-"), "{meaning}: {classes}");
        }
    }
}
