//! A page cache that spares SQLite's default one a scan of its whole hash table at most commits
//! of a database smaller than 1 GiB that grows.
//!
//! When a B-tree page splits, `balance_nonroot` gives the new pages ascending numbers by swapping
//! them, and it parks one page under a number no page ever has: the "pending byte" page, 1 GiB
//! into the file (page 262,145 with 4 KiB pages). The default cache (`pcache1`) remembers the
//! largest number it has seen (`iMaxKey`) and never lowers it on a swap, so at every commit,
//! where SQLite truncates the cache to the database's size, that number is past the size and
//! `pcache1` walks every slot of its hash table and every page in it to find pages to drop.
//! There are none. With a writer's cache of 16 MiB (4,000 pages) that walk cost 6.5% of
//! hookbin's writer thread under a load that appends (perf, bench/RESULTS.md), at every commit
//! until the file passes 1 GiB.
//!
//! This wrapper hands every call to the default cache and keeps, per cache, an upper bound of
//! the page numbers it may hold (the largest number fetched or moved to) and how many pages are
//! parked under the pending number. A truncation that could not drop anything (no parked page,
//! every number below the limit) is not passed on; any other one is, exactly as before. Pages
//! enter a cache only through `xFetch` and `xRekey`, so the bound holds; a parked page that
//! leaves by another way (discarded, recycled) only keeps truncations going through.
//!
//! [`install`] must run before anything else in the process uses SQLite (the page cache is
//! chosen once, when SQLite initializes) and while no other thread can: `sqlite3_config` is not
//! thread-safe. A program calls it first thing in `main`.

use std::ffi::{c_int, c_uint, c_void};
use std::ptr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::ffi;

/// SQLite's pending byte (`sqlite3PendingByte`): changed only by a test-only control.
const PENDING_BYTE: u32 = 0x4000_0000;

/// Counters for tests and benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Caches created through the wrapper.
    pub caches: u64,
    /// Truncations passed on to the default cache.
    pub truncations: u64,
    /// Truncations that could drop nothing, not passed on.
    pub truncations_skipped: u64,
    /// Pages parked under the pending number (the swaps of `balance_nonroot`).
    pub parks: u64,
}

static CACHES: AtomicU64 = AtomicU64::new(0);
static TRUNCATIONS: AtomicU64 = AtomicU64::new(0);
static SKIPPED: AtomicU64 = AtomicU64::new(0);
static PARKS: AtomicU64 = AtomicU64::new(0);

/// What the wrapper has done in this process so far.
pub fn stats() -> Stats {
    Stats {
        caches: CACHES.load(Ordering::Relaxed),
        truncations: TRUNCATIONS.load(Ordering::Relaxed),
        truncations_skipped: SKIPPED.load(Ordering::Relaxed),
        parks: PARKS.load(Ordering::Relaxed),
    }
}

/// The default page cache's methods, which every call goes on to.
struct Default(ffi::sqlite3_pcache_methods2);

// SAFETY: a table of function pointers that SQLite itself calls from any thread; `pArg` is
// the default cache's (unused by `pcache1`) and only ever handed back to it.
unsafe impl Send for Default {}
unsafe impl Sync for Default {}

static DEFAULT: OnceLock<Default> = OnceLock::new();
static INSTALLED: OnceLock<Result<(), c_int>> = OnceLock::new();

fn default() -> &'static ffi::sqlite3_pcache_methods2 {
    match DEFAULT.get() {
        Some(d) => &d.0,
        None => unreachable!("the methods are only reachable once installed"),
    }
}

