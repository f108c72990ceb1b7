# pushpull: `make bench` runs the benchmark, `make test` runs the tests.
# Both install what they need first (make deps).

GO      ?= go
BIN     := bin/pushpull

.PHONY: all deps build test bench vet clean

all: build

# deps installs MariaDB and memcached from Debian's packages when they are
# missing, and builds the Vitess programs (vttestserver, vtcombo, mysqlctl)
# from vitess.io/vitess in the module internal/vitess/tools unless they are
# built already (a few minutes the first time; cached outside the
# repository, see internal/vitess). The tests and the benchmark start
# private copies of the servers; no system service is configured or
# started.
deps:
	@bash scripts/deps.sh
	@$(GO) run ./internal/vitess/install >/dev/null

build:
	$(GO) build -o $(BIN) ./cmd/pushpull

vet:
	$(GO) vet ./...

test: deps vet
	$(GO) test -race -timeout 30m ./...

# bench runs the paper's benchmark on a fresh sandbox (about 5 minutes) and
# saves the run under results/runs/<UTC timestamp>/.
bench: deps build
	./$(BIN) bench

clean:
	rm -rf bin
