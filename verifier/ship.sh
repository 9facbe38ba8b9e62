#!/bin/bash
# ship.sh TASC: make the shipped rule sets with the commands themselves.
#
#   tasc generate --max-ops N --out CANDIDATES     (N = 3 and 4)
#   tasc verify CANDIDATES --out rules/verified-N.json --quarantine rules/verified-N.quarantine.json \
#       --mark-free-splits
#
# (the 4-op set as rules/verified-4-full.json, kept as rules/verified-4-full.json.xz) and write rules/MANIFEST: for each file its sha256,
# its manifest (op set, max ops, the count of every stage, the axioms' and op set's hashes, the
# tool), and the two commands' summary tables; then verifier/ship_prune.sh makes the default 4-op
# set, rules/verified-4.json: the full one less the rules one move of another derives.
# Run from anywhere; TASC is the tasc binary (a Release build: the 4-op generation takes minutes).
. "$(dirname "$0")/ship_args.sh" "$@" # strict mode, $tasc, the repository root
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
man=rules/MANIFEST.tmp
{
    echo "# rules/MANIFEST: the shipped rule sets, made by verifier/ship.sh (do not edit by hand)."
    echo "# Regenerate: verifier/ship.sh build/tasc   (tests/test_verify.c checks the 3-op set against a fresh"
    echo "# generation and proves every shipped rule again)"
} > "$man"
for n in 3 4; do
    cand="$tmp/candidates-$n.json"
    out="rules/verified-$n.json"
    [ "$n" = 4 ] && out="rules/verified-4-full.json"
    quar="rules/verified-$n.quarantine.json"
    "$tasc" generate --max-ops "$n" --out "$cand" > "$tmp/generate-$n.txt"
    "$tasc" verify "$cand" --out "$out" --quarantine "$quar" --no-cache --mark-free-splits > "$tmp/verify-$n.txt"
    {
        echo
        echo "== $out"
        echo "sha256: $(sha256sum "$out" | cut -d' ' -f1)"
        echo "quarantine: $quar (sha256 $(sha256sum "$quar" | cut -d' ' -f1))"
        echo "commands: tasc generate --max-ops $n --out CANDIDATES; tasc verify CANDIDATES --out $out --quarantine $quar --mark-free-splits"
        echo "manifest of the file:"
        sed -n '1,/"rules": \[/p' "$out" | grep -v '"rules": \[' | sed 's/^/  /'
        echo "tasc generate:"
        sed "s#$cand#CANDIDATES#; s/^/  /" "$tmp/generate-$n.txt"
        echo "tasc verify:"
        sed 's/^/  /' "$tmp/verify-$n.txt"
    } >> "$man"
done
mv "$man" rules/MANIFEST
xz -9 -T1 -f rules/verified-4-full.json # -T1: the same bytes every time
verifier/ship_prune.sh "$tasc" # run from the repository root (the cd above)
echo "wrote rules/verified-3.json, rules/verified-4-full.json.xz, their quarantine files, rules/verified-4.json and rules/MANIFEST"
