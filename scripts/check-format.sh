#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Fails when a tracked C++ file differs from what clang-format makes of it with
# the top-level .clang-format. Nothing is rewritten; to fix a file run
#   clang-format -i FILE...
# CLANG_FORMAT picks the binary (default: clang-format-14, Debian 12's).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
cf=${CLANG_FORMAT:-clang-format-14}
command -v "$cf" > /dev/null || cf=clang-format
git ls-files -z '*.cpp' '*.hpp' | xargs -0 -r "$cf" --style=file --dry-run -Werror
echo "format: $(git ls-files '*.cpp' '*.hpp' | wc -l) files match .clang-format ($("$cf" --version | grep -o 'version [0-9.]*'))"
