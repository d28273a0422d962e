#!/usr/bin/env bash
# Agent overhead on a synthetic 500-node cluster, no hosts involved:
#  - go test -bench: inventory build+write, run preparation, bundle staging,
#    Heat discovery of 5, 50 and 500 nodes (fixture server, which counts the
#    requests: requests/op);
#  - peak RSS and wall time of "heatsible inventory" and "heatsible topology"
#    on a 500-node topology file.
# Prints figures; asserts nothing (targets are in the issue tracker and
# docs/performance.md, not in tests).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-500}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/heatsible" ./cmd/heatsible
{
  echo "cluster: bench"
  echo "nodes:"
  echo "  - {name: master-0, role: master, ssh_address: 192.0.2.10, address: 10.10.0.10}"
  echo "  - {name: storage-server, role: storage, ssh_address: 10.10.0.45, address: 10.10.0.45}"
  for ((i = 0; i < N - 2; i++)); do
    printf '  - {name: workernode-%012d, role: worker, ssh_address: 198.18.%d.%d, address: 10.11.%d.%d}\n' \
      "$i" $((i / 250)) $((1 + i % 250)) $((i / 250)) $((1 + i % 250))
  done
  echo "cps: {storage_server_CP: 10.10.0.45, masterNode_CP1: 10.10.0.10}"
  echo "volumes: [{resource: storage_server_volume, id: 5b1d3a2c-0000-4000-8000-000000000001, device: /dev/vdb}]"
} > "$tmp/topology.yaml"

echo "== go test -bench (N=500)"
go test -run XXX -bench 'Inventory500|Prepare500|Bundle500' -benchmem ./internal/lcm | grep -E '^Benchmark'
go test -run XXX -bench 'Discover' -benchmem ./internal/heat | grep -E '^Benchmark'

echo "== heatsible inventory / topology on $N nodes (peak RSS, wall)"
for cmd in "inventory --format yaml" "inventory --format ini" "topology"; do
  # shellcheck disable=SC2086
  /usr/bin/time -f "%M KiB %e s" -o "$tmp/time" "$tmp/heatsible" $cmd \
    --request testdata/requests/valid.json --topology "$tmp/topology.yaml" > "$tmp/out"
  printf '%-26s %s, output %s lines\n' "heatsible $cmd" "$(cat "$tmp/time")" "$(wc -l < "$tmp/out")"
done
