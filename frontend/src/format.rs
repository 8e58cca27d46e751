//! Numbers, quantities and dates for the current locale, through the browser's `Intl`: the
//! WASM carries no locale data, and every language gets its own digits grouping, date order and
//! plural rules.

use std::cell::RefCell;
use std::collections::HashMap;

use anteroom_shared::scheduling::Quantity;
use chrono::{DateTime, Utc};
use js_sys::{Array, Date, Function, Intl, Object, Reflect};
use wasm_bindgen::JsValue;

use crate::locale::Locale;

fn locales(locale: Locale) -> Array {
    Array::of1(&JsValue::from_str(locale.code()))
}

fn options(pairs: &[(&str, JsValue)]) -> Object {
    let o = Object::new();
    for (k, v) in pairs {
        let _ = Reflect::set(&o, &JsValue::from_str(k), v);
    }
    o
}

thread_local! {
    /// Formatters made so far, by what they format and how: an `Intl` formatter costs far more
    /// to make than to use, and a table formats hundreds of values a render.
    static FORMATTERS: RefCell<HashMap<String, Function>> = RefCell::new(HashMap::new());
    /// Plural rules made so far, by locale.
    static PLURALS: RefCell<HashMap<Locale, Intl::PluralRules>> = RefCell::new(HashMap::new());
    /// Relative-time formatters made so far, by locale and whether they may use words
    /// ("now") rather than numbers.
    static RELATIVE: RefCell<HashMap<(Locale, bool), Intl::RelativeTimeFormat>> = RefCell::new(HashMap::new());
}

/// The `format` function of the formatter `key` names, made by `make` the first time.
fn formatter(key: String, make: impl FnOnce() -> Function) -> Function {
    FORMATTERS.with(|f| f.borrow_mut().entry(key).or_insert_with(make).clone())
}

fn call_format(format: Function, arg: &JsValue) -> String {
    format
        .call1(&JsValue::NULL, arg)
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or_default()
}

/// Now, from the browser's clock: `Utc::now()` panics on wasm32-unknown-unknown (chrono is
/// built without its `wasmbind` feature, so it would ask `SystemTime`, which the target lacks).
pub fn now() -> DateTime<Utc> {
    DateTime::from_timestamp_millis(Date::now() as i64).unwrap_or_default()
}

/// A number with at most `max_fraction` decimals, grouped the locale's way.
pub fn number(locale: Locale, value: f64, max_fraction: u32) -> String {
    let format = formatter(format!("number {} {max_fraction}", locale.code()), || {
        Intl::NumberFormat::new(
            &locales(locale),
            &options(&[("maximumFractionDigits", JsValue::from(max_fraction))]),
        )
        .format()
    });
    call_format(format, &JsValue::from_f64(value))
}

/// A number with exactly `fraction` decimals (`3.50`), grouped the locale's way: columns of
/// amounts that line up and read alike.
pub fn fixed(locale: Locale, value: f64, fraction: u32) -> String {
    let format = formatter(format!("fixed {} {fraction}", locale.code()), || {
        Intl::NumberFormat::new(
            &locales(locale),
            &options(&[
                ("minimumFractionDigits", JsValue::from(fraction)),
                ("maximumFractionDigits", JsValue::from(fraction)),
            ]),
        )
        .format()
    });
    call_format(format, &JsValue::from_f64(value))
}

/// A share (0.25) as the locale writes a percentage (`25%`, `25 %`, `0.4%`), to a tenth of a
/// percent.
pub fn percent(locale: Locale, share: f64) -> String {
    let format = formatter(format!("percent {}", locale.code()), || {
        Intl::NumberFormat::new(
            &locales(locale),
            &options(&[
                ("style", JsValue::from_str("percent")),
                ("maximumFractionDigits", JsValue::from(1)),
            ]),
        )
        .format()
    });
    call_format(format, &JsValue::from_f64(share))
}

/// How much of a UTC date [`utc_date`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DateLength {
    /// Day, month and year ("Nov 23, 2026").
    Day,
    /// Day and month ("Nov 23"): a chart's axis, where the year is said elsewhere.
    ShortDay,
    /// Month and year ("Nov 2026").
    Month,
}

