# jepsen-lite: fault-injection tests and safety checks for distributed locks.
#
#   make test-scenario                 run the quick scenarios against real servers
#   make test-scenario SCENARIO=name   run one scenario
#   make test                          run every test (with -race)
#
# Every target that needs servers or tools depends on deps, which installs
# only what is missing.

GO      ?= go
export PATH := $(PATH):/usr/local/go/bin
BIN     := bin/jepsen-lite
SKEWLIB := build/libclockskew.so
ANYLANG := build/anylang/curator-lock.jar
FUZZTIME ?= 10s
SCENARIO ?=

NODE_IMAGE ?= jepsen-lite/node:latest
BACKEND ?= local

.PHONY: deps build anylang test test-knownbugs hunt-knownbugs hunt-renewbugs test-shrink test-scenario gate-full scenarios-doc baselines-doc matrix soak-long interrupt lint fuzz bench clean images test-docker test-ssh test-ssh-sample clean-docker

# deps also fills the module cache with the requirements of the user's
# module of examples/ownversion, whose test runs offline (GOPROXY=off);
# go mod download does nothing when they are there.
deps:
	@bash scripts/deps.sh
	@cd examples/ownversion/testdata/redislock && GOWORK=off $(GO) mod download all

build: $(BIN) $(SKEWLIB) $(ANYLANG)

# The binary depends on the directories of its sources as well as on the
# files: a deleted source or catalog file changes only its directory.
GOSRC   := $(shell find . -name '*.go' -not -path './store/*')
CATALOG := $(shell find scenarios/catalog -name '*.yaml')
$(BIN): $(GOSRC) $(CATALOG) $(sort $(dir $(GOSRC) $(CATALOG))) go.mod go.sum
	$(GO) build -o $(BIN) ./cmd/jepsen-lite

$(SKEWLIB): clockskew/clockskew.c
	@mkdir -p build
	cc -shared -fPIC -O2 -Wall -o $@ $< -ldl

# The Java lock client of examples/anylang (Apache Curator's
# InterProcessMutex), against Debian's jars; curator_lock.sh runs it. The
# class-data archive is written by one run of the client against an address
# where no server listens (its acquire fails after Curator's retries): a JVM
# that maps it starts with a third or more less CPU, which eight clients starting
# at once on a busy machine need.
anylang: $(ANYLANG)

$(ANYLANG): examples/anylang/CuratorLock.java examples/anylang/curator_lock.sh
	@rm -rf build/anylang && mkdir -p build/anylang/classes
	javac -Xlint:all,-path -implicit:none -sourcepath "" -cp "$$(examples/anylang/curator_lock.sh --classpath)" -d build/anylang/classes $<
	jar cf $@ -C build/anylang/classes .
	printf '%s\n' '{"type":"init","protocol":1,"endpoints":[{"name":"n1","role":"","addr":"127.0.0.1:9"}],"options":{"session-timeout":"1s"}}' \
	  '{"type":"acquire","id":1,"key":"k","ttl_ms":1000}' | examples/anylang/curator_lock.sh --dump-archive >/dev/null 2>&1

# Every test (scripts/test.sh): the packages of pure logic two at a time, the
# integration packages one at a time. Where a Docker engine
# answers, the node image is built first, so that the container backend is
# tested; where none does, the last line says it was not.
test: deps build
	GO=$(GO) JEPSEN_LITE_NODE_IMAGE=$(NODE_IMAGE) CLOCKSKEW_LIB=$(SKEWLIB) bash scripts/test.sh

# The known-bug corpus (examples/knownbugs, docs/knownbugs.md): each bug's
# buggy and fixed programs, built in their own modules, against the harness
# over five seeds each. BUG=<name> runs one bug (redsync-release,
# etcd-mutex, redsync-extend, rueidislock-drift, gozero-reentrant,
# rueidislock-interval).
BUG ?=
test-knownbugs: deps build
	$(GO) test -tags knownbugs -count=1 -p 1 -timeout 60m -v -run 'TestKnownBugs/$(BUG)' ./examples/knownbugs

# hunt each known bug without its scenario: 10 random and 10 steered
# campaigns per bug, each to its first finding, and the fixed versions
# (about an hour; docs/hunt.md, "Known bugs").
hunt-knownbugs: deps build
	$(GO) test -tags knownbugs -count=1 -p 1 -timeout 3h -v -run 'TestHuntKnownBugs/$(BUG)' ./examples/knownbugs

