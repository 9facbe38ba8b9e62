# session 10 call M: issue 15's modes (built-ins only, rules only, default, eqsat) on every zoo model, one call
set -u
ROOT=$(pwd)
rm -rf .device/new; (cd .device && tar xJf pkg10z.tar.xz)
R=$OUT/m; mkdir -p $R
timeout 560 bash bench/optimize/run_modes_device.sh $R/modes > $R/modes.out 2>&1
cat $R/modes/modes.md
rm -rf $R/modes/cache; cp .device/new/VERSION $R/; tar czf $OUT/m.tgz -C $OUT m && rm -rf $OUT/m
