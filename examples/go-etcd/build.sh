#!/bin/sh
# Builds the etcd example client offline, in GOPATH mode, from the sources Debian's
# golang-etcd-server-dev ships under /usr/share/gocode. Usage: build.sh <output binary>
set -eu
out=${1:?usage: build.sh <output binary>}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
# Go's build cache goes next to the binary, so that a rebuild takes seconds.
cache=$(dirname "$out")/go-build-cache
cd "$here"
GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$cache" GOFLAGS= go build -o "$out" .
