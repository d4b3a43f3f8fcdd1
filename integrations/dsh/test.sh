#!/usr/bin/env bash
# CI entry point of the DeepSeek Harness plugin: installs the pinned packages
# from package-lock.json and runs the tests against a freshly built bridge.
set -euo pipefail
cd "$(dirname "$0")"
export PATH="$PATH:/usr/local/go/bin"
npm ci --no-audit --no-fund
npm test
