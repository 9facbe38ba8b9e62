#!/usr/bin/env bash
# setup.sh: install the Debian packages tasc needs that are missing (idempotent; apt-get as root).
# The CUDA toolkit (nvcc, cuBLAS, cuDNN) is expected on the machine already; without it tasc
# builds CPU-only.
set -euo pipefail
pkgs=(cmake make gcc pkg-config libjansson-dev uthash-dev libz3-dev
      libprotobuf-c-dev protobuf-c-compiler libonnx-dev)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "setup: all packages present"
    exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
