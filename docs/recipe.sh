#!/usr/bin/env bash
# The two-namespace lab of docs/DEPLOY.md, as a script (root; needs ip,
# ping and iperf3). Builds a client and a server namespace joined by two
# veth links, starts `braid server` and `braid client`, waits for the
# handshake, pings through the tunnel, measures an iperf3 upload through
# both paths, cuts one link while an upload runs (traffic must go on), and
# removes everything it created, also on failure or Ctrl-C.
#
#   sudo bash docs/recipe.sh            # BRAID=path/to/braid to pick a build
#
# CI runs it as root (crates/braid/tests/recipe.rs).
set -euo pipefail

BRAID=${BRAID:-braid}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-5}
# Names unique to this run: namespaces b<id>-cli/-srv, veths b<id>c1 ...
# (at most 15 characters), so nothing collides with host devices or a
# second run.
id=$(printf '%05d' $(( $$ % 100000 )))
cli=b$id-cli srv=b$id-srv
dir=$(mktemp -d /tmp/braid-recipe.XXXXXX)
pids=()

teardown() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    ip netns del "$cli" 2>/dev/null || true   # takes the veths with it
    ip netns del "$srv" 2>/dev/null || true
    rm -rf "$dir"
}
trap teardown EXIT INT TERM

for tool in ip ping iperf3 "$BRAID"; do
    command -v "$tool" >/dev/null || { echo "recipe: \`$tool\` not found; install it (iproute2, iputils-ping, iperf3) or set BRAID" >&2; exit 1; }
done

ip netns add "$cli"; ip netns add "$srv"
ip -n "$cli" link set lo up; ip -n "$srv" link set lo up
for i in 1 2; do
    ip link add "b${id}c$i" type veth peer name "b${id}s$i"
    ip link set "b${id}c$i" netns "$cli"; ip link set "b${id}s$i" netns "$srv"
    ip -n "$cli" addr add "10.88.$i.2/24" dev "b${id}c$i"; ip -n "$cli" link set "b${id}c$i" up
    ip -n "$srv" addr add "10.88.$i.1/24" dev "b${id}s$i"; ip -n "$srv" link set "b${id}s$i" up
done

cd "$dir"
"$BRAID" keygen --out server.key >/dev/null 2>&1
"$BRAID" keygen --out client.key >/dev/null 2>&1
cat > server.toml <<TOML
listen = "0.0.0.0:51820"
private_key_file = "server.key"
network = "10.77.0.0/24"
control_socket = "$dir/server.sock"
[[client]]
name = "lab"
public_key = "$(cat client.key.pub)"
TOML
cat > client.toml <<TOML
server = "10.88.1.1:51820"
server_public_key = "$(cat server.key.pub)"
private_key_file = "client.key"
control_socket = "$dir/client.sock"
[[path]]
name = "a"
bind = "10.88.1.2"
[[path]]
name = "b"
bind = "10.88.2.2"
server = "10.88.2.1:51820"
TOML
ip netns exec "$srv" "$BRAID" server --config server.toml 2>server.log & pids+=($!)
ip netns exec "$cli" "$BRAID" client --config client.toml 2>client.log & pids+=($!)

# Wait for the handshake (and both paths) before the first ping.
up=""
for _ in $(seq 100); do
    if s=$("$BRAID" status --json --socket "$dir/client.sock" 2>/dev/null) \
        && [ "$(grep -c '"up": true' <<<"$s")" -ge 2 ] \
        && grep -q '"established": true' <<<"$s"; then
        up=1; break
    fi
    sleep 0.1
done
[ -n "$up" ] || { echo "recipe: the tunnel did not come up in 10 s" >&2; cat client.log server.log >&2; exit 1; }
echo "tunnel up"
ip netns exec "$cli" ping -c 3 -i 0.2 -W 1 10.77.0.1
"$BRAID" status --socket "$dir/client.sock"

ip netns exec "$srv" iperf3 -s -B 10.77.0.1 -D -I "$dir/iperf3.pid"
sleep 0.3
pids+=("$(cat "$dir/iperf3.pid")")
mbps() { sed -n 's/.*"bits_per_second":[[:space:]]*\([0-9.e+]*\).*/\1/p' | tail -1 | awk '{printf "%.0f", $1/1e6}'; }
two=$(ip netns exec "$cli" iperf3 -c 10.77.0.1 -t "$SECONDS_PER_RUN" -J | tr -d '\n' | mbps)
echo "upload through both paths: $two Mbit/s"

# Cut link b while an upload runs: the upload goes on over a.
ip netns exec "$cli" iperf3 -c 10.77.0.1 -t "$SECONDS_PER_RUN" -J >cut.json & up_pid=$!
sleep 1
ip -n "$cli" link set "b${id}c2" down
wait "$up_pid"
cut=$(tr -d '\n' <cut.json | mbps)
echo "upload with link b cut after 1 s: $cut Mbit/s"
[ "${cut:-0}" -gt 0 ] || { echo "recipe: no traffic after the cut" >&2; exit 1; }
s=$("$BRAID" status --json --socket "$dir/client.sock")
grep -q '"up": false' <<<"$s" || { echo "recipe: path b not reported down" >&2; exit 1; }
ip netns exec "$cli" ping -c 3 -i 0.2 -W 1 10.77.0.1
echo "recipe: ok"
