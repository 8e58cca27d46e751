//! The form model of a toleration rule card: the target kind, the operator and effect as the
//! selects carry them, each toleration row's signals, and the shared validation's problems
//! mapped to translated messages on their own inputs.

use anteroom_shared::scheduling::{TaintEffect, Toleration, TolerationOperator};
use leptos::prelude::*;

use crate::i18n::{I18n, Key, k};

/// What a rule is for: jobs requesting an accelerator resource, or jobs in a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TargetKind {
    Resource,
    Queue,
}

impl TargetKind {
    pub(super) fn code(self) -> &'static str {
        match self {
            TargetKind::Resource => "resource",
            TargetKind::Queue => "queue",
        }
    }

    pub(super) fn from_code(code: &str) -> Self {
        if code == "queue" {
            TargetKind::Queue
        } else {
            TargetKind::Resource
        }
    }
}

/// A rule's target in words: the resource pattern as written, or "queue <name>".
pub(super) fn target_text(i18n: I18n, resource: Option<&str>, queue: Option<&str>) -> String {
    match (resource, queue) {
        (Some(r), _) => r.to_owned(),
        (None, Some(q)) => i18n.tf(k!("toleration.queueTarget"), &[("name", q)]),
        (None, None) => String::new(),
    }
}

pub(super) fn operator_code(op: TolerationOperator) -> &'static str {
    match op {
        TolerationOperator::Equal => "Equal",
        TolerationOperator::Exists => "Exists",
    }
}

pub(super) fn operator_from_code(code: &str) -> TolerationOperator {
    if code == "Exists" {
        TolerationOperator::Exists
    } else {
        TolerationOperator::Equal
    }
}

/// The effects offered, `None` ("any effect") first: the select's value and label of each.
pub(super) const EFFECTS: [(Option<TaintEffect>, &str); 4] = [
    (None, ""),
    (Some(TaintEffect::NoSchedule), "NoSchedule"),
    (Some(TaintEffect::PreferNoSchedule), "PreferNoSchedule"),
    (Some(TaintEffect::NoExecute), "NoExecute"),
];

pub(super) fn effect_code(effect: Option<TaintEffect>) -> &'static str {
    EFFECTS.iter().find(|(e, _)| *e == effect).map_or("", |(_, c)| c)
}

pub(super) fn effect_from_code(code: &str) -> Option<TaintEffect> {
    EFFECTS.iter().find(|(_, c)| *c == code).and_then(|(e, _)| *e)
}

pub(super) fn effect_label(effect: Option<TaintEffect>) -> Key {
    match effect {
        None => k!("toleration.effectAny"),
        Some(TaintEffect::NoSchedule) => k!("toleration.effectNoSchedule"),
        Some(TaintEffect::PreferNoSchedule) => k!("toleration.effectPreferNoSchedule"),
        Some(TaintEffect::NoExecute) => k!("toleration.effectNoExecute"),
    }
}

/// A problem of a rule, from the shared check (the client's, or the server's 422 with the same
/// English messages) or the server's `queue_not_found`; shown translated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Problem {
    Target,
    Resource,
    Queue,
    UnknownQueue,
    Count,
    Key,
    KeyRequired,
    ExistsValue,
    Value,
    Description,
    /// A message this page was not taught (a newer server): the generic validation text.
    Other,
}

impl Problem {
    /// The problem a message of `TolerationRuleBody::problems` names (a test keeps every
    /// message the shared check can give known here).
    pub(super) fn of(message: &str) -> Problem {
        match message {
            "a rule names a resource or a queue, not both" | "a rule names a resource or a queue" => Problem::Target,
            "must be 1 to 63 characters" => Problem::Queue,
            "must hold 1 to 16 tolerations" => Problem::Count,
            "at most 200 characters" => Problem::Description,
            "operator Equal needs a key (Exists with no key tolerates every taint)" => Problem::KeyRequired,
            "a rule names the taint key it tolerates" => Problem::KeyRequired,
            "operator Exists takes no value" => Problem::ExistsValue,
            m if m.starts_with("key must") => Problem::Key,
            m if m.starts_with("value must") => Problem::Value,
            m if m.starts_with("must be an accelerator resource") => Problem::Resource,
            _ => Problem::Other,
        }
    }

