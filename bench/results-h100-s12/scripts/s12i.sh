# session 12 call I: squeezenet's original graph at batch 1, set up and timed 4 times (a fresh
# process each, --verbose --profile): why its latency varies between runs (0.262-0.290 ms in g/)
set -u
ROOT=$(pwd)
R=$OUT/i; mkdir -p $R
rm -rf .device/new; (cd .device && tar xJf pkg12g.tar.xz)
GPU=$ROOT/.device/new/bin/tasc
( . bench/device_env.sh; device_prelude $R
  TMP=$(mktemp -d)
  $GPU model squeezenet --out $TMP/sq.json >/dev/null
  for k in 1 2 3 4; do
    timeout 100 $GPU bench $TMP/sq.json --reps 200 --no-cpu --profile --verbose > $R/sq-$k.log 2>&1
    echo "run $k: $(grep 'latency median' $R/sq-$k.log)"
  done )
rm -rf $R/cache; tar czf $OUT/i.tgz -C $OUT i && rm -rf $OUT/i
