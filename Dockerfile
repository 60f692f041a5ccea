# headroom's container image: what a shard pod of `headroom run --cluster kubernetes`
# runs (`headroom shard ...`), and a way to run headroom itself in a cluster.
#
#   docker build -t headroom:0.1.0 .
#
# Two stages: the shipped binary is built with the Rust toolchain (a C compiler is
# needed for ring and the bundled SQLite, both in the rust image), then copied alone
# into a slim Debian. No CA bundle is installed: HTTPS targets are verified against
# the Mozilla roots compiled into headroom, and the Kubernetes client trusts the
# cluster CA the service account mounts.

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY . .
# `dist`: the release profile with thin LTO across the workspace's crates (Cargo.toml).
RUN cargo build --profile dist --locked --bin headroom \
    && install -m 0755 target/dist/headroom /headroom

FROM debian:bookworm-slim
# A fixed, unprivileged user: shards need no privilege (load is plain sockets), and a
# numeric id lets `runAsNonRoot` policies check it.
RUN useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin headroom
COPY --from=build /headroom /usr/local/bin/headroom
USER 10001:10001
# The store defaults to .headroom/ in the working directory, writable by the user.
WORKDIR /tmp
ENTRYPOINT ["headroom"]
CMD ["--help"]
