//! Baton beyond one Redis node: the same scenarios on one node and on a real Redis Cluster
//! (3 primaries, 3 replicas, made by `redis-cli --cluster create`), then the cluster's faults.

mod common;

use common::{
    cluster::TestCluster,
    scenarios::{self, Probe},
    test_config, TestBaton, TestRedis,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scenarios_on_one_node() {
    let redis = TestRedis::start().await;
    let baton = TestBaton::start(&redis.url(), test_config()).await;
    scenarios::all(baton.channel().await, "one", &Probe::node(&redis.url())).await;
    baton.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scenarios_on_a_cluster() {
    let cluster = TestCluster::start(3, 1).await;
    let baton = TestBaton::start(&cluster.url(), test_config()).await;
    let probe = Probe::cluster(&cluster);
    scenarios::all(baton.channel().await, "cl", &probe).await;
    // The names really spread: every primary holds some of them.
    let mut primaries = std::collections::BTreeSet::new();
    for q in 0..6 {
        primaries.insert(cluster.primary_of(&format!("baton:{{q:cl-q{q}}}:defs")).await);
    }
    assert!(primaries.len() >= 2, "the scenario's queues live on {} primaries", primaries.len());
    baton.stop().await.unwrap();
}
