#!/usr/bin/env bash
# Builds Arbiter with plain cargo + wasm-bindgen (no cargo-leptos needed, nothing downloaded):
#   target/site/pkg/arbiter.{js,wasm,css}, target/site/favicon.svg, and the `arbiter` binary.
#   scripts/build-site.sh            debug build
#   scripts/build-site.sh --release  release server, size-optimised wasm (wasm-opt -Oz from npm binaryen)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PWD/end2end/node_modules/.bin:$PATH"
. scripts/build-env.sh

release=0
[ "${1:-}" = "--release" ] && release=1
site=target/site
pkg=$site/pkg

if [ "$release" = 1 ]; then
  cargo build --locked -p frontend --lib --target wasm32-unknown-unknown --target-dir target/front --profile wasm-release
  wasm=target/front/wasm32-unknown-unknown/wasm-release/frontend.wasm
else
  cargo build --locked -p frontend --lib --target wasm32-unknown-unknown --target-dir target/front
  wasm=target/front/wasm32-unknown-unknown/debug/frontend.wasm
fi

rm -rf "$pkg"; mkdir -p "$pkg"
wasm-bindgen --target web --no-typescript --out-dir "$pkg" --out-name arbiter "$wasm"
# The server's hydration script asks for /pkg/arbiter.wasm (LEPTOS_OUTPUT_NAME is set at compile time).
mv "$pkg/arbiter_bg.wasm" "$pkg/arbiter.wasm"
if [ "$release" = 1 ]; then
  wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int "$pkg/arbiter.wasm" -o "$pkg/arbiter.wasm"
fi
cp style/main.css "$pkg/arbiter.css"
cp -r public/. "$site/"

if [ "$release" = 1 ]; then
  cargo build --locked -p server --release
else
  cargo build --locked -p server
fi
echo "build-site: $(du -b "$pkg/arbiter.wasm" | cut -f1) bytes of wasm in $pkg"
