//! An SQLite VFS that hands a WAL commit's frames to the kernel in one write.
//!
//! SQLite writes each WAL frame as two `pwrite` calls, its 24-byte header and then its page, so
//! a commit of `n` pages costs `2n` system calls, and the kernel takes each call through the
//! whole page-cache write path (find and lock the page, copy, mark it dirty). Measured on a
//! 2-core KVM machine: 5.0-6.4 us a frame written as two calls, 2.8-3.7 us as one (see
//! hookbin's bench/RESULTS.md). This VFS wraps the platform's default one and, for WAL files
//! only, keeps contiguous writes in a buffer that goes to the kernel as one `pwrite` before
//! anything can depend on it.
//!
//! # When the buffer is written
//!
//! SQLite makes a commit visible by writing the wal-index header in shared memory: the second
//! copy first, then `xShmBarrier` on the main database file, then the first copy, and a reader
//! only trusts the header when both copies agree. So the frames must be in the file before that
//! barrier returns, and that is where this VFS writes them (the WAL file is found from the main
//! file with `sqlite3_database_file_object`). It also writes them before every other call on the
//! WAL file (read, sync, truncate, size, close...) and before every `xShmLock` and `xShmUnmap`
//! on the main file, so nothing is ever left buffered once the connection's write lock is let go:
//! a rolled-back transaction's frames reach the file then, exactly as without the buffer. Other
//! connections and processes therefore never see a difference, and a process killed at any point
//! loses only frames that no reader could have used yet (a commit not yet published is one that
//! SQLite's recovery drops anyway, by checksum).
//!
//! # Why a late write cannot fail quietly
//!
//! `xShmBarrier` cannot return an error. So only overwrites of bytes the file already has are
//! buffered: a write that would make the file longer is passed straight through (after the
//! buffer), so "disk full" is reported to SQLite where it happens. An overwrite inside an
//! existing file does not need new blocks; if its late write still fails (an I/O error), the
//! process aborts before the commit is published, with a message: SQLite's recovery at the next
//! start then drops that commit, which nobody was told had succeeded. Any other failed write is
//! returned to SQLite as the I/O error it is.
//!
//! # A checkpoint's copy, in runs
//!
//! A checkpoint copies each page from the WAL into the database file with a `pwrite` of its own,
//! in page order, so the pages of a growing database (all new, one after the other) or of a
//! table rewritten in place go to the kernel one system call each. Measured on a 2-core KVM
//! machine (ext4): 4.6-5.0 us of kernel time a page written as 4 KiB calls to a growing file,
//! 1.4-1.6 us as 64 KiB ones; 3.0-3.3 against 0.9-1.3 us over bytes the file has (hookbin's
//! bench/RESULTS.md). So between SQLite's `SQLITE_FCNTL_CKPT_START` and `SQLITE_FCNTL_CKPT_DONE`
//! (which SQLite sends around the copy, before it syncs the database or tells any reader that
//! the pages are there) this VFS keeps adjacent page writes of the main file in a buffer of up
//! to 64 KiB and hands each run to the kernel as one write, at the latest at
//! `CKPT_DONE`. As for WAL frames, only overwrites are buffered: when SQLite announces that the
//! copy will grow the file (`SQLITE_FCNTL_SIZE_HINT`), the VFS first grows it to that size, with
//! `fallocate` where the file system has it (on Linux; else with zeros, which cost the copy a
//! second write of every new byte: 1.9x the write() bytes, bench/RESULTS.md). A failure there
//! makes the copy's writes past the end go straight through, so that a full disk is reported
//! where it happens, and a late write that still fails aborts the process before the checkpoint
//! is published: the WAL keeps every page it had, and the next start copies them again.
//!
//! Only the connections that write or checkpoint need this VFS: open them with [`register`]'s
//! name. Readers use the default VFS and see the same files.
//!
//! # The database's size, for free
//!
//! Every commit's last frame header carries the database's size in pages, and every change to
//! the freelist rewrites page 1, whose header holds the free page count. The VFS sees those bytes
//! go by, so [`committed_size`] tells the writer what its last commit left (pages in all, pages
//! free) without `PRAGMA page_count` and `PRAGMA freelist_count`, which SQLite prepares again on
//! every run. See [`committed_size`] for what it assumes.
//!
//! [`pcache`] is the crate's other part: a wrapper of SQLite's default page cache that skips the
//! truncations that cannot drop a page (a full scan of the cache at most commits of a growing
//! database under 1 GiB). It is process-wide: [`pcache::install`] before SQLite starts.

pub mod pcache;

use std::ffi::{CStr, c_int, c_void};
use std::ptr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rusqlite::ffi;

/// The name to open connections with (`Connection::open_with_flags_and_vfs`).
pub const NAME: &str = "walbuf";
const NAME_C: &CStr = c"walbuf";

/// A buffer this large is written at once, without waiting for the commit: a commit of many
/// pages (a large body, a large delete) holds at most this much memory.
const FLUSH_AT: usize = 1 << 20;

/// The most one call hands the default VFS: the unix VFS takes at most 128 KiB - 1 bytes per
/// `xWrite` (`seekAndWriteFd` keeps the length's low 17 bits) and reports a longer write as a
/// short one, "disk full".
const MAX_WRITE: usize = 64 * 1024;

