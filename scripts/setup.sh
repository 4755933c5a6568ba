#!/usr/bin/env bash
# Makes a fresh Debian 12 machine ready to build minfer, then builds it (Release) into build/.
# Safe to run again: installed packages are skipped, the build is incremental.
#
# --arm64: instead, installs what the ARM64 cross build needs (Debian's g++-aarch64-linux-gnu,
# qemu-user-static to run its programs, the arm64 builds of the libraries through multiarch) and
# builds nothing: `cmake --preset arm64 && cmake --build --preset arm64` then builds build-arm64/.
set -euo pipefail
cd "$(dirname "$0")/.."

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

if [ "${1:-}" = "--arm64" ]; then
  arm64_packages=(
    g++-aarch64-linux-gnu qemu-user-static libc6:arm64 cmake ninja-build pkg-config
    nlohmann-json3-dev libcli11-dev libboost-dev
    libfmt-dev:arm64 libpcre2-dev:arm64 libcurl4-openssl-dev:arm64 libssl-dev:arm64
    libcpp-httplib-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64
  )
  missing=()
  for p in "${arm64_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "setup --arm64: installing ${missing[*]}"
    dpkg --print-foreign-architectures | grep -qx arm64 || $sudo dpkg --add-architecture arm64
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
  echo "setup --arm64: ready (cmake --preset arm64 && cmake --build --preset arm64)"
  exit 0
fi

packages=(
  build-essential cmake ninja-build pkg-config git
  clang-14 libclang-rt-14-dev clang-format-14
  libfmt-dev nlohmann-json3-dev libcli11-dev libpcre2-dev libcpp-httplib-dev libboost-dev nginx
  libcurl4-openssl-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-jinja2
  # The Python module (python/) and its tests (tests/python/).
  python3-dev python3-pybind11 python3-numpy python3-pytest
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
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
cmake --preset release -DMINFER_WERROR="$werror"
cmake --build --preset release -j "$(nproc)"
echo "setup: built build/minfer"