/// A calendar date in UTC as the locale writes it: the usage report's periods are UTC days,
/// weeks and months, so the browser's own time zone would name the day before in the west.
pub fn utc_date(locale: Locale, at: DateTime<Utc>, length: DateLength) -> String {
    let parts: &[(&str, &str)] = match length {
        DateLength::Day => &[("year", "numeric"), ("month", "short"), ("day", "numeric")],
        DateLength::ShortDay => &[("month", "short"), ("day", "numeric")],
        DateLength::Month => &[("year", "numeric"), ("month", "short")],
    };
    let format = formatter(format!("utc-date {} {length:?}", locale.code()), || {
        let mut pairs: Vec<(&str, JsValue)> = vec![("timeZone", JsValue::from_str("UTC"))];
        pairs.extend(parts.iter().map(|(k, v)| (*k, JsValue::from_str(v))));
        Intl::DateTimeFormat::new(&locales(locale), &options(&pairs)).format()
    });
    let date = Date::new(&JsValue::from_f64(at.timestamp_millis() as f64));
    call_format(format, &date)
}

/// Date and time, medium date and short time, in the browser's time zone.
pub fn datetime(locale: Locale, at: DateTime<Utc>) -> String {
    let format = formatter(format!("datetime {}", locale.code()), || {
        Intl::DateTimeFormat::new(
            &locales(locale),
            &options(&[
                ("dateStyle", JsValue::from_str("medium")),
                ("timeStyle", JsValue::from_str("medium")),
            ]),
        )
        .format()
    });
    let date = Date::new(&JsValue::from_f64(at.timestamp_millis() as f64));
    call_format(format, &date)
}

/// Date and time to the second with the time zone ("Nov 26, 2026, 14:03:07 GMT+9"), for where
/// a relative time needs its exact moment beside it.
pub fn datetime_with_zone(locale: Locale, at: DateTime<Utc>) -> String {
    let format = formatter(format!("datetime-zone {}", locale.code()), || {
        Intl::DateTimeFormat::new(
            &locales(locale),
            &options(&[
                ("year", JsValue::from_str("numeric")),
                ("month", JsValue::from_str("short")),
                ("day", JsValue::from_str("numeric")),
                ("hour", JsValue::from_str("2-digit")),
                ("minute", JsValue::from_str("2-digit")),
                ("second", JsValue::from_str("2-digit")),
                ("timeZoneName", JsValue::from_str("short")),
            ]),
        )
        .format()
    });
    let date = Date::new(&JsValue::from_f64(at.timestamp_millis() as f64));
    call_format(format, &date)
}

/// How far `at` is from `now`, as the locale says it ("3 min. ago", "3 分钟前", "in 2 hr."):
/// the largest unit that fits, whole units; under 45 seconds, "now" (a moment just past reads
/// "just now" instead: [`just_past`]).
pub fn relative(locale: Locale, at: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let seconds = (at - now).num_seconds();
    let (value, unit) = relative_unit(seconds);
    // Words only for "now": "yesterday" for 25 hours ago would name the wrong calendar day.
    let words = value == 0;
    RELATIVE.with(|r| {
        let mut r = r.borrow_mut();
        let format = r.entry((locale, words)).or_insert_with(|| {
            Intl::RelativeTimeFormat::new(
                &locales(locale),
                &options(&[
                    ("numeric", JsValue::from_str(if words { "auto" } else { "always" })),
                    ("style", JsValue::from_str("short")),
                ]),
            )
        });
        String::from(format.format(value as f64, unit))
    })
}

/// Whether `at` is less than 45 seconds before `now` (or is now): "just now" (刚刚, たった今, 방금),
/// where the browser's "now" would read as the present (现在, 今, 지금).
pub fn just_past(at: DateTime<Utc>, now: DateTime<Utc>) -> bool {
    let seconds = (at - now).num_seconds();
    seconds <= 0 && relative_unit(seconds).0 == 0
}

/// The whole units of a span in seconds (negative: past) that a relative time shows.
pub fn relative_unit(seconds: i64) -> (i64, &'static str) {
    let span = i64::try_from(seconds.unsigned_abs()).unwrap_or(i64::MAX);
    let (n, unit) = match span {
        0..45 => return (0, "second"),
        45..3_600 => ((span / 60).max(1), "minute"),
        3_600..86_400 => (span / 3_600, "hour"),
        _ => (span / 86_400, "day"),
    };
    (if seconds < 0 { -n } else { n }, unit)
}

