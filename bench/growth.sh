#!/usr/bin/env bash
# Growth (issue 15, goal 3): hookbin with 0, 1M and 5M stored requests, spread over 1000 bins and
# in one big bin. See bench/README.md ("growth.sh").
#
# For each layout, one database: hookbin starts on it, a template bin gets one real capture (a
# 1 KiB JSON POST with webhook-like headers, stored by hookbin itself), and the layout's bins are
# made over the API. Then, for each size:
#   - fill (not for 0): hookbin is stopped and sqlite3 copies the template row to the layout's
#     bins up to the size, every column as hookbin stored it except the ones that say where and
#     when (the bin, seq, slot, received_at, path, subpath), interleaved in time like concurrent
#     senders; the bins' counters (request_count, last_request_id, bytes_used) are raised to
#     match; then hookbin starts again and one copied request is read over the API and compared
#     byte for byte with the template's body;
#   - measure: capture throughput (loadgen closed loop, $CONNS connections, $CAP_DURATION, the
#     1 KiB JSON body round-robin over the layout's bins) in slices of $SLICE, taking turns slice
#     by slice with a second hookbin on a fresh empty database with as many bins (the reference:
#     made anew for each size, so the empty database's rate is measured in the same minute as the
#     full one's, on the same placement of the machine's CPUs), the bin page GET /bins/{bin} and
#     GET /api/bins/{bin}/requests?limit=50 ($GETS sequential requests each), and the full-scan
#     searches of bench/run.sh (?q=body:no-such-text, ?q=zebra; $SEARCHES each) on a full bin.
#     Beside the throughput, hookbin's CPU time and the bytes it dirtied in the page cache (what
#     goes to the disk: WAL and checkpoints) per capture of the load, from /proc/<pid>/{stat,io},
#     and the steal during the load (% of the machine's CPU time the hypervisor gave other guests:
#     on a shared host a few % of it slows that size's load, and the ratio with it).
# hookbin runs with --max-requests-per-bin and --max-bin-bytes far above the sizes, so nothing is
# evicted: the stored count only grows.
# Goals: capture throughput >= 0.8x the empty database's (same layout, the reference's rate in the
# same slices); page and list p99 < 10 ms; search p99 < 50 ms.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SIZES=${BENCH_SIZES:-1000000 5000000}   # stored requests after each fill (0 is always measured)
LAYOUTS=${BENCH_LAYOUTS:-spread one}    # spread: over $SPREAD_BINS bins; one: one big bin
SPREAD_BINS=${BENCH_SPREAD_BINS:-1000}
CONNS=${BENCH_CONNECTIONS:-50}
CAP_DURATION=${BENCH_CAP_DURATION:-10}  # seconds
SLICE=${BENCH_SLICE:-2}                 # seconds: the measured and the reference server take turns
GETS=${BENCH_GETS:-200}
SEARCHES=${BENCH_SEARCHES:-50}
CAP=10000000
FLAGS=(--max-requests-per-bin $CAP --max-bin-bytes 1000000000000 --max-bins-per-minute 0)

command -v sqlite3 >/dev/null || die "sqlite3 not found (Debian package sqlite3)"
build_tools
hr "growth: 0, $SIZES stored requests; layouts: $LAYOUTS ($(date -u '+%Y-%m-%d %H:%M:%S UTC'))"
machine_line

BODY=$WORK/body.json
# The load generator's body: 1 KiB of JSON.
prefix='{"type":"invoice.paid","id":"evt_1PqRsTuVwXyZ0123","created":1700000000,"livemode":false,"data":{"object":{"id":"in_1PqRsT","amount_paid":4200,"currency":"eur","customer":"cus_Q1w2E3r4T5y6","note":"'
suffix='"}}}'
printf '%s%s%s' "$prefix" "$(head -c $((1024 - ${#prefix} - ${#suffix})) /dev/zero | tr '\0' x)" "$suffix" >"$BODY"