    pub(super) fn key(self) -> Key {
        match self {
            Problem::Target => k!("toleration.problem.target"),
            Problem::Resource => k!("toleration.problem.resource"),
            Problem::Queue => k!("toleration.problem.queue"),
            Problem::UnknownQueue => k!("error.queue_not_found"),
            Problem::Count => k!("toleration.problem.count"),
            Problem::Key => k!("toleration.problem.key"),
            Problem::KeyRequired => k!("toleration.problem.keyRequired"),
            Problem::ExistsValue => k!("toleration.problem.existsValue"),
            Problem::Value => k!("toleration.problem.value"),
            Problem::Description => k!("toleration.problem.description"),
            Problem::Other => k!("error.validation_failed"),
        }
    }

    /// Whether a toleration's problem is its value's (else its key's, the operator's partner).
    pub(super) fn on_value(self) -> bool {
        matches!(self, Problem::ExistsValue | Problem::Value)
    }
}

/// One toleration row as edited.
#[derive(Clone, Copy, Debug)]
pub(super) struct TolerationRow {
    /// Stable id: the key of the row in its `<For>`, and part of its inputs' ids.
    pub(super) id: u64,
    pub(super) key: RwSignal<String>,
    pub(super) operator: RwSignal<TolerationOperator>,
    pub(super) value: RwSignal<String>,
    pub(super) effect: RwSignal<Option<TaintEffect>>,
}

impl TolerationRow {
    /// The toleration the row says (reactive); blank key and value are absent, as Kubernetes
    /// writes them.
    pub(super) fn toleration(&self) -> Toleration {
        let text = |s: RwSignal<String>| Some(s.get().trim().to_owned()).filter(|t| !t.is_empty());
        Toleration {
            key: text(self.key),
            operator: self.operator.get(),
            value: text(self.value),
            effect: self.effect.get(),
        }
    }

    /// Whether anything was typed into the row.
    pub(super) fn typed(&self) -> bool {
        !self.key.get().trim().is_empty() || !self.value.get().trim().is_empty()
    }
}

/// The rows of a rule, with the ids handed out so far.
#[derive(Clone, Copy)]
pub(super) struct TolerationRows {
    pub(super) rows: RwSignal<Vec<TolerationRow>>,
    pub(super) next: StoredValue<u64>,
}

impl TolerationRows {
    pub(super) fn new(initial: &[Toleration]) -> Self {
        let list = TolerationRows {
            rows: RwSignal::new(Vec::new()),
            next: StoredValue::new(0),
        };
        for t in initial {
            list.push(t);
        }
        list
    }

    pub(super) fn push(&self, t: &Toleration) {
        self.next.update_value(|n| *n += 1);
        let row = TolerationRow {
            id: self.next.get_value(),
            key: RwSignal::new(t.key.clone().unwrap_or_default()),
            operator: RwSignal::new(t.operator),
            value: RwSignal::new(t.value.clone().unwrap_or_default()),
            effect: RwSignal::new(t.effect),
        };
        self.rows.update(|rs| rs.push(row));
    }

    pub(super) fn remove(&self, id: u64) {
        self.rows.update(|rs| rs.retain(|r| r.id != id));
    }

    pub(super) fn get(&self) -> Vec<TolerationRow> {
        self.rows.get()
    }

    /// The position of row `id`, which is the index the check's `tolerations[i]` names.
    pub(super) fn index_of(&self, id: u64) -> Option<usize> {
        self.rows.with(|rs| rs.iter().position(|r| r.id == id))
    }
}

/// A new row's toleration: the effect GPU and dedicated node pools commonly taint with.
pub(super) fn new_toleration() -> Toleration {
    Toleration {
        effect: Some(TaintEffect::NoSchedule),
        ..Toleration::default()
    }
}

#[cfg(test)]
mod tests {
    use anteroom_shared::api::tolerations::TolerationRuleBody;
    use anteroom_shared::scheduling::{resource_pattern_problem, toleration_problem};

