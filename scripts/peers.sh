#!/usr/bin/env bash
# Installs, once per machine, the servers nobody here wrote that the stream, GraphQL,
# gRPC and journey tests run against, into a cache outside the clone:
#
#   bash scripts/peers.sh                # installs what is missing, prints where
#   bash scripts/peers.sh kube           # only the named peers (peer_<name> below)
#   bash scripts/peers.sh --except kube  # every peer but the named ones
#
# Environment:
#   HEADROOM_PEERS   the cache (default: $HOME/.cache/headroom/peers); tests read it too
#   HEADROOM_GO_GCFLAGS  the Go peers' -gcflags (default all=-l: no inlining, below)
#
# Every peer comes from a public registry (npm, PyPI, the Go module proxy)
# at a pinned version; nothing of theirs is committed here. Each section is idempotent:
# it checks for its result first, so a warm cache costs nothing.
set -euo pipefail

PEERS="${HEADROOM_PEERS:-$HOME/.cache/headroom/peers}"
mkdir -p "$PEERS"
cd "$(dirname "$0")/.."
ROOT=$PWD

die() {
    printf 'scripts/peers.sh: FAILED: %s\n' "$*" >&2
    exit 1
}

# The Go peers are compiled without inlining (`-gcflags=all=-l`, every package, the
# standard library too). Inlining is over a fifth of the Go compiler's work on these
# modules: from an empty build cache, the Kubernetes control plane, Prometheus and
# go-httpbin took 1,337 s of CPU, and 1,039 s with `-l`. On a fresh machine these
# builds share the two cores with the Rust build for most of its length. The tests
# drive these servers with a few users and assert what headroom sends and counts, not
# how fast they answer (the Kubernetes tests took 28 s instead of 25). `-N` (no
# optimisation at all) would save nothing more. scripts/kube-control-plane.sh uses the
# same flags.
export HEADROOM_GO_GCFLAGS="${HEADROOM_GO_GCFLAGS:-all=-l}"

# Each peer is a function named peer_<name>; all are run in order below.
# (Sections are added by the features whose tests need them.)

# GraphQL: json-graphql-server (npm), a GraphQL server generated from a JSON file of
# collections (queries `Post(id)`, `allPosts(page, perPage, filter)`, mutations), run by
# node. The tests serve tests/fixtures/graphql-peer.json with it.
peer_graphql() {
    local dir="$PEERS/graphql" version=3.3.2
    if [ -x "$dir/node_modules/.bin/json-graphql-server" ] && [ -f "$dir/.version-$version" ]; then
        return 0
    fi
    command -v npm >/dev/null || die "peer_graphql needs npm (node)"
    mkdir -p "$dir"
    npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
        "json-graphql-server@$version" >/dev/null || return 1
    touch "$dir/.version-$version"
}

# An SSE endpoint from PyPI: sse-starlette (on Starlette, served by uvicorn), in a venv;
# the app is tests/peers/sse_app.py. Result: $PEERS/sse-starlette/venv/bin/python.
peer_sse() {
    local dir="$PEERS/sse-starlette"
    local stamp="$dir/installed-sse-starlette-3.7.0-uvicorn-0.54.0"
    [ -f "$stamp" ] && return 0
    rm -rf "$dir"
    python3 -m venv "$dir/venv" || return 1
    "$dir/venv/bin/pip" install --quiet sse-starlette==3.7.0 starlette==1.10.0 uvicorn==0.54.0 \
        || return 1
    "$dir/venv/bin/python" -c 'import sse_starlette, uvicorn' || return 1
    touch "$stamp"
}

