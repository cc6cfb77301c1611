#!/usr/bin/env bash
# Build hurtle's viewer bundle from npm, reproducibly: the exact versions in package-lock.json, then esbuild into
# hurtle/io/viewer/viewer.js (package data, committed) with three.js's licence beside it.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
npm run build
cp node_modules/three/LICENSE ../hurtle/io/viewer/LICENSE-three.txt
echo "built ../hurtle/io/viewer/viewer.js ($(wc -c < ../hurtle/io/viewer/viewer.js) bytes)"