/// Counters for tests and benchmarks: how many WAL writes SQLite asked for, and how many
/// `pwrite` calls reached the default VFS for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// `xWrite` calls SQLite made on WAL files opened through this VFS.
    pub wal_writes: u64,
    /// Writes handed on to the default VFS for them (buffers and pass-through writes).
    pub os_writes: u64,
    /// Bytes of those `xWrite` calls: frames (24-byte header and page) and WAL headers.
    pub wal_bytes: u64,
    /// `xWrite` calls of checkpoints' copies on main files opened through this VFS.
    pub copy_writes: u64,
    /// Writes handed on to the default VFS for them (runs, pass-through writes and, where the
    /// file system cannot `fallocate`, the zeros that grow the file first).
    pub copy_os_writes: u64,
    /// `fallocate` calls that grew a main file before a checkpoint's copy.
    pub copy_allocations: u64,
}

static WAL_WRITES: AtomicU64 = AtomicU64::new(0);
static OS_WRITES: AtomicU64 = AtomicU64::new(0);
static WAL_BYTES: AtomicU64 = AtomicU64::new(0);
static COPY_WRITES: AtomicU64 = AtomicU64::new(0);
static COPY_OS_WRITES: AtomicU64 = AtomicU64::new(0);
static COPY_ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
/// Set by [`grow_with_zeros`]: tests of the path taken where `fallocate` is missing.
static ZEROS_ONLY: AtomicBool = AtomicBool::new(false);

/// What this process has written through the VFS so far.
pub fn stats() -> Stats {
    Stats {
        wal_writes: WAL_WRITES.load(Ordering::Relaxed),
        os_writes: OS_WRITES.load(Ordering::Relaxed),
        wal_bytes: WAL_BYTES.load(Ordering::Relaxed),
        copy_writes: COPY_WRITES.load(Ordering::Relaxed),
        copy_os_writes: COPY_OS_WRITES.load(Ordering::Relaxed),
        copy_allocations: COPY_ALLOCATIONS.load(Ordering::Relaxed),
    }
}

/// For tests: `true` makes every checkpoint's copy grow the file with zeros, as on a file system
/// without `fallocate`; `false` (the default) uses `fallocate` where it works.
#[doc(hidden)]
pub fn grow_with_zeros(on: bool) {
    ZEROS_ONLY.store(on, Ordering::Relaxed);
}

/// Starts writing `len` bytes of `file` from `offset` to its disk (0: to the end of the file)
/// and returns without waiting for them to arrive: `sync_file_range(SYNC_FILE_RANGE_WRITE)` on
/// Linux, nothing elsewhere. It promises no durability (no flush of the disk's cache, no
/// metadata); it makes a later `fsync` of the file find less to write, so that it is short.
pub fn start_writeback(file: &std::fs::File, offset: u64, len: u64) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
            return Err(std::io::ErrorKind::InvalidInput.into());
        };
        // SAFETY: the descriptor is open for the whole call (borrowed from `file`) and no
        // memory is passed.
        let done = unsafe {
            libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE)
        };
        if done != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, offset, len);
    Ok(())
}

/// The registered VFS and the default one it wraps, both alive for the rest of the process.
struct Registered {
    real: *mut ffi::sqlite3_vfs,
}

// SAFETY: the pointer is to a VFS object that SQLite keeps for the life of the process and
// whose methods SQLite itself calls from any thread.
unsafe impl Send for Registered {}
unsafe impl Sync for Registered {}

static REGISTERED: OnceLock<Result<Registered, c_int>> = OnceLock::new();

/// Registers the VFS (once per process, not as the default) and returns its name, or SQLite's
/// error code. Only on Unix, whose default VFS this was written and tested against.
pub fn register() -> Result<&'static str, c_int> {
    let done = REGISTERED.get_or_init(|| {
        if !cfg!(unix) {
            return Err(ffi::SQLITE_NOTFOUND);
        }
        // SAFETY: sqlite3_vfs_find and sqlite3_vfs_register are thread-safe once SQLite is
        // initialized, which they do themselves. The VFS object is leaked: SQLite keeps the
        // pointer for the life of the process.
        unsafe {
            let rc = ffi::sqlite3_initialize();
            if rc != ffi::SQLITE_OK {
                return Err(rc);
            }
            let real = ffi::sqlite3_vfs_find(ptr::null());
            if real.is_null() {
                return Err(ffi::SQLITE_NOTFOUND);
            }
            // The unix VFS's other methods ignore their VFS argument, so they serve as they are.
            let mut vfs = *real;
            vfs.szOsFile = c_int::try_from(HEADER).expect("small") + (*real).szOsFile;
            vfs.pNext = ptr::null_mut();
            vfs.zName = NAME_C.as_ptr();
            vfs.xOpen = Some(open);
            let vfs = Box::leak(Box::new(vfs));
            let rc = ffi::sqlite3_vfs_register(vfs, 0);
            if rc != ffi::SQLITE_OK {
                return Err(rc);
            }
            Ok(Registered { real })
        }
    });
    done.as_ref().map(|_| NAME).map_err(|rc| *rc)
}

