# Shared helpers for bench/run.sh, bench/growth.sh, bench/soak.sh and bench/viewers.sh (sourced,
# not run): settings, servers (start, stop, cleanup on exit), hookbin's API, the machine.
#
# Every script: unsets HOOKBIN_* and RUST_LOG (hookbin runs with its defaults plus the flags the
# script names), starts servers on 127.0.0.1 port 0 only, stops everything it started on exit,
# and keeps its temp dir when BENCH_KEEP=1 or when it fails.
#
# Common variables:
#   BENCH_HOOKBIN     binary to measure (default: target/dist/hookbin, built unless BENCH_SKIP_BUILD=1)
#   BENCH_SKIP_BUILD  1: build nothing (the load generator must already be built)
#   BENCH_KEEP        1: keep the temp dir
#   BENCH_LOCK        a lock file (e.g. /work/wt/machine.lock on a shared machine): the measured
#                     phases run under `flock -x` on it, fills and builds under `flock -s`
#   BENCH_DD          1 (default): measure the disk's synced 4 KiB write speed with dd first
#   BENCH_RUST_LOG    RUST_LOG for the hookbin servers the script starts (default: none, so
#                     hookbin logs at info), e.g. hookbin::reaper=debug; logs are in the work dir
#                     (keep it with BENCH_KEEP=1)

set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MAIN_DIR=$(cd "$BENCH_DIR/.." && pwd)
BASE_DIR=$BENCH_DIR/baselines
BASE_TARGET=$BASE_DIR/target
LOADGEN=${BENCH_LOADGEN:-$BASE_TARGET/dist/loadgen}
SKIP_BUILD=${BENCH_SKIP_BUILD:-0}
KEEP=${BENCH_KEEP:-0}
LOCK=${BENCH_LOCK:-}
if [[ -n ${CARGO_TARGET_DIR:-} ]]; then
    HOOKBIN=${BENCH_HOOKBIN:-$CARGO_TARGET_DIR/dist/hookbin}
else
    HOOKBIN=${BENCH_HOOKBIN:-$MAIN_DIR/target/dist/hookbin}
fi

while read -r var; do unset "$var"; done < <(compgen -e | grep '^HOOKBIN_' || true)
unset RUST_LOG
SERVER_RUST_LOG=${BENCH_RUST_LOG:-}
export NO_COLOR=1

