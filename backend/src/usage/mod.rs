//! Usage history and accounting (`spec/prequeue.md` §10): the runs the `usage_intervals`
//! triggers record ([`entity`]), read back as reports per period, queue and user
//! ([`mod@report`]) for `GET /api/v1/usage` ([`handlers`]).
//!
//! Who sees what: a user their own use; an admin anyone's (`user=`), everyone's by default.

pub mod budget;
pub mod budget_handlers;
pub mod entity;
pub mod fair_share;
pub mod handlers;
pub mod ledger;
pub mod report;

use anteroom_shared::api::usage::{MAX_REPORT_DAYS, UsagePeriod, UsageReport};
use anteroom_shared::scheduling::ScheduleType;
use chrono::{DateTime, Duration, Utc};
use sea_orm::{ColumnTrait, Condition, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QueryOrder};

use crate::field_rule::Rule;

/// What a report asks for, checked ([`Ask::check`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// First instant.
    pub from: DateTime<Utc>,
    /// End (exclusive).
    pub to: DateTime<Utc>,
    /// Grouping.
    pub by: UsagePeriod,
    /// Only this user's runs (by username); `None`: everyone's (admins only).
    pub user: Option<String>,
    /// The user's id when known (a user's own report): runs are matched by id, so a later
    /// user of a deleted user's name never sees that person's runs.
    pub owner: Option<i64>,
    /// Only this queue's.
    pub queue: Option<String>,
}

/// Why a report cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    /// A field is out of range (422 on it).
    #[error("invalid {0}: {1:?}")]
    Invalid(String, Rule),
    /// A user asked for someone else's use (403).
    #[error("only admins read other users' usage")]
    Forbidden,
    /// The store failed.
    #[error(transparent)]
    Db(#[from] DbErr),
}

/// What a request names of a report; each field optional ([`Ask::check`] fills them in).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Wanted {
    /// First instant.
    pub from: Option<DateTime<Utc>>,
    /// End (exclusive).
    pub to: Option<DateTime<Utc>>,
    /// Grouping.
    pub by: Option<UsagePeriod>,
    /// A user, by username.
    pub user: Option<String>,
    /// A queue.
    pub queue: Option<String>,
}

impl Ask {
    /// The ask of `caller` (`admin`: may read anyone) from what the request names: the last 30
    /// days up to `now` by day unless said; a user's own runs unless an admin names someone or
    /// no one.
    pub fn check(caller: (i64, &str), admin: bool, wanted: Wanted, now: DateTime<Utc>) -> Result<Ask, UsageError> {
        let (caller_id, caller) = caller;
        let Wanted {
            from,
            to,
            by,
            user,
            queue,
        } = wanted;
        let to = to.unwrap_or(now);
        let from = from.unwrap_or(to - Duration::days(30));
        if from >= to {
            return Err(UsageError::Invalid(
                "from".into(),
                Rule::fixed("fromBeforeTo", "must be before `to`"),
            ));
        }
        if to - from > Duration::days(MAX_REPORT_DAYS) {
            return Err(UsageError::Invalid(
                "to".into(),
                Rule::with(
                    "reportTooLong",
                    format!("a report spans at most {MAX_REPORT_DAYS} days"),
                    serde_json::json!({ "max": MAX_REPORT_DAYS }),
                ),
            ));
        }
        let (user, owner) = match (admin, user) {
            (true, Some(name)) if name == caller => (Some(name), Some(caller_id)),
            (true, user) => (user, None),
            (false, Some(name)) if name != caller => return Err(UsageError::Forbidden),
            (false, _) => (Some(caller.to_owned()), Some(caller_id)),
        };
        Ok(Ask {
            from,
            to,
            by: by.unwrap_or_default(),
            user,
            owner,
            queue,
        })
    }
}