fn real_vfs() -> *mut ffi::sqlite3_vfs {
    match REGISTERED.get() {
        Some(Ok(r)) => r.real,
        _ => unreachable!("xOpen is only reachable once registered"),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Main,
    Wal,
    Other,
}

/// One open file: SQLite's `sqlite3_file` first (so SQLite's pointer is a pointer to this), then
/// ours, then the default VFS's own file object, in the one allocation of `szOsFile` bytes that
/// SQLite made for it.
#[repr(C)]
struct File {
    base: ffi::sqlite3_file,
    real: *mut ffi::sqlite3_file,
    role: Role,
    /// Main file: its connection's WAL file while that is open through this VFS.
    wal: *mut File,
    /// WAL file: the main file it belongs to, if that was opened through this VFS.
    main: *mut File,
    /// WAL file, or main file during a checkpoint's copy: bytes written but not yet handed on,
    /// to be written at `start`.
    buf: Vec<u8>,
    start: i64,
    /// WAL file, or main file during a checkpoint's copy: its size as this connection last knew
    /// it, -1 when it must ask again; writes ending past it go straight through.
    size: i64,
    /// Main file: between `SQLITE_FCNTL_CKPT_START` and `SQLITE_FCNTL_CKPT_DONE`.
    copying: bool,
    /// WAL file: the frames SQLite is writing, followed for [`committed_size`].
    frames: Frames,
    /// Main file: the database's size as of the last commit (or the last [`note_size`]).
    committed: Committed,
    /// Main file: the default VFS's descriptor of it, for [`reserve`]'s `fallocate`; -1 when
    /// not known (see [`unix_fd`]).
    fd: c_int,
}

/// Where the frame-following of a WAL file is.
#[derive(Default)]
struct Frames {
    /// The last frame header written: its offset, page number and, for a commit's last frame,
    /// the database's size in pages after the commit (else 0). Its page comes next.
    header: Option<(i64, u32, u32)>,
    /// Page 1 as last written to this WAL: its frame's offset and the free page count in it. Not
    /// yet part of [`File::committed`] until a commit frame at or after that offset.
    page1: Option<(i64, u32)>,
}

#[derive(Default, Clone, Copy)]
struct Committed {
    /// Pages, and bytes a page, from the last commit frame.
    pages: Option<(u32, u32)>,
    /// From the last page 1 committed.
    free_pages: Option<u32>,
}

/// Bytes of a WAL frame's header; SQLite writes it with one `xWrite`, then the page with another.
const FRAME_HEADER: usize = 24;
/// Where page 1 keeps the count of free pages (big-endian u32): the database header's field.
const FREE_COUNT_AT: usize = 36;

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// The size of a database, as of a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    /// Pages in the database file's image (`PRAGMA page_count`).
    pub pages: u32,
    /// Of which on the freelist (`PRAGMA freelist_count`), to be reused by new rows.
    pub free_pages: u32,
    /// Bytes a page (`PRAGMA page_size`).
    pub page_size: u32,
}

impl Size {
    /// Bytes of the pages in use: all but the free ones.
    pub fn bytes_in_use(&self) -> u64 {
        u64::from(self.pages.saturating_sub(self.free_pages)) * u64::from(self.page_size)
    }
}

/// The main database file of `conn`, if it was opened through this VFS.
fn main_file(conn: &rusqlite::Connection) -> Option<*mut File> {
    let mut file: *mut ffi::sqlite3_file = ptr::null_mut();
    // SAFETY: SQLITE_FCNTL_FILE_POINTER is answered by SQLite itself (no VFS call): it stores the
    // main file's object, which lives as long as the connection, in `file`.
    let rc = unsafe {
        ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            ffi::SQLITE_FCNTL_FILE_POINTER,
            (&raw mut file).cast::<c_void>(),
        )
    };
    (rc == ffi::SQLITE_OK && is_ours(file)).then(|| file.cast::<File>())
}

/// The size `conn`'s last commit left, read from the frames it wrote through this VFS: the
/// commit frame's page count and the free page count of the last page 1 committed (or given to
/// [`note_size`]). `None` while either is unknown, or when the database has no WAL open through
/// this VFS (ask SQLite, then [`note_size`]).
///
/// It assumes what hookbin's writer is: the only connection that writes to the database, and
/// the one asking. Another writer's commits would not be seen.
pub fn committed_size(conn: &rusqlite::Connection) -> Option<Size> {
    let f = main_file(conn)?;
    // SAFETY: the file object lives as long as `conn`, and only `conn`'s calls, made on this
    // thread (the caller holds `conn`), change it.
    unsafe {
        if (*f).wal.is_null() {
            return None;
        }
        let c = (*f).committed;
        let (pages, page_size) = c.pages?;
        Some(Size {
            pages,
            free_pages: c.free_pages?,
            page_size,
        })
    }
}

/// Tells the VFS `conn`'s database size, read from SQLite after its last commit: the start
/// [`committed_size`] goes on from (page 1 is only written by commits that change its header).
/// Does nothing for a connection not opened through this VFS.
pub fn note_size(conn: &rusqlite::Connection, size: Size) {
    if let Some(f) = main_file(conn) {
        // SAFETY: as in `committed_size`.
        unsafe {
            (*f).committed = Committed {
                pages: Some((size.pages, size.page_size)),
                free_pages: Some(size.free_pages),
            };
        }
    }
}

