//! A full bin writes each new capture over the request it evicts (on SQLite, in the slot
//! `id % ring` of the bin's ring, see src/storage/sqlite/ring.rs): after many times round, every
//! read still sees the bin's newest requests, in id order, under their own ids.

use serde_json::Value;

use crate::api::EventReader;
use crate::util::{Db, Server};

fn ids(summaries: &[Value]) -> Vec<String> {
    summaries
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect()
}

fn range(from: u32, to: u32) -> Vec<String> {
    (from..=to).rev().map(|i| i.to_string()).collect()
}

/// The ids a search for `q` finds, following its cursors, `limit` a page.
fn search(s: &Server, bin: &str, q: &str, limit: usize) -> Vec<String> {
    let mut found = Vec::new();
    let mut cursor = String::new();
    loop {
        let res = s.get(&format!(
            "/api/bins/{bin}/requests?q={q}&limit={limit}&cursor={cursor}"
        ));
        assert_eq!(res.status, 200, "{}", res.text());
        let page = res.json();
        found.extend(ids(page["data"].as_array().unwrap()));
        match page["meta"]["next_cursor"].as_str() {
            Some(c) => cursor = c.to_owned(),
            None => return found,
        }
    }
}

#[test]
fn every_read_of_a_full_bin_sees_its_newest_requests_in_order_after_many_wraps() {
    let s = Server::start(&["--max-requests-per-bin", "5"]);
    let bin = s.create_bin();
    // 23 captures into 5 slots: four and a half times round, the newest in slot 3.
    for i in 1..=23u32 {
        let body = if i % 2 == 0 { "even" } else { "odd" };
        assert_eq!(
            s.capture(&bin, format!("{body} {i}").as_bytes()),
            i.to_string()
        );
    }
    // The list, whatever the page size, newest first.
    for limit in [1, 2, 3, 5, 50] {
        assert_eq!(
            ids(&s.list_all(&bin, limit)),
            range(19, 23),
            "limit {limit}"
        );
    }
    // Each request under its own id; evicted ones are gone.
    for i in 19..=23u32 {
        let body = s.stored(&bin, &i.to_string())["body_text"].clone();
        assert!(body.as_str().unwrap().ends_with(&format!(" {i}")), "{body}");
    }
    for gone in [1, 14, 18] {
        let res = s.get(&format!("/api/bins/{bin}/requests/{gone}"));
        assert_eq!(res.status, 404, "request {gone}");
    }
    // A cursor across the wrap (slots 4, 0 | 1, 2, 3).
    let cursor = base64_cursor("before:22");
    let res = s.get(&format!("/api/bins/{bin}/requests?limit=2&cursor={cursor}"));
    assert_eq!(ids(res.json()["data"].as_array().unwrap()), ["21", "20"]);
    // Search walks both runs of slots, in pages and within its scan budget.
    assert_eq!(search(&s, &bin, "body:even", 1), ["22", "20"]);
    assert_eq!(search(&s, &bin, "body:odd", 50), ["23", "21", "19"]);
    // The export, oldest first.
    let export = s.get(&format!("/api/bins/{bin}/export?format=json")).json();
    let mut oldest_first = range(19, 23);
    oldest_first.reverse();
    assert_eq!(ids(export.as_array().unwrap()), oldest_first);
    // An event stream replays what came after Last-Event-ID, across the wrap, then goes live.
    let mut events = EventReader::open(&s, &bin, Some("20"));
    for want in ["21", "22", "23"] {
        assert_eq!(events.next().0, want);
    }
    s.capture(&bin, b"odd 24");
    assert_eq!(events.next().0, "24");
    // The bin page lists them too.
    let page = s.get(&format!("/bins/{bin}")).text();
    assert!(page.contains(&format!("/bins/{bin}/requests/24")), "{page}");
    assert!(!page.contains(&format!("/bins/{bin}/requests/19\"")));
    // Deleting a request in the middle leaves the rest readable.
    assert_eq!(
        s.delete(&format!("/api/bins/{bin}/requests/22")).status,
        204
    );
    assert_eq!(ids(&s.list_all(&bin, 2)), ["24", "23", "21", "20"]);
    assert_eq!(s.get(&format!("/api/bins/{bin}/requests/22")).status, 404);
}

