//! This installation's id: a UUID generated once and kept in the database (table
//! `installation`), so it survives restarts and is shared by every replica, while a reset
//! database — whose job ids start again at 1 — gets a new one. The kube adapter labels its
//! objects with it (`anteroom.io/installation`) and never adopts an `ar-<id>` with another.

use chrono::Utc;
use sea_orm::sea_query::{Alias, Expr, ExprTrait, OnConflict, Query};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr};

/// The installation id, generating and storing it the first time. Two replicas starting
/// together both insert, the primary key keeps one row, and both read back the same id.
pub async fn installation_id(db: &DatabaseConnection) -> Result<String, DbErr> {
    if let Some(id) = read(db).await? {
        return Ok(id);
    }
    let insert = Query::insert()
        .into_table(Alias::new("installation"))
        .columns([Alias::new("id"), Alias::new("uuid"), Alias::new("created_at")])
        .values_panic([1.into(), uuid::Uuid::new_v4().to_string().into(), Utc::now().into()])
        .on_conflict(OnConflict::column(Alias::new("id")).do_nothing().to_owned())
        .to_owned();
    db.execute(&insert).await?;
    read(db)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound("the installation id was not stored".to_owned()))
}

async fn read(db: &DatabaseConnection) -> Result<Option<String>, DbErr> {
    let select = Query::select()
        .column(Alias::new("uuid"))
        .from(Alias::new("installation"))
        .and_where(Expr::col(Alias::new("id")).eq(1))
        .to_owned();
    match db.query_one(&select).await? {
        Some(row) => Ok(Some(row.try_get("", "uuid")?)),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn kube_installation_id_is_generated_once_and_kept_and_a_new_database_gets_another() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = crate::store::test_database(dir.path()).await;
        let first = installation_id(&db).await.expect("id");
        assert!(uuid::Uuid::parse_str(&first).is_ok(), "{first}");
        assert_eq!(installation_id(&db).await.expect("id again"), first);
        let (a, b) = tokio::join!(installation_id(&db), installation_id(&db));
        assert_eq!((a.expect("a"), b.expect("b")), (first.clone(), first.clone()));

        let other_dir = tempfile::tempdir().expect("tempdir");
        let reset = crate::store::test_database(other_dir.path()).await;
        assert_ne!(installation_id(&reset).await.expect("id"), first);
    }
}
