//! The usage page's state — period, date range, filters, what is counted and how bars stack —
//! read from and written to the page's URL (a link shares a report, Back undoes a change), the
//! default range of each period, the range checks the server makes, and the API query.

use std::collections::BTreeMap;

use anteroom_shared::api::usage::{MAX_REPORT_DAYS, UsagePeriod, period_start};
use chrono::{Days, Months, NaiveDate, NaiveTime};

/// What the chart and the table count, in resource-hours.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Resource {
    /// Every accelerator's GPU-hours, summed over models.
    #[default]
    Gpu,
    /// CPU-hours.
    Cpu,
    /// Memory in GiB-hours.
    Memory,
}

impl Resource {
    /// Every choice, in the select's order.
    pub const ALL: [Resource; 3] = [Resource::Gpu, Resource::Cpu, Resource::Memory];

    /// Its value in the URL and the select.
    pub fn code(self) -> &'static str {
        match self {
            Resource::Gpu => "gpu",
            Resource::Cpu => "cpu",
            Resource::Memory => "memory",
        }
    }

    /// The choice a URL value names.
    pub fn from_code(code: &str) -> Option<Resource> {
        Resource::ALL.into_iter().find(|r| r.code() == code)
    }

    /// Its hours in a row's per-resource map: accelerators are the resources named by a
    /// vendor's domain (`nvidia.com/a100`), summed over models; CPU and memory by their names.
    pub fn hours(self, hours: &BTreeMap<String, f64>) -> f64 {
        hours
            .iter()
            .filter(|(name, _)| match self {
                Resource::Gpu => name.contains('/'),
                Resource::Cpu => name.as_str() == "cpu",
                Resource::Memory => name.as_str() == "memory",
            })
            .map(|(_, h)| h)
            .sum()
    }
}

/// What the parts of a bar are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Stack {
    /// One part per queue.
    #[default]
    Queue,
    /// One part per user (admins: a user sees only their own).
    User,
}

impl Stack {
    /// Its value in the URL and the select.
    pub fn code(self) -> &'static str {
        match self {
            Stack::Queue => "queue",
            Stack::User => "user",
        }
    }
}

/// The report the page shows, as its URL says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UsageView {
    /// Days, weeks or months.
    pub by: UsagePeriod,
    /// The first day (UTC); `None`: the period's default ([`default_from`]).
    pub from: Option<NaiveDate>,
    /// The last day, included (UTC); `None`: today.
    pub to: Option<NaiveDate>,
    /// Only this user's use (admins).
    pub user: Option<String>,
    /// Only this queue's use (admins).
    pub queue: Option<String>,
    /// What is counted.
    pub resource: Resource,
    /// How bars stack.
    pub stack: Stack,
}

/// Why a range is not asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeProblem {
    /// The first day is after the last.
    Backwards,
    /// Longer than the server reports ([`MAX_REPORT_DAYS`]).
    TooLong,
}

/// The first day of a period's default range ending on `to`: the last 30 days, the last 12
/// weeks (from a Monday) or the last 12 months (from a first), each counting `to`'s own.
pub fn default_from(by: UsagePeriod, to: NaiveDate) -> NaiveDate {
    let start = period_start(to.and_time(NaiveTime::MIN).and_utc(), by).date_naive();
    match by {
        UsagePeriod::Day => start - Days::new(29),
        UsagePeriod::Week => start - Days::new(7 * 11),
        UsagePeriod::Month => start - Months::new(11),
    }
}

/// A day as the URL and a date input write it.
fn day_text(day: NaiveDate) -> String {
    day.format("%Y-%m-%d").to_string()
}

/// A date input's or a URL's `2026-11-23`; anything else is none.
pub fn parse_day(text: &str) -> Option<NaiveDate> {
    NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d").ok()
}

fn period_from_code(code: &str) -> Option<UsagePeriod> {
    [UsagePeriod::Day, UsagePeriod::Week, UsagePeriod::Month]
        .into_iter()
        .find(|p| p.as_str() == code)
}

