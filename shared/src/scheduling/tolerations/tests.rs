use super::*;
use crate::scheduling::Quantity;

fn gpu_pool() -> Toleration {
    Toleration {
        key: Some("nvidia.com/gpu".into()),
        operator: TolerationOperator::Exists,
        value: None,
        effect: Some(TaintEffect::NoSchedule),
    }
}

fn dedicated(team: &str) -> Toleration {
    Toleration {
        key: Some("dedicated".into()),
        operator: TolerationOperator::Equal,
        value: Some(team.into()),
        effect: Some(TaintEffect::NoSchedule),
    }
}

fn request(entries: &[(&str, i64)]) -> ResourceList {
    let mut list = ResourceList::new();
    for (name, units) in entries {
        list.insert(*name, Quantity::from_units(*units));
    }
    list
}

fn rules() -> Vec<TolerationRuleSpec> {
    vec![
        TolerationRuleSpec {
            target: RuleTarget::Resource("nvidia.com/*".into()),
            tolerations: vec![gpu_pool()],
        },
        TolerationRuleSpec {
            target: RuleTarget::Resource("nvidia.com/a100".into()),
            tolerations: vec![gpu_pool(), dedicated("a100")],
        },
        TolerationRuleSpec {
            target: RuleTarget::Queue("vision".into()),
            tolerations: vec![dedicated("vision")],
        },
    ]
}

#[test]
fn a_job_gets_the_tolerations_of_its_accelerators_and_of_its_queue_and_ancestors_once_each() {
    let a100 = request(&[("cpu", 4), ("nvidia.com/a100", 1)]);
    assert_eq!(
        job_tolerations(&rules(), &["default"], &a100),
        [gpu_pool(), dedicated("a100")],
        "the domain rule and the model rule, the shared toleration once"
    );
    let v100 = request(&[("cpu", 4), ("nvidia.com/v100", 2)]);
    assert_eq!(job_tolerations(&rules(), &["default"], &v100), [gpu_pool()]);
    // A sub-queue of `vision` is the team's too.
    assert_eq!(
        job_tolerations(&rules(), &["vision-interns", "vision"], &v100),
        [gpu_pool(), dedicated("vision")]
    );
    // A CPU job outside the team's queues tolerates nothing; a zero request is no request.
    assert!(job_tolerations(&rules(), &["default"], &request(&[("cpu", 4)])).is_empty());
    assert!(job_tolerations(&rules(), &["default"], &request(&[("cpu", 4), ("nvidia.com/a100", 0)])).is_empty());
    // A queue name is not a prefix match.
    assert!(job_tolerations(&rules(), &["visionary"], &request(&[("cpu", 1)])).is_empty());
}

#[test]
fn kubernetes_matching_of_a_toleration_and_a_taint() {
    let taint = Taint {
        key: "nvidia.com/gpu".into(),
        value: Some("present".into()),
        effect: TaintEffect::NoSchedule,
    };
    assert!(gpu_pool().tolerates(&taint));
    let mut wrong_effect = gpu_pool();
    wrong_effect.effect = Some(TaintEffect::NoExecute);
    assert!(!wrong_effect.tolerates(&taint));
    let equal = Toleration {
        key: Some("nvidia.com/gpu".into()),
        operator: TolerationOperator::Equal,
        value: Some("present".into()),
        effect: None,
    };
    assert!(equal.tolerates(&taint));
    assert!(!dedicated("present").tolerates(&taint));
    let everything = Toleration {
        operator: TolerationOperator::Exists,
        ..Toleration::default()
    };
    assert!(everything.tolerates(&taint));
    // Kubernetes takes it; a rule may not: it would open every team's and the control
    // plane's nodes.
    assert!(toleration_problem(&everything).is_some());
}

#[test]
fn rules_are_validated_as_kubernetes_would_take_them() {
    assert_eq!(toleration_problem(&gpu_pool()), None);
    assert_eq!(toleration_problem(&dedicated("ml-team_1")), None);
    let no_key = Toleration {
        value: Some("x".into()),
        ..Toleration::default()
    };
    assert!(toleration_problem(&no_key).is_some(), "Equal without a key");
    let mut exists_with_value = gpu_pool();
    exists_with_value.value = Some("present".into());
    assert!(toleration_problem(&exists_with_value).is_some());
    for key in ["Bad Key", "UPPER.example/x", "a/", "/x", &"k".repeat(64), "-x"] {
        let mut t = gpu_pool();
        t.key = Some(key.to_string());
        assert!(toleration_problem(&t).is_some(), "{key:?}");
    }
    assert!(toleration_problem(&dedicated("has space")).is_some());
    assert_eq!(resource_pattern_problem("nvidia.com/a100"), None);
    assert_eq!(resource_pattern_problem("nvidia.com/*"), None);
    for bad in ["cpu", "memory", "*", "nvidia.com/*/x", "Nvidia.com/*", "nvidia.com/a*"] {
        assert!(resource_pattern_problem(bad).is_some(), "{bad:?}");
    }
}

#[test]
fn tolerations_read_and_write_kubernetes_field_names() {
    let json = serde_json::json!({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"});
    let t: Toleration = serde_json::from_value(json).expect("a toleration");
    assert_eq!(t, gpu_pool());
    assert!(serde_json::from_value::<Toleration>(serde_json::json!({"key": "a", "tolerationSeconds": 5})).is_err());
}
