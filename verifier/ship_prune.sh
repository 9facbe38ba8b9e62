#!/bin/bash
# ship_prune.sh TASC: the default 4-op rule set from the proved one. rules/verified-4-full.json.xz
# (all the proved 4-op rules, verifier/ship.sh; kept compressed: 0.6 MB for 20 MB, most of it
# repeated in the default) less the rules one move of another rule derives:
#
#   xz -dk rules/verified-4-full.json.xz
#   tasc rules prune --rules rules/verified-4-full.json --by move --out rules/verified-4.json
#
# (rules/README.md, "Derivable rules": on every zoo and shared ONNX model, in every search mode, the
# optimizer finds the same graphs with either set; bench/rules/results.md). Then rules/MANIFEST:
# the full set's section is named for its file, and the default's section (its sha256, the
# command, its manifest, the prune summary) replaces any earlier one at the end. Run from anywhere.
. "$(dirname "$0")/ship_args.sh" "$@" # strict mode, $tasc, the repository root
full=rules/verified-4-full.json
out=rules/verified-4.json
[ -f "$full.xz" ] || { echo "ship_prune.sh: $full.xz is missing (verifier/ship.sh makes it)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
xz -dc "$full.xz" > "$tmp/full.json"
"$tasc" rules prune --rules "$tmp/full.json" --by move --out "$tmp/pruned.json" > "$tmp/prune.txt"
mv "$tmp/pruned.json" "$out"
man=rules/MANIFEST
# the full set's section under its own name; everything from the default's old section on dropped
sed -e "s#^== rules/verified-4.json\$#== $full (stored as $full.xz)#" -e "s#^== $full\$#== $full (stored as $full.xz)#" \
    -e "s#--out rules/verified-4.json --quarantine#--out $full --quarantine#" \
    -e "s#tasc verify rules/verified-4.json --out rules/verified-4.json#tasc verify $full --out $full#" "$man" |
    sed "\#^== $out (the default)\$#,\$d" |
    awk '{ l[NR] = $0 } END { n = NR; while (n > 0 && l[n] == "") n--; for (i = 1; i <= n; i++) print l[i] }' > "$tmp/MANIFEST"
{
    echo
    echo "== $out (the default)"
    echo "sha256: $(sha256sum "$out" | cut -d' ' -f1)"
    echo "commands: xz -dk $full.xz; tasc rules prune --rules $full --by move --out $out (verifier/ship_prune.sh)"
    echo "manifest of the file:"
    sed -n '1,/"rules": \[/p' "$out" | grep -v '"rules": \[' | sed 's/^/  /'
    echo "tasc rules prune:"
    sed "s#$tmp/pruned.json#$out#; s/^/  /" "$tmp/prune.txt"
} >> "$tmp/MANIFEST"
mv "$tmp/MANIFEST" "$man"
echo "wrote $out ($(grep -c '"id"' "$out") of $(grep -c '"id"' "$tmp/full.json") rules) and rules/MANIFEST"
