use super::*;
use proptest::prelude::*;

fn list(entries: &[(&str, &str)]) -> ResourceList {
    ResourceList::parse_map(entries.iter().copied()).expect("valid list")
}

#[test]
fn adding_lists_sums_each_resource_and_keeps_the_others() {
    let sum = list(&[("cpu", "500m"), ("memory", "1Gi")])
        .checked_add(&list(&[("cpu", "1500m"), ("nvidia.com/a100", "1")]))
        .expect("no overflow");
    assert_eq!(sum, list(&[("cpu", "2"), ("memory", "1Gi"), ("nvidia.com/a100", "1")]));
    assert_eq!(sum.get("memory").to_string(), "1Gi");
}

#[test]
fn subtracting_lists_may_go_negative() {
    let diff = list(&[("cpu", "1")]).checked_sub(&list(&[("cpu", "2")])).expect("fits");
    assert_eq!(diff.get("cpu").milli(), -1000);
}

#[test]
fn what_is_left_never_goes_below_zero_and_names_only_the_capacitys_resources() {
    let allocatable = list(&[("cpu", "8"), ("memory", "16Gi")]);
    let used = list(&[("cpu", "10"), ("memory", "4Gi"), ("nvidia.com/a100", "1")]);
    let left = allocatable.left_after(&used);
    assert_eq!(left, list(&[("cpu", "0"), ("memory", "12Gi")]));
    assert_eq!(left.get("memory").to_string(), "12Gi");
}

#[test]
fn covers_ignores_resources_the_request_does_not_need() {
    let capacity = list(&[("cpu", "4"), ("memory", "8Gi")]);
    assert!(capacity.covers(&list(&[("cpu", "4"), ("memory", "0")])));
    assert!(capacity.covers(&list(&[("cpu", "2"), ("nvidia.com/a100", "0")])));
    assert!(!capacity.covers(&list(&[("cpu", "2"), ("nvidia.com/a100", "1")])));
    assert!(!capacity.covers(&list(&[("cpu", "4001m")])));
}

#[test]
fn deficit_names_only_the_missing_part() {
    let free = list(&[("cpu", "4"), ("nvidia.com/a100", "1")]);
    let deficit = free.deficit(&list(&[("cpu", "2"), ("nvidia.com/a100", "3"), ("memory", "1Gi")]));
    assert_eq!(deficit, list(&[("nvidia.com/a100", "2"), ("memory", "1Gi")]));
    assert!(free.deficit(&list(&[("cpu", "4")])).is_empty());
}

#[test]
fn a_limit_only_constrains_the_resources_it_names() {
    let limit = list(&[("cpu", "8")]);
    let request = list(&[("cpu", "9"), ("memory", "1Ti")]);
    let cmp = request.compare_to_limit(&limit);
    assert_eq!(cmp.len(), 1);
    assert!(cmp[0].exceeded);
    assert!(request.exceeds(&limit));
    assert!(!list(&[("memory", "1Ti")]).exceeds(&limit));
}

#[test]
fn replicas_multiply_task_requests() {
    let tasks = vec![
        TaskResources {
            name: "master".into(),
            replicas: 1,
            requests: list(&[("cpu", "2")]),
            node_names: vec![],
        },
        TaskResources {
            name: "worker".into(),
            replicas: 3,
            requests: list(&[("cpu", "500m"), ("nvidia.com/a100", "1")]),
            node_names: vec![],
        },
    ];
    assert_eq!(
        job_resources(&tasks).expect("fits"),
        list(&[("cpu", "3500m"), ("nvidia.com/a100", "3")])
    );
    assert!(!is_single_node(&tasks));
    assert!(is_single_node(&tasks[..1]));
}

fn one_replica(requests: &[(&str, &str)]) -> TaskResources {
    TaskResources {
        name: "main".into(),
        replicas: 1,
        requests: list(requests),
        node_names: vec![],
    }
}

