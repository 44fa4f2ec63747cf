#!/usr/bin/env bash
# Live viewers (issue 15, goal 5): 500 event streams on one bin while it captures at half of
# hookbin's measured capacity, on hookbin and on its ceiling, bare-streams. See bench/README.md
# ("viewers.sh").
#
# 1. capacity: closed-loop load (bench/baselines loadgen, 1 KiB JSON POST, $CONNS connections)
#    on a fresh hookbin bin for $CAP_DURATION (skipped when BENCH_RATE is given and hookbin is
#    not measured);
# then for each server (hookbin, then bare-streams, each on its own):
# 2. no viewers: paced load at half that rate on a fresh bin for $DURATION;
# 3. viewers: $STREAMS streams (`GET /api/bins/{bin}/stream`) on a fresh bin, $PER_ADDR from each
#    of 127.0.0.2, 127.0.0.3, ... (so the per-client stream limit is not what is measured), then
#    the same paced load for $DURATION; then every stream must have received every committed
#    capture, ids 1, 2, 3, ... with no gap or duplicate (waiting up to $CATCH_UP s for them).
# Goals (hookbin): every stream complete; capture p99 with viewers < 2x without; hookbin's peak
# RSS (VmHWM, whole run) < 128 MiB. bare-streams (bench/baselines/src/bin/bare-streams.rs) sends
# each capture to every stream as an event of hookbin's size and stores nothing: what it cannot
# do at this rate, on this machine, no server can; the comparison table sets the two side by side.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STREAMS=${BENCH_STREAMS:-500}
PER_ADDR=${BENCH_PER_ADDR:-10}
CONNS=${BENCH_CONNECTIONS:-50}
CAP_DURATION=${BENCH_CAP_DURATION:-10}   # seconds
DURATION=${BENCH_DURATION:-20}           # seconds per paced phase
CATCH_UP=${BENCH_CATCH_UP:-60}           # seconds the streams may take to finish after the load
RATE=${BENCH_RATE:-auto}                 # captures/s of the paced phases; auto = half the capacity
FLAGS=(${BENCH_FLAGS:-})                 # extra hookbin flags
SERVERS=(${BENCH_SERVERS:-hookbin bare-streams})
BARE_STREAMS=${BENCH_BARE_STREAMS:-$BASE_TARGET/dist/bare-streams}
BARE_FLAGS=(${BENCH_BARE_FLAGS:-})      # extra bare-streams flags (--gather-ms, --buffer, --stream-nice)
BASE_BINS+=(bare-streams)

measures() { [[ " ${SERVERS[*]} " == *" $1 "* ]]; }
need_hookbin=0
if measures hookbin || [[ $RATE == auto ]]; then need_hookbin=1; fi
build_tools "$need_hookbin"
! measures bare-streams || [[ -x $BARE_STREAMS ]] || die "missing $BARE_STREAMS (build bench/baselines)"
lock -x
hr "viewers: $STREAMS event streams on one bin capturing at $([[ $RATE == auto ]] && say "half capacity" || say "$RATE/s") ($(date -u '+%Y-%m-%d %H:%M:%S UTC'))"
machine_line
! measures bare-streams ||
    say "ceiling:  $BARE_STREAMS (built $(date -u -r "$BARE_STREAMS" '+%Y-%m-%d %H:%M UTC'))"

start() { # NAME
    case $1 in
    hookbin)
        start_hookbin hookbin "$WORK/viewers.db" "${FLAGS[@]}"
        [[ ${#FLAGS[@]} == 0 ]] || say "bench: hookbin flags: ${FLAGS[*]}"
        ;;
    bare-streams)
        start_server bare-streams "$BARE_STREAMS" --listen 127.0.0.1:0 "${BARE_FLAGS[@]}"
        say "bench: $(head -n1 "$WORK/bare-streams.log")"
        ;;
    *) die "unknown server $1 (BENCH_SERVERS: hookbin, bare-streams)" ;;
    esac
}