/// Makes the wrapper SQLite's page cache (once per process). `Err(SQLITE_MISUSE)` when SQLite
/// was initialized already: the default cache then stays, which changes nothing but the speed.
///
/// Call it while no other thread can use SQLite (first thing in `main`): `sqlite3_config` is not
/// thread-safe, and a thread starting SQLite at the same moment could read a half-written table.
/// It is not an `unsafe fn` only because its caller, hookbin, forbids `unsafe` code; this is the
/// contract it keeps.
pub fn install() -> Result<(), c_int> {
    *INSTALLED.get_or_init(|| {
        // SAFETY: sqlite3_config is called with the argument types each option documents (a
        // pointer to a methods table); it refuses (SQLITE_MISUSE) once SQLite is initialized,
        // and before that, by this function's contract, no other thread uses SQLite. SQLite
        // copies the table it is given.
        unsafe {
            let mut methods: ffi::sqlite3_pcache_methods2 = std::mem::zeroed();
            let rc = ffi::sqlite3_config(
                ffi::SQLITE_CONFIG_GETPCACHE2,
                &mut methods as *mut ffi::sqlite3_pcache_methods2,
            );
            if rc != ffi::SQLITE_OK {
                return Err(rc);
            }
            DEFAULT.get_or_init(|| Default(methods));
            let ours = ffi::sqlite3_pcache_methods2 {
                iVersion: 1,
                pArg: ptr::null_mut(),
                xInit: Some(init),
                xShutdown: Some(shutdown),
                xCreate: Some(create),
                xCachesize: Some(cachesize),
                xPagecount: Some(pagecount),
                xFetch: Some(fetch),
                xUnpin: Some(unpin),
                xRekey: Some(rekey),
                xTruncate: Some(truncate),
                xDestroy: Some(destroy),
                xShrink: Some(shrink),
            };
            let rc = ffi::sqlite3_config(
                ffi::SQLITE_CONFIG_PCACHE2,
                &ours as *const ffi::sqlite3_pcache_methods2,
            );
            if rc != ffi::SQLITE_OK {
                return Err(rc);
            }
            Ok(())
        }
    })
}

/// One cache: the default cache's, and what may be in it.
struct Cache {
    inner: *mut ffi::sqlite3_pcache,
    /// The pending byte's page number at this cache's page size: the number swaps park under.
    pending: c_uint,
    /// No page other than parked ones has a number above this.
    max_key: c_uint,
    /// Pages moved to `pending` and not moved away since.
    parked: u32,
    /// A page was fetched (created) under `pending` itself: every truncation goes through until
    /// one drops it.
    pending_fetched: bool,
}

/// SQLite hands each method the pointer `create` returned.
///
/// # Safety
/// `p` must be a pointer returned by [`create`] and not yet destroyed. SQLite calls one cache's
/// methods from one connection at a time (the connection's own mutex or its single thread).
unsafe fn cache<'a>(p: *mut ffi::sqlite3_pcache) -> &'a mut Cache {
    // SAFETY: see the function's contract.
    unsafe { &mut *(p as *mut Cache) }
}

unsafe extern "C" fn init(_: *mut c_void) -> c_int {
    let d = default();
    // SAFETY: the default cache's own method with its own argument.
    unsafe { d.xInit.map_or(ffi::SQLITE_OK, |f| f(d.pArg)) }
}

unsafe extern "C" fn shutdown(_: *mut c_void) {
    let d = default();
    // SAFETY: as in `init`.
    unsafe { d.xShutdown.map_or((), |f| f(d.pArg)) }
}

unsafe extern "C" fn create(
    page_size: c_int,
    extra: c_int,
    purgeable: c_int,
) -> *mut ffi::sqlite3_pcache {
    // SAFETY: SQLite's arguments, handed on unchanged.
    let inner =
        unsafe { (default().xCreate.expect("pcache1 has xCreate"))(page_size, extra, purgeable) };
    if inner.is_null() {
        return ptr::null_mut();
    }
    CACHES.fetch_add(1, Ordering::Relaxed);
    let pending = match u32::try_from(page_size) {
        Ok(size) if size > 0 => PENDING_BYTE / size + 1,
        // Not a size SQLite uses; a number no key reaches keeps the wrapper out of the way.
        _ => 0,
    };
    let cache = Box::new(Cache {
        inner,
        pending,
        max_key: 0,
        parked: 0,
        pending_fetched: pending == 0,
    });
    Box::into_raw(cache) as *mut ffi::sqlite3_pcache
}

