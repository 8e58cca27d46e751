//! The cluster endpoints against the default simulated cluster.

use anteroom_tests::TestApp;
use serde_json::{Value, json};

#[tokio::test]
async fn a_user_sees_the_default_simulated_nodes_with_free_equal_to_allocatable() {
    let app = TestApp::builder().start().await;
    let token = app.user_token("alice").await;
    let res = app
        .client
        .get(app.url("/api/v1/cluster/nodes"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let nodes: Vec<Value> = res.json().await.unwrap();
    let names: Vec<&str> = nodes.iter().map(|n| n["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        vec!["cpu-0", "gpu-a100-0", "gpu-a100-1", "gpu-v100-0", "gpu-v100-1"]
    );
    let a100 = &nodes[1];
    assert_eq!(a100["allocatable"]["nvidia.com/a100"], "8");
    assert_eq!(a100["allocatable"]["memory"], "512Gi");
    assert_eq!(a100["free"], a100["allocatable"]);
    assert_eq!(a100["used"], json!({"cpu": "0", "memory": "0", "nvidia.com/a100": "0"}));
    assert_eq!(a100["ready"], true);
    assert_eq!(a100["schedulable"], true);
    assert_eq!(a100["labels"]["zone"], "a");
    // Its taints, which toleration rules are written for; the CPU node has none.
    assert_eq!(
        a100["taints"],
        json!([{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])
    );
    assert_eq!(nodes[0]["taints"], json!([]));
}

#[tokio::test]
async fn the_resource_names_flag_accelerators() {
    let app = TestApp::builder().start().await;
    let token = app.user_token("bob").await;
    let res = app
        .client
        .get(app.url("/api/v1/cluster/resources"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let body: Value = res.json().await.unwrap();
    assert_eq!(
        body,
        json!([
            {"name": "cpu", "accelerator": false},
            {"name": "memory", "accelerator": false},
            {"name": "nvidia.com/a100", "accelerator": true},
            {"name": "nvidia.com/v100", "accelerator": true},
        ])
    );
}

#[tokio::test]
async fn an_admin_cordons_and_uncordons_a_node_and_a_user_may_not() {
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    let user = app.user_token("carol").await;
    let url = app.url("/api/v1/admin/nodes/gpu-v100-0/schedulable");

    let res = app
        .client
        .put(&url)
        .bearer_auth(&user)
        .json(&json!({"schedulable": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);

    let res = app
        .client
        .put(&url)
        .bearer_auth(&admin)
        .json(&json!({"schedulable": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let node: Value = res.json().await.unwrap();
    assert_eq!(node["schedulable"], false);
    let nodes: Vec<Value> = app
        .client
        .get(app.url("/api/v1/cluster/nodes"))
        .bearer_auth(&user)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        nodes.iter().find(|n| n["name"] == "gpu-v100-0").unwrap()["schedulable"],
        false
    );

    let res = app
        .client
        .put(&url)
        .bearer_auth(&admin)
        .json(&json!({"schedulable": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn cordoning_an_unknown_node_is_404_and_a_bad_body_is_422() {
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    let res = app
        .client
        .put(app.url("/api/v1/admin/nodes/nope/schedulable"))
        .bearer_auth(&admin)
        .json(&json!({"schedulable": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "node_not_found");
    let res = app
        .client
        .put(app.url("/api/v1/admin/nodes/cpu-0/schedulable"))
        .bearer_auth(&admin)
        .json(&json!({"schedulable": "yes"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 422);
}

#[tokio::test]
async fn the_cluster_endpoints_need_a_token() {
    let app = TestApp::builder().start().await;
    for path in ["/api/v1/cluster/nodes", "/api/v1/cluster/resources"] {
        let res = app.client.get(app.url(path)).send().await.unwrap();
        assert_eq!(res.status(), 401, "{path}");
    }
}
