# syntax=docker/dockerfile:1
# The toolgate gateway as a container image (docs/deploy.md).
#
#   docker build -t toolgate:0.1.0 .
#   docker run --rm -p 8787:8787 toolgate:0.1.0
#
# Stage 1 builds the release binary; the dependency downloads and target/ live in BuildKit cache
# mounts, so a rebuild after a source change recompiles only the workspace's own crates.
# Stage 2 is Debian slim with CA certificates, the binary and the default tools.yaml, run as
# uid 10001.

ARG RUST_VERSION=1.95
ARG DEBIAN_RELEASE=bookworm

FROM rust:${RUST_VERSION}-${DEBIAN_RELEASE} AS builder
WORKDIR /src
# The whole workspace: cargo loads every member's manifest, and build.rs compiles ./tools.yaml
# into the binary's dispatch table. .dockerignore keeps target/, .peers/ and fuzz/ out.
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/usr/local/cargo/git,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --release --locked --bin toolgate \
    && install -D -m 0755 target/release/toolgate /out/toolgate

FROM debian:${DEBIAN_RELEASE}-slim
# CA certificates for HTTPS upstreams (fetch, OpenAPI, MCP, A2A, OAuth issuers, rediss://).
# Not pinned to a version: the slim image's apt lists carry one ca-certificates, and a pin
# breaks the build as soon as Debian publishes an update.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 toolgate \
    && useradd --system --uid 10001 --gid 10001 --no-create-home \
       --home-dir /nonexistent --shell /usr/sbin/nologin toolgate
COPY --from=builder /out/toolgate /usr/local/bin/toolgate
# The default toolset's settings. Mount your own over it (docker run -v ...:/etc/toolgate:ro,
# or the Kubernetes ConfigMap in deploy/kubernetes). Its `files.root: .` is this folder, so
# read_file and list_dir see /etc/toolgate only.
COPY tools.yaml /etc/toolgate/tools.yaml
ENV TOOLGATE_CONFIG=/etc/toolgate/tools.yaml
USER 10001:10001
WORKDIR /tmp
EXPOSE 8787
# No curl in the image: bash's /dev/tcp asks GET /healthz (it answers whatever the Host header
# and without an API key). Kubernetes ignores HEALTHCHECK; its probes are in the Deployment.
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8787 && printf 'GET /healthz HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["toolgate"]
# All interfaces: a container is reached through its own address. Only loopback Host headers
# are accepted until gateway.allowed_hosts lists the names clients use (a published port
# reached as 127.0.0.1:8787 or localhost:8787 works as is).
CMD ["serve", "--http", "0.0.0.0:8787"]
