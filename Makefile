# The two commands the README starts with:
#   make run    runs the whole service locally (go run ./cmd/commerce dev)
#   make test   runs vet, every test (the abuse suite of bench/abuse, the
#               crash test of bench/crash and the production-shape harness of
#               bench/prodshape at their small sizes among them),
#               and a short fuzz run of the write and inbound bodies, the
#               list queries and the cursors (needs Postgres on 127.0.0.1:5432)

GO ?= go

.PHONY: run test test-postgres vet build race fmt lint lint-openapi bench alerts lighthouse

run:
	$(GO) run ./cmd/commerce dev

# The fuzz runs are bounded by a number of inputs, not a duration: with
# -fuzztime=<duration>, Go 1.26's fuzzing coordinator can report the end of
# the time itself as a failure ("context deadline exceeded", go.dev/issue/75804).
test: vet alerts
	.ci/axe-core
	$(GO) test -count=1 -timeout 45m ./...
	$(GO) test -run='^$$' -fuzz='^FuzzBulkProductsBody$$' -fuzztime=15000x -timeout 10m ./api
	$(GO) test -run='^$$' -fuzz='^FuzzCustomersBody$$' -fuzztime=15000x -timeout 10m ./api
	$(GO) test -run='^$$' -fuzz='^FuzzParseInbound$$' -fuzztime=300000x -timeout 10m ./domain
	$(GO) test -run='^$$' -fuzz='^FuzzProductsBodyReadMatchesDecode$$' -fuzztime=30000x -timeout 10m ./domain
	$(GO) test -run='^$$' -fuzz='^FuzzProductRowsReadEachRowAsTypedDecodingDoes$$' -fuzztime=30000x -timeout 10m ./domain
	$(GO) test -run='^$$' -fuzz='^FuzzListQuery$$' -fuzztime=15000x -timeout 10m ./api
	$(GO) test -run='^$$' -fuzz='^FuzzDecode$$' -fuzztime=300000x -timeout 10m ./internal/cursor

# The end-to-end suite again, its Temporal server on PostgreSQL (persistence
# and visibility in databases of each test's own, dropped when it ends).
test-postgres:
	.ci/axe-core
	COMMERCE_E2E_TEMPORAL_STORE=postgres $(GO) test -count=1 -timeout 45m ./internal/e2e

# The alert rules are valid and each fires, and stays quiet, as its test in
# deploy/prometheus/alerts_test.yml says (promtool: Debian's prometheus,
# installed with apt-get when missing).
alerts:
	@command -v promtool >/dev/null 2>&1 || { echo "alerts: installing promtool (Debian's prometheus)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null; }
	promtool check rules deploy/prometheus/alerts.yml
	promtool test rules deploy/prometheus/alerts_test.yml

# Lighthouse's accessibility score, on a phone, of every page the console
# links to, with long values seeded: at least 98 each (a few minutes; the
# same pages pass axe-core in every `make test`).
lighthouse:
	.ci/axe-core
	.ci/lighthouse
	COMMERCE_LIGHTHOUSE=$(CURDIR)/.cache/node/node_modules/.bin/lighthouse $(GO) test -count=1 -v -run '^TestLighthouseAccessibilityOnAPhone$$' ./internal/app/console

vet:
	$(GO) vet ./...

build:
	$(GO) build -o bin/commerce ./cmd/commerce

# Every performance harness at a size that finishes in a few minutes, and
# one table of each hot path against its baseline measured in the same run
# (docs/benchmarks.md). BENCHFLAGS passes flags, e.g.
# BENCHFLAGS='-profiles prof -temporal-store sqlite'. Then the receipts
# list and search over a million receipts of one organisation (seeded once,
# kept in the bench database between runs). Then the production
# shape without faults: the CPU each process (API, worker, Temporal server,
# Postgres for each) spends per inbound post and per delivery.
bench:
	$(GO) run ./bench $(BENCHFLAGS)
	$(GO) run ./bench/receipts
	$(GO) run ./bench/prodshape -cpu-split 300

# The race detector rebuilds the Temporal server: slow on small machines.
race:
	$(GO) test -race -count=1 -timeout 90m ./...

fmt:
	gofmt -l -w $$(git ls-files '*.go')

# staticcheck must find nothing, and gosec nothing that
# .ci/gosec-accepted.txt does not accept with a reason (installs both, at
# pinned versions, when missing; see .ci/lint).
lint:
	.ci/lint

# Lints the served OpenAPI documents (Redocly, recommended rules) and checks
# that a TypeScript client generated from them compiles; installs what it
# uses under .cache/ on first use (needs npm; see .ci/lint-openapi).
lint-openapi:
	.ci/lint-openapi
