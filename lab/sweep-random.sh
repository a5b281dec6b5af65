#!/usr/bin/env bash
# Draws random path sets and runs each in the simulator (`braid sim
# run`): TCP alone on every path in turn, and braid-pet over them all.
# It prints one line per set, the best single path's goodput next to
# braid-pet's, and flags the sets where braid-pet is below it. A set
# whose best path alone gets more than the tunnel's ceiling (0.924 of
# the sum of the rates: its headers) is marked "headers": there no
# tunnel that keeps the inner headers can beat the best path (README,
# "A path that adds less than the headers cost").
#
#   lab/sweep-random.sh [COUNT] [SEED] [DURATION_S]      # 40 sets, seed 7, 15 s
#
# A set has two or three paths (four in ten with random or bursty loss)
# of 1-50 Mbit/s, 5-316 ms one way, with queues of a quarter to two
# bandwidth-delay products. The sets are deterministic in SEED and are
# kept in $OUT (default: a temporary directory) as lab files, so any of
# them can be rerun, traced or taken to the lab. BRAID selects the binary
# (default target/release/braid). WAIT_PATHS=SECONDS starts braid-pet's
# transfer once every path is up (`braid sim run --wait-paths`), as on a
# bond that is up before its first transfer, and as in the lab, whose
# paths are usually up when iperf3 starts; by default it starts when the
# tunnel is. IDLE=SECONDS lets the tunnel idle that long after it is
# established before the transfer (`braid sim run --idle`), as a bond in
# use was up before it: its rate probes have measured every path.
# HANDSHAKE=1 opens each braid-pet transfer with a SYN through the tunnel
# (`braid sim run --handshake`), which a new tunnel's startup hold keeps
# back until every path is measured, as in the lab. Needs python3.
# LAB=1 runs the comparison in the lab instead of the simulator (`braid
# lab bench`, as root; DOWNLOAD=1 for downloads; lab/sweep-common.sh).
set -euo pipefail
count=${1:-40}
seed=${2:-7}
duration=${3:-15}
braid=${BRAID:-target/release/braid}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
python3 - "$out" "$count" "$seed" "$(dirname "$0")" <<'PY'
import random, sys
out, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sys.path.insert(0, sys.argv[4])
from sweep_sets import write_set
rng = random.Random(seed)
for k in range(count):
    n = rng.choice([2, 2, 2, 3])
    paths = []
    for i in range(n):
        rate = round(10 ** rng.uniform(0, 1.7), 2)
        delay = round(10 ** rng.uniform(0.7, 2.5), 1)
        bdp = rate * 1e6 / 8 * 2 * delay / 1e3
        queue = int(max(15000, bdp * rng.choice([0.25, 0.5, 1, 1, 2])))
        p = ['[[path]]', f'name = "p{i}"', f'rate_mbit = {rate}',
             f'delay_ms = {delay}', f'queue_bytes = {queue}']
        r = rng.random()
        if r < 0.25:
            p.append(f'loss = {rng.choice([0.001, 0.005, 0.01, 0.02, 0.05])}')
        elif r < 0.35:
            p.append('gilbert = { p_good_bad = 0.004, p_bad_good = 0.2, loss_bad = 0.5 }')
        paths.append('\n'.join(p))
    write_set(out, f'rand{k}', k + 1, paths)
PY
wait_paths=${WAIT_PATHS:-0}
idle=${IDLE:-0}
handshake=${HANDSHAKE:-}
. "$(dirname "$0")/sweep-common.sh"
compare_sets rand "$count"
