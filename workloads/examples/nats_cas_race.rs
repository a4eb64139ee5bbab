//! Two compare-and-set publishes over the same expected revision of one subject, sent at once to
//! a JetStream stream: how many does the server acknowledge? (One, if the check is atomic.)
//! Usage: nats_cas_race <nats-url,...> <replicas> <rounds>

use std::time::Duration;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let urls: Vec<async_nats::ServerAddr> =
        args[1].split(',').map(|u| u.parse().unwrap()).collect();
    let replicas: u64 = args[2].parse().unwrap();
    let rounds: u64 = args[3].parse().unwrap();
    let a = async_nats::connect(urls.clone()).await.unwrap();
    let b = async_nats::connect(urls).await.unwrap();
    let name = format!("RACE{replicas}");
    let config = serde_json::json!({"name": name, "subjects": [format!("race{replicas}.>")],
        "max_msgs_per_subject": 1, "storage": "file", "num_replicas": replicas,
        "max_age": 60_000_000_000u64, "discard": "new"});
    let r = a
        .request(
            format!("$JS.API.STREAM.CREATE.{name}"),
            config.to_string().into(),
        )
        .await
        .unwrap();
    println!("create: {}", String::from_utf8_lossy(&r.payload));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (ja, jb) = (async_nats::jetstream::new(a), async_nats::jetstream::new(b));
    let mut doubles = 0;
    let mut last = 0u64;
    for round in 0..rounds {
        let subject = format!("race{replicas}.key");
        let send = |js: async_nats::jetstream::Context, expected: u64| {
            let subject = subject.clone();
            async move {
                let mut h = async_nats::HeaderMap::new();
                h.insert("Nats-Expected-Last-Subject-Sequence", expected.to_string());
                match js.publish_with_headers(subject, h, "x".into()).await {
                    Ok(ack) => ack.await.map(|a| a.sequence).ok(),
                    Err(_) => None,
                }
            }
        };
        let (x, y) = tokio::join!(send(ja.clone(), last), send(jb.clone(), last));
        if x.is_some() && y.is_some() {
            doubles += 1;
        }
        last = x.into_iter().chain(y).max().unwrap_or(last);
        if round == 0 {
            println!("first round: {x:?} {y:?}");
        }
    }
    println!("replicas {replicas}: both acknowledged in {doubles} of {rounds} rounds");
}
