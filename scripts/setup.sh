#!/usr/bin/env bash
# Makes a fresh Debian 12 machine ready to build minfer, then builds it (Release) into build/.
# Safe to run again: installed packages are skipped, the build is incremental.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config git
  clang-14 libclang-rt-14-dev clang-format-14
  libfmt-dev nlohmann-json3-dev libcli11-dev libpcre2-dev libcpp-httplib-dev libboost-dev nginx
  libcurl4-openssl-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-jinja2
  chromium
  # The chat page's markdown, code highlighting and math, embedded at build time
  # (src/server/web_assets.cmake).
  libjs-markdown-it libjs-highlight.js libjs-katex fonts-katex
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm (the server's test clients): Debian's packages unless the machine already has
# them from elsewhere (a nodesource nodejs conflicts with Debian's npm package).
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
cmake --preset release -DMINFER_WERROR="$werror"
cmake --build --preset release -j "$(nproc)"
echo "setup: built build/minfer"