impl Frames {
    /// Follows one `xWrite` of SQLite's on the WAL; a commit's last frame updates `committed`.
    ///
    /// SQLite writes page 1 only within a commit's frames (the b-tree holds it for the whole
    /// transaction, so it is never spilled early), so its free count belongs to the commit
    /// frame that follows. The two checks below are for a commit whose writes failed halfway:
    /// its page 1 must not count towards the next commit, which writes the WAL again from
    /// where the failed one began.
    fn follow(&mut self, bytes: &[u8], off: i64, committed: &mut Committed) {
        if bytes.len() == FRAME_HEADER {
            let pgno = be32(&bytes[0..4]);
            // Another page where page 1 was: that page 1 was never committed.
            if self.page1.is_some_and(|(at, _)| at == off) && pgno != 1 {
                self.page1 = None;
            }
            self.header = Some((off, pgno, be32(&bytes[4..8])));
            return;
        }
        // The WAL's own 32-byte header, or a page: only the page right after its frame header
        // counts.
        let Some((at, pgno, commit)) = self.header.take() else {
            return;
        };
        if off != at + FRAME_HEADER as i64 {
            return;
        }
        if pgno == 1 && bytes.len() >= FREE_COUNT_AT + 4 {
            self.page1 = Some((at, be32(&bytes[FREE_COUNT_AT..])));
        }
        if commit != 0 {
            committed.pages = Some((commit, u32::try_from(bytes.len()).unwrap_or(0)));
            // Only a page 1 of this commit: written before its last frame (the WAL is written
            // in order, so older frames past it belong to an abandoned transaction).
            if let Some((p1, free)) = self.page1
                && p1 <= at
            {
                committed.free_pages = Some(free);
                self.page1 = None;
            }
        }
    }
}

/// Where the default VFS's file object starts, past ours (8-byte aligned, as SQLite aligns).
const HEADER: usize = std::mem::size_of::<File>().next_multiple_of(8);

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: Some(shm_map),
    xShmLock: Some(shm_lock),
    xShmBarrier: Some(shm_barrier),
    xShmUnmap: Some(shm_unmap),
    xFetch: Some(fetch),
    xUnfetch: Some(unfetch),
};

fn is_ours(file: *mut ffi::sqlite3_file) -> bool {
    // SAFETY: callers pass a file object SQLite opened, whose pMethods is readable.
    !file.is_null() && unsafe { ptr::eq((*file).pMethods, &METHODS) }
}

unsafe extern "C" fn open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let role = if flags & ffi::SQLITE_OPEN_MAIN_DB != 0 {
        Role::Main
    } else if flags & ffi::SQLITE_OPEN_WAL != 0 {
        Role::Wal
    } else {
        Role::Other
    };
    let me = file.cast::<File>();
    // SAFETY: SQLite gives us `szOsFile` bytes at `file`, aligned for any object: room for a
    // `File` and then the default VFS's own file object at HEADER.
    unsafe {
        let real = file.cast::<u8>().add(HEADER).cast::<ffi::sqlite3_file>();
        ptr::write(
            me,
            File {
                base: ffi::sqlite3_file {
                    pMethods: ptr::null(),
                },
                real,
                role,
                wal: ptr::null_mut(),
                main: ptr::null_mut(),
                buf: Vec::new(),
                start: 0,
                size: -1,
                copying: false,
                frames: Frames::default(),
                committed: Committed::default(),
                fd: -1,
            },
        );
        let real_vfs = real_vfs();
        let rc =
            ((*real_vfs).xOpen.expect("a VFS opens files"))(real_vfs, name, real, flags, out_flags);
        if (*real).pMethods.is_null() {
            // Nothing to close: SQLite will not call xClose on a file without methods.
            ptr::drop_in_place(me);
            return rc;
        }
        (*me).base.pMethods = &METHODS;
        if rc == ffi::SQLITE_OK && role == Role::Main && !name.is_null() {
            (*me).fd = unix_fd(real, (*real_vfs).szOsFile, name);
        }
        if rc == ffi::SQLITE_OK && role == Role::Wal && !name.is_null() {
            let main = ffi::sqlite3_database_file_object(name);
            if is_ours(main) {
                let main = main.cast::<File>();
                (*main).wal = me;
                (*me).main = main;
            }
        }
        rc
    }
}

