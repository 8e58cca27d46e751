//! How a job list is ordered (`sort=`), and the bodies and answer of the requests that act on
//! several jobs at once.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What a job list is ordered by: its `sort` parameter, a field with `-` before it for
/// descending (`-submittedAt`, the default: newest first). Ties go by submission, in the same
/// direction, so a page boundary never splits or repeats a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobSort {
    /// The field.
    pub field: JobSortField,
    /// Largest (latest, last in the alphabet) first.
    pub descending: bool,
}

/// A field a job list can be ordered by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobSortField {
    /// When it was submitted (its id's order).
    SubmittedAt,
    /// Its name (byte order: names are lowercase ASCII).
    Name,
    /// Its phase's name.
    Phase,
    /// Its queue's name.
    Queue,
    /// Its owner's username.
    Owner,
}

impl JobSortField {
    /// Every field, in the order a table shows them.
    pub const ALL: [JobSortField; 5] = [
        JobSortField::SubmittedAt,
        JobSortField::Name,
        JobSortField::Phase,
        JobSortField::Queue,
        JobSortField::Owner,
    ];

    /// The name in `sort=`.
    pub fn as_str(self) -> &'static str {
        match self {
            JobSortField::SubmittedAt => "submittedAt",
            JobSortField::Name => "name",
            JobSortField::Phase => "phase",
            JobSortField::Queue => "queue",
            JobSortField::Owner => "owner",
        }
    }
}

impl Default for JobSort {
    fn default() -> Self {
        JobSort {
            field: JobSortField::SubmittedAt,
            descending: true,
        }
    }
}

impl JobSort {
    /// Reads `name` or `-name`; `None` for anything else.
    pub fn parse(text: &str) -> Option<JobSort> {
        let (descending, name) = match text.strip_prefix('-') {
            Some(name) => (true, name),
            None => (false, text),
        };
        JobSortField::ALL
            .into_iter()
            .find(|f| f.as_str() == name)
            .map(|field| JobSort { field, descending })
    }

    /// The value of `sort=`, as [`JobSort::parse`] reads it.
    pub fn as_param(self) -> String {
        format!("{}{}", if self.descending { "-" } else { "" }, self.field.as_str())
    }
}

/// Most jobs one bulk request names.
pub const MAX_BULK_JOBS: usize = 500;

/// `POST /api/v1/jobs/delete`: delete several jobs at once, each as `DELETE /api/v1/jobs/{id}`
/// would.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BulkDeleteBody {
    /// 1–500 job ids; one named twice counts once.
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 500))]
    pub ids: Vec<i64>,
}

/// `PUT /api/v1/admin/jobs/lock`: lock (or unlock) several jobs at once, each as
/// `PUT /api/v1/admin/jobs/{id}/lock` would.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BulkLockBody {
    /// 1–500 job ids; one named twice counts once.
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 500))]
    pub ids: Vec<i64>,
    /// Never preempted before this; `null` unlocks.
    pub until: Option<DateTime<Utc>>,
}

/// What a bulk request did: the jobs it changed, and each other one with the error its own
/// request would have had.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BulkResult {
    /// The ids done, in the order given.
    pub done: Vec<i64>,
    /// The ids not done, in the order given, each with why.
    pub failed: Vec<BulkFailure>,
}

/// One job a bulk request could not change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BulkFailure {
    /// The job.
    pub id: i64,
    /// The error's stable code (`job_not_found`, `already_finished`, …).
    pub code: String,
    /// The error's message, in English.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sort_reads_back_what_it_writes_and_nothing_else() {
        for field in JobSortField::ALL {
            for descending in [false, true] {
                let sort = JobSort { field, descending };
                assert_eq!(JobSort::parse(&sort.as_param()), Some(sort));
            }
        }
        assert_eq!(JobSort::parse("-submittedAt"), Some(JobSort::default()));
        for bad in ["", "-", "--name", "Name", "name ", "id", "+name"] {
            assert_eq!(JobSort::parse(bad), None, "{bad:?}");
        }
    }
}
