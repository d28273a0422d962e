# Test bed targets; the main Makefile includes this file. See docs/testbed.md.
#   make testbed-up [WORKERS=N] [VOLUMES=M]   start (or reshape) the bed
#   make testbed-down                         remove everything the bed made
#   make testbed-status                       hosts, addresses, ssh, k8s, heat
#   make testbed-smoke                        check a running bed end to end
# Other knobs pass through the environment: BED_USER, BED_PASSWORD, BED_HEAT,
# BED_K8S, HEATSIBLE_CACHE.

TESTBED_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
BED := $(TESTBED_DIR)/bin/bed

.PHONY: testbed-up testbed-down testbed-status testbed-smoke testbed-build

testbed-up:
	$(if $(WORKERS),WORKERS=$(WORKERS)) $(if $(VOLUMES),VOLUMES=$(VOLUMES)) $(BED) up

testbed-down:
	$(BED) down

testbed-status:
	$(BED) status

testbed-smoke:
	$(TESTBED_DIR)/smoke/smoke.sh

testbed-build:
	$(BED) build
