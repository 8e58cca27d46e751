//! What the cluster is told about Anteroom's queues (`spec/prequeue.md` §9 "The cluster"): each
//! queue as a [`ClusterQueue`] — its parent, its capacity as the cluster's cap, its sharing
//! weight — on every write, and at start the queues the cluster lacks, parents first.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use anteroom_shared::api::queues::QueueBody;
use anteroom_shared::scheduling::QueueSharing;
use sea_orm::{DatabaseConnection, DbErr};

use super::entity::queue;
use super::{QueueError, all, capacity_of, sharing_of};
use crate::cluster::{Cluster, ClusterQueue};

/// The queue a write of `body` leaves, as the cluster keeps it: its parent and capacity as the
/// body says, its weight as `sharing` (the settings the write stores). Always open: Volcano's
/// `open` means "accepts jobs", unlike Anteroom's, which means "open to every user".
pub(super) fn of_body(body: &QueueBody, sharing: &QueueSharing) -> ClusterQueue {
    ClusterQueue {
        parent: body.parent.clone(),
        capability: body.capacity.clone(),
        weight: sharing.weight,
        ..ClusterQueue::new(body.name.clone(), true)
    }
}

/// A stored queue as the cluster keeps it.
pub fn of_row(row: &queue::Model) -> Result<ClusterQueue, DbErr> {
    Ok(ClusterQueue {
        parent: row.parent.clone(),
        capability: capacity_of(row)?,
        weight: sharing_of(row)?.weight,
        ..ClusterQueue::new(row.name.clone(), true)
    })
}

/// `rows` with every parent before its children (then by name), as a cluster that checks a
/// queue's parent when it is created needs them. A queue whose chain of parents does not end
/// (never stored: writes refuse cycles) comes last.
pub fn in_tree_order(rows: &[queue::Model]) -> Vec<&queue::Model> {
    let parents: HashMap<&str, Option<&str>> = rows
        .iter()
        .map(|row| (row.name.as_str(), row.parent.as_deref()))
        .collect();
    let depth = |name: &str| {
        let mut at = name;
        for depth in 0..=rows.len() {
            match parents.get(at).copied().flatten() {
                Some(parent) => at = parent,
                None => return depth,
            }
        }
        usize::MAX
    };
    let mut ordered: Vec<(usize, &queue::Model)> = rows.iter().map(|row| (depth(&row.name), row)).collect();
    ordered.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.name.cmp(&b.1.name)));
    ordered.into_iter().map(|(_, row)| row).collect()
}

/// Every stored queue the cluster lacks is created there ([`Cluster::create_missing_queues`]),
/// parents first; answers how many queues were considered.
pub async fn create_missing_in_cluster(db: &DatabaseConnection, cluster: &dyn Cluster) -> Result<usize, QueueError> {
    let rows = all(db).await?;
    let queues: Vec<ClusterQueue> = in_tree_order(&rows).into_iter().map(of_row).collect::<Result<_, _>>()?;
    cluster.create_missing_queues(&queues).await?;
    Ok(queues.len())
}

/// The first wait before trying again at start, doubled after each failure up to
/// [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_secs(5);
/// The longest wait between two tries at start.
const RETRY_MAX: Duration = Duration::from_secs(300);

/// At start, in the background: [`create_missing_in_cluster`] until it succeeds, waiting
/// longer after each failure (an apiserver that does not answer yet, a Volcano webhook that is
/// not up). Ends when it has succeeded; the server aborts it when it stops.
pub async fn create_missing_at_start(db: DatabaseConnection, cluster: Arc<dyn Cluster>) {
    let mut wait = RETRY_FIRST;
    loop {
        match create_missing_in_cluster(&db, cluster.as_ref()).await {
            Ok(queues) => {
                tracing::debug!(queues, cluster = cluster.kind(), "every queue exists in the cluster");
                return;
            }
            Err(error) => {
                tracing::warn!(
                    %error,
                    retry_in_s = wait.as_secs(),
                    "could not create the queues the cluster lacks; trying again"
                );
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(RETRY_MAX);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;

    fn row(name: &str, parent: Option<&str>) -> queue::Model {
        queue::Model {
            name: name.to_owned(),
            display_name: name.to_owned(),
            open: true,
            parent: parent.map(str::to_owned),
            capacity: None,
            default_runtime_seconds: None,
            max_runtime_seconds: None,
            run_as_user: None,
            sharing: None,
            budget: None,
            budget_hold: None,
            created_at: Utc::now(),
            updated_at: Utc::now(),
        }
    }

    #[test]
    fn parents_come_before_their_children_whatever_the_names() {
        let rows = [
            row("a-child", Some("z-root")),
            row("default", None),
            row("grandchild", Some("a-child")),
            row("z-root", None),
        ];
        let names: Vec<&str> = in_tree_order(&rows).iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["default", "z-root", "a-child", "grandchild"]);
    }

    #[test]
    fn a_stored_queue_is_told_with_its_parent_capacity_and_weight() {
        let mut lab = row("cv", Some("lab"));
        lab.capacity = Some(r#"{"nvidia.com/a100":"8"}"#.to_owned());
        lab.sharing = Some(r#"{"weight":3}"#.to_owned());
        let told = of_row(&lab).expect("readable");
        assert_eq!((told.parent.as_deref(), told.weight), (Some("lab"), 3));
        assert_eq!(
            told.capability.expect("a capacity").get("nvidia.com/a100").to_string(),
            "8"
        );
        assert!(told.open, "open to jobs, whoever may use it");
    }
}
