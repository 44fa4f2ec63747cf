#!/usr/bin/env bash
# Live viewers (issue 15, goal 5): 500 event streams on one bin while it captures at half of
# hookbin's measured capacity. See bench/README.md ("viewers.sh").
#
# 1. capacity: closed-loop load (bench/baselines loadgen, 1 KiB JSON POST, $CONNS connections)
#    on a fresh bin for $CAP_DURATION;
# 2. no viewers: paced load at half that rate on a fresh bin for $DURATION;
# 3. viewers: $STREAMS streams (`GET /api/bins/{bin}/stream`) on a fresh bin, $PER_ADDR from each
#    of 127.0.0.2, 127.0.0.3, ... (so the per-client stream limit is not what is measured), then
#    the same paced load for $DURATION; then every stream must have received every committed
#    capture, ids 1, 2, 3, ... with no gap or duplicate.
# Goals: every stream complete; capture p99 with viewers < 2x without; hookbin's peak RSS
# (VmHWM, whole run) < 128 MiB.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STREAMS=${BENCH_STREAMS:-500}
PER_ADDR=${BENCH_PER_ADDR:-10}
CONNS=${BENCH_CONNECTIONS:-50}
CAP_DURATION=${BENCH_CAP_DURATION:-10}   # seconds
DURATION=${BENCH_DURATION:-20}           # seconds per paced phase
RATE=${BENCH_RATE:-auto}                 # captures/s of the paced phases; auto = half the capacity
FLAGS=(${BENCH_FLAGS:-})                 # extra hookbin flags

build_tools
lock -x
hr "viewers: $STREAMS event streams on one bin capturing at half capacity ($(date -u '+%Y-%m-%d %H:%M:%S UTC'))"
machine_line
start_hookbin hookbin "$WORK/viewers.db" "${FLAGS[@]}"
addr=${ADDR[hookbin]}
say "bench: hookbin pid ${PID[hookbin]} on http://$addr${FLAGS[*]:+ with ${FLAGS[*]}}"

phase() { # LABEL LOADGEN-ARGS...: runs loadgen, prints its line and the server's CPU per capture
    local label=$1; shift
    local t0 t1 out
    t0=$(cpu_ticks hookbin)
    out=$("$LOADGEN" "$@" --addr "$addr" --conns "$CONNS" --quiet 2>"$WORK/$label.err") ||
        { cat "$WORK/$label.err" >&2; die "loadgen failed ($label)"; }
    t1=$(cpu_ticks hookbin)
    say "$out" >"$WORK/$label.out"
    LINE=$(grep '^LOADGEN ' <<<"$out")
    STREAMS_LINE=$(grep '^STREAMS ' <<<"$out" || true)
    local ok; ok=$(field ok2xx "$LINE")
    CPU_US=$(awk -v t=$((t1 - t0)) -v hz="$TICKS" -v n="$ok" 'BEGIN { printf "%.1f", (n > 0 ? t / hz * 1e6 / n : 0) }')
    printf '%-12s %9s req/s  p50 %7s ms  p99 %7s ms  max %8s ms  non-2xx %s  errors %s  server CPU %s us/capture\n' \
        "$label" "$(field rps "$LINE")" "$(ms "$(field p50_us "$LINE")")" "$(ms "$(field p99_us "$LINE")")" \
        "$(ms "$(field max_us "$LINE")")" "$(field non2xx "$LINE")" "$(field errors "$LINE")" "$CPU_US"
}

hr "capacity: closed loop, $CONNS connections, ${CAP_DURATION}s"
phase capacity capture --bin "$(create_bin "$addr")" --rate 0 --duration "$CAP_DURATION"
capacity=$(field rps "$LINE")
if [[ $RATE == auto ]]; then
    RATE=$(awk -v c="$capacity" 'BEGIN { printf "%d", c / 2 }')
    say "paced phases: $RATE captures/s (half of $capacity), ${DURATION}s each"
else
    say "paced phases: $RATE captures/s (BENCH_RATE; the capacity is $capacity), ${DURATION}s each"
fi

hr "without viewers"
phase no-viewers capture --bin "$(create_bin "$addr")" --rate "$RATE" --duration "$DURATION"
p99_alone=$(field p99_us "$LINE")

hr "with $STREAMS viewers ($PER_ADDR per address from 127.0.0.2 up)"
rss_before=$(rss_kb hookbin)
bin=$(create_bin "$addr")
phase viewers viewers --bin "$bin" --streams "$STREAMS" --per-addr "$PER_ADDR" --rate "$RATE" \
    --duration "$DURATION" --pid "${PID[hookbin]}" --csv "$WORK/viewers.csv"
p99_viewers=$(field p99_us "$LINE")
say "$STREAMS_LINE"
# The load generator shares the 2 cores: its stream readers' CPU is work a real viewer does on
# its own machine, and it is what the server's captures compete with here.
say "$(awk -v r="$(field reader_cpu_ms "$STREAMS_LINE")" -v s="$(field sender_cpu_ms "$STREAMS_LINE")" \
    -v n="$(field ok2xx "$LINE")" 'BEGIN { if (n > 0) printf "loadgen CPU: stream readers %.1f us/capture, capture senders %.1f us/capture", r * 1000 / n, s * 1000 / n }')"
metrics=$(curl -s "http://$addr/metrics")
say "streams that fell behind and caught up from the database: $(awk '$1 == "hookbin_event_stream_resyncs_total" { print $2 }' <<<"$metrics"), from the recent events in memory: $(awk '$1 == "hookbin_event_stream_catchups_total" { print $2 }' <<<"$metrics")"
rss_max=$(awk -F, 'NR > 1 && $9 > m { m = $9 } END { print m + 0 }' "$WORK/viewers.csv")
say "hookbin RSS: $(mib $((rss_before * 1024))) MiB before the streams, at most $(mib $((rss_max * 1024))) MiB during the load (sampled every second)"
stop_server hookbin
hwm=${HWM_KB[hookbin]:-0}
unlock

hr "summary"
ok=$(field ok2xx "$LINE")
complete=$(field complete "$STREAMS_LINE")
if [[ $complete == "$STREAMS" && $(field failed "$STREAMS_LINE") == 0 ]]; then v=PASS; else v=FAIL; fi
goal $v "every stream receives every event: $complete of $STREAMS streams got all $ok captures in order (min $(field min_events "$STREAMS_LINE"), max $(field max_events "$STREAMS_LINE"), $(field out_of_order "$STREAMS_LINE") out of order)"
r=$(ratio "$p99_viewers" "$p99_alone")
if lt "$r" 2; then v=PASS; else v=FAIL; fi
goal $v "capture p99 with $STREAMS viewers < 2x without: $(ms "$p99_viewers") ms vs $(ms "$p99_alone") ms (${r}x) at $RATE/s"
if lt "$hwm" $((128 * 1024)); then v=PASS; else v=FAIL; fi
goal $v "hookbin peak RSS < 128 MiB: $(mib $((hwm * 1024))) MiB (VmHWM, whole run)"
print_goals
