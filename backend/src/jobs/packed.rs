//! The watcher's snapshot read of every waiting and occupying job, fast on SQLite.
//!
//! sqlx runs SQLite on a worker thread and hands each row over on its own, with each column
//! decoded on its own: ~4.6 µs a row, half a second for 100,000 jobs — five times the whole
//! round's budget (`docs/performance.md`). So on SQLite the rows come *packed*: one
//! `group_concat` of the scheduling columns, joined by ASCII unit and record separators, parsed
//! here in one pass. Still one query. A field that holds a separator (none can: names are DNS
//! labels, resources are validated names, the rest are fixed words, numbers and timestamps) is
//! caught by the field count and answered by the plain read instead. PostgreSQL's rows arrive
//! fast enough one by one and take the plain read.

use std::str::FromStr;

use chrono::{DateTime, NaiveDateTime, Utc};
use sea_orm::{ColumnTrait, ConnectionTrait, DbBackend, DbErr, FromQueryResult, QueryFilter, Statement};

use super::SchedulingRow;
use super::entity::job;

/// Between fields of one job.
const UNIT: char = '\u{1f}';
/// Between jobs.
const RECORD: char = '\u{1e}';
/// Fields per packed job, in [`PACKED_COLUMNS`] order.
const FIELDS: usize = 21;

/// The packed expression: every column of [`SchedulingRow`], NULLs as empty text.
const PACKED_COLUMNS: &str = "id || char(31) || owner_id || char(31) || queue || char(31) || kind || char(31) || \
     schedule_type || char(31) || phase || char(31) || preemption_policy || char(31) || submitted_at || char(31) || \
     coalesce(started_at, '') || char(31) || coalesce(waiting_tolerance_seconds, '') || char(31) || \
     request_milli || char(31) || explicit_nodes || char(31) || single_node || char(31) || nodes || char(31) || \
     coalesce(locked_until, '') || char(31) || coalesce(waiting_since, '') || char(31) || tolerations || char(31) || \
     coalesce(max_runtime_seconds, '') || char(31) || priority || char(31) || borrow_never || char(31) || borrowing";

/// Which jobs a read takes, besides their phase: every one, or those the change log
/// (`job_changes`, migration 22) names in a range. Built from numbers only, so the SQL made
/// from it carries no outside text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Among {
    /// Every job in the phases.
    Every,
    /// SQLite: the jobs logged with `seq` in `(after, up_to]`.
    LoggedBetween {
        /// The last `seq` already read.
        after: i64,
        /// The last `seq` to read.
        up_to: i64,
    },
    /// PostgreSQL: the jobs logged by a transaction whose id is at least this.
    LoggedSinceTx(i64),
}

impl Among {
    /// The ids of the changed jobs, as a subquery; `None` for [`Among::Every`].
    pub fn changed_ids_sql(self) -> Option<String> {
        match self {
            Among::Every => None,
            Among::LoggedBetween { after, up_to } => Some(format!(
                "SELECT DISTINCT job_id FROM job_changes WHERE seq > {after} AND seq <= {up_to}"
            )),
            Among::LoggedSinceTx(tx) => Some(format!("SELECT DISTINCT job_id FROM job_changes WHERE tx >= {tx}")),
        }
    }
}

/// Every job in one of `phases`, as scheduling rows (in no particular order).
pub async fn scheduling_rows(db: &impl ConnectionTrait, phases: &[&str]) -> Result<Vec<SchedulingRow>, DbErr> {
    scheduling_rows_among(db, phases, Among::Every).await
}

/// The jobs in one of `phases` that `among` selects.
pub async fn scheduling_rows_among(
    db: &impl ConnectionTrait,
    phases: &[&str],
    among: Among,
) -> Result<Vec<SchedulingRow>, DbErr> {
    let ids = among.changed_ids_sql();
    if db.get_database_backend() == DbBackend::Sqlite
        && let Some(rows) = packed_rows(db, phases, ids.as_deref()).await?
    {
        return Ok(rows);
    }
    plain_rows_among(db, phases, ids.as_deref()).await
}