fn base64_cursor(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text)
}

/// The cap the bin page shows beside the request count (`data-cap`).
fn page_cap(s: &Server, bin: &str) -> u64 {
    let page = s.get(&format!("/bins/{bin}"));
    assert_eq!(page.status, 200);
    let text = page.text();
    let at = text.find("data-cap=\"").expect("the page shows the cap") + "data-cap=\"".len();
    text[at..].split('"').next().unwrap().parse().unwrap()
}

/// What the ring means for the cap on SQLite (docs/API-additions.md): a bin keeps only requests
/// among its newest `ring` ids, a cap raised since applies to new bins and to a bin once it is
/// cleared, and a lowered cap applies at once. PostgreSQL keeps the newest `cap` requests.
#[test]
fn a_bins_ring_is_the_cap_at_its_first_capture_until_it_is_cleared() {
    let db = Db::fresh();
    let sqlite = db.pg.is_none();
    let bin;
    {
        let s = db.start(&["--max-requests-per-bin", "4"]);
        bin = s.create_bin();
        for i in 1..=6 {
            s.capture(&bin, format!("{i}").as_bytes());
        }
        assert_eq!(ids(&s.list_all(&bin, 50)), range(3, 6));
        // A deleted request leaves a gap; the next capture takes the slot of the oldest.
        assert_eq!(s.delete(&format!("/api/bins/{bin}/requests/5")).status, 204);
        s.capture(&bin, b"7");
        let kept = if sqlite {
            vec!["7", "6", "4"]
        } else {
            vec!["7", "6", "4", "3"]
        };
        assert_eq!(ids(&s.list_all(&bin, 50)), kept);
    }
    {
        // Raised: the old bin keeps its ring of 4 on SQLite; a new bin gets 6.
        let s = db.start(&["--max-requests-per-bin", "6"]);
        for i in 8..=12 {
            s.capture(&bin, format!("{i}").as_bytes());
        }
        let kept = if sqlite { range(9, 12) } else { range(7, 12) };
        assert_eq!(ids(&s.list_all(&bin, 50)), kept);
        // The bin page says so: "4 of 4", not "of 6".
        assert_eq!(page_cap(&s, &bin), if sqlite { 4 } else { 6 });
        let fresh = s.create_bin();
        assert_eq!(page_cap(&s, &fresh), 6);
        for i in 1..=8 {
            s.capture(&fresh, format!("{i}").as_bytes());
        }
        assert_eq!(ids(&s.list_all(&fresh, 50)), range(3, 8));
        assert_eq!(page_cap(&s, &fresh), 6);
        // Cleared, the old bin starts again with the cap now in force.
        assert_eq!(s.delete(&format!("/api/bins/{bin}/requests")).status, 204);
        assert_eq!(page_cap(&s, &bin), 6);
        for i in 13..=20 {
            s.capture(&bin, format!("{i}").as_bytes());
        }
        assert_eq!(ids(&s.list_all(&bin, 50)), range(15, 20));
        assert_eq!(page_cap(&s, &bin), 6);
    }
    {
        // Lowered: every bin keeps the newest 2 at its next capture, and goes on from there.
        let s = db.start(&["--max-requests-per-bin", "2"]);
        for i in 21..=25 {
            s.capture(&bin, format!("{i}").as_bytes());
            assert_eq!(ids(&s.list_all(&bin, 50)), range(i - 1, i));
        }
        for i in 24..=25 {
            assert_eq!(s.stored(&bin, &i.to_string())["body_text"], i.to_string());
        }
        assert_eq!(page_cap(&s, &bin), 2);
    }
}