/// The descriptor the unix VFS opened `name` with, or -1. SQLite has no call that gives it, so it
/// is read where `unixFile` keeps it (after three pointers: methods, VFS, inode; the layout
/// since SQLite 3.7) and believed only if that descriptor is open on the file `name` names (same
/// device and inode). Only on Linux, where [`reserve`] has a use for it.
///
/// SAFETY: `real` is the default VFS's open file object, `size` bytes long; `name` is its path.
unsafe fn unix_fd(
    real: *mut ffi::sqlite3_file,
    size: c_int,
    name: *const std::ffi::c_char,
) -> c_int {
    #[cfg(target_os = "linux")]
    unsafe {
        let at = 3 * std::mem::size_of::<*const c_void>();
        if usize::try_from(size).is_ok_and(|size| size >= at + std::mem::size_of::<c_int>()) {
            let fd = ptr::read_unaligned(real.cast::<u8>().add(at).cast::<c_int>());
            let mut open: libc::stat = std::mem::zeroed();
            let mut named: libc::stat = std::mem::zeroed();
            if fd >= 0
                && libc::fstat(fd, &mut open) == 0
                && libc::stat(name, &mut named) == 0
                && (open.st_dev, open.st_ino) == (named.st_dev, named.st_ino)
            {
                return fd;
            }
        }
    }
    let _ = (real, size, name);
    -1
}

/// The default VFS's method `$m` of `$f`, called with the default VFS's file object.
macro_rules! real {
    ($f:expr, $m:ident $(, $arg:expr)*) => {{
        let real = (*$f).real;
        match (*(*real).pMethods).$m {
            Some(m) => m(real $(, $arg)*),
            None => ffi::SQLITE_IOERR,
        }
    }};
}

/// The counter of the writes `f` hands on: a checkpoint's copy's for a main file, else the WAL's.
///
/// SAFETY: `f` is one of our open files.
unsafe fn os_writes_of(f: *mut File) -> &'static AtomicU64 {
    match unsafe { (*f).role } {
        Role::Main => &COPY_OS_WRITES,
        _ => &OS_WRITES,
    }
}

/// Hands the buffered bytes to the default VFS. A no-op for files that buffer nothing.
///
/// SAFETY: `f` is one of our open files.
unsafe fn flush(f: *mut File) -> c_int {
    unsafe {
        if (*f).buf.is_empty() {
            return ffi::SQLITE_OK;
        }
        let mut rc = ffi::SQLITE_OK;
        let mut at = (*f).start;
        let counter = os_writes_of(f);
        for chunk in (*f).buf.chunks(MAX_WRITE) {
            counter.fetch_add(1, Ordering::Relaxed);
            let len = c_int::try_from(chunk.len()).expect("at most MAX_WRITE");
            rc = real!(f, xWrite, chunk.as_ptr().cast::<c_void>(), len, at);
            if rc != ffi::SQLITE_OK {
                break;
            }
            at += i64::from(len);
        }
        (*f).buf.clear();
        rc
    }
}

/// Flushes the WAL file that belongs to main file `f`, if it has one open through this VFS, and
/// forgets its size: the calls that come here are where the write lock is taken or let go.
///
/// SAFETY: `f` is one of our open files.
unsafe fn flush_wal_of(f: *mut File) -> c_int {
    unsafe {
        let wal = (*f).wal;
        if wal.is_null() {
            return ffi::SQLITE_OK;
        }
        (*wal).size = -1;
        flush(wal)
    }
}

/// Flushes `f` first, then runs `call`: every method that reads or changes the file, or lets
/// another party see it, comes after the bytes SQLite believes it already wrote.
macro_rules! flushed {
    ($f:expr, $call:expr) => {{
        let f = $f.cast::<File>();
        let rc = flush(f);
        if rc != ffi::SQLITE_OK { rc } else { $call(f) }
    }};
}

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    let f = file.cast::<File>();
    // SAFETY: SQLite closes each file it opened once; after this it never uses `file` again.
    unsafe {
        let flushed = flush(f);
        if !(*f).main.is_null() {
            (*(*f).main).wal = ptr::null_mut();
        }
        if !(*f).wal.is_null() {
            (*(*f).wal).main = ptr::null_mut();
        }
        let rc = real!(f, xClose);
        ptr::drop_in_place(f);
        if flushed != ffi::SQLITE_OK {
            flushed
        } else {
            rc
        }
    }
}

unsafe extern "C" fn read(
    file: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amt: c_int,
    off: ffi::sqlite3_int64,
) -> c_int {
    unsafe { flushed!(file, |f: *mut File| real!(f, xRead, buf, amt, off)) }
}

unsafe extern "C" fn write(
    file: *mut ffi::sqlite3_file,
    data: *const c_void,
    amt: c_int,
    off: ffi::sqlite3_int64,
) -> c_int {
    let f = file.cast::<File>();
    // SAFETY: `data` holds `amt` bytes (SQLite's contract for xWrite); `f` is ours.
    unsafe {
        if (*f).copying {
            return copy_write(f, data, amt, off);
        }
        if (*f).role != Role::Wal || (*f).main.is_null() {
            // Only a WAL whose main file is ours can be flushed at the commit point.
            return real!(f, xWrite, data, amt, off);
        }
        WAL_WRITES.fetch_add(1, Ordering::Relaxed);
        WAL_BYTES.fetch_add(amt as u64, Ordering::Relaxed);
        let bytes = std::slice::from_raw_parts(data.cast::<u8>(), amt as usize);
        (*f).frames.follow(bytes, off, &mut (*(*f).main).committed);
        let end = off + i64::from(amt);
        // Learnt once per write transaction: another connection may have cut the file since
        // this one last held the write lock, but not while it does.
        let rc = known_size(f);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        if end > (*f).size {
            // Growing the file: written now, so that a full disk is reported to SQLite.
            return write_through(f, data, amt, off);
        }
        let buf = &mut (*f).buf;
        let buf_end = (*f).start + buf.len() as i64;
        if buf.is_empty() || off < (*f).start || off > buf_end {
            // Not touching the run: the run goes out first, and this write starts a new one.
            let rc = flush(f);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            (*f).start = off;
        }
        // Appends to the run, or overwrites part of it (SQLite rewrites a frame in place when
        // a transaction changes the same page again).
        let buf = &mut (*f).buf;
        let at = (off - (*f).start) as usize;
        let overlap = (buf.len() - at).min(bytes.len());
        buf[at..at + overlap].copy_from_slice(&bytes[..overlap]);
        buf.extend_from_slice(&bytes[overlap..]);
        if buf.len() >= FLUSH_AT {
            return flush(f);
        }
        ffi::SQLITE_OK
    }
}

