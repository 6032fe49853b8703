# syntax=docker/dockerfile:1
# The commerce binary on a minimal, non-root base image. Every process of the
# compose file runs it with a different command (serve, worker, migrate).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# -tags nodev leaves out `commerce dev` and the embedded Temporal server and
# Web UI it runs: the image's processes talk to the compose file's Temporal
# server, and the binary is a fifth of the size, its API process under half
# the memory (docs/benchmarks.md).
# VERSION is the release tag the image is built for (CHANGELOG.md); the
# binary reports it in `commerce version`, /healthz and commerce_build_info.
ARG VERSION=v0.3.0-dev
RUN CGO_ENABLED=0 go build -tags nodev -trimpath \
    -ldflags="-s -w -X github.com/commerce-integration/commerce/internal/version.Version=${VERSION}" -o /out/commerce ./cmd/commerce

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/commerce /commerce
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/commerce"]
CMD ["serve"]
