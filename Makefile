# The two commands the README starts with:
#   make run    runs the whole service locally (go run ./cmd/commerce dev)
#   make test   runs vet and every test (needs Postgres on 127.0.0.1:5432)

GO ?= go

.PHONY: run test vet build race fmt

run:
	$(GO) run ./cmd/commerce dev

test: vet
	$(GO) test -count=1 -timeout 45m ./...

vet:
	$(GO) vet ./...

build:
	$(GO) build -o bin/commerce ./cmd/commerce

# The race detector rebuilds the Temporal server: slow on small machines.
race:
	$(GO) test -race -count=1 -timeout 90m ./...

fmt:
	gofmt -l -w $$(git ls-files '*.go')
