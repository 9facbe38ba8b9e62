#!/usr/bin/env bash
# seeds.sh OUT: the seed corpus of the fuzz harnesses, from the repository's own files: OUT/json
# (models: tests/data, models/), OUT/rules (rule files of tests/data and rules/ up to 128 KiB),
# OUT/onnx (tests/data, and ../shared/models/onnx where the checkout has it), OUT/npy (.npy files).
# A JSON file goes to json or rules by its "format". Run from the repository root; idempotent.
set -euo pipefail
OUT=${1:?usage: seeds.sh OUT}
mkdir -p "$OUT/json" "$OUT/rules" "$OUT/onnx" "$OUT/npy"
# copy FILE DIR: under a name made from the path (without leading "../"), so that files of equal
# names do not collide; written, not cp'd, so that read-only sources give writable copies
copy() { cat "$1" > "$2/$(echo "${1#../}" | tr '/' '_')"; }
# rule files over 128 KiB (the shipped sets) would make every run parse and check thousands of rules
while IFS= read -r f; do
    if grep -q '"tasc-rules"' "$f"; then
        [ "$(wc -c < "$f")" -le 131072 ] && copy "$f" "$OUT/rules"
    elif grep -q '"tasc-model"' "$f"; then
        copy "$f" "$OUT/json"
    fi
done < <(find tests/data models rules -name '*.json' -size -2M | sort)
while IFS= read -r f; do copy "$f" "$OUT/onnx"; done < <(find tests/data -name '*.onnx' | sort)
if [ -d ../shared/models/onnx ]; then
    while IFS= read -r f; do copy "$f" "$OUT/onnx"; done < <(find ../shared/models/onnx -name '*.onnx' -size -16M | sort)
fi
while IFS= read -r f; do copy "$f" "$OUT/npy"; done < <(find tests/data -name '*.npy' | sort)
if [ -d ../shared/models/onnx ]; then
    while IFS= read -r f; do copy "$f" "$OUT/npy"; done < <(find ../shared/models/onnx -name '*.npy' -size -16M | sort)
fi
for d in json rules onnx npy; do
    printf 'seeds: %-5s %3d files\n' "$d" "$(ls "$OUT/$d" | wc -l)"
done
