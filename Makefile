# heatsible. `make help` lists the targets.
GO       ?= go
PYTHON   ?= python3
BIN      := bin/heatsible
GOFLAGS  ?=
export GOTOOLCHAIN := local

.DEFAULT_GOAL := build
.PHONY: help build deps unit role-tests test e2e e2e-repeat lint demo clean bench-agent bench bench-plot matrix matrix-unit

help:
	@echo "make build          build $(BIN)"
	@echo "make demo           install deps, bring the test bed up, run heatsible on it (fresh machine: ~20 min the first time)"
	@echo "make test           everything: deps, test bed, unit + e2e tests, smoke, lint"
	@echo "make unit           unit tests only (no test bed)"
	@echo "make e2e-repeat TEST=TestX N=10   one end-to-end test N times in a row on the running bed (flake hunting)"
	@echo "make lint           gofmt, go vet, ansible-lint, shellcheck"
	@echo "make bench          heatsible against the sequential baseline on the test bed, N = BENCH_SIZES (default 2 8 16 32 64); TACKER_SRC=DIR adds Tacker's sample driver"
	@echo "make bench-plot     redraw bench/results.svg from bench/results.json"
	@echo "make bench-agent    heatsible's own overhead on a synthetic 500-node cluster (no hosts)"
	@echo "make matrix-unit    role and event-parser tests under every ansible-core 2.14-2.19 (venvs from PyPI), ansible-lint 26"
	@echo "make matrix         matrix-unit, then the key end-to-end scenarios under each on the test bed (after make testbed-up)"
	@echo "make testbed-up|testbed-down|testbed-status|testbed-smoke   the local test bed (docs/testbed.md)"

build:
	$(GO) build -trimpath -o $(BIN) ./cmd/heatsible

deps:
	scripts/deps.sh

# Unit tests: no test bed. Tests that need one skip with the reason.
unit: role-tests
	$(GO) test ./...

# The Python tests: the collection heatsible.nfv's plugins (filters run on
# the controller, on recorded outputs of the real tools; modules), in
# ansible-test units' layout, imported as ansible_collections.heatsible.nfv
# from a temporary tree whose nfv is a symlink to collection/; and the
# roles' own host-side scripts (roles/*/tests), with $(PYTHON). No
# __pycache__: go:embed would ship it.
role-tests:
	@t=$$(mktemp -d) && trap 'rm -rf "$$t"' EXIT && mkdir -p "$$t/ansible_collections/heatsible" && \
	  ln -s "$(CURDIR)/collection" "$$t/ansible_collections/heatsible/nfv" && \
	  for d in collection/tests/unit/plugins/* roles/*/tests; do [ -d "$$d" ] || continue; \
	  PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$$t" $(PYTHON) -m unittest discover -s "$$d" || exit 1; done

# Everything, on a fresh machine too: the README's test command and what CI runs.
test: deps build
	scripts/test-all.sh

# ansible-lint: every role, with .ansible-lint (profile production, strict:
# warnings fail too) and the collection heatsible.nfv on the collections
# path, laid as a run bundle lays it (a temporary tree whose nfv is a
# symlink to collection/): without it ansible-lint cannot resolve the
# roles' heatsible.nfv.* modules and mocks the filters, checking nothing
# behind them. The path names the tree's ansible_collections/ itself, which
# Ansible takes as the tree: Debian's ansible-lint 6.13 loads collections,
# under ansible-core 2.14, from the directory above ANSIBLE_COLLECTIONS_PATH.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt: $$out"; exit 1; fi
	$(GO) vet ./...
	@t=$$(mktemp -d) && trap 'rm -rf "$$t"' EXIT && mkdir -p "$$t/ansible_collections/heatsible" && \
	  ln -s "$(CURDIR)/collection" "$$t/ansible_collections/heatsible/nfv" && \
	  echo "ANSIBLE_COLLECTIONS_PATH=$$t/ansible_collections ansible-lint --offline -c .ansible-lint roles/*/" && \
	  ANSIBLE_COLLECTIONS_PATH="$$t/ansible_collections" ansible-lint --offline -c .ansible-lint roles/*/
	shellcheck -x scripts/*.sh bench/*.sh testbed/bin/bed testbed/*/*.sh testbed/kubeadm/kubelet .ci/run roles/*/files/*.sh

# One end-to-end test N times in a row on the running bed (scripts/e2e-repeat.sh).
N ?= 5
e2e-repeat:
	scripts/e2e-repeat.sh "$(TEST)" "$(N)"

demo: deps build
	scripts/demo.sh

bench-agent:
	bench/agent.sh

# heatsible vs the sequential baseline on the test bed (after make testbed-up),
# N workers in BENCH_SIZES (default "2 8 16 32 64"; the bed reshapes to each);
# writes bench/results.{md,csv,json,svg}. With TACKER_SRC (an unpacked Tacker
# source of the bed's Tacker version; never committed), Tacker's own sample
# driver's storage steps too (bench/tacker_driver.py): one more column.
bench: build
	HEATSIBLE=$(CURDIR)/$(BIN) GO=$(GO) bench/bed.sh

BENCH_RESULTS ?= bench/results
bench-plot:
	$(GO) run ./bench/plot -in $(BENCH_RESULTS).json -out $(BENCH_RESULTS).svg

# The Ansibles real Ansible hosts run (docs/development.md, "The Ansible
# matrix"): venvs built from PyPI into /var/cache/heatsible/ansible
# (testbed/ansible/venvs.sh), the role and parser tests under each, then on
# the test bed the key scenarios under each and kubespray releases with their
# own Ansible. BED_USE_LOCK: a shared machine's bed lock (each test holds it).
matrix-unit:
	testbed/ansible/matrix.sh unit

matrix: matrix-unit
	testbed/ansible/matrix.sh bed

clean:
	rm -rf bin

include testbed/testbed.mk