#[test]
fn a_negative_request_in_a_second_task_is_refused_naming_its_field() {
    // The issue's case: 64 CPUs in one task and -60 in another must not add up to 4.
    let tasks = vec![one_replica(&[("cpu", "64")]), one_replica(&[("cpu", "-60")])];
    let err = job_resources(&tasks).expect_err("negative request");
    assert_eq!(err.field(), "tasks[1].resources.cpu");
    assert_eq!(
        err,
        TaskResourceError::Negative {
            field: "tasks[1].resources.cpu".into(),
            value: Quantity::parse("-60").expect("valid"),
        }
    );
}

#[test]
fn the_smallest_negative_request_is_refused_and_zero_is_accepted() {
    let err = job_resources(&[one_replica(&[("memory", "-1m")])]).expect_err("negative");
    assert_eq!(err.field(), "tasks[0].resources.memory");
    let zero = job_resources(&[one_replica(&[("memory", "0"), ("cpu", "1")])]).expect("zero is fine");
    assert_eq!(zero.get("cpu"), Quantity::from_units(1));
}

#[test]
fn a_request_times_replicas_out_of_range_is_refused_naming_its_field() {
    let mut task = one_replica(&[("cpu", "1e30")]);
    task.replicas = 10_000;
    let err = job_resources(&[one_replica(&[("cpu", "1")]), task]).expect_err("overflow");
    assert!(matches!(err, TaskResourceError::OutOfRange { .. }), "{err:?}");
    assert_eq!(err.field(), "tasks[1].resources.cpu");
}

#[test]
fn a_sum_over_tasks_out_of_range_is_refused_naming_the_task_that_overflowed() {
    // Each task alone is in range; their sum is not.
    let big = one_replica(&[("nvidia.com/a100", "9e32")]);
    let err = job_resources(&[big.clone(), big]).expect_err("overflow");
    assert_eq!(err.field(), "tasks[1].resources.nvidia.com/a100");
}