/// A write that grows `f` (a WAL, or a main file during a checkpoint's copy): after the buffer,
/// straight to the default VFS, so that a full disk is reported to SQLite by this very call.
///
/// SAFETY: `f` is ours and its `size` is known; `data` holds `amt` bytes.
unsafe fn write_through(f: *mut File, data: *const c_void, amt: c_int, off: i64) -> c_int {
    unsafe {
        let rc = flush(f);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        os_writes_of(f).fetch_add(1, Ordering::Relaxed);
        let rc = real!(f, xWrite, data, amt, off);
        if rc == ffi::SQLITE_OK {
            (*f).size = off + i64::from(amt);
        }
        rc
    }
}

/// Zeros for [`reserve`] to grow a main file with.
static ZEROS: [u8; MAX_WRITE] = [0; MAX_WRITE];

/// Learns `f`'s size from the default VFS if it is not known (`size` is -1).
///
/// SAFETY: `f` is one of our open files.
unsafe fn known_size(f: *mut File) -> c_int {
    unsafe {
        if (*f).size >= 0 {
            return ffi::SQLITE_OK;
        }
        let mut size = 0;
        let rc = real!(f, xFileSize, &mut size);
        if rc == ffi::SQLITE_OK {
            (*f).size = size;
        }
        rc
    }
}

/// A page of a checkpoint's copy (main file `f`, between `CKPT_START` and `CKPT_DONE`): added to
/// the run it continues, or the run goes out and this write starts the next. Never buffered past
/// the file's end (see [`reserve`]).
///
/// SAFETY: `f` is ours and copying; `data` holds `amt` bytes.
unsafe fn copy_write(f: *mut File, data: *const c_void, amt: c_int, off: i64) -> c_int {
    unsafe {
        COPY_WRITES.fetch_add(1, Ordering::Relaxed);
        let rc = known_size(f);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let end = off + i64::from(amt);
        if end > (*f).size {
            // Past the bytes the file has: written now, so that a full disk is reported here.
            return write_through(f, data, amt, off);
        }
        let bytes = std::slice::from_raw_parts(data.cast::<u8>(), amt as usize);
        let buf_end = (*f).start + (*f).buf.len() as i64;
        if (*f).buf.is_empty() || off != buf_end || (*f).buf.len() + bytes.len() > MAX_WRITE {
            let rc = flush(f);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            (*f).start = off;
        }
        (*f).buf.extend_from_slice(bytes);
        ffi::SQLITE_OK
    }
}

/// `SQLITE_FCNTL_SIZE_HINT` during a checkpoint's copy: the file will be `want` bytes long once
/// the copy is done. Grows it to that now, so that the copy's pages are all overwrites, which can
/// wait in the buffer: with `fallocate` where the file system has it (the blocks are reserved and
/// read as zeros, and nothing is written or copied for them), else with zeros in a few large
/// writes. Either way the disk's room is taken now, so the copy's late writes do not find it
/// full. Every page up to `want` is in the WAL, so each new page is either written by this copy
/// or read from the WAL until a later one writes it, as over the hole that SQLite itself would
/// leave. SQLite ignores what a hint returns: on failure the file stays as long as it got, and
/// the copy's writes past that go straight through ([`copy_write`]), where a full disk is
/// reported.
///
/// SAFETY: `f` is ours.
unsafe fn reserve(f: *mut File, want: i64) -> c_int {
    unsafe {
        let rc = flush(f);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let rc = known_size(f);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let size = (*f).size;
        if size >= want {
            return ffi::SQLITE_OK;
        }
        let rc = match allocate((*f).fd, size, want - size) {
            Some(rc) => rc,
            None => write_zeros(f, size, want),
        };
        // On failure the file may have grown by part of it: ask again.
        (*f).size = if rc == ffi::SQLITE_OK { want } else { -1 };
        rc
    }
}

/// Grows `f` from `size` to `want` bytes with zeros, in writes of up to [`MAX_WRITE`].
///
/// SAFETY: `f` is ours.
unsafe fn write_zeros(f: *mut File, mut size: i64, want: i64) -> c_int {
    while size < want {
        let len = (want - size).min(MAX_WRITE as i64);
        COPY_OS_WRITES.fetch_add(1, Ordering::Relaxed);
        let len_c = c_int::try_from(len).expect("at most MAX_WRITE");
        // SAFETY: `f` is ours; ZEROS holds `len` bytes.
        let rc = unsafe { real!(f, xWrite, ZEROS.as_ptr().cast::<c_void>(), len_c, size) };
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        size += len;
    }
    ffi::SQLITE_OK
}

