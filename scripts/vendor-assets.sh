#!/usr/bin/env bash
# Vendors the live dashboard's chart library into assets/uplot/: the version pinned in
# assets/package.json, as npm serves it, checked against the integrity recorded in
# assets/package-lock.json. Writes the dist files headroom embeds (min.js, min.css),
# the LICENSE, and SHA256SUMS, which `cargo test dashboard::assets` checks the
# embedded files against. Run it after changing the pinned version (then
# `npm install --package-lock-only` in assets/ first, to record the new integrity).
# Nothing here runs at build or test time: the vendored files are committed.
set -euo pipefail
cd "$(dirname "$0")/../assets"

version=$(node -p 'require("./package.json").dependencies.uplot')
want=$(node -p 'require("./package-lock.json").packages["node_modules/uplot"].integrity')
lock_version=$(node -p 'require("./package-lock.json").packages["node_modules/uplot"].version')
[ "$version" = "$lock_version" ] || {
    echo "package.json pins uplot $version but package-lock.json records $lock_version" >&2
    exit 1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack "uplot@$version" --silent >/dev/null)
tarball="$tmp/uplot-$version.tgz"
got="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
[ "$got" = "$want" ] || {
    echo "uplot-$version.tgz: integrity $got, package-lock.json records $want" >&2
    exit 1
}
tar -xzf "$tarball" -C "$tmp"
cp "$tmp/package/dist/uPlot.iife.min.js" "$tmp/package/dist/uPlot.min.css" \
    "$tmp/package/LICENSE" uplot/
(cd uplot && sha256sum uPlot.iife.min.js uPlot.min.css LICENSE > SHA256SUMS)
echo "vendored uplot $version into assets/uplot/"
