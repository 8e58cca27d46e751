//! Usage bars: a solid part (running / used), a lighter part (pending / this request) and the
//! limit as the full width, with the numbers always written beside the bar.

use leptos::prelude::*;

/// The share of `part` in `scale`, as a CSS width (0–100 %).
pub fn percent(part: f64, scale: f64) -> String {
    if scale <= 0.0 || part <= 0.0 {
        return "0%".into();
    }
    format!("{:.2}%", (part / scale * 100.0).clamp(0.0, 100.0))
}

/// A horizontal bar of `solid` then `light` out of `scale`. `over` marks the bar as exceeding
/// its limit (red, and said in the label). Widths are set through the CSS object model, which
/// the UI's strict Content-Security-Policy allows (inline `style` attributes it does not).
#[component]
pub fn UsageBar(
    /// The solid part (running, used).
    solid: f64,
    /// The lighter part after it (pending, this job's request).
    #[prop(default = 0.0)]
    light: f64,
    /// The full width (the limit, or the largest value).
    scale: f64,
    /// Whether solid + light goes past the limit.
    #[prop(default = false)]
    over: bool,
    /// Said to screen readers: what the bar shows, in words and numbers.
    label: String,
    /// Colour class of the solid part.
    #[prop(default = "bg-violet-600")]
    colour: &'static str,
) -> impl IntoView {
    let solid_w = percent(solid, scale);
    let light_w = percent(light.min((scale - solid).max(0.0)), scale);
    let track = if over {
        "relative flex h-3 w-full overflow-hidden rounded bg-slate-200 dark:bg-slate-800 ring-2 ring-red-500"
    } else {
        "relative flex h-3 w-full overflow-hidden rounded bg-slate-200 dark:bg-slate-800"
    };
    let light_class = if over {
        "h-full bg-red-400"
    } else {
        "h-full bg-violet-300 dark:bg-violet-400/50"
    };
    view! {
        <div class=track role="img" aria-label=label data-testid="usage-bar">
            <div class=format!("h-full {colour}") style:width=solid_w></div>
            <div class=light_class style:width=light_w></div>
        </div>
    }
}

/// One resource of a queue's capacity: its name, a bar of what all users use against the
/// capacity, and the same in words (the queue tree and the resource summary show these alike).
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
    let name = {
        let resource = resource.clone();
        move || i18n.resource_name(&resource)
    };
    let colour = vendor_colour(&resource);
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
    view! {
        <div class="grid grid-cols-[8rem_1fr_16rem] items-center gap-2 text-xs" data-testid="capacity-bar" data-resource=resource>
            <span>{name}</span>
            {
                let label = label.clone();
                move || view! { <UsageBar solid=u scale=c over={u > c} label=label() colour=colour /> }
            }
            <span class="text-slate-700 dark:text-slate-300">{label}</span>
        </div>
    }
}

/// The vendor colour of an accelerator resource (`nvidia.com/a100` green, `amd.com/…` red,
/// `intel.com/…` blue, others slate).
pub fn vendor_colour(resource: &str) -> &'static str {
    if resource.starts_with("nvidia.com/") {
        "bg-lime-600"
    } else if resource.starts_with("amd.com/") {
        "bg-red-600"
    } else if resource.starts_with("intel.com/") || resource.starts_with("gpu.intel.com/") {
        "bg-blue-600"
    } else if resource == "cpu" {
        "bg-violet-600"
    } else if resource == "memory" {
        "bg-sky-600"
    } else {
        "bg-slate-600 dark:bg-slate-400"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_are_clamped_shares() {
        assert_eq!(percent(1.0, 4.0), "25.00%");
        assert_eq!(percent(9.0, 4.0), "100.00%");
        assert_eq!(percent(1.0, 0.0), "0%");
        assert_eq!(percent(-1.0, 4.0), "0%");
    }
}