unsafe extern "C" fn cachesize(p: *mut ffi::sqlite3_pcache, pages: c_int) {
    // SAFETY: `p` is ours (SQLite's contract); the call goes to the default cache's own.
    unsafe {
        let c = cache(p);
        if let Some(f) = default().xCachesize {
            f(c.inner, pages)
        }
    }
}

unsafe extern "C" fn pagecount(p: *mut ffi::sqlite3_pcache) -> c_int {
    // SAFETY: as in `cachesize`.
    unsafe {
        let c = cache(p);
        default().xPagecount.map_or(0, |f| f(c.inner))
    }
}

unsafe extern "C" fn fetch(
    p: *mut ffi::sqlite3_pcache,
    key: c_uint,
    create: c_int,
) -> *mut ffi::sqlite3_pcache_page {
    // SAFETY: as in `cachesize`.
    unsafe {
        let c = cache(p);
        if key == c.pending {
            // A lookup there finds at most a parked page; a page made there is unexpected.
            if create != 0 {
                c.pending_fetched = true;
            }
        } else if key > c.max_key {
            c.max_key = key;
        }
        (default().xFetch.expect("pcache1 has xFetch"))(c.inner, key, create)
    }
}

unsafe extern "C" fn unpin(
    p: *mut ffi::sqlite3_pcache,
    page: *mut ffi::sqlite3_pcache_page,
    discard: c_int,
) {
    // SAFETY: as in `cachesize`.
    unsafe {
        let c = cache(p);
        (default().xUnpin.expect("pcache1 has xUnpin"))(c.inner, page, discard)
    }
}

unsafe extern "C" fn rekey(
    p: *mut ffi::sqlite3_pcache,
    page: *mut ffi::sqlite3_pcache_page,
    old: c_uint,
    new: c_uint,
) {
    // SAFETY: as in `cachesize`.
    unsafe {
        let c = cache(p);
        if old == c.pending {
            c.parked = c.parked.saturating_sub(1);
        }
        if new == c.pending {
            PARKS.fetch_add(1, Ordering::Relaxed);
            c.parked += 1;
        } else if new > c.max_key {
            c.max_key = new;
        }
        (default().xRekey.expect("pcache1 has xRekey"))(c.inner, page, old, new)
    }
}

unsafe extern "C" fn truncate(p: *mut ffi::sqlite3_pcache, limit: c_uint) {
    // SAFETY: as in `cachesize`.
    unsafe {
        let c = cache(p);
        if c.parked == 0 && !c.pending_fetched && c.max_key < limit {
            // Every page in the cache is numbered below the limit: nothing to drop.
            SKIPPED.fetch_add(1, Ordering::Relaxed);
            return;
        }
        TRUNCATIONS.fetch_add(1, Ordering::Relaxed);
        (default().xTruncate.expect("pcache1 has xTruncate"))(c.inner, limit);
        // Every page numbered `limit` or above is gone, parked ones included when the pending
        // number is among them.
        c.max_key = c.max_key.min(limit.saturating_sub(1));
        if limit <= c.pending {
            c.parked = 0;
            c.pending_fetched = false;
        }
    }
}

unsafe extern "C" fn destroy(p: *mut ffi::sqlite3_pcache) {
    // SAFETY: `p` is ours and SQLite never uses it again: the box is taken back and dropped
    // after the default cache is destroyed.
    unsafe {
        let c = Box::from_raw(p as *mut Cache);
        if let Some(f) = default().xDestroy {
            f(c.inner)
        }
    }
}

unsafe extern "C" fn shrink(p: *mut ffi::sqlite3_pcache) {
    // SAFETY: as in `cachesize`.
    unsafe {
        let c = cache(p);
        if let Some(f) = default().xShrink {
            f(c.inner)
        }
    }
}
