#!/usr/bin/env bash
# The two entry points of the README, for a fresh Debian 12 machine:
#   bash experiments/lexp.sh run [lexp run options...]   install what is missing, build, run the default recipe
#   bash experiments/lexp.sh test                        install what is missing, build, run the whole test suite
# Only Debian packages are installed; nothing else is downloaded. Any other first word is passed to
# the built `lexp` command (e.g. `bash experiments/lexp.sh bench --compare`).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(g++ cmake make git libeigen3-dev libtbb-dev libhdf5-dev hdf5-tools libboost-dev
  libboost-iostreams-dev libboost-filesystem-dev libboost-math-dev gnuplot-nox libgnuplot-iostream-dev
  libgtest-dev libtomlplusplus-dev libcli11-dev libfmt-dev libxsmm-dev
  fortunes bible-kjv python3)  # the text corpora of task text_lm (task.corpus = fortunes, kjv, python)
# For the tests only: qemu-user emulates an older CPU (tests/experiments/cpu_guard_test.cc).
TEST_PACKAGES=(qemu-user)

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "lexp: installing Debian packages: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "lexp: need root (or sudo) to install: ${missing[*]}" >&2; exit 2; }
    sudo="sudo"
  fi
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

build() {
  # LEXP_WERROR=ON (set by .ci/run) makes any warning in lexp's own code an error.
  cmake --preset release -DLEXP_WERROR="${LEXP_WERROR:-OFF}" >/dev/null
  cmake --build --preset release -j "$(nproc)"
}

cmd="${1:-run}"
shift || true
[ "$cmd" = test ] && PACKAGES+=("${TEST_PACKAGES[@]}")
install_missing
build
case "$cmd" in
  test)
    ctest --test-dir build/release --output-on-failure -j "$(nproc)" "$@"
    ;;
  run)
    exec ./build/release/lexp run "$@"
    ;;
  *)
    exec ./build/release/lexp "$cmd" "$@"
    ;;
esac
