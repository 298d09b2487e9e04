# syntax=docker/dockerfile:1
#
# The Network Enforcer image: the collector distribution that builder-config.yaml
# describes (cmd/network-enforcer, with the components that the OpenTelemetry
# Collector Builder, ocb, generates from it), built as `make build` does, as one
# static binary on a distroless base with no shell, run as a non-root user. The Helm chart runs it as the enforcer, the default collector
# and the network-enforcer node agent.
#
#   docker buildx build --platform linux/amd64,linux/arm64 -t IMAGE .
#
# `make image` builds the same image FROM scratch with no container engine
# (tools/image); test/image checks that its configuration and files are what this
# file's final stage says.

ARG GO_VERSION=1.26.8

# The build runs on the builder's own platform and cross-compiles: `go build`
# targets TARGETARCH.
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS=linux
ARG TARGETARCH
ENV CGO_ENABLED=0
WORKDIR /src

# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download

COPY . .
# Whatever a work tree had built or cached stays out of the image's build.
RUN rm -rf bin _build .cache

# `make build`: the distribution's main, whose components.go ocb generated from
# builder-config.yaml (make generate; make check-generate holds it in step); here
# static, stripped and for the target platform.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    GOOS="${TARGETOS}" GOARCH="${TARGETARCH}" \
    go build -trimpath -ldflags="-s -w" -o /out/network-enforcer ./cmd/network-enforcer

# distroless static, nonroot: CA roots and /etc/passwd, no shell, no package
# manager. The node agent's pods run it as root to read the node's logs; every
# other pod runs it as this user.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/network-enforcer /network-enforcer
USER 65532:65532
# 4317/4318: OTLP (ztunnel records, or events at the default collector);
# 4320: the leader receiver (what the other replicas learned, scale-out);
# 8888: the collector's metrics; 9464: network_enforcer_policy_denies;
# 13133: health_check.
EXPOSE 4317 4318 4320 8888 9464 13133
ENTRYPOINT ["/network-enforcer"]
CMD ["--config=/etc/network-enforcer/config/config.yaml"]
