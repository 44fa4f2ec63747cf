//! Limits that keep one client from starving the rest (issue 11): per-client counts of open
//! connections, event streams and requests in flight, and a memory budget for request bodies.
//!
//! # Connections: why a per-client cap at accept
//!
//! `--max-connections` is one global semaphore, taken before `accept`: over it, new clients
//! wait in the kernel's backlog. Caps on streams or requests alone would not stop one client
//! from holding every permit with idle or slow connections, and then no one else is even
//! accepted. So, right after `accept`, the peer's open connections are counted (IPv6 per /64, see
//! [`client_key`]); beyond `--max-connections-per-client`, which is at most half of
//! `--max-connections`, the connection gets a canned `429` and is closed at once, which frees
//! its global permit again. One address can hold at most half the permits, and the slots its
//! surplus connections briefly take cost nothing but an accept.
//!
//! With `--trust-proxy` every connection comes from the proxy, so the peer says nothing about
//! the client and the connection cap is not applied: nginx's `limit_conn` does that job (see
//! `nginx/hookbin.conf`). The caps on streams and on requests in flight are keyed by the address
//! hookbin records ([`crate::web::client::client_ip`], `X-Real-IP` behind the proxy), so they
//! hold either way, and they bound the upstream connections one client can keep busy (each
//! stream or request in flight holds one) well below `--max-connections`.
//!
//! # Bodies in memory
//!
//! A capture's body is kept in memory until its row is committed. Each body's first
//! [`FREE_BODY_BYTES`] are free (so small webhooks are never refused for memory, and the worst
//! case stays bounded by the connection limit); beyond that, bytes are taken from one global
//! budget, `--max-body-memory`: a declared `Content-Length` (up to `--max-body-bytes`) as soon as
//! the head arrives, a chunked body as it grows. When it is spent, the body's bytes are dropped
//! at once and the rest is read and discarded, and the request is answered `503` with
//! `Retry-After`, not recorded.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The key a client is counted under: its IPv4 address, or the /64 of its IPv6 address (one
/// subscriber usually holds a whole /64, and can pick any address in it).
pub fn client_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(prefix))
        }
        v4 => v4,
    }
}

/// What a client holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    Connection,
    Stream,
    Request,
}

/// Shards of the count table: requests from many clients rarely wait on one lock.
const SHARDS: usize = 16;

/// Per-client counts with their caps; `0` means no cap (and no counting).
#[derive(Debug)]
pub struct ClientLimits {
    caps: [u32; 3],
    shards: Vec<Mutex<HashMap<IpAddr, [u32; 3]>>>,
}

impl ClientLimits {
    pub fn new(connections: u32, streams: u32, requests: u32) -> Arc<Self> {
        Arc::new(Self {
            caps: [connections, streams, requests],
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        })
    }

    /// The cap of `slot`, `0` for none.
    pub fn cap(&self, slot: Slot) -> u32 {
        self.caps[slot as usize]
    }

    fn shard(&self, key: &IpAddr) -> &Mutex<HashMap<IpAddr, [u32; 3]>> {
        let n = match key {
            IpAddr::V4(v4) => u32::from(*v4) as usize,
            IpAddr::V6(v6) => (u128::from(*v6) >> 64) as usize,
        };
        &self.shards[n.wrapping_mul(0x9E37_79B9) % SHARDS]
    }

    /// Takes one `slot` for the client at `ip` (keyed by [`client_key`]); `None` when it already
    /// holds its cap. The slot is given back when the returned guard is dropped.
    pub fn take(self: &Arc<Self>, ip: IpAddr, slot: Slot) -> Option<ClientSlot> {
        let cap = self.caps[slot as usize];
        if cap == 0 {
            return Some(ClientSlot { held: None });
        }
        let key = client_key(ip);
        let mut counts = self.shard(&key).lock().unwrap_or_else(|e| e.into_inner());
        let count = &mut counts.entry(key).or_default()[slot as usize];
        if *count >= cap {
            return None;
        }
        *count += 1;
        Some(ClientSlot {
            held: Some((self.clone(), key, slot)),
        })
    }

    fn give_back(&self, key: IpAddr, slot: Slot) {
        let mut counts = self.shard(&key).lock().unwrap_or_else(|e| e.into_inner());
        if let Some(held) = counts.get_mut(&key) {
            held[slot as usize] = held[slot as usize].saturating_sub(1);
            if *held == [0; 3] {
                counts.remove(&key);
            }
        }
    }

    /// Clients with anything counted (for tests).
    pub fn tracked(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).len())
            .sum()
    }
}

/// One slot a client holds; given back on drop.
#[derive(Debug)]
pub struct ClientSlot {
    held: Option<(Arc<ClientLimits>, IpAddr, Slot)>,
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        if let Some((limits, key, slot)) = self.held.take() {
            limits.give_back(key, slot);
        }
    }
}

