# pushpull: `make bench` runs the benchmark, `make test` runs the tests.
# Both install what they need first (make servers, make deps).

GO      ?= go
BIN     := bin/pushpull

.PHONY: all deps servers build test bench vet clean

all: build

# servers installs MariaDB, memcached and Redis from Debian's packages when they
# are missing. deps does that and builds the Vitess programs (vttestserver,
# vtcombo, mysqlctl) from vitess.io/vitess in the module
# internal/vitess/tools unless they are built already (a few minutes the
# first time; cached outside the repository, see internal/vitess). The
# tests need both; the default benchmark only the servers, so that its five
# minutes do not start with a Vitess build (bench --vitess builds it on
# first use). The tests and the benchmark start private copies of the
# servers; no system service is configured or started.
servers:
	@bash scripts/deps.sh

deps: servers
	@$(GO) run ./internal/vitess/install >/dev/null

# build stamps the binary with its commit (-buildvcs=auto, whatever GOFLAGS
# says), which every saved run records.
build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/pushpull

vet:
	$(GO) vet ./...

test: deps vet
	$(GO) test -race -timeout 30m ./...

# bench runs the paper's benchmark on a fresh sandbox (about 5 minutes) and
# saves the run under results/runs/<UTC timestamp>/.
bench: servers build
	./$(BIN) bench

clean:
	rm -rf bin