impl UsageView {
    /// The view a URL asks for (`first(name)`: its query's value); what does not parse is left
    /// at its default, so an edited or old link still shows a report.
    pub fn from_url(first: impl Fn(&str) -> Option<String>) -> UsageView {
        let text = |name: &str| first(name).filter(|v| !v.trim().is_empty());
        UsageView {
            by: text("by").and_then(|b| period_from_code(&b)).unwrap_or_default(),
            from: text("from").and_then(|d| parse_day(&d)),
            to: text("to").and_then(|d| parse_day(&d)),
            user: text("user"),
            queue: text("queue"),
            resource: text("resource")
                .and_then(|r| Resource::from_code(&r))
                .unwrap_or_default(),
            stack: if text("stack").as_deref() == Some("user") {
                Stack::User
            } else {
                Stack::Queue
            },
        }
    }

    /// The page's own URL query (with its `?`, or empty): only what differs from the default,
    /// so the plain page has a plain URL. `encode` percent-encodes a value.
    pub fn url_query(&self, encode: impl Fn(&str) -> String) -> String {
        let mut parts = Vec::new();
        if self.by != UsagePeriod::Day {
            parts.push(format!("by={}", self.by.as_str()));
        }
        if let Some(from) = self.from {
            parts.push(format!("from={}", day_text(from)));
        }
        if let Some(to) = self.to {
            parts.push(format!("to={}", day_text(to)));
        }
        if let Some(user) = &self.user {
            parts.push(format!("user={}", encode(user)));
        }
        if let Some(queue) = &self.queue {
            parts.push(format!("queue={}", encode(queue)));
        }
        if self.resource != Resource::Gpu {
            parts.push(format!("resource={}", self.resource.code()));
        }
        if self.stack != Stack::Queue {
            parts.push(format!("stack={}", self.stack.code()));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("?{}", parts.join("&"))
        }
    }

    /// What a caller may ask for: a user reads only their own use, by queue (a link from an
    /// admin keeps working, without the admin's filters).
    pub fn for_caller(mut self, admin: bool) -> UsageView {
        if !admin {
            self.user = None;
            self.queue = None;
            self.stack = Stack::Queue;
        }
        self
    }

    /// The first and last day shown when today (UTC) is `today`.
    pub fn days(&self, today: NaiveDate) -> (NaiveDate, NaiveDate) {
        let to = self.to.unwrap_or(today);
        (self.from.unwrap_or_else(|| default_from(self.by, to)), to)
    }

    /// The range checked as the server checks it: forward, at most [`MAX_REPORT_DAYS`] days
    /// (the last day counts whole).
    pub fn check(&self, today: NaiveDate) -> Result<(), RangeProblem> {
        let (from, to) = self.days(today);
        if from > to {
            return Err(RangeProblem::Backwards);
        }
        if (to - from).num_days() + 1 > MAX_REPORT_DAYS {
            return Err(RangeProblem::TooLong);
        }
        Ok(())
    }

    /// The API's query (without its `?`): the range as instants, the last day up to its end.
    pub fn api_query(&self, today: NaiveDate, encode: impl Fn(&str) -> String) -> String {
        let (from, to) = self.days(today);
        let instant = |day: NaiveDate| format!("{}T00:00:00Z", day_text(day));
        let mut query = format!(
            "from={}&to={}&by={}",
            instant(from),
            instant(to + Days::new(1)),
            self.by.as_str()
        );
        if let Some(user) = &self.user {
            query.push_str(&format!("&user={}", encode(user)));
        }
        if let Some(queue) = &self.queue {
            query.push_str(&format!("&queue={}", encode(queue)));
        }
        query
    }

    /// The same view over another period, on that period's default range (days chosen for
    /// one period rarely suit another: 30 days make a poor chart of months).
    pub fn with_period(&self, by: UsagePeriod) -> UsageView {
        UsageView {
            by,
            from: None,
            to: None,
            ..self.clone()
        }
    }
}

/// Today in UTC, the calendar the report's periods are in.
pub fn today() -> NaiveDate {
    crate::format::now().date_naive()
}

#[cfg(test)]
mod tests {
    use chrono::Datelike;

    use super::*;

    fn day(text: &str) -> NaiveDate {
        parse_day(text).expect("a day")
    }

