# Sourced by lab/sweep-random.sh and lab/sweep-changes.sh: runs the drawn
# sets in the simulator and prints one line per set. Expects $braid,
# $duration, $idle and $wait_paths set ($handshake, if not empty, adds
# --handshake), and the sets in $out as
# PREFIX<k>.toml (all paths) and PREFIX<k>_p<i>.toml (one path each).
# A set file's third line, if a comment, says what the set has and is
# printed at the end of its line.
#
# LAB=1 runs the same comparison in the lab instead (`braid lab bench`,
# real kernels in network namespaces; as root): TCP alone on each path's
# own file, braid-pet on the set, each once. It takes about 25 s a run,
# so 40 sets of two paths take about 50 minutes. DOWNLOAD=1 with LAB=1
# measures downloads (`--download`). HANDSHAKE has no meaning there: the
# lab's TCP always opens with one.

goodput() {
    if [[ -n ${LAB:-} ]]; then
        "$braid" lab bench "$1" --modes "$2" --duration "$duration" --wait-paths "$wait_paths" --idle "$idle" ${DOWNLOAD:+--download} --format json 2>/dev/null
    else
        "$braid" sim run "$1" --modes "$2" --duration "$duration" --wait-paths "$wait_paths" --idle "$idle" ${handshake:+--handshake} -q --format json
    fi | python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["results"][0]["goodput_mbps"], d["sum_mbps"])'
}

# compare_sets PREFIX COUNT: the best single path's goodput against
# braid-pet's per set, flagging the sets below it ("below (headers)" where
# the best path alone beats the tunnel's ceiling, 0.924 of the sum), and a
# count of the flagged sets outside the header exception.
compare_sets() {
    local prefix=$1 count=$2 below=0 k f g b sum best note line
    for ((k = 0; k < count; k++)); do
        best=0
        for f in "$out/$prefix${k}"_p*.toml; do
            read -r g _ < <(goodput "$f" single-best)
            best=$(python3 -c "print(max($best, $g))")
        done
        read -r b sum < <(goodput "$out/$prefix$k.toml" braid-pet)
        note=$(sed -n '3s/^# */  # /p' "$out/$prefix$k.toml")
        line=$(python3 -c "
best, b, s = $best, $b, $sum
flag = '' if b >= best else ('  below (headers)' if best > 0.924 * s else '  BELOW')
print('$prefix%-3d best path %7.2f  braid-pet %7.2f  of sum %7.2f  ratio %6.3f%s%s' % ($k, best, b, s, b / max(best, 1e-9), '''$note''', flag))")
        echo "$line"
        case $line in *BELOW*) below=$((below + 1)) ;; esac
    done
    echo "$below of $count sets below the best path outside the header exception; lab files in $out"
}