# measure the hunt on the planted renewal bugs (examples/renewbugs): per
# bug, 10 random and 10 steered campaigns from redis-single-baseline, each
# to its first finding or 50 runs, printing the runs each took, and 20 runs
# of the corrected twin (hours; docs/hunt.md, "Renewal bugs"). BUG=<name>
# runs one bug (watchdog-slip, whole-seconds, first-renewal-from-return).
hunt-renewbugs: deps build
	$(GO) test -tags renewbugs -count=1 -p 1 -timeout 12h -v -run 'TestMeasureRenewBugs/$(BUG)' ./examples/renewbugs

# shrink on a real failing run of redis-single-random-pauses (a few
# minutes: the search's runs and five confirmations; docs/shrink.md), then
# from Go (lockapi) each planted renewal bug's failing run, which must
# shrink to at most two fault steps and fail again when run and replayed
# (docs/hunt.md, "Renewal bugs").
test-shrink: deps build
	$(GO) test -tags shrink -count=1 -timeout 30m -v -run TestShrinkRandomPauses ./cmd/jepsen-lite
	$(GO) test -tags shrink -count=1 -timeout 60m -v -run TestShrinkRenewBugs ./examples/renewbugs

# BACKEND=docker runs the servers in containers; the node image is built
# first (make images: debootstrap + docker import, no registry needed).
# The quick gate runs GATE_PARALLEL scenarios side by side (gate
# --parallel; docs/ci.md measured every detection of the quick set kept at
# 2, at half the time); GATE_PARALLEL=1 runs one at a time.
GATE_PARALLEL ?= 2
test-scenario: deps build $(if $(filter docker,$(BACKEND)),images)
ifeq ($(SCENARIO),)
	$(BIN) gate --tags quick --backend $(BACKEND) --parallel $(GATE_PARALLEL) --junit build/gate-quick.xml
else
	$(BIN) run $(SCENARIO) --backend $(BACKEND)
endif

gate-full: deps build
	$(BIN) gate --seeds $(or $(SEEDS),5) --junit build/gate-full.xml

# docs/scenarios.md: every scenario but the 30 s soak baselines, with a gate
# run's detection rates over 20 seeds.
scenarios-doc: deps build
	$(BIN) gate --skip-tags soak --seeds $(or $(SEEDS),20) --markdown docs/scenarios.md --junit build/gate-doc.xml

# docs/baselines.md: every algorithm's 30 s no-fault soak baseline over seeds.
baselines-doc: deps build
	$(BIN) gate --tags soak --seeds $(or $(SEEDS),20) --markdown docs/baselines.md --junit build/gate-baselines.xml

# docs/matrix.md: the safety datasheet. A hunt of every built-in algorithm
# and any-language example (10 runs per fault kind, 8 s runs, two campaigns
# side by side by default, MATRIX_PARALLEL; each kind's first failure
# shrunk; scripts/matrix.sh), then `jepsen-lite matrix`. A row whose
# campaign file is in docs/matrix/campaigns is kept; MATRIX_FRESH=1 runs
# all again. 35 to 55 min a row with its shrinks; five rows side by side
# took under an hour on two cores. Not in CI.
matrix: deps build
	bash scripts/matrix.sh

# An hour-long soak of the catalog (tag soak-long; SCENARIO=name picks
# another than Redis's), with the harness's memory sampled every 10 s and
# plotted (scripts/soak.sh, docs/performance.md). Not in CI.
soak-long: deps build
	bash scripts/soak.sh $(or $(SCENARIO),redis-single-soak-long)

# How long Ctrl-C takes to end a check of a 717 MB history (ten tries) and a
# run, and a second Ctrl-C (scripts/interrupt.sh, docs/performance.md).
# Not in CI.
interrupt: deps build
	GO=$(GO) bash scripts/interrupt.sh

images: $(SKEWLIB)
	JEPSEN_LITE_NODE_IMAGE=$(NODE_IMAGE) CLOCKSKEW_LIB=$(SKEWLIB) images/build.sh