    fn plain(text: &str) -> String {
        text.to_owned()
    }

    #[test]
    fn each_period_has_its_default_range_ending_today() {
        // Sunday 29 November 2026.
        let today = day("2026-11-29");
        let view = |by| UsageView {
            by,
            ..UsageView::default()
        };
        assert_eq!(view(UsagePeriod::Day).days(today), (day("2026-10-31"), today));
        // Twelve ISO weeks: the one of the 23rd and the eleven before it.
        assert_eq!(view(UsagePeriod::Week).days(today), (day("2026-09-07"), today));
        assert_eq!(day("2026-09-07").weekday(), chrono::Weekday::Mon);
        assert_eq!(view(UsagePeriod::Month).days(today), (day("2025-12-01"), today));
        for by in [UsagePeriod::Day, UsagePeriod::Week, UsagePeriod::Month] {
            assert_eq!(view(by).check(today), Ok(()), "{by:?}");
        }
    }

    #[test]
    fn a_range_is_forward_and_at_most_the_servers_length() {
        let today = day("2026-11-29");
        let range = |from: &str, to: &str| UsageView {
            from: Some(day(from)),
            to: Some(day(to)),
            ..UsageView::default()
        };
        assert_eq!(range("2026-11-23", "2026-11-23").check(today), Ok(()), "one day");
        assert_eq!(
            range("2026-11-24", "2026-11-23").check(today),
            Err(RangeProblem::Backwards)
        );
        // 400 days with the last counted whole is the most; one more is refused.
        assert_eq!(range("2025-10-26", "2026-11-29").check(today), Ok(()));
        assert_eq!(
            range("2025-10-25", "2026-11-29").check(today),
            Err(RangeProblem::TooLong)
        );
    }

    #[test]
    fn the_api_is_asked_up_to_the_end_of_the_last_day() {
        let view = UsageView {
            by: UsagePeriod::Week,
            from: Some(day("2026-11-23")),
            to: Some(day("2026-11-24")),
            ..UsageView::default()
        };
        assert_eq!(
            view.api_query(day("2026-11-29"), plain),
            "from=2026-11-23T00:00:00Z&to=2026-11-25T00:00:00Z&by=week"
        );
    }

    #[test]
    fn a_view_survives_its_url_and_a_plain_one_has_a_plain_url() {
        assert_eq!(UsageView::default().url_query(plain), "");
        let view = UsageView {
            by: UsagePeriod::Month,
            from: Some(day("2026-01-01")),
            to: Some(day("2026-11-29")),
            user: Some("nina".into()),
            queue: Some("nlp".into()),
            resource: Resource::Memory,
            stack: Stack::User,
        };
        let url = view.url_query(plain);
        let pairs: Vec<(String, String)> = url
            .trim_start_matches('?')
            .split('&')
            .filter_map(|p| p.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
            .collect();
        let read = UsageView::from_url(|name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()));
        assert_eq!(read, view);
        // What a user may not ask for is dropped, not sent to be refused.
        let own = view.for_caller(false);
        assert_eq!((own.user, own.queue, own.stack), (None, None, Stack::Queue));
        // An edited link still shows a report.
        let odd = UsageView::from_url(|name| (name != "user").then(|| "nonsense".to_owned()));
        assert_eq!(odd.by, UsagePeriod::Day);
        assert_eq!((odd.from, odd.resource), (None, Resource::Gpu));
    }

    #[test]
    fn accelerators_are_the_names_with_a_vendors_domain() {
        let hours = BTreeMap::from([
            ("nvidia.com/a100".to_owned(), 1.5),
            ("amd.com/mi300".to_owned(), 2.0),
            ("cpu".to_owned(), 8.0),
            ("memory".to_owned(), 64.0),
        ]);
        assert_eq!(Resource::Gpu.hours(&hours), 3.5);
        assert_eq!(Resource::Cpu.hours(&hours), 8.0);
        assert_eq!(Resource::Memory.hours(&hours), 64.0);
        assert_eq!(Resource::Gpu.hours(&BTreeMap::new()), 0.0);
    }
}