/// The report `ask` asks for, as of `now`: the runs that overlap its range, split.
/// An admin's `user=` names whoever holds the name now (by id); a name nobody holds any more
/// reads the runs recorded under it.
pub async fn report(db: &DatabaseConnection, ask: &Ask, now: DateTime<Utc>) -> Result<UsageReport, UsageError> {
    let mut filter = Condition::all().add(entity::Column::StartedAt.lt(ask.to)).add(
        Condition::any()
            .add(entity::Column::EndedAt.is_null())
            .add(entity::Column::EndedAt.gte(ask.from)),
    );
    let owner = match (ask.owner, &ask.user) {
        (Some(id), _) => Some(Ok(id)),
        (None, Some(name)) => Some(
            crate::users::find_by_username(db, name)
                .await?
                .map(|u| u.id)
                .ok_or_else(|| name.clone()),
        ),
        (None, None) => None,
    };
    match owner {
        Some(Ok(id)) => filter = filter.add(entity::Column::OwnerId.eq(id)),
        Some(Err(name)) => filter = filter.add(entity::Column::OwnerName.eq(name)),
        None => {}
    }
    if let Some(queue) = &ask.queue {
        filter = filter.add(entity::Column::Queue.eq(queue.as_str()));
    }
    let rows = entity::Entity::find()
        .filter(filter)
        .order_by_asc(entity::Column::Id)
        .all(db)
        .await?;
    let runs: Vec<report::Run> = rows.into_iter().filter_map(run_of).collect();
    Ok(UsageReport {
        from: ask.from,
        to: ask.to,
        by: ask.by,
        rows: report::report(&runs, ask.from, ask.to, ask.by, now),
    })
}

/// A stored interval as a run; one whose columns do not parse is left out (and logged) rather
/// than failing every report that touches it.
fn run_of(row: entity::Model) -> Option<report::Run> {
    let parsed = (
        serde_json::from_str(&row.resources).ok(),
        row.schedule_type.parse::<ScheduleType>().ok(),
    );
    let (Some(resources), Some(schedule_type)) = parsed else {
        tracing::warn!(
            interval = row.id,
            job = row.job_id,
            "a usage interval does not parse; left out"
        );
        return None;
    };
    Some(report::Run {
        queue: row.queue,
        user: row.owner_name,
        schedule_type,
        resources,
        waiting_since: row.waiting_since,
        started_at: row.started_at,
        ended_at: row.ended_at,
        end_phase: row.end_phase,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        "2026-11-29T12:00:00Z".parse().expect("time")
    }

    #[test]
    fn a_user_reads_their_own_and_an_admin_anyones() {
        let own = Ask::check((1, "nina"), false, Wanted::default(), now()).expect("own");
        assert_eq!((own.user.as_deref(), own.owner), (Some("nina"), Some(1)));
        assert_eq!(
            (own.from, own.to, own.by),
            (now() - Duration::days(30), now(), UsagePeriod::Day)
        );
        let named = |user: &str| Wanted {
            user: Some(user.into()),
            ..Wanted::default()
        };
        assert!(Ask::check((1, "nina"), false, named("nina"), now()).is_ok());
        assert!(matches!(
            Ask::check((1, "nina"), false, named("carl"), now()),
            Err(UsageError::Forbidden)
        ));
        assert_eq!(
            Ask::check((9, "root"), true, named("carl"), now())
                .expect("an admin")
                .user
                .as_deref(),
            Some("carl")
        );
        let all = Ask::check((9, "root"), true, Wanted::default(), now()).expect("all");
        assert_eq!(all.owner, None);
        assert_eq!(all.user, None);
    }

    #[test]
    fn a_range_is_forward_and_bounded() {
        let range = |from: DateTime<Utc>, to: Option<DateTime<Utc>>| Wanted {
            from: Some(from),
            to,
            ..Wanted::default()
        };
        let backwards = Ask::check((1, "nina"), false, range(now(), Some(now())), now());
        assert!(matches!(backwards, Err(UsageError::Invalid(ref f, _)) if f == "from"));
        let long = Ask::check(
            (1, "nina"),
            false,
            range(now() - Duration::days(MAX_REPORT_DAYS + 1), None),
            now(),
        );
        assert!(matches!(long, Err(UsageError::Invalid(ref f, _)) if f == "to"));
    }
}
