# verifier/ship_args.sh: sourced by verifier/ship.sh and verifier/ship_prune.sh with their own
# arguments. Strict mode; exactly one argument, the tasc binary (else the usage line and exit 2),
# as $tasc, an absolute path; the repository root as the working directory.
set -euo pipefail
if [ $# -ne 1 ]; then
    echo "usage: verifier/$(basename "$0") TASC" >&2
    exit 2
fi
tasc=$(realpath "$1")
cd "$(dirname "${BASH_SOURCE[0]}")/.."