/// Grows the file open as `fd` (-1: unknown) from `size` by `len` bytes with `fallocate`: SQLite's
/// code for the outcome, or `None` where that cannot be done (no descriptor, not Linux, a file
/// system without it), for the caller to write zeros instead.
fn allocate(fd: c_int, size: i64, len: i64) -> Option<c_int> {
    #[cfg(target_os = "linux")]
    {
        // `off_t` is 32 bits on some 32-bit targets: past that, zeros.
        let (size, len) = (
            libc::off_t::try_from(size).ok()?,
            libc::off_t::try_from(len).ok()?,
        );
        if fd < 0 || ZEROS_ONLY.load(Ordering::Relaxed) {
            return None;
        }
        loop {
            // SAFETY: no memory is passed; `fd` stays open while its connection has the file.
            if unsafe { libc::fallocate(fd, 0, size, len) } == 0 {
                COPY_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
                return Some(ffi::SQLITE_OK);
            }
            return match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EOPNOTSUPP | libc::ENOSYS | libc::EINVAL) => None,
                Some(libc::ENOSPC | libc::EDQUOT) => Some(ffi::SQLITE_FULL),
                _ => Some(ffi::SQLITE_IOERR_WRITE),
            };
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (fd, size, len);
        None
    }
}

unsafe extern "C" fn truncate(file: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    unsafe {
        flushed!(file, |f: *mut File| {
            (*f).size = -1;
            real!(f, xTruncate, size)
        })
    }
}

unsafe extern "C" fn sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    unsafe { flushed!(file, |f: *mut File| real!(f, xSync, flags)) }
}

unsafe extern "C" fn file_size(
    file: *mut ffi::sqlite3_file,
    size: *mut ffi::sqlite3_int64,
) -> c_int {
    unsafe { flushed!(file, |f: *mut File| real!(f, xFileSize, size)) }
}

unsafe extern "C" fn lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    unsafe { flushed!(file, |f: *mut File| real!(f, xLock, level)) }
}

unsafe extern "C" fn unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    unsafe { flushed!(file, |f: *mut File| real!(f, xUnlock, level)) }
}

unsafe extern "C" fn check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    unsafe { flushed!(file, |f: *mut File| real!(f, xCheckReservedLock, out)) }
}

unsafe extern "C" fn file_control(
    file: *mut ffi::sqlite3_file,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    let f = file.cast::<File>();
    // SAFETY: `f` is ours; SQLite passes an `i64` with a size hint.
    unsafe {
        if (*f).role == Role::Main {
            match op {
                ffi::SQLITE_FCNTL_CKPT_START => {
                    let rc = flush(f);
                    if rc != ffi::SQLITE_OK {
                        return rc;
                    }
                    (*f).copying = true;
                    (*f).size = -1;
                }
                ffi::SQLITE_FCNTL_SIZE_HINT if (*f).copying && !arg.is_null() => {
                    // What the default VFS does with a hint (nothing, or a memory map's growth)
                    // comes after the file has grown.
                    let _ = reserve(f, *arg.cast::<i64>());
                }
                ffi::SQLITE_FCNTL_CKPT_DONE => {
                    let rc = flush(f);
                    (*f).copying = false;
                    (*f).size = -1;
                    if rc != ffi::SQLITE_OK {
                        // SQLite ignores what this returns and would tell readers that the
                        // copied pages are in the database file.
                        eprintln!(
                            "walbuf: writing a checkpoint's buffered pages failed (SQLite error \
                             {rc}) before the checkpoint was published; aborting so that the WAL, \
                             which still holds them, is copied again at the next start"
                        );
                        std::process::abort();
                    }
                }
                _ => {}
            }
        }
        flushed!(file, |f: *mut File| real!(f, xFileControl, op, arg))
    }
}

unsafe extern "C" fn sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    let f = file.cast::<File>();
    unsafe {
        match (*(*(*f).real).pMethods).xSectorSize {
            Some(m) => m((*f).real),
            None => 4096,
        }
    }
}

unsafe extern "C" fn device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    let f = file.cast::<File>();
    unsafe {
        match (*(*(*f).real).pMethods).xDeviceCharacteristics {
            Some(m) => m((*f).real),
            None => 0,
        }
    }
}

unsafe extern "C" fn shm_map(
    file: *mut ffi::sqlite3_file,
    page: c_int,
    size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    let f = file.cast::<File>();
    unsafe { real!(f, xShmMap, page, size, extend, out) }
}

unsafe extern "C" fn shm_lock(
    file: *mut ffi::sqlite3_file,
    offset: c_int,
    n: c_int,
    flags: c_int,
) -> c_int {
    let f = file.cast::<File>();
    // SAFETY: `f` is ours. Taking or letting go of a WAL lock is when another connection may
    // look at the WAL next: nothing may be left buffered.
    unsafe {
        let rc = flush_wal_of(f);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        real!(f, xShmLock, offset, n, flags)
    }
}

