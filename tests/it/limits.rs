//! Limits that keep one abusive sender from hurting others (size and timeout limits are in
//! capture.rs and lifecycle.rs).

use std::io::{BufReader, Read, Write};
use std::time::Duration;

use crate::util::{Server, read_response};

#[test]
fn bin_creation_is_limited_per_address_per_minute() {
    let s = Server::start(&["--max-bins-per-minute", "3"]);
    for _ in 0..3 {
        assert_eq!(s.post_json("/api/bins", "").status, 201);
    }
    let res = s.post_json("/api/bins", "");
    res.assert_error(429, "too_many_bins");
    let wait: u64 = res.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    // Captures into existing bins are not limited by it.
    let s = Server::start(&["--max-bins-per-minute", "1"]);
    let bin = s.create_bin();
    assert_eq!(s.post_json("/api/bins", "").status, 429);
    for _ in 0..5 {
        s.capture(&bin, b"x");
    }
}

#[test]
fn a_full_write_queue_answers_503_and_stores_only_what_it_acknowledged() {
    let s = Server::start(&["--write-queue", "1", "--max-requests-per-bin", "100000"]);
    let bin = s.create_bin();
    let body = vec![b'x'; 512 * 1024];
    let (mut ok, mut rejected) = (0usize, 0usize);
    // Bursts of simultaneous large captures; a queue of one must overflow in one of them.
    for _ in 0..20 {
        let statuses: Vec<crate::util::Response> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..32)
                .map(|_| scope.spawn(|| s.request("POST", &format!("/r/{bin}"), &[], &body)))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for res in statuses {
            match res.status {
                200 => ok += 1,
                503 => {
                    res.assert_error(503, "write_queue_full");
                    assert_eq!(res.header("retry-after"), Some("1"));
                    rejected += 1;
                }
                other => panic!("unexpected status {other}: {}", res.text()),
            }
        }
        if rejected > 0 {
            break;
        }
    }
    assert!(rejected > 0, "the queue never filled");
    assert_eq!(
        s.get(&format!("/api/bins/{bin}")).json()["request_count"],
        ok
    );
    assert!(s.get("/metrics").text().contains(&format!(
        "hookbin_captures_rejected_queue_full_total {rejected}\n"
    )));
}

#[test]
fn connections_over_the_limit_wait_until_one_closes() {
    let s = Server::start(&["--max-connections", "2"]);
    let bin = s.create_bin();
    let keep_alive = |conn: &mut std::net::TcpStream| {
        conn.write_all(
            format!("POST /r/{bin} HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx").as_bytes(),
        )
        .unwrap();
        let res = read_response(&mut BufReader::new(conn.try_clone().unwrap())).unwrap();
        assert_eq!(res.status, 200);
    };
    // Two connections stay open (keep-alive): the limit is reached.
    let mut a = s.connect();
    keep_alive(&mut a);
    let mut b = s.connect();
    keep_alive(&mut b);
    // A third waits: no answer while both are open.
    let mut c = s.connect();
    c.write_all(
        format!(
            "POST /r/{bin} HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nConnection: close\r\n\r\nc"
        )
        .as_bytes(),
    )
    .unwrap();
    c.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut byte = [0u8; 1];
    assert!(
        c.read(&mut byte).is_err(),
        "the third connection was served beyond the limit"
    );
    // When one closes, the waiting one is served.
    drop(a);
    c.set_read_timeout(Some(crate::util::PATIENCE)).unwrap();
    let res = read_response(&mut BufReader::new(c)).unwrap();
    assert_eq!(res.status, 200);
    drop(b);
    assert_eq!(
        s.get(&format!("/api/bins/{bin}")).json()["request_count"],
        3
    );
}

#[test]
fn the_per_bin_cap_holds_under_concurrent_captures() {
    let s = Server::start(&["--max-requests-per-bin", "5"]);
    let bin = s.create_bin();
    let other = s.create_bin();
    // Parallel captures land in shared write batches, where eviction is settled once per bin.
    let mut acked: Vec<u64> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|t| {
                let (s, bin, other) = (&s, &bin, &other);
                scope.spawn(move || {
                    (0..10)
                        .map(|i| {
                            let target = if (t + i) % 4 == 0 { other } else { bin };
                            (
                                target == bin,
                                s.capture(target, b"x").parse::<u64>().unwrap(),
                            )
                        })
                        .filter(|(mine, _)| *mine)
                        .map(|(_, id)| id)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    acked.sort_unstable();
    let newest: Vec<String> = acked.iter().rev().take(5).map(u64::to_string).collect();
    let kept: Vec<String> = s
        .list_all(&bin, 10)
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kept, newest, "exactly the five newest are kept");
    assert_eq!(
        s.get(&format!("/api/bins/{bin}")).json()["request_count"],
        5
    );
    assert_eq!(
        s.get(&format!("/api/bins/{other}")).json()["request_count"],
        5
    );
}