# gRPC: grpc-go's route_guide example server (Apache-2.0), built from the Go module proxy as a
# dependency of a throwaway module (its own replace directives are ignored that way, so it is
# built with the released grpc its go.mod requires). Serves h2c on localhost, port -port,
# features from -json_db_file. tests/fixtures/route_guide.proto is its proto file, copied
# with its licence header. Pinned to the last version whose proto is `syntax = "proto3"`
# (later ones use `edition = "2023"`, which protox does not compile yet). The checksum
# database has no record of this pseudo-version, so its hashes are pinned here in go.sum
# instead (GONOSUMDB for this one module; go still checks them, and its dependencies go
# through the checksum database as usual).
GRPC_EXAMPLES=google.golang.org/grpc/examples
GRPC_EXAMPLES_VERSION=v0.0.0-20240625173332-5f5d4d2c0b86
GRPC_EXAMPLES_SUM="h1:JQ9uXsLkVytQUv9ftsD30q70X6dhF2+9WY95l8IURG0="
GRPC_EXAMPLES_MOD_SUM="h1:pcLkLKa0J2t6razFaMNbBsiShgADYyr2FOSrWPBN5Yk="
peer_grpc() {
    local dir="$PEERS/grpc-route-guide-$GRPC_EXAMPLES_VERSION"
    if [ ! -x "$dir/route_guide_server" ]; then
        command -v go >/dev/null || die "go is needed to build the gRPC example server"
        rm -rf "$dir/build"
        mkdir -p "$dir/build"
        (
            cd "$dir/build"
            export GONOSUMDB="$GRPC_EXAMPLES" GOFLAGS=-mod=mod
            go mod init headroom-peer-grpc >/dev/null 2>&1
            printf '%s %s %s\n%s %s/go.mod %s\n' \
                "$GRPC_EXAMPLES" "$GRPC_EXAMPLES_VERSION" "$GRPC_EXAMPLES_SUM" \
                "$GRPC_EXAMPLES" "$GRPC_EXAMPLES_VERSION" "$GRPC_EXAMPLES_MOD_SUM" >go.sum
            go mod edit -require="$GRPC_EXAMPLES@$GRPC_EXAMPLES_VERSION"
            go get "$GRPC_EXAMPLES/route_guide/server@$GRPC_EXAMPLES_VERSION"
            go build -gcflags="$HEADROOM_GO_GCFLAGS" -o ../route_guide_server \
                "$GRPC_EXAMPLES/route_guide/server"
        ) || return 1
    fi
    ln -sfn "$dir/route_guide_server" "$PEERS/route_guide_server"
}

# A WebSocket echo server from PyPI: the `websockets` library (BSD-3-Clause), in a venv;
# the app is tests/peers/ws_echo.py (every message goes back as it came). tests/ws_steps.rs
# runs headroom's `ws:` steps against it. (It replaced websocat, whose `cargo install`
# took minutes of a fresh machine's two cores.) Result: $PEERS/websockets/venv/bin/python.
WEBSOCKETS_VERSION=15.0.1
peer_websockets() {
    local dir="$PEERS/websockets"
    local stamp="$dir/installed-websockets-$WEBSOCKETS_VERSION"
    [ -f "$stamp" ] && return 0
    rm -rf "$dir"
    python3 -m venv "$dir/venv" || return 1
    "$dir/venv/bin/pip" install --quiet "websockets==$WEBSOCKETS_VERSION" || return 1
    "$dir/venv/bin/python" -c 'import websockets.asyncio.server' || return 1
    touch "$stamp"
}

# Prometheus 3 (Apache-2.0), for its OTLP receiver (`--web.enable-otlp-receiver`):
# `--otlp` pushes land in a real time-series database the tests then query. Debian's
# package (2.42) predates the receiver, so it is built from the Go module proxy (its
# v3 releases are the module's v0.3xx versions). `remove_all_sd` leaves out the cloud
# service discoveries (Azure, AWS, GCE, Kubernetes...), most of the build; the web UI's
# assets are not embedded (the HTTP API, which the tests use, needs none).
PROMETHEUS_VERSION=v0.316.0
peer_prometheus() {
    local dir="$PEERS/prometheus-$PROMETHEUS_VERSION"
    if [ ! -x "$dir/prometheus" ]; then
        command -v go >/dev/null || die "go is needed to build Prometheus"
        mkdir -p "$dir"
        GOBIN="$dir" go install -gcflags="$HEADROOM_GO_GCFLAGS" -tags remove_all_sd \
            -ldflags='-s -w' \
            "github.com/prometheus/prometheus/cmd/prometheus@$PROMETHEUS_VERSION" || return 1
    fi
    ln -sfn "$dir/prometheus" "$PEERS/prometheus"
}

# Kubernetes 1.36 control plane (Apache-2.0): etcd, kube-apiserver, kube-controller-manager
# and kube-scheduler, built from their Go modules by scripts/kube-control-plane.sh (Debian
# has no kube-apiserver, and no images can be pulled). tests/kube.rs runs them on loopback
# with examples/kube_node_agent as the node. Cold: about 7 minutes of two cores and
# 4-5 GB of Go caches, once per machine. Result: $PEERS/kube-v1.36.3/.
peer_kube() {
    HEADROOM_PEERS="$PEERS" bash "$ROOT/scripts/kube-control-plane.sh" >/dev/null
}