unsafe extern "C" fn shm_barrier(file: *mut ffi::sqlite3_file) {
    let f = file.cast::<File>();
    // SAFETY: `f` is ours. This is the commit point (see the module's documentation).
    unsafe {
        let rc = flush_wal_of(f);
        if rc != ffi::SQLITE_OK {
            // Publishing the header now would point readers at frames that are not in the file.
            eprintln!(
                "walbuf: writing buffered WAL frames failed (SQLite error {rc}) just before a \
                 commit was published; aborting so that recovery drops the unpublished commit"
            );
            std::process::abort();
        }
        if let Some(m) = (*(*(*f).real).pMethods).xShmBarrier {
            m((*f).real);
        }
    }
}

unsafe extern "C" fn shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    let f = file.cast::<File>();
    unsafe {
        let rc = flush_wal_of(f);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        real!(f, xShmUnmap, delete)
    }
}

unsafe extern "C" fn fetch(
    file: *mut ffi::sqlite3_file,
    off: ffi::sqlite3_int64,
    amt: c_int,
    out: *mut *mut c_void,
) -> c_int {
    unsafe { flushed!(file, |f: *mut File| real!(f, xFetch, off, amt, out)) }
}

unsafe extern "C" fn unfetch(
    file: *mut ffi::sqlite3_file,
    off: ffi::sqlite3_int64,
    p: *mut c_void,
) -> c_int {
    let f = file.cast::<File>();
    unsafe { real!(f, xUnfetch, off, p) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: usize = 512;
    const FRAME: i64 = (FRAME_HEADER + PAGE) as i64;

    /// Writes frame `n` (from 0) of page `pgno` as SQLite does: its header, then its page. A
    /// page 1 carries `free` as its free count; `commit` is the size a commit frame records.
    fn frame(frames: &mut Frames, c: &mut Committed, n: i64, pgno: u32, commit: u32, free: u32) {
        let off = 32 + n * FRAME;
        let mut header = [0u8; FRAME_HEADER];
        header[0..4].copy_from_slice(&pgno.to_be_bytes());
        header[4..8].copy_from_slice(&commit.to_be_bytes());
        frames.follow(&header, off, c);
        let mut page = vec![0u8; PAGE];
        page[FREE_COUNT_AT..FREE_COUNT_AT + 4].copy_from_slice(&free.to_be_bytes());
        frames.follow(&page, off + FRAME_HEADER as i64, c);
    }

    #[test]
    fn a_commit_takes_its_page_count_and_its_page_1s_free_count() {
        let (mut f, mut c) = (Frames::default(), Committed::default());
        f.follow(&[0u8; 32], 0, &mut c); // the WAL header
        frame(&mut f, &mut c, 0, 1, 0, 7);
        frame(&mut f, &mut c, 1, 5, 0, 99);
        assert_eq!(
            (c.pages.map(|p| p.0), c.free_pages),
            (None, None),
            "not committed yet"
        );
        frame(&mut f, &mut c, 2, 9, 40, 99);
        assert_eq!((c.pages.map(|p| p.0), c.free_pages), (Some(40), Some(7)));
        // A commit without page 1 keeps the free count; page 1 as the commit frame itself.
        frame(&mut f, &mut c, 3, 4, 41, 99);
        assert_eq!((c.pages.map(|p| p.0), c.free_pages), (Some(41), Some(7)));
        frame(&mut f, &mut c, 4, 1, 38, 3);
        assert_eq!((c.pages.map(|p| p.0), c.free_pages), (Some(38), Some(3)));
    }

    #[test]
    fn page_1_of_a_commit_that_failed_halfway_never_counts() {
        let (mut f, mut c) = (Frames::default(), Committed::default());
        frame(&mut f, &mut c, 0, 2, 10, 0);
        c.free_pages = Some(5);
        // Frames 1 and 2 of a commit whose writes failed: page 1 (free 8) and no commit frame.
        frame(&mut f, &mut c, 1, 3, 0, 0);
        frame(&mut f, &mut c, 2, 1, 0, 8);
        // The next commit writes from frame 1 again: a shorter one ends before that page 1 ...
        frame(&mut f, &mut c, 1, 4, 11, 0);
        assert_eq!((c.pages.map(|p| p.0), c.free_pages), (Some(11), Some(5)));
        // ... and a longer one writes another page where it was.
        frame(&mut f, &mut c, 2, 6, 0, 0);
        frame(&mut f, &mut c, 3, 7, 12, 0);
        assert_eq!((c.pages.map(|p| p.0), c.free_pages), (Some(12), Some(5)));
    }

    #[test]
    fn a_page_not_right_after_its_header_is_not_read() {
        let (mut f, mut c) = (Frames::default(), Committed::default());
        let mut header = [0u8; FRAME_HEADER];
        header[0..4].copy_from_slice(&1u32.to_be_bytes());
        header[4..8].copy_from_slice(&20u32.to_be_bytes());
        f.follow(&header, 32, &mut c);
        f.follow(&[1u8; PAGE], 32 + FRAME, &mut c);
        assert_eq!((c.pages.map(|p| p.0), c.free_pages), (None, None));
    }
}
