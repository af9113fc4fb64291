#!/usr/bin/env bash
# Builds a real Ollama for ctxkit's end-to-end tests (internal/realollama, guard's
# realollama_test.go) and prints the binary's path on stdout; everything else goes to stderr.
#
#   CTXKIT_TEST_OLLAMA="$(.ci/ollama.sh)" go test ./guard/ ./internal/realollama/ ./internal/tinymodel/
#
# Ollama v0.17.4 (the newest the Go module proxy serves) is built from its Go module, on
# CPU, once: the binary is cached in ${CTXKIT_CACHE:-$HOME/.cache/ctxkit}/ollama-v0.17.4/
# and later runs only print its path. It needs Debian's nlohmann-json3-dev and libstb-dev
# (installed when missing) and a stand-in miniaudio header (.ci/ollama/miniaudio/): the
# module zip leaves out llama.cpp's vendor/ folders, and audio input is never used.
set -euo pipefail

version=v0.17.4
here="$(cd "$(dirname "$0")" && pwd)"
cache="${CTXKIT_CACHE:-$HOME/.cache/ctxkit}/ollama-$version"
bin="$cache/ollama"

mkdir -p "$cache"
# One build at a time: a second run waits, then finds the binary.
exec 9>"$cache/.lock"
flock 9

if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi

missing=()
for pkg in nlohmann-json3-dev libstb-dev; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== apt-get install ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq >&2
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

echo "== go install github.com/ollama/ollama@$version (CPU; a few minutes cold)" >&2
start=$(date +%s)
tmp="$(mktemp -d "$cache/build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
# Outside any module, so that ctxkit's go.mod plays no part.
(cd "$tmp" &&
  CGO_ENABLED=1 \
  CGO_CFLAGS="-O2 -I$here/ollama" \
  CGO_CXXFLAGS="-O2 -I$here/ollama" \
  GOBIN="$tmp" GOFLAGS= GOWORK=off \
  go install "github.com/ollama/ollama@$version" >&2)
mv "$tmp/ollama" "$bin"
echo "== ollama $version built in $(($(date +%s) - start)) s: $bin" >&2
echo "$bin"
