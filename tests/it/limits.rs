//! Limits that keep one abusive sender from hurting others (size and timeout limits are in
//! capture.rs and lifecycle.rs).

use std::io::{BufReader, Read, Write};
use std::time::Duration;

use crate::replay_support::noise;
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
    // Bytes that do not pack: each commit writes the whole body, so the writer stays behind the
    // bursts also when one worker thread reads every connection (a run of x packed to ~2 KiB,
    // and with one worker the queue of one sometimes never filled: 2 runs in 20).
    let body = noise(512 * 1024, 15);
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
    // All from one address: without the per-client cap (at most half of the global one), which
    // has a test of its own below.
    let s = Server::start(&[
        "--max-connections",
        "2",
        "--max-connections-per-client",
        "0",
    ]);
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

/// A connection from `source`, another loopback address than the 127.0.0.1 every other test
/// connection comes from: a second client, as the server sees it.
fn connect_from(source: &str, to: std::net::SocketAddr) -> std::net::TcpStream {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    let from = std::net::SocketAddr::new(source.parse().unwrap(), 0);
    socket
        .bind(&from.into())
        .expect("bind a second loopback address");
    socket.connect(&to.into()).expect("connect");
    let conn: std::net::TcpStream = socket.into();
    conn.set_read_timeout(Some(crate::util::PATIENCE)).unwrap();
    conn
}

/// Sends `raw` on `conn` and reads one response; `None` when the server closed instead.
fn exchange(conn: &mut std::net::TcpStream, raw: &[u8]) -> Option<crate::util::Response> {
    conn.write_all(raw).ok()?;
    read_response(&mut BufReader::new(conn.try_clone().ok()?)).ok()
}

/// The status line and headers of an answer that may never end (a stream); `None` when the
/// server closed instead.
fn head_of(conn: &mut std::net::TcpStream, raw: &[u8]) -> Option<crate::util::Response> {
    conn.write_all(raw).ok()?;
    crate::util::read_head(&mut BufReader::new(conn.try_clone().ok()?)).ok()
}

#[test]
fn one_address_holding_more_streams_than_max_connections_does_not_starve_another() {
    let s = Server::start(&["--max-connections", "8", "--max-streams-per-client", "3"]);
    let bin = s.create_bin();
    // 127.0.0.1 tries to hold 12 event streams: more than the server has connections.
    let stream_request = format!("GET /api/bins/{bin}/stream HTTP/1.1\r\nHost: h\r\n\r\n");
    let mut held = Vec::new();
    let mut statuses = Vec::new();
    for _ in 0..12 {
        let mut conn = s.connect();
        let status = head_of(&mut conn, stream_request.as_bytes()).map(|r| r.status);
        statuses.push(status);
        held.push(conn);
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == Some(200)).count(),
        3,
        "streams from one address: {statuses:?}"
    );
    assert!(
        statuses[3..].iter().all(|s| matches!(s, Some(429) | None)),
        "beyond its streams, and then its connections, it is refused: {statuses:?}"
    );
    // Meanwhile, another address captures at once, and the health check answers.
    let started = std::time::Instant::now();
    let mut other = connect_from("127.0.0.2", s.addr);
    let res = exchange(
        &mut other,
        format!(
            "POST /r/{bin} HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi"
        )
        .as_bytes(),
    )
    .expect("an answer");
    assert_eq!(res.status, 200, "{}", res.text());
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the capture took {:?}",
        started.elapsed()
    );
    let mut probe = connect_from("127.0.0.2", s.addr);
    let res = exchange(
        &mut probe,
        b"GET /healthz HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    assert_eq!(res.status, 200);
    // The stream cap answers in JSON, the connection cap with its canned 429.
    let mut fourth = s.connect();
    drop(held.drain(4..).collect::<Vec<_>>());
    let res = head_of(&mut fourth, stream_request.as_bytes());
    assert!(matches!(res.map(|r| r.status), Some(429) | None));
    let metrics = s.get("/metrics").text();
    assert!(
        !metrics.contains("hookbin_client_limit_rejections_total 0\n"),
        "{metrics}"
    );
    drop(held);
}