declare -a ROWS=()

start() { # LAYOUT
    start_hookbin "$1" "$WORK/$1.db" "${FLAGS[@]}"
}

# The template capture: what every filled row copies.
template() { # ADDR -> prints the template bin id
    local addr=$1 bin
    bin=$(create_bin "$addr")
    local code
    code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://$addr/r/$bin/hooks/0?attempt=1" \
        -H 'Content-Type: application/json' -H 'User-Agent: Stripe/1.0 (+https://stripe.com/docs/webhooks)' \
        -H 'Stripe-Signature: t=1700000000,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd' \
        --data-binary "@$BODY")
    [[ $code == 200 ]] || die "template capture answered $code"
    say "$bin"
}

# Copies the template row into the fill bins (table fill_bins in $db: id) until the layout holds
# TARGET requests in all, interleaved: round k gives every bin its next request.
fill() { # DB TEMPLATE_BIN TARGET
    local db=$1 tpl=$2 target=$3
    local cols exprs
    # Schema 9 and later: rows name their bin by its number (bins.num), not its text id.
    local of_bin="bin_id" of_tpl="bin_id = '$tpl'" num_col=""
    if [[ $(sqlite3 "$db" "SELECT count(*) FROM pragma_table_info('bins') WHERE name = 'num'") == 1 ]]; then
        of_bin="bin_num" of_tpl="bin_num = (SELECT num FROM bins WHERE id = '$tpl')"
        num_col=", bins.num AS num"
    fi
    # Every column of bin_requests, in order; the ones that say where and when are rewritten.
    cols=$(sqlite3 "$db" "SELECT group_concat(name, ', ') FROM pragma_table_info('bin_requests')")
    exprs=$(sqlite3 "$db" "SELECT group_concat(CASE name
        WHEN 'id' THEN 'NULL'
        WHEN 'bin_id' THEN 'b.id'
        WHEN 'bin_num' THEN 'b.num'
        WHEN 'seq' THEN 'b.last + r.value'
        WHEN 'slot' THEN '(b.last + r.value) % b.ring'
        WHEN 'received_at' THEN 't.received_at - 86400000 + (b.last + r.value) * 10 + b.n % 10'
        WHEN 'path' THEN '''/r/'' || b.id || ''/hooks/'' || (b.last + r.value)'
        WHEN 'subpath' THEN '''/hooks/'' || (b.last + r.value)'
        ELSE 't.' || name END, ', ') FROM pragma_table_info('bin_requests')")
    # Schema 7 and later: a request sits in slot seq % ring, and a bin's ring is the cap at its
    # first capture (src/storage/sqlite/ring.rs), which the fill stands in for.
    local ring=0 set_ring=""
    if [[ $(sqlite3 "$db" "SELECT count(*) FROM pragma_table_info('bins') WHERE name = 'ring'") == 1 ]]; then
        ring="CASE bins.ring WHEN 0 THEN $CAP ELSE bins.ring END"
        set_ring=", ring = CASE ring WHEN 0 THEN $CAP ELSE ring END"
    fi
    # Schema 8 and later: a request names its answer among its bin's bin_responses, which the
    # fill copies from the template bin.
    local answers=""
    if [[ $(sqlite3 "$db" "SELECT count(*) FROM sqlite_schema WHERE name = 'bin_responses'") == 1 ]]; then
        answers="INSERT OR IGNORE INTO bin_responses ($of_bin, n, record)
    SELECT b.${of_bin#bin_}, a.n, a.record FROM b CROSS JOIN bin_responses a WHERE a.$of_tpl;"
    fi
    local have per_bin_bytes
    have=$(sqlite3 "$db" "SELECT count(*) FROM bin_requests r JOIN bins ON bins.${of_bin#bin_} = r.$of_bin
        WHERE bins.id IN (SELECT id FROM fill_bins)")
    local nbins; nbins=$(sqlite3 "$db" "SELECT count(*) FROM fill_bins")
    local rounds=$(((target - have + nbins - 1) / nbins))
    ((rounds > 0)) || return 0
    say "fill: $have -> $((have + rounds * nbins)) requests in $nbins bin(s) ($rounds each) ..."
    local t0=$SECONDS
    # journal_mode=OFF, synchronous=OFF: a bulk load with hookbin stopped (on failure the
    # database is thrown away); WAL again afterwards, as hookbin keeps it.
    sqlite3 "$db" <<EOF || die "fill failed"
.output /dev/null
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
PRAGMA cache_size = -1048576;
BEGIN;
CREATE TEMP TABLE t AS SELECT * FROM bin_requests WHERE $of_tpl;
CREATE TEMP TABLE b AS SELECT f.id, row_number() OVER (ORDER BY f.id) AS n, bins.last_request_id AS last,
    $ring AS ring$num_col FROM fill_bins f JOIN bins ON bins.id = f.id;
INSERT INTO bin_requests ($cols)
    SELECT $exprs FROM generate_series(1, $rounds) r CROSS JOIN b CROSS JOIN t;
$answers
UPDATE bins SET request_count = request_count + $rounds,
    last_request_id = last_request_id + $rounds,
    bytes_used = bytes_used + $rounds * (SELECT bytes_used FROM bins WHERE id = '$tpl')$set_ring
    WHERE id IN (SELECT id FROM fill_bins);
COMMIT;
PRAGMA journal_mode = WAL;
EOF
    sync
    say "fill: done in $((SECONDS - t0)) s; database $(mib "$(stat -c %s "$db")") MiB"
}

# One copied request read back over the API: the template's body, byte for byte.
check_copy() { # ADDR BIN
    local got want
    got=$(curl -s "http://$1/api/bins/$2/requests/1/body" | sha256sum)
    want=$(sha256sum <"$BODY")
    [[ $got == "$want" ]] || die "request 1 of bin $2 does not read back as the template's body"
    curl -s "http://$1/api/bins/$2/requests/1" | grep -q '"response": *{"' ||
        die "request 1 of bin $2 does not read back the answer it got"
}

# The table's columns: the header's two lines and every size's row.
ROW_FORMAT='%-7s %9s %9s  %9s  %9s  %6s  %7s  %6s  %6s  %7s  %7s  %7s  %7s  %7s %8s  %6s  %s'

# Makes N bins on the hookbin at ADDR and writes their ids to FILE, one a line.
make_bins() { # ADDR N FILE
    local cfg=$WORK/mkbins.curl i
    : >"$cfg"
    for ((i = 0; i < $2; i++)); do printf 'url = "http://%s/api/bins"\nrequest = "POST"\n' "$1" >>"$cfg"; done
    curl -s -K "$cfg" | grep -oE '"id" *: *"[^"]*"' | sed -E 's/.*"([^"]*)"$/\1/' >"$3"
    [[ $(wc -l <"$3") == "$2" ]] || die "made $(wc -l <"$3") of $2 bins"
}

# The capture load on the layout's server and on a reference hookbin with a fresh empty database
# and as many bins, in slices of $SLICE taking turns ($CAP_DURATION each in all). A hypervisor may
# move the machine's two CPUs near or far apart for seconds to minutes, which changes every rate
# by up to 2x (bench/RESULTS.md, 2026-12-05 19:41): a full database's rate compared with the empty
# one's measured minutes earlier compared placements as often as sizes. Each slice starts with
# `sync`, so that neither server's dirty pages are written back in the other's slice. Sets
# LOAD_RPS, LOAD_P99 (the worst slice's, ms), LOAD_CPU, LOAD_DISK (a capture), LOAD_STEAL and
# REF_RPS.
paired_load() { # LAYOUT BINS_FILE
    local layout=$1 bins=$2 n k who out
    n=$(wc -l <"$bins")
    start_hookbin reference "$WORK/reference.db" "${FLAGS[@]}"
    make_bins "${ADDR[reference]}" "$n" "$WORK/reference.bins"
    local slices=$(((CAP_DURATION + SLICE - 1) / SLICE))
    local -A ok=() us=() p99=()
    local before; before=$(proc_counters "$layout")
    local m0; m0=$(machine_ticks)
    for ((k = 0; k < slices; k++)); do
        for who in "$layout" reference; do
            sync
            local file=$bins
            [[ $who == reference ]] && file=$WORK/reference.bins
            out=$("$LOADGEN" capture --addr "${ADDR[$who]}" --bins-file "$file" --rate 0 \
                --conns "$CONNS" --duration "$SLICE" --quiet 2>"$WORK/cap.err") ||
                { cat "$WORK/cap.err" >&2; die "loadgen failed"; }
            ok[$who]=$((${ok[$who]:-0} + $(field ok2xx "$out")))
            us[$who]=$((${us[$who]:-0} + $(field duration_us "$out")))
            p99[$who]=$(printf '%s\n' "${p99[$who]:-0}" "$(field p99_us "$out")" | sort -n | tail -n1)
        done
    done
    LOAD_STEAL=$(steal_pct "$m0" "$(machine_ticks)")
    read -r LOAD_CPU LOAD_DISK _ <<<"$(per_capture "$before" "$(proc_counters "$layout")" "${ok[$layout]}")"
    LOAD_RPS=$(awk -v n="${ok[$layout]}" -v u="${us[$layout]}" 'BEGIN { printf "%.1f", n * 1e6 / u }')
    REF_RPS=$(awk -v n="${ok[reference]}" -v u="${us[reference]}" 'BEGIN { printf "%.1f", n * 1e6 / u }')
    LOAD_P99=$(ms "${p99[$layout]}")
    stop_server reference
    rm -f "$WORK/reference.db" "$WORK/reference.db-wal" "$WORK/reference.db-shm"
}

measure() { # LAYOUT SIZE ADDR BINS_FILE FULL_BIN
    local layout=$1 size=$2 addr=$3 bins=$4 full=$5
    lock -x
    local rps p99 page list s1 s2 worst cpu disk steal ref
    paired_load "$layout" "$bins"
    rps=$LOAD_RPS p99=$LOAD_P99 cpu=$LOAD_CPU disk=$LOAD_DISK steal=$LOAD_STEAL ref=$REF_RPS
    # The load leaves ~GB of dirty pages; written back during the reads, they would time the
    # disk instead (run.sh syncs before every round for the same reason).
    sync
    # The first full scan after the load, untimed by the series below: the bin's rows may have
    # to come from the disk (printed as "cold").
    cold=$(curl -s -o /dev/null -w '%{time_total}' "http://$addr/api/bins/$full/requests?q=body:no-such-text" |
        awk '{ printf "%.2f", $1 * 1000 }')
    curl -s -o /dev/null "http://$addr/bins/$full"
    curl -s -o /dev/null "http://$addr/api/bins/$full/requests?limit=50"
    page=$(p99_of "$(time_gets "$GETS" "http://$addr/bins/$full")")
    list=$(p99_of "$(time_gets "$GETS" "http://$addr/api/bins/$full/requests?limit=50")")
    s1=$(p99_of "$(time_gets "$SEARCHES" "http://$addr/api/bins/$full/requests?q=body:no-such-text")")
    s2=$(p99_of "$(time_gets "$SEARCHES" "http://$addr/api/bins/$full/requests?q=zebra")")
    unlock
    local stored; stored=$(sqlite3 -readonly "$WORK/$layout.db" "SELECT sum(request_count) FROM bins") || stored="?"
    local n; n=$(bin_count "$addr" "$full")
    ROWS+=("$(printf "$ROW_FORMAT" "$layout" "$size" "$stored" "$rps" "$ref" "$(ratio "$rps" "$ref")" "$p99" \
        "$cpu" "$disk" "$page" "$list" "$cold" "$s1" "$s2" "$n" "$(mib "$(stat -c %s "$WORK/$layout.db")")" "$steal")")
    say "${ROWS[-1]}"
    declare -g "RPS_${layout}_${size}=$rps"
    GROWTH+=("$layout $size $rps $ref $page $list $s1 $s2")
}

p99_of() { if [[ $1 == ERR* ]]; then say "${1// /}"; else say "${1#* }"; fi; }

header() {
    say "$(printf "$ROW_FORMAT" layout size stored "capt/s" "empty db" "ratio" "p99 ms" \
        "cpu" "disk" "page" "list50" "q:body" "q:body" "q:zebra" "full bin" "db MiB" "steal")"
    say "$(printf "$ROW_FORMAT" "" "" "" "" "capt/s" "" "worst" "us/cap" "B/cap" \
        "p99 ms" "p99 ms" "cold ms" "p99 ms" "p99 ms" "requests" "" "%")"
}

GROWTH=()
for layout in $LAYOUTS; do
    hr "layout $layout"
    start "$layout"
    addr=${ADDR[$layout]}
    tpl=$(template "$addr")
    bins=$WORK/$layout.bins
    if [[ $layout == spread ]]; then n=$SPREAD_BINS; else n=1; fi
    make_bins "$addr" "$n" "$bins"
    full=$(head -n1 "$bins")
    say "template bin $tpl; $n bin(s) for the load, the full bin measured is $full"
    header
    measure "$layout" 0 "$addr" "$bins" "$full"
    for size in $SIZES; do
        stop_server "$layout"
        lock -s
        sqlite3 "$WORK/$layout.db" "CREATE TABLE IF NOT EXISTS fill_bins (id TEXT PRIMARY KEY);
            DELETE FROM fill_bins;" || die "sqlite3 failed"
        while read -r b; do say "INSERT INTO fill_bins VALUES ('$b');"; done <"$bins" | sqlite3 "$WORK/$layout.db"
        fill "$WORK/$layout.db" "$tpl" "$size"
        sqlite3 "$WORK/$layout.db" "DROP TABLE fill_bins"
        unlock
        start "$layout"
        addr=${ADDR[$layout]}
        check_copy "$addr" "$full"
        measure "$layout" "$size" "$addr" "$bins" "$full"
    done
    stop_server "$layout"
    rm -f "$WORK/$layout.db" "$WORK/$layout.db-wal" "$WORK/$layout.db-shm"
done

hr "summary"
header
for r in "${ROWS[@]}"; do say "$r"; done
for g in "${GROWTH[@]}"; do
    read -r layout size rps ref page list s1 s2 <<<"$g"
    base_var="RPS_${layout}_0"
    if [[ $size != 0 ]]; then
        r=$(ratio "$rps" "$ref")
        if ge "$r" 0.8; then v=PASS; else v=FAIL; fi
        goal $v "$layout, $size stored: capture throughput >= 0.8x the empty database's: ${r}x ($rps vs $ref req/s on a fresh database in the same slices; against this layout's own 0 row, measured earlier: $(ratio "$rps" "${!base_var}")x)"
    fi
    worst=$(printf '%s\n' "$page" "$list" | sort -g | tail -n1)
    if [[ $page != ERR* && $list != ERR* ]] && lt "$worst" 10; then v=PASS; else v=FAIL; fi
    goal $v "$layout, $size stored: bin page and list of 50 p99 < 10 ms: page $page ms, list $list ms"
    worst=$(printf '%s\n' "$s1" "$s2" | sort -g | tail -n1)
    if [[ $s1 != ERR* && $s2 != ERR* ]] && lt "$worst" 50; then v=PASS; else v=FAIL; fi
    goal $v "$layout, $size stored: search over the full bin p99 < 50 ms: $s1 ms, $s2 ms"
done
print_goals