/// The same rows through sea-orm, one by one (PostgreSQL, and the fallback).
pub async fn plain_rows(db: &impl ConnectionTrait, phases: &[&str]) -> Result<Vec<SchedulingRow>, DbErr> {
    plain_rows_among(db, phases, None).await
}

/// `ids`: a subquery from [`Among::changed_ids_sql`].
async fn plain_rows_among(
    db: &impl ConnectionTrait,
    phases: &[&str],
    ids: Option<&str>,
) -> Result<Vec<SchedulingRow>, DbErr> {
    let mut select = SchedulingRow::select().filter(job::Column::Phase.is_in(phases.iter().copied()));
    if let Some(ids) = ids {
        select = select.filter(sea_orm::sea_query::Expr::cust(format!("id IN ({ids})")));
    }
    select.into_model::<SchedulingRow>().all(db).await
}

#[derive(FromQueryResult)]
struct Packed {
    packed: Option<String>,
}

/// SQLite: the rows in one value; `None` when one does not parse (then read them plainly).
/// `ids`: a subquery from [`Among::changed_ids_sql`].
async fn packed_rows(
    db: &impl ConnectionTrait,
    phases: &[&str],
    ids: Option<&str>,
) -> Result<Option<Vec<SchedulingRow>>, DbErr> {
    let placeholders = vec!["?"; phases.len()].join(", ");
    let among = ids.map(|ids| format!(" AND id IN ({ids})")).unwrap_or_default();
    let sql = format!(
        "SELECT group_concat({PACKED_COLUMNS}, char(30)) AS packed FROM jobs WHERE phase IN ({placeholders}){among}"
    );
    let values = phases.iter().map(|p| (*p).into());
    let Some(packed) = Packed::find_by_statement(Statement::from_sql_and_values(DbBackend::Sqlite, sql, values))
        .one(db)
        .await?
    else {
        return Ok(Some(Vec::new()));
    };
    let Some(text) = packed.packed else {
        return Ok(Some(Vec::new()));
    };
    let mut rows = Vec::with_capacity(text.len() / 96 + 1);
    for record in text.split(RECORD) {
        match parse(record) {
            Some(row) => rows.push(row),
            None => {
                tracing::warn!(record, "a packed job row did not parse; reading the rows one by one");
                return Ok(None);
            }
        }
    }
    Ok(Some(rows))
}

fn parse(record: &str) -> Option<SchedulingRow> {
    let f: Vec<&str> = record.split(UNIT).collect();
    if f.len() != FIELDS {
        return None;
    }
    Some(SchedulingRow {
        id: f[0].parse().ok()?,
        owner_id: f[1].parse().ok()?,
        queue: f[2].to_owned(),
        kind: f[3].to_owned(),
        schedule_type: f[4].to_owned(),
        phase: f[5].to_owned(),
        preemption_policy: f[6].to_owned(),
        submitted_at: timestamp(f[7])?,
        started_at: optional(f[8], timestamp)?,
        waiting_tolerance_seconds: optional(f[9], |t| t.parse().ok())?,
        request_milli: f[10].to_owned(),
        explicit_nodes: f[11].to_owned(),
        single_node: flag(f[12])?,
        nodes: f[13].to_owned(),
        locked_until: optional(f[14], timestamp)?,
        waiting_since: optional(f[15], timestamp)?,
        tolerations: f[16].to_owned(),
        max_runtime_seconds: optional(f[17], |t| t.parse().ok())?,
        priority: f[18].parse().ok()?,
        borrow_never: flag(f[19])?,
        borrowing: flag(f[20])?,
    })
}

/// SQLite's boolean as text.
fn flag(text: &str) -> Option<bool> {
    match text {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    }
}

/// Empty text is `None`; anything else must parse.
fn optional<T>(text: &str, parse: impl Fn(&str) -> Option<T>) -> Option<Option<T>> {
    if text.is_empty() {
        Some(None)
    } else {
        parse(text).map(Some)
    }
}

/// A timestamp as SQLite holds it: RFC 3339 with `T` or a space, or without an offset (UTC).
/// The common shape is read by hand (chrono's general parsers cost a microsecond each, a
/// tenth of a round at 100,000 jobs); anything else goes through chrono.
fn timestamp(text: &str) -> Option<DateTime<Utc>> {
    fast_timestamp(text).or_else(|| slow_timestamp(text))
}

