#!/usr/bin/env bash
# Draws random path sets in which one path changes during the transfer,
# and runs each in the simulator (`braid sim run`): TCP alone on every
# path in turn (the path's change included), and braid-pet over them all.
# It prints one line per set, the best single path's goodput next to
# braid-pet's and what changed, and flags the sets where braid-pet is
# below the best path ("below (headers)" as in lab/sweep-random.sh).
#
#   lab/sweep-changes.sh [COUNT] [SEED] [DURATION_S]     # 40 sets, seed 7, 15 s
#
# A set has two or three paths of 1-50 Mbit/s, 5-200 ms one way, queues
# of half to two bandwidth-delay products. One path changes once, 6-12 s
# after the simulated emulator starts (a lab file `trace`): its rate falls
# to 10-50 %, its delay grows by 50-300 ms (a handover, a reroute), it
# starts losing 1-10 %, or it goes dark for 0.5-3 s. The sets are kept in
# $OUT (default: a temporary directory) as lab files. BRAID selects the
# binary (default target/release/braid); IDLE=SECONDS lets the tunnel idle
# that long before each transfer (`braid sim run --idle`), so the change
# comes that much earlier in the transfer; HANDSHAKE=1 opens each transfer
# with a SYN (`braid sim run --handshake`). Needs python3.
# LAB=1 runs the comparison in the lab instead of the simulator (`braid
# lab bench`, as root; DOWNLOAD=1 for downloads; lab/sweep-common.sh).
set -euo pipefail
count=${1:-40}
seed=${2:-7}
duration=${3:-15}
braid=${BRAID:-target/release/braid}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
idle=${IDLE:-0}
handshake=${HANDSHAKE:-}
python3 - "$out" "$count" "$seed" "$(dirname "$0")" <<'PY'
import random, sys
out, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sys.path.insert(0, sys.argv[4])
from sweep_sets import write_set
rng = random.Random(seed)
for k in range(count):
    n = rng.choice([2, 2, 3])
    paths = []
    victim = rng.randrange(n)
    kind = rng.choice(['rate', 'delay', 'loss', 'outage'])
    at = round(rng.uniform(6, 12), 1)
    for i in range(n):
        rate = round(10 ** rng.uniform(0, 1.7), 2)
        delay = round(10 ** rng.uniform(0.7, 2.3), 1)
        bdp = rate * 1e6 / 8 * 2 * delay / 1e3
        queue = int(max(15000, bdp * rng.choice([0.5, 1, 1, 2])))
        p = ['[[path]]', f'name = "p{i}"', f'rate_mbit = {rate}',
             f'delay_ms = {delay}', f'queue_bytes = {queue}']
        if i == victim:
            if kind == 'rate':
                p.append(f'trace = [{{ at_s = {at}, rate_mbit = {round(rate * rng.uniform(0.1, 0.5), 2)} }}]')
            elif kind == 'delay':
                p.append(f'trace = [{{ at_s = {at}, delay_ms = {round(delay + rng.uniform(50, 300), 1)} }}]')
            elif kind == 'loss':
                p.append(f'trace = [{{ at_s = {at}, loss = {rng.choice([0.01, 0.02, 0.05, 0.1])} }}]')
            else:
                d = round(rng.uniform(0.5, 3), 1)
                p.append(f'trace = [{{ at_s = {at}, loss = 1.0 }}, {{ at_s = {round(at + d, 1)}, loss = 0.0 }}]')
        paths.append('\n'.join(p))
    write_set(out, f'tr{k}', k + 1, paths, f'{kind} on p{victim} at {at}')
PY
wait_paths=0
. "$(dirname "$0")/sweep-common.sh"
compare_sets tr "$count"
