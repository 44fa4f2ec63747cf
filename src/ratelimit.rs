//! Bin creation limit per client address, so one sender cannot fill the disk with bins.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

const WINDOW_MS: i64 = 60_000;
/// Above this many tracked addresses, finished windows are swept on the next check.
const SWEEP_ABOVE: usize = 10_000;

/// A fixed one-minute window per address, starting at its first creation.
#[derive(Debug)]
pub struct BinCreationLimit {
    per_minute: u32,
    windows: Mutex<HashMap<IpAddr, (i64, u32)>>,
}

impl BinCreationLimit {
    /// `per_minute == 0` turns the limit off.
    pub fn new(per_minute: u32) -> Self {
        Self {
            per_minute,
            windows: Mutex::new(HashMap::new()),
        }
    }

    /// Counts one creation; `Err(seconds)` when over the limit, with the seconds to wait.
    pub fn check(&self, ip: IpAddr, now: i64) -> Result<(), u64> {
        if self.per_minute == 0 {
            return Ok(());
        }
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        if windows.len() > SWEEP_ABOVE {
            windows.retain(|_, (start, _)| now - *start < WINDOW_MS);
        }
        let (start, count) = windows.entry(ip).or_insert((now, 0));
        if now - *start >= WINDOW_MS {
            *start = now;
            *count = 0;
        }
        if *count >= self.per_minute {
            let wait_ms = (*start + WINDOW_MS - now).max(1);
            return Err((wait_ms as u64).div_ceil(1000));
        }
        *count += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_per_address_per_window() {
        let limit = BinCreationLimit::new(2);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        assert!(limit.check(a, 0).is_ok());
        assert!(limit.check(a, 10).is_ok());
        assert_eq!(limit.check(a, 30_000), Err(30));
        assert!(limit.check(b, 30_000).is_ok());
        assert!(limit.check(a, 60_000).is_ok());
        assert!(BinCreationLimit::new(0).check(a, 0).is_ok());
    }
}
