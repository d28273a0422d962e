#!/usr/bin/env bash
# Runs one end-to-end test N times in a row on the running test bed, for
# hunting flakes: make e2e-repeat TEST=TestAnsibleHostConnectionCut N=10.
# The test binary is built once; each run's log is kept in
# testbed/run/repeat/TEST-I.log. Prints one line per run and a summary;
# exits 1 if any run failed. The bed must be up (testbed/bin/bed up).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH GOTOOLCHAIN=local

test=${1:-}
n=${2:-5}
if ! [[ $test =~ ^Test[A-Za-z0-9_]+(/[^[:space:]]+)?$ ]]; then
  echo "usage: $0 TestName [N]   (a test of internal/e2e; TestName/subtest works too)" >&2
  exit 2
fi
if ! [[ $n =~ ^[1-9][0-9]{0,3}$ ]]; then
  echo "N=$n: want a number of runs, 1..9999" >&2
  exit 2
fi
if [ ! -f testbed/run/env ]; then
  echo "the test bed is not up (no testbed/run/env): run testbed/bin/bed up first" >&2
  exit 2
fi

logs=$PWD/testbed/run/repeat
mkdir -p "$logs"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go test -c -o "$bin/e2e.test" ./internal/e2e

export HEATSIBLE_BED=$PWD/testbed/run HEATSIBLE_HEAT_ENV=$PWD/testbed/run/heat/env
# Top-level name anchored; a subtest part is passed as go test writes it.
top=${test%%/*}
run="^${top}\$"
[ "$top" != "$test" ] && run="$run/${test#*/}"
pass=0 fail=0
for ((i = 1; i <= n; i++)); do
  log=$logs/${top}-$i.log
  start=$(date +%s)
  if (cd internal/e2e && "$bin/e2e.test" -test.run "$run" -test.count 1 -test.v -test.timeout 30m) >"$log" 2>&1; then
    verdict=PASS
    # A skip passes go test but proves nothing: count it as a failure.
    if ! grep -q -- "^--- PASS: $top " "$log"; then verdict=SKIP; fi
  else
    verdict=FAIL
  fi
  if [ "$verdict" = PASS ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
  echo "run $i/$n: $verdict in $(( $(date +%s) - start )) s ($log)"
done
echo "$test: $pass passed, $fail failed or skipped, of $n"
[ "$fail" -eq 0 ]
