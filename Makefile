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
FUZZTIME ?= 10s
SCENARIO ?=

.PHONY: deps build test test-scenario gate-full lint fuzz bench clean

deps:
	@bash scripts/deps.sh

build: $(BIN) $(SKEWLIB)

$(BIN): $(shell find . -name '*.go' -not -path './store/*') $(shell find scenarios/catalog -name '*.yaml') go.mod go.sum
	$(GO) build -o $(BIN) ./cmd/jepsen-lite

$(SKEWLIB): clockskew/clockskew.c
	@mkdir -p build
	cc -shared -fPIC -O2 -Wall -o $@ $< -ldl

test: deps build
	$(GO) test -race -count=1 ./...

test-scenario: deps build
ifeq ($(SCENARIO),)
	$(BIN) gate --tags quick
else
	$(BIN) run $(SCENARIO)
endif

gate-full: deps build
	$(BIN) gate --seeds 5

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

fuzz: build
	$(GO) test ./history -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(FUZZTIME)
	$(GO) test ./checker -run '^$$' -fuzz '^FuzzCheck$$' -fuzztime $(FUZZTIME)

bench: deps build
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin build