# The container backend's tests over every system and topology (make test
# runs them too, but its conformance suite one topology a day), then every scenario of the catalog that both backends run, on each
# (TestBackendsAgree; make test compares the first quick scenario of one
# system, in turn by the day of the year). JEPSEN_LITE_DOCKER_SYSTEMS=redis,etcd narrows both to those
# systems.
test-docker: deps build images
	JEPSEN_LITE_CONFORMANCE_SAMPLE= JEPSEN_LITE_NODE_IMAGE=$(NODE_IMAGE) $(GO) test -race -count=1 ./cluster/docker
	JEPSEN_LITE_NODE_IMAGE=$(NODE_IMAGE) $(GO) test -count=1 -timeout 90m -run TestBackendsAgree ./runner -agree-tags= -agree-all

# The ssh backend's tests (build tag sshhosts): its conformance suite on
# six test hosts, network namespaces with sshd on a bridge the tests
# create and remove, what an interrupted or dead harness leaves on them,
# and every quick scenario on six such hosts and on the local backend,
# their verdicts compared (TestBackendsAgree). Not part of make test or
# .ci/run, which sample it (test-ssh-sample).
test-ssh: deps build
	$(GO) test -race -count=1 -tags sshhosts ./cluster/ssh/...
	$(GO) test -count=1 -tags sshhosts -run 'TestHostsUp|SSH' ./cmd/jepsen-lite
	$(GO) test -count=1 -timeout 60m -tags sshhosts -run TestBackendsAgree ./runner -agree-backends local,ssh -agree-all

# One system of the ssh backend's tests, CI's sample of them
# (SSH_SYSTEM, and for redis SSH_TOPOLOGY, masters by default): its
# conformance suite on namespace hosts, and the checks that an
# interrupted start and a dead harness leave nothing on the hosts.
SSH_SYSTEM ?= redis
SSH_TOPOLOGY ?= $(if $(filter redis,$(SSH_SYSTEM)),^masters$$,)
test-ssh-sample: deps build
	$(GO) test -race -count=1 -tags sshhosts -run 'TestConformance/^$(SSH_SYSTEM)$$/$(SSH_TOPOLOGY)' ./cluster/ssh
	$(GO) test -race -count=1 -tags sshhosts -run 'TestInterruptedStartLeavesNothing|TestDeadHarnessLeftoversRemoved' ./cluster/ssh

clean-docker:
	-docker ps -aq --filter label=jepsen-lite.run | xargs -r docker rm -f
	-docker network ls -q --filter label=jepsen-lite.run | xargs -r docker network rm

# go.mod and go.sum tidy, vet, gofmt, and the code rules of package
# coderules (no function over 80 lines, in any package or example), for the
# main module and the nested module lockapi (its own go.mod; make test runs
# its tests). CI runs it before the tests.
lint:
	$(GO) mod tidy -diff
	cd lockapi && $(GO) mod tidy -diff
	$(GO) vet ./...
	cd lockapi && $(GO) vet ./...
	$(GO) vet -tags knownbugs ./examples/knownbugs
	$(GO) vet -tags renewbugs ./examples/renewbugs
	$(GO) vet -tags shrink ./examples/renewbugs ./cmd/jepsen-lite
	$(GO) vet -tags sshhosts ./cluster/ssh/... ./cmd/jepsen-lite
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) test -count=1 ./coderules

# FUZZ_SHARE=k/n runs only the targets whose place in the list, counted
# from 0, is k modulo n (CI takes a third a day); empty runs every target.
FUZZ_SHARE ?=
FUZZ_TARGETS := ./history:FuzzRead ./checker:FuzzCheck ./checker:FuzzSynthetic ./checker/reference:FuzzDifferential ./lockproto:FuzzParseReply ./scenarios:FuzzScenario

fuzz: build
	@i=0; share="$(FUZZ_SHARE)"; for t in $(FUZZ_TARGETS); do \
	  if [ -z "$$share" ] || [ $$((i % $${share#*/})) -eq $${share%/*} ]; then \
	    echo "$(GO) test $${t%%:*} -run '^$$' -fuzz '^$${t#*:}$$' -fuzztime $(FUZZTIME)"; \
	    $(GO) test $${t%%:*} -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) || exit 1; \
	  fi; i=$$((i + 1)); \
	done

bench: deps build
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin build
