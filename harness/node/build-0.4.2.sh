#!/usr/bin/env bash
# Builds the two Node.js wrappers of iai-mcp release 0.4.2 that the
# scorecard is shown against (docs/scorecard.md):
#
#   released  mcp-wrapper exactly as tagged
#   nolazy    the same without the lazy `await bridge.start();` in its
#             tools/call handler (src/index.ts), i.e. the V3-05 fix alone
#
# usage: build-0.4.2.sh OUT_DIR [GIT_SOURCE]
#   GIT_SOURCE: a clone URL or a local repository
#               (default https://github.com/CodeAbra/iai-mcp)
# Needs git, Node.js 18+ and npm with access to the npm registry.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 OUT_DIR [GIT_SOURCE]" >&2
  exit 2
fi
OUT=$1
SOURCE=${2:-https://github.com/CodeAbra/iai-mcp}
COMMIT=5df910167ae3097c1c9fd001f916f2ebc1846ec9   # tag v0.4.2

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
CHECKOUT="$OUT/source"
rm -rf "$CHECKOUT"
git clone --quiet --no-checkout "$SOURCE" "$CHECKOUT"
git -C "$CHECKOUT" checkout --quiet "$COMMIT"

build() {  # $1: variant directory
  rm -rf "$OUT/$1"
  mkdir -p "$OUT/$1"
  cp -R "$CHECKOUT/mcp-wrapper" "$OUT/$1/"
  if [ "$1" = nolazy ]; then
    local index="$OUT/$1/mcp-wrapper/src/index.ts"
    local found
    found=$(grep -cx '    await bridge.start();' "$index" || true)
    if [ "$found" != 1 ]; then
      echo "expected one '    await bridge.start();' line in $index, found $found" >&2
      exit 1
    fi
    sed -i.orig '/^    await bridge\.start();$/d' "$index"
  fi
  (cd "$OUT/$1/mcp-wrapper" && npm ci --no-audit --no-fund && npm run build)
  test -f "$OUT/$1/mcp-wrapper/dist/index.js"
}

build released
build nolazy
echo "released: node $OUT/released/mcp-wrapper/dist/index.js"
echo "nolazy:   node $OUT/nolazy/mcp-wrapper/dist/index.js"