/// A duration in seconds, as the locale writes "5 min" or "2 h" (the largest unit that fits).
pub fn duration(locale: Locale, seconds: i64) -> String {
    let (value, unit) = if seconds >= 86_400 && seconds % 86_400 == 0 {
        (seconds as f64 / 86_400.0, "day")
    } else if seconds >= 3_600 {
        (seconds as f64 / 3_600.0, "hour")
    } else if seconds >= 60 {
        (seconds as f64 / 60.0, "minute")
    } else {
        (seconds as f64, "second")
    };
    let format = formatter(format!("duration {} {unit}", locale.code()), || {
        Intl::NumberFormat::new(
            &locales(locale),
            &options(&[
                ("style", JsValue::from_str("unit")),
                ("unit", JsValue::from_str(unit)),
                ("unitDisplay", JsValue::from_str("short")),
                ("maximumFractionDigits", JsValue::from(1)),
            ]),
        )
        .format()
    });
    call_format(format, &JsValue::from_f64(value))
}

/// A runtime limit that is not a number of hours above zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotHours;

/// The runtime limit typed in hours (`2`, `1.5`, empty for the queue's) as seconds; `Err` for
/// what is not a positive number. The server checks the range and the queue's maximum.
pub fn runtime_seconds(hours: &str) -> Result<Option<i64>, NotHours> {
    let text = hours.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let hours: f64 = text.parse().map_err(|_| NotHours)?;
    if !hours.is_finite() || hours <= 0.0 || hours > 1e6 {
        return Err(NotHours);
    }
    Ok(Some((hours * 3600.0).round() as i64))
}

/// Seconds as hours the input shows (`5400` → `1.5`).
pub fn hours_text(seconds: i64) -> String {
    let hours = seconds as f64 / 3600.0;
    // Four decimals: typed back, any whole number of seconds rounds to itself.
    let text = format!("{hours:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// True when the locale's plural rule puts `n` in the "one" category (English 1; never in
/// Chinese, Japanese or Korean, which have one form).
pub fn is_plural_one(locale: Locale, n: f64) -> bool {
    PLURALS.with(|p| {
        p.borrow_mut()
            .entry(locale)
            .or_insert_with(|| Intl::PluralRules::new(&locales(locale), &Object::new()))
            .select(n)
            == "one"
    })
}

/// How a resource is counted: CPU in cores, memory in bytes (shown as Gi/Ti), others in units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceKind {
    /// `cpu`: cores, fractions as decimals.
    Cpu,
    /// `memory` (and `ephemeral-storage`): binary units.
    Bytes,
    /// Accelerators and anything else: a count.
    Count,
}

impl ResourceKind {
    /// The kind of a resource name.
    pub fn of(resource: &str) -> Self {
        match resource {
            "cpu" => ResourceKind::Cpu,
            "memory" | "ephemeral-storage" => ResourceKind::Bytes,
            _ => ResourceKind::Count,
        }
    }
}

/// The plain value of a quantity: cores, bytes or units.
pub fn value(q: &Quantity) -> f64 {
    q.milli() as f64 / 1000.0
}

/// A quantity of `resource` for people: `8`, `0.5`, `32 Gi`, `1.5 Ti`, grouped per locale.
pub fn quantity(locale: Locale, resource: &str, q: &Quantity) -> String {
    amount(locale, resource, value(q))
}

/// Like [`quantity`], from a plain value (sums and differences).
pub fn amount(locale: Locale, resource: &str, v: f64) -> String {
    match ResourceKind::of(resource) {
        ResourceKind::Cpu | ResourceKind::Count => number(locale, v, 2),
        ResourceKind::Bytes => {
            const KI: f64 = 1024.0;
            let units = [("Ti", KI.powi(4)), ("Gi", KI.powi(3)), ("Mi", KI.powi(2)), ("Ki", KI)];
            for (suffix, size) in units {
                if v.abs() >= size {
                    return format!("{} {suffix}", number(locale, v / size, 1));
                }
            }
            number(locale, v, 0)
        }
    }
}

/// The short name of a resource: `cpu`, `memory`, or an accelerator's model
/// (`nvidia.com/a100` → `a100`).
pub fn resource_short(resource: &str) -> &str {
    resource.rsplit('/').next().unwrap_or(resource)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_moment_under_45_seconds_ago_is_just_past_and_a_coming_one_is_not() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-29T10:00:00Z")
            .unwrap()
            .to_utc();
        let ago = |s: i64| now - chrono::Duration::seconds(s);
        assert!(just_past(now, now));
        assert!(just_past(ago(44), now));
        assert!(!just_past(ago(45), now), "45 s ago reads as a minute ago");
        assert!(
            !just_past(now + chrono::Duration::seconds(10), now),
            "a coming moment is not past"
        );
        assert_eq!(relative_unit(-45), (-1, "minute"));
    }
}
