//! Which Volcano queue an Elastic job goes to.

use super::*;

#[test]
fn an_elastic_job_goes_to_the_uncapped_queue_only_while_queues_are_mirrored() {
    let mut spec = job(43, JobKind::Jupyter, vec![task("main", 1, &[("cpu", "1")])]);
    spec.schedule_type = ScheduleType::Backfill;
    let queue_of = |spec: &JobSpec, mirror: bool| {
        let settings = ManifestSettings {
            mirror_queues: mirror,
            ..settings()
        };
        volcano_job(spec, &settings).spec.queue.expect("a queue")
    };
    assert_eq!(queue_of(&spec, true), crate::cluster::ELASTIC_QUEUE);
    assert_eq!(queue_of(&spec, false), "nlp", "administrators' queues: the job's own");
    spec.schedule_type = ScheduleType::Normal;
    assert_eq!(queue_of(&spec, true), "nlp", "normal jobs stay in their capped queue");
}