say() { printf '%s\n' "$*"; }
hr() { say ""; say "== $* =="; }
die() { say "bench: $*" >&2; exit 1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "nan" }'; }
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
field() { sed -nE "s/.* $1=([^ ]*).*/\1/p" <<<"$2"; }
ms() { awk -v u="$1" 'BEGIN { printf "%.2f", u / 1000 }'; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

GOALS=()
goal() { GOALS+=("$(printf '%-4s  %s' "$1" "$2")"); }
print_goals() { say "goals:"; local g; for g in "${GOALS[@]}"; do say "  $g"; done; }

# ---------------------------------------------------------------------------------------------
# The machine lock (BENCH_LOCK): exclusive for measuring, shared for heavy work that is not
# measured, none while idle. A no-op without BENCH_LOCK.

LOCK_FD=""
lock() { # -x | -s
    [[ -n $LOCK ]] || return 0
    if [[ -z $LOCK_FD ]]; then exec {LOCK_FD}>>"$LOCK"; fi
    flock -u "$LOCK_FD"
    flock "$1" "$LOCK_FD"
}
unlock() { [[ -z $LOCK_FD ]] || flock -u "$LOCK_FD"; }

# ---------------------------------------------------------------------------------------------
# Builds

# The baselines build_tools builds: the load generator, and what a script adds (viewers.sh:
# bare-streams).
BASE_BINS=(loadgen)

build_tools() { # [NEED_HOOKBIN=1]
    if [[ $SKIP_BUILD != 1 ]]; then
        lock -s
        if [[ ${1:-1} == 1 && -z ${BENCH_HOOKBIN:-} ]]; then
            say "bench: building hookbin (cargo build --profile dist in $MAIN_DIR) ..."
            (cd "$MAIN_DIR" && cargo build --profile dist --bin hookbin) || die "hookbin dist build failed"
        fi
        say "bench: building ${BASE_BINS[*]} (cargo build --profile dist in $BASE_DIR) ..."
        CARGO_TARGET_DIR=$BASE_TARGET cargo build --profile dist --manifest-path "$BASE_DIR/Cargo.toml" \
            "${BASE_BINS[@]/#/--bin=}" || die "baselines build failed (${BASE_BINS[*]})"
        unlock
    fi
    [[ -x $LOADGEN ]] || die "missing $LOADGEN (build bench/baselines, or set BENCH_LOADGEN)"
    [[ ${1:-1} != 1 || -x $HOOKBIN ]] || die "missing $HOOKBIN (cargo build --profile dist, or set BENCH_HOOKBIN)"
}

# ---------------------------------------------------------------------------------------------
# Servers

WORK=$(mktemp -d "${TMPDIR:-/tmp}/hookbin-bench.XXXXXX")
declare -A PID=() ADDR=() HWM_KB=() EXIT_CODE=()
BG_PIDS=()   # background helpers (load generators, samplers), stopped by cleanup

stop_server() { # NAME: SIGTERM, wait up to 15 s, then SIGKILL; records VmHWM in HWM_KB, status in EXIT_CODE
    local name=$1 pid=${PID[$1]:-}
    [[ -n $pid ]] || return 0
    if kill -0 "$pid" 2>/dev/null; then
        HWM_KB[$name]=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
        kill -TERM "$pid" 2>/dev/null || true
        local i
        for ((i = 0; i < 150; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$pid" 2>/dev/null; then
            say "bench: $name did not exit within 15 s of SIGTERM; killing it"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    local rc=0
    wait "$pid" 2>/dev/null || rc=$?
    EXIT_CODE[$name]=$rc
    unset "PID[$name]"
}

# On exit: stops the background helpers, then every server still running, then runs the
# script's own `cleanup_extra` if it defines one (run.sh drops its PostgreSQL databases there).
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    local p name
    for p in "${BG_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    for name in "${!PID[@]}"; do stop_server "$name"; done
    if declare -F cleanup_extra >/dev/null; then cleanup_extra || true; fi
    unlock
    if [[ $KEEP == 1 || $rc != 0 ]]; then
        say "bench: logs and databases kept in $WORK"
    else
        rm -rf "$WORK"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start_server() { # NAME CMD... : starts it, waits for "listening on http://ADDR" (loopback only)
    local name=$1; shift
    local log=$WORK/$name.log
    : >"$log"
    "$@" >"$log" 2>&1 &
    PID[$name]=$!
    local addr="" i
    for ((i = 0; i < 600; i++)); do
        addr=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -oE 'listening on http://[^[:space:]"'"'"',}/]+' |
            head -n1 | sed 's|^listening on http://||' || true)
        [[ -n $addr ]] && break
        kill -0 "${PID[$name]}" 2>/dev/null || { cat "$log" >&2; die "$name exited during start-up (log above)"; }
        sleep 0.1
    done
    [[ -n $addr ]] || die "$name logged no 'listening on http://ADDR' within 60 s (see $log)"
    [[ $addr == 127.* || $addr == "[::1]"* ]] || die "$name listens on $addr, not loopback"
    ADDR[$name]=$addr
    say "bench: $name pid ${PID[$name]} on http://$addr"
}

start_hookbin() { # NAME DB FLAGS...: hookbin serve on 127.0.0.1:0 with database DB
    local name=$1 db=$2; shift 2
    if [[ -n $SERVER_RUST_LOG ]]; then
        start_server "$name" env RUST_LOG="$SERVER_RUST_LOG" "$HOOKBIN" serve --listen 127.0.0.1:0 --db "$db" "$@"
    else
        start_server "$name" "$HOOKBIN" serve --listen 127.0.0.1:0 --db "$db" "$@"
    fi
}

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/${PID[$1]}/status" 2>/dev/null || say 0; }
hwm_kb() { awk '/^VmHWM:/ {print $2}' "/proc/${PID[$1]}/status" 2>/dev/null || say 0; }
# CPU time (user + system) of server NAME so far, in clock ticks (/proc/PID/stat fields 14, 15).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/${PID[$1]}/stat" 2>/dev/null || say 0; }
TICKS=$(getconf CLK_TCK)
# Where a server's time and bytes go, from the kernel's counters for its process (every thread):
# "CPU_TICKS WRITE_BYTES WCHAR". CPU = utime + stime in clock ticks; write_bytes = bytes of page
# cache the process dirtied (what will reach the disk; a page dirtied again before writeback is
# counted once), less those cancelled by a truncate; wchar = bytes handed to write() and pwrite().
proc_counters() {
    local pid=${PID[$1]}
    # The command name (field 2) may hold spaces; fields are counted after its closing ')'.
    local cpu
    cpu=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | awk '{ print $12 + $13 }') || cpu=0
    awk -v cpu="${cpu:-0}" '$1 == "wchar:" { wc = $2 } $1 == "write_bytes:" { wb = $2 }
        $1 == "cancelled_write_bytes:" { cb = $2 } END { printf "%d %d %d\n", cpu, wb - cb, wc }' \
        "/proc/$pid/io" 2>/dev/null || say "0 0 0"
}
# The whole machine's CPU time so far, from /proc/stat's first line: "TOTAL_TICKS STEAL_TICKS".
# Steal is time the hypervisor ran other guests while this one had work: on a shared host it
# comes and goes over seconds and slows whatever runs then (one server's round, not the next's).
machine_ticks() {
    # Fields 2-9: user nice system idle iowait irq softirq steal (guest time is within user).
    awk '$1 == "cpu" { t = 0; for (i = 2; i <= 9; i++) t += $i; print t, $9; exit }' /proc/stat
}
# Steal as a percentage of the machine's CPU time between two machine_ticks snapshots.
steal_pct() { # BEFORE AFTER
    awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " ");
        t = y[1] - x[1]; printf "%.1f\n", (t > 0 ? 100 * (y[2] - x[2]) / t : 0) }'
}
# Freezes of the whole machine: a process of its own (python3) sleeps 2 ms at a time for SECONDS
# and writes "EPOCH,OVERRUN_MS" to FILE for every sleep that overran by more than 20 ms (it costs
# ~2% of a core). A frozen machine (the hypervisor, the host) holds every capture up whatever the
# server does; these say which slow rows were the machine's. Sets FREEZE_PID.
start_freeze_monitor() { # FILE SECONDS
    command -v python3 >/dev/null || die "python3 not found (Debian package python3)"
    python3 - "$2" >"$1" <<'PY' &
import sys, time
end = time.monotonic() + float(sys.argv[1])
print("epoch,overrun_ms", flush=True)
while (t := time.monotonic()) < end:
    time.sleep(0.002)
    late = time.monotonic() - t - 0.002
    if late > 0.020:
        print(f"{time.time() - late:.3f},{late * 1000:.1f}", flush=True)
PY
    FREEZE_PID=$!
    BG_PIDS+=("$FREEZE_PID")
}
# The freezes in FILE (start_freeze_monitor) between two epochs: "COUNT LONGEST_MS".
freezes_between() { # FILE FROM TO
    awk -F, -v a="$2" -v b="$3" 'NR > 1 && $1 >= a && $1 < b { n++; if ($2 > w) w = $2 }
        END { printf "%d %.1f\n", n, w }' "$1" 2>/dev/null || say "0 0"
}
# Other programs' CPU: a process of its own (python3) reads the CPU time of every process
# (/proc/PID/stat) every 0.25 s, for SECONDS, and writes "EPOCH,PCT,TOP" to FILE for every 0.25 s
# in which the processes that are neither one of the given PIDs nor descended from one used 25%
# of a core or more (PCT: % of one core; TOP: the three that used the most, "name:pct"). Give the
# benchmark script's own PID ($$), so that the servers, the load generator, the samplers and the
# monitors are all left out. A process that starts and ends within 0.25 s is not seen. On this
# project's machines other services run beside the benchmark: on the Intel Xeon of 2026-12-05,
# RabbitMQ started a whole Erlang VM once a minute, ~70% of a core for ~0.25 s, and the soak's
# capture p99 of those 5 s rows rose to 20-60 ms while hookbin's own capture latency stayed
# under 10 ms (bench/RESULTS.md 2026-12-05 17:14). Costs ~0.3% of a core. Sets OTHERS_PID.
start_others_monitor() { # FILE SECONDS PID...
    command -v python3 >/dev/null || die "python3 not found (Debian package python3)"
    local file=$1 seconds=$2; shift 2
    python3 - "$seconds" "$@" >"$file" <<'PY' &
import os, sys, time
hz = os.sysconf("SC_CLK_TCK")
window = 0.25
end = time.monotonic() + float(sys.argv[1])
roots = {int(p) for p in sys.argv[2:]} | {os.getpid()}

def processes():
    """pid -> (name, parent pid, CPU ticks so far) of every process."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    s = f.read()
            except OSError:
                continue
            rest = s[s.rindex(")") + 2:].split()
            out[int(d)] = (s[s.index("(") + 1:s.rindex(")")], int(rest[1]), int(rest[11]) + int(rest[12]))
    return out

def ours(pid, procs):
    for _ in range(64):
        if pid in roots:
            return True
        if pid not in procs or pid <= 1:
            return False
        pid = procs[pid][1]
    return False

print("epoch,pct,top", flush=True)
procs = processes()
while time.monotonic() < end:
    time.sleep(window)
    now = processes()
    by_name = {}
    for pid, (name, _, ticks) in now.items():
        delta = ticks - (procs[pid][2] if pid in procs else 0)
        if delta > 0 and not ours(pid, now):
            by_name[name] = by_name.get(name, 0) + delta
    pct = lambda ticks: ticks * 100 / hz / window  # of one core over the window
    others = pct(sum(by_name.values()))
    if others >= 25:
        top = sorted(by_name.items(), key=lambda kv: -kv[1])[:3]
        print(f"{time.time():.3f},{others:.0f}," + " ".join(f"{n}:{pct(t):.0f}" for n, t in top),
              flush=True)
    procs = now
PY
    OTHERS_PID=$!
    BG_PIDS+=("$OTHERS_PID")
}
# Other programs' bursts in FILE (start_others_monitor) between two epochs: "COUNT LARGEST_PCT
# NAMES" (NAMES: the programs of the largest burst, comma-separated; "-" when none).
others_between() { # FILE FROM TO
    awk -F, -v a="$2" -v b="$3" 'NR > 1 && $1 >= a && $1 < b { n++; if ($2 > w) { w = $2; top = $3 } }
        END { gsub(/:[0-9]+/, "", top); gsub(/ /, ",", top); printf "%d %d %s\n", n, w, (n ? top : "-") }' "$1" 2>/dev/null ||
        say "0 0 -"
}
# Per-capture figures between two proc_counters snapshots: "CPU_US DISK_BYTES WRITE_BYTES".
per_capture() { # BEFORE AFTER CAPTURES
    awk -v a="$1" -v b="$2" -v n="$3" -v hz="$TICKS" 'BEGIN { split(a, x, " "); split(b, y, " ");
        if (n <= 0) { print "nan nan nan"; exit }
        printf "%.1f %.0f %.0f\n", (y[1] - x[1]) * 1e6 / hz / n, (y[2] - x[2]) / n, (y[3] - x[3]) / n }'
}

# ---------------------------------------------------------------------------------------------
# hookbin's API (flat JSON fields only, so no jq needed)

json_str() { grep -oE "\"$1\" *: *\"[^\"]*\"" <<<"$2" | head -n1 | sed -E 's/.*: *"(.*)"/\1/' || true; }
json_num() { grep -oE "\"$1\" *: *[0-9]+" <<<"$2" | head -n1 | sed -E 's/.*: *//' || true; }

create_bin() { # ADDR [JSON] -> prints the bin id
    local addr=$1 body=${2:-} out code
    if [[ -n $body ]]; then
        out=$(curl -s -w '\n%{http_code}' -X POST -H 'Content-Type: application/json' -d "$body" "http://$addr/api/bins")
    else
        out=$(curl -s -w '\n%{http_code}' -X POST "http://$addr/api/bins")
    fi
    code=${out##*$'\n'}
    out=${out%$'\n'*}
    [[ $code == 201 ]] || die "POST /api/bins ${body:+$body }answered $code: $out"
    local id; id=$(json_str id "$out")
    [[ -n $id ]] || die "POST /api/bins answered no id: $out"
    say "$id"
}

bin_count() { # ADDR BIN -> request_count, or "gone" on 404
    local out code
    out=$(curl -s -w '\n%{http_code}' "http://$1/api/bins/$2")
    code=${out##*$'\n'}
    out=${out%$'\n'*}
    if [[ $code == 404 ]]; then say gone; return; fi
    [[ $code == 200 ]] || die "GET /api/bins/$2 answered $code: $out"
    json_num request_count "$out"
}

# `curl -K` config timing N sequential GETs of URL on one keep-alive connection; prints
# "p50 p99" of time_total in ms, or "ERR CODE" when an answer was not 200.
time_gets() { # N URL
    local n=$1 url=$2 cfg=$WORK/gets.curl i
    : >"$cfg"
    for ((i = 0; i < n; i++)); do printf 'url = "%s"\noutput = "/dev/null"\n' "$url" >>"$cfg"; done
    curl -s -K "$cfg" -w '%{http_code} %{time_total}\n' >"$WORK/gets.times"
    local bad; bad=$(awk '$1 != 200 { print $1; exit }' "$WORK/gets.times")
    if [[ -n $bad ]]; then say "ERR $bad"; return; fi
    awk '{ print $2 * 1000 }' "$WORK/gets.times" | sort -g |
        awk '{ v[NR] = $1 } END { printf "%.2f %.2f\n", v[int(NR * 0.5 + 0.999999)], v[int(NR * 0.99 + 0.999999)] }'
}

# ---------------------------------------------------------------------------------------------
# The machine

# Synced 4 KiB writes (like a commit's) on the work dir's disk, in MB/s.
disk_speed() {
    [[ ${BENCH_DD:-1} == 1 ]] || { say "not measured"; return; }
    local out
    out=$(dd if=/dev/zero of="$WORK/ddtest" bs=4k count=2000 oflag=dsync 2>&1 | tail -n1)
    rm -f "$WORK/ddtest"
    say "$(sed -E 's/.*, ([0-9.]+ [kMG]?B\/s)$/\1/' <<<"$out") (dd bs=4k count=2000 oflag=dsync)"
}

machine_line() {
    say "machine:  $(nproc) cores, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)," \
        "$(awk '/^MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), kernel $(uname -r)"
    say "load:     $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min; other work on the machine skews every figure)"
    say "disk:     $(disk_speed)"
    say "hookbin:  $HOOKBIN (built $(date -u -r "$HOOKBIN" '+%Y-%m-%d %H:%M UTC'))"
    say "work dir: $WORK"
}