# go-httpbin (MIT): httpbin's endpoints (/cookies/set, /redirect/N, /redirect-to, /post
# echoing form fields and files, /anything, /status/N...) as one Go binary, built from
# the Go module proxy. The journeys' tests (tests/support/journey.rs) run it as
# `go-httpbin -host 127.0.0.1 -port P`. Result: $PEERS/go-httpbin (a link to the
# pinned build; `-version` says "dev" in a `go install` build, so the stamp is a file).
GO_HTTPBIN_VERSION=v2.26.0
peer_go_httpbin() {
    local dir="$PEERS/go-httpbin-$GO_HTTPBIN_VERSION"
    if [ ! -f "$dir/installed" ] || [ ! -x "$dir/go-httpbin" ]; then
        command -v go >/dev/null || die "peer_go_httpbin: go is needed to build go-httpbin"
        rm -rf "$dir"
        mkdir -p "$dir"
        GOBIN="$dir" go install -gcflags="$HEADROOM_GO_GCFLAGS" \
            "github.com/mccutchen/go-httpbin/v2/cmd/go-httpbin@$GO_HTTPBIN_VERSION" ||
            die "peer_go_httpbin: go install of go-httpbin $GO_HTTPBIN_VERSION failed"
        "$dir/go-httpbin" -version >/dev/null 2>&1 ||
            die "peer_go_httpbin: the go-httpbin built in $dir does not run"
        touch "$dir/installed"
    fi
    ln -sfn "$dir/go-httpbin" "$PEERS/go-httpbin"
}

# Django (BSD-3-Clause) served by waitress (ZPL-2.1), from PyPI, in a venv: they run
# tests/peers/journey_app/ (its serve.py), a session login behind Django's CSRF
# protection, uploads and login counters, which the journeys' tests log in to. Every
# package is pinned (Django's own dependencies too); the stamp names the versions, so
# a change of pins reinstalls. Result: $PEERS/journey-django/venv/bin/python.
JOURNEY_DJANGO_PINS=(django==5.2.19 asgiref==3.13.0 sqlparse==0.6.1 waitress==3.0.2)
peer_journey_django() {
    local dir="$PEERS/journey-django"
    local stamp="$dir/installed-django-5.2.19-asgiref-3.13.0-sqlparse-0.6.1-waitress-3.0.2"
    [ -f "$stamp" ] && return 0
    command -v python3 >/dev/null || die "peer_journey_django: python3 is needed"
    python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
        die "peer_journey_django: Django 5.2 needs Python 3.10 or later ($(python3 --version))"
    rm -rf "$dir"
    python3 -m venv "$dir/venv" ||
        die "peer_journey_django: python3 -m venv failed (Debian: apt-get install python3-venv)"
    "$dir/venv/bin/pip" install --quiet "${JOURNEY_DJANGO_PINS[@]}" ||
        die "peer_journey_django: pip install ${JOURNEY_DJANGO_PINS[*]} failed"
    "$dir/venv/bin/python" -c 'import django, waitress' ||
        die "peer_journey_django: django or waitress does not import from $dir/venv"
    touch "$stamp"
}

main() {
    local all=() only=() except=() name fn
    mapfile -t all < <(declare -F | awk '{print $3}' | sed -n 's/^peer_//p' | sort)
    while [ "$#" -gt 0 ]; do
        case "$1" in
        --except)
            [ "$#" -ge 2 ] || die "--except needs a peer's name"
            except+=("$2")
            shift 2
            ;;
        -*) die "unknown flag $1 (usage: peers.sh [--except NAME]... [NAME]...)" ;;
        *)
            only+=("$1")
            shift
            ;;
        esac
    done
    for name in "${only[@]}" "${except[@]}"; do
        declare -F "peer_$name" >/dev/null || die "no peer named $name (peers: ${all[*]})"
    done
    for name in "${all[@]}"; do
        if [ "${#only[@]}" -gt 0 ] && [[ " ${only[*]} " != *" $name "* ]]; then continue; fi
        [[ " ${except[*]} " == *" $name "* ]] && continue
        fn="peer_$name"
        "$fn" || die "$fn"
    done
    echo "peers ready in $PEERS"
}

main "$@"
