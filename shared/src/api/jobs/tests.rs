//! The job body's rules that need no server.

use super::next_run_name;

#[test]
fn a_run_again_gets_the_next_run_suffix_within_the_name_rules() {
    assert_eq!(next_run_name("train"), "train-r2");
    assert_eq!(next_run_name("train-r2"), "train-r3");
    assert_eq!(next_run_name("train-r9"), "train-r10");
    // Not a run suffix: kept, and a suffix added.
    assert_eq!(next_run_name("my-run"), "my-run-r2");
    assert_eq!(next_run_name("a-r"), "a-r-r2");
    let long = "x".repeat(63);
    let next = next_run_name(&long);
    assert_eq!(next.len(), 63);
    assert!(next.ends_with("-r2"));
    // A cut never leaves a dash before the suffix.
    let dashed = format!("{}-{}", "y".repeat(59), "zzz");
    assert_eq!(next_run_name(&dashed), format!("{}-r2", "y".repeat(59)));
}