#[test]
fn connections_beyond_the_per_client_cap_get_a_429_and_free_their_slot() {
    let s = Server::start(&[
        "--max-connections",
        "100",
        "--max-connections-per-client",
        "2",
    ]);
    let bin = s.create_bin();
    // From an address of their own: the harness's connections from 127.0.0.1 (the readiness
    // probe, creating the bin) may still hold a slot for a moment after they closed, and then
    // under load `a` or `b` was the refused one and `c` an idle connection that got no answer.
    let from = "127.0.0.3";
    // Two idle keep-alive connections: the address's cap.
    let a = connect_from(from, s.addr);
    let b = connect_from(from, s.addr);
    // The third is refused with the canned answer, whatever it sends.
    let mut c = connect_from(from, s.addr);
    let mut raw = Vec::new();
    let _ = c.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw);
    assert!(text.starts_with("HTTP/1.1 429 "), "{text:?}");
    assert!(text.contains("too_many_connections"), "{text}");
    // Another address is not affected; and once one closes, this one is served again.
    let mut other = connect_from("127.0.0.2", s.addr);
    let capture = format!(
        "POST /r/{bin} HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx"
    );
    assert_eq!(
        exchange(&mut other, capture.as_bytes()).unwrap().status,
        200
    );
    drop(a);
    s.eventually("the closed connection's slot is free", || {
        let mut conn = connect_from(from, s.addr);
        exchange(&mut conn, capture.as_bytes()).is_some_and(|r| r.status == 200)
    });
    drop(b);
}

#[test]
fn requests_in_flight_are_capped_per_address() {
    let s = Server::start(&["--max-in-flight-per-client", "2"]);
    let slow = s.create_bin_with(r#"{"response": {"status": 202, "delay_ms": 3000}}"#)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let fast = s.create_bin();
    std::thread::scope(|scope| {
        let delayed: Vec<_> = (0..2)
            .map(|_| scope.spawn(|| s.request("POST", &format!("/r/{slow}"), &[], b"x").status))
            .collect();
        // (Watched through /metrics: this address's other requests are what is capped.)
        s.eventually("both delayed captures are committed", || {
            s.get("/metrics")
                .text()
                .contains("hookbin_requests_captured_total 2\n")
        });
        // Both of this address's slots are taken by the delayed answers: a third request is
        // refused at once and not recorded; the operator's probes still answer.
        let res = s.request("POST", &format!("/r/{fast}"), &[], b"x");
        res.assert_error(429, "too_many_requests");
        assert_eq!(res.header("retry-after"), Some("1"));
        assert_eq!(res.header("content-security-policy"), Some("sandbox"));
        assert_eq!(s.get("/healthz").status, 200);
        // Another address is not held up.
        let mut other = connect_from("127.0.0.2", s.addr);
        let res = exchange(
            &mut other,
            format!("POST /r/{fast} HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx")
                .as_bytes(),
        )
        .unwrap();
        assert_eq!(res.status, 200);
        for handle in delayed {
            assert_eq!(handle.join().unwrap(), 202);
        }
    });
    assert_eq!(
        s.get(&format!("/api/bins/{fast}")).json()["request_count"],
        1
    );
    assert_eq!(s.capture(&fast, b"slots are back"), "2");
}

#[test]
fn bin_creation_keys_ipv6_clients_by_their_64() {
    let s = Server::start(&["--trust-proxy", "--max-bins-per-minute", "1"]);
    let create = |ip: &str| {
        s.request("POST", "/api/bins", &[("X-Real-IP", ip)], b"")
            .status
    };
    assert_eq!(create("2001:db8:1:2::1"), 201);
    assert_eq!(create("2001:db8:1:2:ffff:1:2:3"), 429, "same /64");
    assert_eq!(create("2001:db8:1:3::1"), 201, "another /64");
    assert_eq!(create("192.0.2.1"), 201);
}

#[test]
fn a_trickling_body_is_cut_off_at_the_body_deadline() {
    let s = Server::start(&["--body-deadline", "2s", "--body-timeout", "10s"]);
    let bin = s.create_bin();
    let mut conn = s.connect();
    conn.write_all(
        format!("POST /r/{bin} HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\n\r\n").as_bytes(),
    )
    .unwrap();
    // One byte every 200 ms: never idle for --body-timeout, yet never done.
    let started = std::time::Instant::now();
    let writer = conn.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        let mut writer = writer;
        while writer.write_all(b"x").is_ok() && started.elapsed() < Duration::from_secs(15) {
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let res = read_response(&mut BufReader::new(conn)).unwrap();
    res.assert_error(408, "body_too_slow");
    assert_eq!(res.header("connection"), Some("close"));
    let took = started.elapsed();
    assert!(
        (Duration::from_millis(1500)..Duration::from_secs(10)).contains(&took),
        "answered after {took:?}"
    );
    trickle.join().unwrap();
    assert_eq!(
        s.get(&format!("/api/bins/{bin}")).json()["request_count"],
        0
    );
}

/// VmHWM (peak resident set) and VmRSS of a process, in KiB.
fn memory_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("{name} in {status}"))
    };
    (field("VmHWM:"), field("VmRSS:"))
}

