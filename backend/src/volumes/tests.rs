use anteroom_shared::api::volumes::VolumeSource;

use super::*;

fn volume(name: &str, path: &str, queues: &[&str]) -> Volume {
    VolumeBody {
        name: name.into(),
        source: VolumeSource::Pvc {
            claim_name: format!("{name}-claim"),
        },
        mount_path: path.into(),
        read_only: true,
        queues: queues.iter().map(|q| q.to_string()).collect(),
        description: String::new(),
    }
}

fn picks(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

#[test]
fn a_job_mounts_what_its_queue_is_offered_and_nothing_else() {
    let catalogue = [
        volume("imagenet", "/data/imagenet", &["vision"]),
        volume("scratch", "/scratch", &[]),
        volume("other-scratch", "/scratch", &[]),
    ];
    let mounts = resolve(
        &catalogue,
        &["vision-interns", "vision"],
        &picks(&["imagenet", "scratch"]),
    )
    .expect("mounts");
    assert_eq!(
        mounts.iter().map(|m| m.mount_path.as_str()).collect::<Vec<_>>(),
        ["/data/imagenet", "/scratch"]
    );
    assert_eq!(
        resolve(&catalogue, &["nlp"], &picks(&["scratch", "imagenet"])),
        Err(MountProblem::Forbidden("imagenet".into()))
    );
    let Err(MountProblem::Invalid(problems)) = resolve(
        &catalogue,
        &["vision"],
        &picks(&["nope", "scratch", "scratch", "other-scratch"]),
    ) else {
        panic!("invalid picks")
    };
    let fields: Vec<&str> = problems.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(fields, ["volumes[0]", "volumes[2]", "volumes[3]"]);
    assert!(resolve(&catalogue, &["nlp"], &[]).expect("none").is_empty());
}