    use super::*;

    fn body(
        resource: Option<&str>,
        queue: Option<&str>,
        tolerations: Vec<Toleration>,
        description: &str,
    ) -> TolerationRuleBody {
        TolerationRuleBody {
            resource: resource.map(str::to_owned),
            queue: queue.map(str::to_owned),
            tolerations,
            description: description.to_owned(),
        }
    }

    fn problem(b: &TolerationRuleBody, field: &str) -> Problem {
        let ps = b.problems();
        let (_, m) = ps
            .iter()
            .find(|(f, _)| f == field)
            .unwrap_or_else(|| panic!("{field}: {ps:?}"));
        Problem::of(m)
    }

    #[test]
    fn every_problem_the_shared_check_gives_is_translated_as_itself() {
        let ok = Toleration {
            key: Some("dedicated".into()),
            value: Some("ml".into()),
            ..Toleration::default()
        };
        let with = |key: Option<&str>, operator, value: Option<&str>| Toleration {
            key: key.map(str::to_owned),
            operator,
            value: value.map(str::to_owned),
            effect: None,
        };
        use TolerationOperator::{Equal, Exists};
        let one = |t: Toleration| vec![t];
        let cases = [
            (
                body(Some("x/y"), Some("q"), one(ok.clone()), ""),
                "queue",
                Problem::Target,
            ),
            (body(None, None, one(ok.clone()), ""), "resource", Problem::Target),
            (
                body(Some("a100"), None, one(ok.clone()), ""),
                "resource",
                Problem::Resource,
            ),
            (body(None, Some(""), one(ok.clone()), ""), "queue", Problem::Queue),
            (body(None, Some("q"), vec![], ""), "tolerations", Problem::Count),
            (
                body(None, Some("q"), one(with(Some("Bad Key"), Equal, None)), ""),
                "tolerations[0]",
                Problem::Key,
            ),
            (
                body(None, Some("q"), one(with(None, Equal, None)), ""),
                "tolerations[0]",
                Problem::KeyRequired,
            ),
            (
                body(None, Some("q"), one(with(Some("k"), Exists, Some("v"))), ""),
                "tolerations[0]",
                Problem::ExistsValue,
            ),
            (
                body(None, Some("q"), one(with(Some("k"), Equal, Some("bad value"))), ""),
                "tolerations[0]",
                Problem::Value,
            ),
            (
                body(None, Some("q"), one(ok.clone()), &"x".repeat(201)),
                "description",
                Problem::Description,
            ),
        ];
        for (b, field, want) in cases {
            assert_eq!(problem(&b, field), want, "{b:?}");
        }
        // The shared functions' messages directly, so a new message cannot slip by as Other.
        for t in [
            with(Some("Bad Key"), Equal, None),
            with(None, Equal, None),
            with(Some("k"), Exists, Some("v")),
            with(Some("k"), Equal, Some("-v")),
        ] {
            let m = toleration_problem(&t).expect("a problem");
            assert_ne!(Problem::of(m), Problem::Other, "{m}");
        }
        assert_eq!(
            Problem::of(resource_pattern_problem("nope").unwrap()),
            Problem::Resource
        );
        assert_eq!(Problem::of("something new"), Problem::Other);
    }

    #[test]
    fn a_value_problem_marks_the_value_and_a_key_problem_the_key() {
        assert!(Problem::Value.on_value() && Problem::ExistsValue.on_value());
        assert!(!Problem::Key.on_value() && !Problem::KeyRequired.on_value() && !Problem::Other.on_value());
    }

    #[test]
    fn the_select_codes_round_trip() {
        for (e, code) in EFFECTS {
            assert_eq!(effect_code(e), code);
            assert_eq!(effect_from_code(code), e);
        }
        for op in [TolerationOperator::Equal, TolerationOperator::Exists] {
            assert_eq!(operator_from_code(operator_code(op)), op);
        }
        for kind in [TargetKind::Resource, TargetKind::Queue] {
            assert_eq!(TargetKind::from_code(kind.code()), kind);
        }
    }
}