phase() { # SERVER LABEL LOADGEN-ARGS...: runs loadgen, prints its line and the server's CPU per capture
    local srv=$1 label=$2; shift 2
    local t0 t1 out m0 steal
    t0=$(cpu_ticks "$srv")
    m0=$(machine_ticks)
    out=$("$LOADGEN" "$@" --addr "${ADDR[$srv]}" --conns "$CONNS" --quiet 2>"$WORK/$srv-$label.err") ||
        { cat "$WORK/$srv-$label.err" >&2; die "loadgen failed ($srv $label)"; }
    t1=$(cpu_ticks "$srv")
    steal=$(steal_pct "$m0" "$(machine_ticks)")
    say "$out" >"$WORK/$srv-$label.out"
    LINE=$(grep '^LOADGEN ' <<<"$out")
    STREAMS_LINE=$(grep '^STREAMS ' <<<"$out" || true)
    local ok; ok=$(field ok2xx "$LINE")
    CPU_US=$(awk -v t=$((t1 - t0)) -v hz="$TICKS" -v n="$ok" 'BEGIN { printf "%.1f", (n > 0 ? t / hz * 1e6 / n : 0) }')
    # steal: the machine's CPU time the hypervisor gave other guests meanwhile (bench/lib.sh).
    printf '%-12s %9s req/s  p50 %7s ms  p99 %7s ms  max %8s ms  non-2xx %s  errors %s  server CPU %s us/capture  steal %s%%\n' \
        "$label" "$(field rps "$LINE")" "$(ms "$(field p50_us "$LINE")")" "$(ms "$(field p99_us "$LINE")")" \
        "$(ms "$(field max_us "$LINE")")" "$(field non2xx "$LINE")" "$(field errors "$LINE")" "$CPU_US" "$steal"
}

if [[ $RATE == auto ]]; then
    hr "capacity (hookbin): closed loop, $CONNS connections, ${CAP_DURATION}s"
    start hookbin
    phase hookbin capacity capture --bin "$(create_bin "${ADDR[hookbin]}")" --rate 0 --duration "$CAP_DURATION"
    capacity=$(field rps "$LINE")
    RATE=$(awk -v c="$capacity" 'BEGIN { printf "%d", c / 2 }')
    say "paced phases: $RATE captures/s (half of $capacity), ${DURATION}s each"
    measures hookbin || stop_server hookbin
else
    say "paced phases: $RATE captures/s (BENCH_RATE), ${DURATION}s each"
fi

# Per server: the figures of the summary.
declare -A P99_ALONE=() P99_VIEWERS=() CPU_ALONE=() CPU_VIEWERS=() OK=() COMPLETE=() FAILED=() \
    DISORDER=() MIN_EV=() EVENTS=() BYTES=() LOAD_S=() CATCH_MS=() READER_US=() RSS_MAX=() HWM=()

for srv in "${SERVERS[@]}"; do
    [[ -n ${PID[$srv]:-} ]] || start "$srv"
    addr=${ADDR[$srv]}
    hr "$srv without viewers"
    phase "$srv" no-viewers capture --bin "$(create_bin "$addr")" --rate "$RATE" --duration "$DURATION"
    P99_ALONE[$srv]=$(field p99_us "$LINE")
    CPU_ALONE[$srv]=$CPU_US

    hr "$srv with $STREAMS viewers ($PER_ADDR per address from 127.0.0.2 up)"
    rss_before=$(rss_kb "$srv")
    phase "$srv" viewers viewers --bin "$(create_bin "$addr")" --streams "$STREAMS" --per-addr "$PER_ADDR" \
        --rate "$RATE" --duration "$DURATION" --catch-up "$CATCH_UP" --pid "${PID[$srv]}" \
        --csv "$WORK/$srv-viewers.csv"
    say "$STREAMS_LINE"
    P99_VIEWERS[$srv]=$(field p99_us "$LINE")
    CPU_VIEWERS[$srv]=$CPU_US
    OK[$srv]=$(field ok2xx "$LINE")
    LOAD_S[$srv]=$(awk -v u="$(field duration_us "$LINE")" 'BEGIN { print u / 1e6 }')
    for f in complete failed out_of_order min_events events bytes catch_up_ms; do
        printf -v "v_$f" '%s' "$(field "$f" "$STREAMS_LINE")"
    done
    COMPLETE[$srv]=$v_complete FAILED[$srv]=$v_failed DISORDER[$srv]=$v_out_of_order
    MIN_EV[$srv]=$v_min_events EVENTS[$srv]=$v_events BYTES[$srv]=$v_bytes CATCH_MS[$srv]=$v_catch_up_ms
    # The load generator shares the 2 cores: its stream readers' CPU is work a real viewer does on
    # its own machine, and it is what the server's captures compete with here.
    READER_US[$srv]=$(awk -v r="$(field reader_cpu_ms "$STREAMS_LINE")" -v n="${OK[$srv]}" \
        'BEGIN { printf "%.1f", (n > 0 ? r * 1000 / n : 0) }')
    say "$(awk -v r="$(field reader_cpu_ms "$STREAMS_LINE")" -v s="$(field sender_cpu_ms "$STREAMS_LINE")" \
        -v n="${OK[$srv]}" 'BEGIN { if (n > 0) printf "loadgen CPU: stream readers %.1f us/capture, capture senders %.1f us/capture", r * 1000 / n, s * 1000 / n }')"
    if [[ $srv == hookbin ]]; then
        metrics=$(curl -s "http://$addr/metrics")
        say "streams that fell behind: database reads (of what the recent events no longer held): $(awk '$1 == "hookbin_event_stream_resyncs_total" { print $2 }' <<<"$metrics"), catch-ups from the recent events in memory: $(awk '$1 == "hookbin_event_stream_catchups_total" { print $2 }' <<<"$metrics")"
    fi
    RSS_MAX[$srv]=$(awk -F, 'NR > 1 && $9 > m { m = $9 } END { print m + 0 }' "$WORK/$srv-viewers.csv")
    say "$srv RSS: $(mib $((rss_before * 1024))) MiB before the streams, at most $(mib $((RSS_MAX[$srv] * 1024))) MiB during the load (sampled every second)"
    stop_server "$srv"
    HWM[$srv]=${HWM_KB[$srv]:-0}