/// `YYYY-MM-DD[T ]HH:MM:SS[.fraction][Z|±HH:MM]`.
fn fast_timestamp(text: &str) -> Option<DateTime<Utc>> {
    let b = text.as_bytes();
    if b.len() < 19
        || b[4] != b'-'
        || b[7] != b'-'
        || (b[10] != b'T' && b[10] != b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<u32> {
        b[from..to].iter().try_fold(0u32, |acc, c| {
            c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
        })
    };
    let date = chrono::NaiveDate::from_ymd_opt(i32::try_from(num(0, 4)?).ok()?, num(5, 7)?, num(8, 10)?)?;
    let mut rest = &b[19..];
    let mut nanos = 0u32;
    if let Some((b'.', tail)) = rest.split_first() {
        let digits = tail.iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 || digits > 9 {
            return None;
        }
        let mut value = 0u32;
        for c in &tail[..digits] {
            value = value * 10 + u32::from(c - b'0');
        }
        nanos = value * 10u32.pow(9 - digits as u32);
        rest = &tail[digits..];
    }
    let offset_seconds: i64 = match rest {
        [] | [b'Z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let digit = |c: &u8| c.is_ascii_digit().then(|| i64::from(c - b'0'));
            let minutes = (digit(h1)? * 10 + digit(h2)?) * 60 + digit(m1)? * 10 + digit(m2)?;
            if *sign == b'+' { minutes * 60 } else { -minutes * 60 }
        }
        _ => return None,
    };
    let time = chrono::NaiveTime::from_hms_nano_opt(num(11, 13)?, num(14, 16)?, num(17, 19)?, nanos)?;
    let local = date.and_time(time).and_utc();
    Some(local - chrono::Duration::seconds(offset_seconds))
}

fn slow_timestamp(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.to_utc());
    }
    if let Ok(t) = DateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f%:z") {
        return Some(t.to_utc());
    }
    NaiveDateTime::from_str(text)
        .or_else(|_| NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f"))
        .ok()
        .map(|t| t.and_utc())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hand_read_timestamps_agree_with_chrono() {
        for text in [
            "2026-11-23T08:00:00+00:00",
            "2026-11-23 08:00:00.123456+00:00",
            "2026-11-23T08:00:00.5Z",
            "2026-11-23 08:00:00",
            "2026-11-23T23:59:59.999999999-05:30",
            "2024-02-29T12:00:00+01:00",
        ] {
            assert_eq!(fast_timestamp(text), slow_timestamp(text), "{text}");
            assert!(fast_timestamp(text).is_some(), "{text}");
        }
        for bad in ["2026-13-01T00:00:00Z", "2026-11-23T08:00:00+0000", "2026-11-23", "x"] {
            assert_eq!(fast_timestamp(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_record_with_a_field_too_many_or_too_few_does_not_parse() {
        let good = [
            "7",
            "3",
            "default",
            "custom",
            "normal",
            "Prequeue",
            "Never",
            "2026-11-23T08:00:00Z",
            "",
            "60",
            "cpu=1000",
            "",
            "1",
            "[]",
            "",
            "2026-11-23T08:05:00Z",
            r#"[{"key":"nvidia.com/gpu","operator":"Exists"}]"#,
            "3600",
            "-2",
            "1",
            "0",
        ];
        let row = parse(&good.join("\u{1f}")).expect("parses");
        assert_eq!(
            (row.id, row.owner_id, row.single_node, row.waiting_tolerance_seconds),
            (7, 3, true, Some(60))
        );
        assert_eq!(row.started_at, None);
        assert_eq!(
            row.waiting_since.map(|t| t.to_rfc3339()),
            Some("2026-11-23T08:05:00+00:00".to_string())
        );
        assert_eq!(row.tolerations, good[16]);
        assert_eq!(row.max_runtime_seconds, Some(3600));
        assert_eq!((row.priority, row.borrow_never, row.borrowing), (-2, true, false));
        assert!(parse(&good[..20].join("\u{1f}")).is_none());
        let mut extra = good.to_vec();
        extra.push("x");
        assert!(parse(&extra.join("\u{1f}")).is_none());
    }
}
