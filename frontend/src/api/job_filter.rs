//! A job list's state — filters of several values, search, sort and page — read from and
//! written to the URL, and the API query it makes.

use super::encode;

/// The filters of a job list; each list is repeatable in the query.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobFilter {
    /// Phases (`Prequeue`, `Running`, …).
    pub phases: Vec<String>,
    /// `normal` / `backfill`.
    pub schedule_types: Vec<String>,
    /// Job kinds.
    pub kinds: Vec<String>,
    /// Queue names.
    pub queues: Vec<String>,
    /// Owners (admin list only).
    pub users: Vec<String>,
    /// Only names containing this (`q`); empty: any name.
    pub search: String,
    /// The order (`sort`).
    pub sort: anteroom_shared::api::jobs::JobSort,
}

/// Rows per page of the job lists.
pub const PAGE_SIZE: u64 = 50;

impl JobFilter {
    /// The repeatable filters by their names in a query (the API's and the page's URL).
    fn repeated(&self) -> [(&'static str, &Vec<String>); 5] {
        [
            ("phase", &self.phases),
            ("scheduleType", &self.schedule_types),
            ("kind", &self.kinds),
            ("queue", &self.queues),
            ("user", &self.users),
        ]
    }

    /// The phases the list shows (Pending includes Activating, as the query asks); empty: all.
    pub fn phases_shown(&self) -> Vec<anteroom_shared::scheduling::JobPhase> {
        use std::str::FromStr;

        use anteroom_shared::scheduling::JobPhase;
        let mut phases: Vec<JobPhase> = self.phases.iter().filter_map(|p| JobPhase::from_str(p).ok()).collect();
        if phases.contains(&JobPhase::Pending) && !phases.contains(&JobPhase::Activating) {
            phases.push(JobPhase::Activating);
        }
        phases
    }

    /// The API's query for page `page`. `Pending` takes `Activating` too: the list shows an
    /// activating job as pending.
    pub(super) fn query(&self, page: u64) -> String {
        let mut q = format!("?page={page}&pageSize={PAGE_SIZE}");
        for (name, values) in self.repeated() {
            for v in values {
                q.push_str(&format!("&{name}={}", encode(v)));
            }
        }
        if self.phases.iter().any(|p| p == "Pending") && !self.phases.iter().any(|p| p == "Activating") {
            q.push_str("&phase=Activating");
        }
        if !self.search.trim().is_empty() {
            q.push_str(&format!("&q={}", encode(self.search.trim())));
        }
        q.push_str(&format!("&sort={}", encode(&self.sort.as_param())));
        // Each waiting job with why it waits (the list shows the short reason) — asked only
        // when the list may show waiting jobs.
        if self.phases.is_empty() || self.phases.iter().any(|p| p == "Prequeue") {
            q.push_str("&standing=true");
        }
        q
    }

    /// The page's own URL query for this filter at page `page`: only what differs from the
    /// default list, so a plain list has a plain URL; read back by [`JobFilter::from_url`].
    pub fn url_query(&self, page: u64) -> String {
        let mut parts = Vec::new();
        for (name, values) in self.repeated() {
            parts.extend(values.iter().map(|v| format!("{name}={}", encode(v))));
        }
        if !self.search.trim().is_empty() {
            parts.push(format!("q={}", encode(self.search.trim())));
        }
        if self.sort != anteroom_shared::api::jobs::JobSort::default() {
            parts.push(format!("sort={}", encode(&self.sort.as_param())));
        }
        if page > 1 {
            parts.push(format!("page={page}"));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("?{}", parts.join("&"))
        }
    }

    /// The filter and page a list's URL asks for; `all(name)` answers every value of a query
    /// parameter. What it cannot read (a phase, kind, sort or page that does not parse) is
    /// left out: an edited or old link still shows a list.
    pub fn from_url(all: impl Fn(&str) -> Vec<String>) -> (JobFilter, u64) {
        use std::str::FromStr;
        let first = |name: &str| all(name).into_iter().next();
        let known = |name: &str, parses: fn(&str) -> bool| -> Vec<String> {
            all(name).into_iter().filter(|v| parses(v)).collect()
        };
        let filter = JobFilter {
            phases: known("phase", |v| anteroom_shared::scheduling::JobPhase::from_str(v).is_ok()),
            schedule_types: known("scheduleType", |v| {
                anteroom_shared::scheduling::ScheduleType::from_str(v).is_ok()
            }),
            kinds: known("kind", |v| anteroom_shared::scheduling::JobKind::from_str(v).is_ok()),
            queues: all("queue"),
            users: all("user"),
            search: first("q").unwrap_or_default(),
            sort: first("sort")
                .and_then(|s| anteroom_shared::api::jobs::JobSort::parse(&s))
                .unwrap_or_default(),
        };
        (filter, page_from(first("page").as_deref()))
    }
}

/// The 1-based page a URL's `page` value names (anything else: the first; beyond the API's
/// last page number, its last).
pub fn page_from(value: Option<&str>) -> u64 {
    value
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|p| *p >= 1)
        .map_or(1, |p| p.min(MAX_PAGE))
}

/// The highest page number the API takes (`page` above it is a 422).
const MAX_PAGE: u64 = 1_000_000;

#[cfg(test)]
mod tests {
    use super::page_from;

    #[test]
    fn a_page_is_a_positive_number_or_the_first() {
        assert_eq!(page_from(Some("3")), 3);
        assert_eq!(page_from(Some("0")), 1);
        assert_eq!(page_from(Some("-2")), 1);
        assert_eq!(page_from(Some("x")), 1);
        assert_eq!(page_from(None), 1);
        assert_eq!(page_from(Some("99999999")), 1_000_000);
    }
}
