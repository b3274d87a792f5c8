# Herald — see README.md.
GO      ?= go
BIN     := bin/herald
PKGS    := ./...
GOFILES  = $(shell git ls-files '*.go' | grep -v '_templ.go$$')

.PHONY: run build test test-long lint vuln generate check-generate bench clean

## build: compile the herald binary into bin/
build:
	$(GO) build -o $(BIN) .

## run: start the console on the embedded default (SQLite + in-process Redis in ./data)
run: build
	./$(BIN) serve

## generate: regenerate templ views
generate:
	$(GO) tool templ generate

## check-generate: fail if the committed templ output is stale
check-generate: generate
	@git diff --exit-code -- '*_templ.go' || (echo "templ output is stale: run 'make generate' and commit" && exit 1)
	@test -z "$$(git status --porcelain -- '*_templ.go')" || (echo "uncommitted templ output: run 'make generate' and commit" && git status --porcelain -- '*_templ.go' && exit 1)

## lint: go vet and gofmt. Vet builds with -race, as the tests do, so that the two share
## one compilation of every package.
lint:
	$(GO) vet -race $(PKGS)
	@test -z "$$(gofmt -l $(GOFILES))" || (echo "gofmt would change:" && gofmt -l $(GOFILES) && exit 1)

## vuln: known vulnerabilities in the dependencies (needs vuln.go.dev, so not in lint)
vuln:
	$(GO) run golang.org/x/vuln/cmd/govulncheck@v1.9.0 $(PKGS)

## test: generated code in sync, lint, and every test with the race detector: the
## everyday and CI run. Set HERALD_TEST_MYSQL_DSN and HERALD_TEST_REDIS_URL to run against
## MySQL and Redis. The long runs (the full-length limits oracle, the Sentinel and
## Cluster failovers, the full-size fault rigs, the soak) are skipped with their reason;
## make test-long runs them. The end-to-end tests of test/e2e (the rate-limit oracle
## and the stress tests, which judge timing across processes), tasks (the limiter
## refuses an admission whose Redis round trip outlasts its 50 ms margin) and the
## browser tests of web each run alone: beside anything else on a small machine they
## starve of CPU. The other packages run two at a time.
## The timing tests of test/e2e run one at a time at the package's start; its other
## tests, which mostly wait for processes they started, three at a time (E2E_PARALLEL).
## TESTFLAGS go to every go test, e.g. TESTFLAGS=-json for each test's duration.
SOLO_PACKAGES := test/e2e tasks web
SOLO_TIMEOUT  := 15m
E2E_PARALLEL  := 3
TESTFLAGS     ?=
test: check-generate lint
	$(GO) test -race -count=1 -p 2 -timeout 10m $(TESTFLAGS) $$($(GO) list ./... $(SOLO_PACKAGES:%=| grep -vx herald/%))
	for p in $(SOLO_PACKAGES); do \
	  $(GO) test -race -count=1 -timeout $(SOLO_TIMEOUT) $$(test $$p = test/e2e && echo -parallel $(E2E_PARALLEL)) $(TESTFLAGS) ./$$p || exit 1; \
	done

## test-long: everything make test runs, then the long runs, for before a release: the
## limits oracle at 600/min over 2,000 messages, the Sentinel and Cluster failovers and
## the fault rigs at 2,000 messages (HERALD_TEST_LONG=only, with the race detector), then
## the soak without it (it measures memory and latency, which the detector multiplies):
## HERALD_SOAK_DURATION, 30 minutes by default, on the embedded default and on MySQL +
## Redis when set.
test-long: test
	HERALD_TEST_LONG=only $(GO) test -race -count=1 -timeout 60m $(TESTFLAGS) ./test/e2e
	HERALD_TEST_LONG=1 $(GO) test -count=1 -timeout 90m -run '^TestSoak$$' $(TESTFLAGS) ./test/e2e

## bench: the pipeline benchmark on MySQL and Redis, the burst mix in both modes, the
## embedded drain as the database grows, recovery after a worker is killed, plus
## micro-benchmarks (results in docs/benchmarks.md). Uses the local MariaDB and Redis unless the variables are set.
bench: export HERALD_TEST_MYSQL_DSN ?= root@tcp(127.0.0.1:3306)/?parseTime=true&loc=UTC&charset=utf8mb4
bench: export HERALD_TEST_REDIS_URL ?= redis://127.0.0.1:6379/0
bench:
	$(GO) test -run '^$$' -bench 'Pipeline|AckLinks|Intake|Concurrency|Dashboard|BurstMix|EmbeddedGrowth|KilledWorker|ScheduledLateness|Email|DingTalk|WeCom|Idle|Escalation|Digest|SilenceRelease|Inbound|Reports' -benchtime 1x -timeout 60m ./bench
	$(GO) test -run '^$$' -bench . -benchmem ./tasks ./simulator ./models

clean:
	rm -rf bin
