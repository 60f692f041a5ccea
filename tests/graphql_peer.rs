//! GraphQL against a published server nobody here wrote: json-graphql-server (npm,
//! installed by `scripts/peers.sh` as `peer_graphql`), serving
//! tests/fixtures/graphql-peer.json on a free loopback port.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::graphql::run_yaml;
use crate::support::{assert_clean, free_port, peers::peer_path};

/// The peer server, killed when dropped.
struct Peer {
    child: Child,
    port: u16,
}

impl Peer {
    fn start() -> Peer {
        let bin = peer_path("graphql/node_modules/.bin/json-graphql-server");
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let port = free_port();
        let child = Command::new("node")
            .arg(bin)
            .args([
                "graphql-peer.json",
                "-p",
                &port.to_string(),
                "-h",
                "127.0.0.1",
            ])
            .current_dir(fixtures)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node runs json-graphql-server");
        let peer = Peer { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "json-graphql-server did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        peer
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn scenario(peer: &Peer, page: &str, query: &str) -> String {
    format!(
        "name: peer\ntarget: http://127.0.0.1:{}\nload: {{rate: 20, duration: 1s}}\nrequests:\n  - path: /\n    graphql:\n      query: '{query}'\n      variables: {{page: \"{page}\", perPage: 2}}\n",
        peer.port
    )
}

const POSTS: &str =
    "query posts($page: Int!, $perPage: Int!) { allPosts(page: $page, perPage: $perPage) { id title } }";

#[test]
fn a_published_graphql_server_answers_typed_variables_and_its_errors_are_counted() {
    let peer = Peer::start();
    // Typed: `page` is a number, the query succeeds.
    let (out, s) = run_yaml(&scenario(&peer, "{{ rand_int(0, 1) }}", POSTS), &[]);
    assert_clean(&out, &s);
    assert_eq!(s.by_name["posts"].requests, s.requests);

    // Text around the placeholder makes a string: graphql-js refuses it for `Int!`
    // with HTTP 200 and an `errors` array, every time.
    let (_, s) = run_yaml(&scenario(&peer, "p{{ rand_int(0, 1) }}", POSTS), &[]);
    assert!(s.requests >= 15, "{} requests", s.requests);
    assert_eq!(
        s.errors.by_kind.get("graphql"),
        Some(&s.requests),
        "{:?}",
        s.errors
    );
    let message = &s.errors.first_message["graphql"];
    assert!(message.contains("Int cannot represent"), "{message}");

    // A field the schema does not have.
    let bad = "query bad($page: Int!, $perPage: Int!) { nope(page: $page, perPage: $perPage) }";
    let (_, s) = run_yaml(&scenario(&peer, "{{ rand_int(0, 1) }}", bad), &[]);
    assert_eq!(
        s.errors.by_kind.get("graphql"),
        Some(&s.requests),
        "{:?}",
        s.errors
    );
    assert!(s.errors.first_message["graphql"].contains("nope"));
}