/// Bytes of each body held without touching the budget.
pub const FREE_BODY_BYTES: u64 = 64 * 1024;
/// The budget is taken in steps of this much, so a large body costs few atomic operations.
const BUDGET_STEP: u64 = 256 * 1024;

/// The global budget of body bytes held in memory (`--max-body-memory`).
#[derive(Debug)]
pub struct BodyBudget {
    limit: u64,
    used: AtomicU64,
}

impl BodyBudget {
    pub fn new(limit: u64) -> Self {
        Self {
            limit,
            used: AtomicU64::new(0),
        }
    }

    /// Bytes taken right now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    fn try_take(&self, n: u64) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(n).filter(|&total| total <= self.limit)
            })
            .is_ok()
    }

    fn give_back(&self, n: u64) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }

    /// A body's account; its bytes go back to the budget when it is dropped.
    pub fn account(&self) -> BodyMemory<'_> {
        BodyMemory {
            budget: self,
            held: 0,
        }
    }
}

/// What one body has taken from the [`BodyBudget`].
#[derive(Debug)]
pub struct BodyMemory<'a> {
    budget: &'a BodyBudget,
    held: u64,
}

impl BodyMemory<'_> {
    /// Makes room for a body of `len` bytes in all; `false` when the budget is spent (nothing
    /// more is taken then).
    pub fn cover(&mut self, len: u64) -> bool {
        let needed = len.saturating_sub(FREE_BODY_BYTES);
        if needed <= self.held {
            return true;
        }
        // Up to the next step, but never more than the budget has: the last bytes may still fit.
        let step = (needed - self.held).max(BUDGET_STEP.min(self.budget.limit));
        if self.budget.try_take(step) {
            self.held += step;
            return true;
        }
        let exact = needed - self.held;
        if exact < step && self.budget.try_take(exact) {
            self.held += exact;
            return true;
        }
        false
    }

    /// Gives everything back now (the bytes were dropped).
    pub fn release(&mut self) {
        self.budget.give_back(std::mem::take(&mut self.held));
    }
}

impl Drop for BodyMemory<'_> {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_clients_are_keyed_by_their_64() {
        let key = |s: &str| client_key(s.parse().unwrap()).to_string();
        assert_eq!(key("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::");
        assert_eq!(key("2001:db8:1:2:ffff:ffff:ffff:ffff"), "2001:db8:1:2::");
        assert_ne!(key("2001:db8:1:3::1"), key("2001:db8:1:2::1"));
        assert_eq!(key("10.1.2.3"), "10.1.2.3");
        assert_eq!(key("::ffff:10.1.2.3"), "10.1.2.3");
    }

    #[test]
    fn slots_are_capped_per_client_and_given_back() {
        let limits = ClientLimits::new(2, 1, 0);
        let a: IpAddr = "2001:db8::1".parse().unwrap();
        let a2: IpAddr = "2001:db8::2".parse().unwrap();
        let b: IpAddr = "10.0.0.1".parse().unwrap();
        let c1 = limits.take(a, Slot::Connection).unwrap();
        let _c2 = limits.take(a2, Slot::Connection).unwrap();
        assert!(limits.take(a, Slot::Connection).is_none(), "same /64");
        let _c3 = limits.take(b, Slot::Connection).unwrap();
        let s = limits.take(a, Slot::Stream).unwrap();
        assert!(limits.take(a2, Slot::Stream).is_none());
        // No cap on requests: never refused, never counted.
        let many: Vec<_> = (0..100)
            .map(|_| limits.take(a, Slot::Request).unwrap())
            .collect();
        drop(c1);
        assert!(limits.take(a, Slot::Connection).is_some());
        drop((s, many, _c2, _c3));
        assert_eq!(
            limits.tracked(),
            0,
            "nothing is kept for clients that hold nothing"
        );
    }

    #[test]
    fn the_budget_covers_bodies_beyond_their_free_bytes() {
        let budget = BodyBudget::new(1024 * 1024);
        let mut a = budget.account();
        assert!(a.cover(FREE_BODY_BYTES), "the free part costs nothing");
        assert_eq!(budget.used(), 0);
        assert!(a.cover(FREE_BODY_BYTES + 1));
        assert_eq!(budget.used(), BUDGET_STEP);
        assert!(a.cover(FREE_BODY_BYTES + 1024 * 1024));
        assert_eq!(budget.used(), 1024 * 1024);
        let mut b = budget.account();
        assert!(b.cover(FREE_BODY_BYTES));
        assert!(!b.cover(FREE_BODY_BYTES + 1), "spent");
        drop(a);
        assert_eq!(budget.used(), 0);
        assert!(b.cover(FREE_BODY_BYTES + 10));
        b.release();
        assert_eq!(budget.used(), 0);
    }
}
