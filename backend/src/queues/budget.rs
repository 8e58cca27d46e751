//! A queue's budget and its hold as stored on its row (`spec/prequeue.md` §10): read here for
//! the core's queue specs; written by `crate::usage::budget`, which measures use against them.

use super::entity::queue;

/// A queue row's budget hold (§10), written by `crate::usage::budget` when its budget is spent
/// and holds; one that does not parse holds nothing (logged): a budget never stops a queue by
/// accident.
pub fn hold_of(row: &queue::Model) -> Option<anteroom_shared::scheduling::BudgetHold> {
    let text = row.budget_hold.as_deref()?;
    serde_json::from_str(text)
        .inspect_err(|e| tracing::warn!(queue = row.name, "unreadable budget hold, ignored: {e}"))
        .ok()
}

/// A queue row's budget (§10); one that does not parse is none (logged).
pub fn of(row: &queue::Model) -> Option<anteroom_shared::scheduling::QueueBudget> {
    let text = row.budget.as_deref()?;
    serde_json::from_str(text)
        .inspect_err(|e| tracing::warn!(queue = row.name, "unreadable budget, ignored: {e}"))
        .ok()
}
