#!/usr/bin/env bash
# Runs `braid lab bench` and samples, every 0.25 s while it runs, the
# tunnel client's `braid status --json`, the emulator's counters
# (/run/braid-lab/stats.json) and the inner TCP's `ss -tin` in the client
# namespace, one JSON object per line: {"t", "c", "e", "ss"}. "c" is
# present only while a braid mode runs (its control socket exists).
#
#   lab/trace.sh OUT.jsonl lab/cellular.toml --modes mptcp,braid-pet
#
# Needs root, like `braid lab bench`; BRAID selects the binary
# (default target/release/braid). The bench's JSON report goes to stdout.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 OUT.jsonl LAB_FILE [braid lab bench options]" >&2
    exit 2
fi
out=$1
shift
braid=${BRAID:-target/release/braid}
sock=/run/braid-lab-tunnel/client.sock
: > "$out"
"$braid" lab bench "$@" --format json &
bench=$!
while kill -0 "$bench" 2>/dev/null; do
    c=$("$braid" status --socket "$sock" --json 2>/dev/null | tr -d '\n' || true)
    e=$(tr -d '\n' < /run/braid-lab/stats.json 2>/dev/null || true)
    ss=$(ip netns exec braid-cli ss -tinH 2>/dev/null | tr -d '\n\t' | sed 's/["\\]/ /g' || true)
    printf '{"t": %s, "c": %s, "e": %s, "ss": "%s"}\n' \
        "$(date +%s.%N)" "${c:-null}" "${e:-null}" "$ss" >> "$out"
    sleep 0.25
done
wait "$bench"