#[test]
fn non_finite_and_huge_quantities_cannot_be_written() {
    for input in ["NaN", "nan", "Inf", "-Infinity", "1e400"] {
        assert!(Quantity::parse(input).is_err(), "{input} parsed");
    }
    // JSON floats are not quantities either (only strings and integers are).
    assert!(serde_json::from_str::<ResourceList>(r#"{"cpu": 1.5}"#).is_err());
    assert!(serde_json::from_str::<ResourceList>(r#"{"cpu": 1e400}"#).is_err());
}

#[test]
fn domain_is_the_sorted_non_zero_accelerators_or_cpu_only() {
    assert_eq!(
        list(&[("cpu", "1"), ("memory", "1Gi")]).domain().to_string(),
        "cpu-only"
    );
    assert_eq!(list(&[("nvidia.com/a100", "0")]).domain(), ResourceDomain::CpuOnly);
    assert_eq!(
        list(&[("rdma/hca", "1"), ("nvidia.com/a100", "2"), ("cpu", "1")])
            .domain()
            .to_string(),
        "nvidia.com/a100,rdma/hca"
    );
}

#[test]
fn a_cpu_only_blocker_blocks_only_cpu_only_candidates() {
    let cpu = ResourceDomain::CpuOnly;
    let gpu = list(&[("nvidia.com/a100", "1")]).domain();
    assert!(domain_blocks(&cpu, &cpu));
    assert!(!domain_blocks(&cpu, &gpu));
}

#[test]
fn an_accelerator_blocker_blocks_its_domain_and_cpu_only_candidates() {
    let cpu = ResourceDomain::CpuOnly;
    let a100 = list(&[("nvidia.com/a100", "1")]).domain();
    let h100 = list(&[("nvidia.com/h100", "1")]).domain();
    let a100_rdma = list(&[("nvidia.com/a100", "1"), ("rdma/hca", "1")]).domain();
    assert!(domain_blocks(&a100, &a100));
    assert!(domain_blocks(&a100, &cpu));
    assert!(!domain_blocks(&a100, &h100));
    assert!(!domain_blocks(&a100, &a100_rdma));
}

#[test]
fn node_sets_overlap_when_either_is_unconstrained_or_they_intersect() {
    let any = NodeSet::Any;
    let a = NodeSet::from_names(["n1", "n2"]);
    let b = NodeSet::from_names(["n2", "n3"]);
    let c = NodeSet::from_names(["n4"]);
    assert!(nodes_overlap(&any, &c));
    assert!(nodes_overlap(&a, &any));
    assert!(nodes_overlap(&a, &b));
    assert!(!nodes_overlap(&a, &c));
}

#[test]
fn a_job_with_one_unconstrained_task_is_unconstrained() {
    let pinned = TaskResources {
        name: "a".into(),
        replicas: 1,
        requests: ResourceList::new(),
        node_names: vec!["n1".into()],
    };
    let free = TaskResources {
        name: "b".into(),
        replicas: 1,
        requests: ResourceList::new(),
        node_names: vec![],
    };
    let also_pinned = TaskResources {
        node_names: vec!["n2".into()],
        ..free.clone()
    };
    assert_eq!(job_explicit_nodes(&[pinned.clone(), free]), NodeSet::Any);
    assert_eq!(
        job_explicit_nodes(&[pinned, also_pinned]),
        NodeSet::from_names(["n1", "n2"])
    );
}

#[test]
fn resource_lists_serialize_as_maps_of_quantity_strings() {
    let l = list(&[("cpu", "1500m"), ("memory", "16Gi")]);
    let json = serde_json::to_string(&l).expect("serializes");
    assert_eq!(json, r#"{"cpu":"1500m","memory":"16Gi"}"#);
    let back: ResourceList = serde_json::from_str(&json).expect("parses");
    assert_eq!(back, l);
    let err = serde_json::from_str::<ResourceList>(r#"{"cpu":"lots"}"#).expect_err("invalid");
    assert!(err.to_string().contains("lots"));
    let err = ResourceList::parse_map([("memory", "1Gb")]).expect_err("invalid");
    assert_eq!(err.resource, "memory");
}

#[test]
fn saturating_addition_clamps_instead_of_failing() {
    let mut total = list(&[("cpu", "1")]);
    total.saturating_add_assign(&list(&[("cpu", "500m"), ("memory", "1Gi")]));
    assert_eq!(total, list(&[("cpu", "1500m"), ("memory", "1Gi")]));
    let huge = ResourceList::new().with("cpu", Quantity::from_milli_saturating(i128::MAX, Default::default()));
    total.saturating_add_assign(&huge);
    total.saturating_add_assign(&huge);
    assert_eq!(total.get("cpu").milli(), crate::scheduling::MAX_MILLI);
}

#[test]
fn saturating_addition_adds_no_zero_valued_entries() {
    let mut total = list(&[("cpu", "1"), ("memory", "0")]);
    total.saturating_add_assign(&list(&[("cpu", "0"), ("v.io/r0", "0"), ("v.io/r1", "1")]));
    // Entries already there stay (a list may be a limit, where a zero is meaningful).
    assert_eq!(total, list(&[("cpu", "1"), ("memory", "0"), ("v.io/r1", "1")]));
}

proptest! {
    #[test]
    fn addition_of_lists_is_commutative_and_associative(
        a in proptest::collection::btree_map("[a-c]", any::<i64>(), 0..3),
        b in proptest::collection::btree_map("[a-c]", any::<i64>(), 0..3),
        c in proptest::collection::btree_map("[a-c]", any::<i64>(), 0..3),
    ) {
        let to_list = |m: &BTreeMap<String, i64>| -> ResourceList {
            m.iter().map(|(k, v)| (k.clone(), Quantity::from_units(*v))).collect()
        };
        let (a, b, c) = (to_list(&a), to_list(&b), to_list(&c));
        let ab_c = a.checked_add(&b).and_then(|x| x.checked_add(&c)).expect("fits");
        let c_ba = c.checked_add(&b).and_then(|x| x.checked_add(&a)).expect("fits");
        for name in ["a", "b", "c"] {
            prop_assert_eq!(ab_c.get(name), c_ba.get(name));
        }
    }
}