done
unlock

hr "summary"
if measures hookbin; then
    srv=hookbin
    if [[ ${COMPLETE[$srv]} == "$STREAMS" && ${FAILED[$srv]} == 0 ]]; then v=PASS; else v=FAIL; fi
    goal $v "every stream receives every event: ${COMPLETE[$srv]} of $STREAMS streams got all ${OK[$srv]} captures in order (min ${MIN_EV[$srv]}, ${DISORDER[$srv]} out of order)"
    r=$(ratio "${P99_VIEWERS[$srv]}" "${P99_ALONE[$srv]}")
    if lt "$r" 2; then v=PASS; else v=FAIL; fi
    goal $v "capture p99 with $STREAMS viewers < 2x without: $(ms "${P99_VIEWERS[$srv]}") ms vs $(ms "${P99_ALONE[$srv]}") ms (${r}x) at $RATE/s"
    if lt "${HWM[$srv]}" $((128 * 1024)); then v=PASS; else v=FAIL; fi
    goal $v "hookbin peak RSS < 128 MiB: $(mib $((HWM[$srv] * 1024))) MiB (VmHWM, whole run)"
    print_goals
fi

# Side by side: what the server did, and what the viewers got. "delivered" counts the request
# events the streams received over the paced load's duration (what came during the catch-up
# wait counts too); bytes are the streams' response bytes (events and comments), as read.
say ""
say "at $RATE captures/s, $STREAMS streams (asked: $(awk -v r="$RATE" -v s="$STREAMS" 'BEGIN { printf "%.2f", r * s / 1e6 }') million events/s to the viewers):"
row() { printf '  %-13s %-9s %-7s %-8s %-8s %-7s %-13s %-9s %-11s %-10s %-9s %s\n' "$@"; }
row "" streams "out of" "p99 ms" "p99 ms" p99 "server CPU" "streams'" delivered delivered readers "peak RSS"
row server complete order alone viewers ratio "us/capture" "ns/event" "M events/s" "MB/s" us/capt. MiB
for srv in "${SERVERS[@]}"; do
    row "$srv" "${COMPLETE[$srv]}/$STREAMS" "${DISORDER[$srv]}" "$(ms "${P99_ALONE[$srv]}")" "$(ms "${P99_VIEWERS[$srv]}")" \
        "$(ratio "${P99_VIEWERS[$srv]}" "${P99_ALONE[$srv]}")" "${CPU_ALONE[$srv]} / ${CPU_VIEWERS[$srv]}" \
        "$(awk -v a="${CPU_ALONE[$srv]}" -v v="${CPU_VIEWERS[$srv]}" -v n="${OK[$srv]}" -v e="${EVENTS[$srv]}" \
            'BEGIN { if (e > 0) printf "%.0f", (v - a) * n / e * 1000; else print "-" }')" \
        "$(awk -v e="${EVENTS[$srv]}" -v s="${LOAD_S[$srv]}" 'BEGIN { printf "%.2f", e / s / 1e6 }')" \
        "$(awk -v b="${BYTES[$srv]}" -v s="${LOAD_S[$srv]}" 'BEGIN { printf "%.0f", b / s / 1e6 }')" \
        "${READER_US[$srv]}" "$(mib $((HWM[$srv] * 1024)))"
done
say "  (server CPU: without / with viewers; streams' ns/event: the server CPU the viewers added, per request"
say "  event delivered; delivered: the request events and bytes all streams read, per second of paced load;"
say "  readers: the load generator's stream readers; peak RSS: VmHWM, whole run;"
say "  the streams' wait after the load: $(for s in "${SERVERS[@]}"; do printf '%s %s ms, ' "$s" "${CATCH_MS[$s]}"; done | sed 's/, $//'))"