#[test]
fn forty_nearly_whole_large_bodies_that_trickle_stay_under_128_mib() {
    // Default limits: 5 MiB bodies, a 64 MiB body memory budget. The body timeouts are widened:
    // this test is about memory, and on a loaded 2-core machine 40 senders of 5 MiB can pause
    // one body longer than the default 30 s (seen: a 408 instead of the 413 or 503 asserted).
    let s = Server::start(&["--body-timeout", "10m", "--body-deadline", "20m"]);
    let bin = s.create_bin();
    let (baseline, _) = memory_kib(s.pid());
    const DECLARED: usize = 5_340_000;
    const SENT: usize = 5_240_000;
    let chunk = vec![b'x'; 64 * 1024];
    let conns: Vec<std::net::TcpStream> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..40)
            .map(|_| {
                scope.spawn(|| {
                    let mut conn = s.connect();
                    conn.write_all(
                        format!("POST /r/{bin} HTTP/1.1\r\nHost: h\r\nContent-Length: {DECLARED}\r\n\r\n")
                            .as_bytes(),
                    )
                    .unwrap();
                    let mut sent = 0;
                    while sent < SENT {
                        let n = chunk.len().min(SENT - sent);
                        conn.write_all(&chunk[..n]).expect("the server reads every byte");
                        sent += n;
                    }
                    conn
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // Every byte is out; a trickle keeps each body alive.
    for mut conn in &conns {
        conn.write_all(b"x").unwrap();
    }
    let gauge = || -> u64 {
        s.get("/metrics")
            .text()
            .lines()
            .find_map(|l| l.strip_prefix("hookbin_body_memory_bytes "))
            .unwrap()
            .parse()
            .unwrap()
    };
    s.eventually("the body memory budget to be spent", || {
        gauge() > 56 * 1024 * 1024
    });
    // A small body is never refused for memory.
    assert_eq!(s.capture(&bin, b"small"), "1");
    let (peak, now) = memory_kib(s.pid());
    println!(
        "RSS with 40 trickling {SENT}-byte bodies: peak {} MiB, now {} MiB (baseline {} MiB)",
        peak / 1024,
        now / 1024,
        baseline / 1024
    );
    assert!(peak < 128 * 1024, "peak RSS {peak} KiB");
    assert!(gauge() <= 64 * 1024 * 1024);

    // The senders finish: the bodies the budget covered are recorded (cut at 5 MiB, 413, with
    // every byte received counted), the others are answered 503 and not recorded.
    let rest = vec![b'x'; DECLARED - SENT - 1];
    let (mut recorded, mut refused) = (0, 0);
    for mut conn in conns {
        conn.write_all(&rest).unwrap();
        let res = read_response(&mut BufReader::new(conn)).unwrap();
        match res.status {
            413 => {
                let stored = s.stored(&bin, res.header("x-request-id").unwrap());
                assert_eq!(stored["body_size"], DECLARED);
                assert_eq!(stored["body_truncated"], true);
                recorded += 1;
            }
            503 => {
                res.assert_error(503, "body_memory_full");
                assert_eq!(res.header("retry-after"), Some("5"));
                assert_eq!(res.header("x-request-id"), None);
                refused += 1;
            }
            other => panic!("unexpected {other}: {}", res.text()),
        }
    }
    println!("{recorded} bodies recorded, {refused} refused for memory");
    assert!(
        recorded >= 10 && refused >= 20,
        "{recorded} recorded, {refused} refused"
    );
    assert_eq!(
        s.get(&format!("/api/bins/{bin}")).json()["request_count"],
        recorded + 1
    );
    s.eventually("the budget to be given back", || gauge() == 0);
}
