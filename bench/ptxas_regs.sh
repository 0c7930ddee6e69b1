#!/usr/bin/env bash
# Registers and spills per generated kernel, as ptxas -v reports them, for two builds of
# tessera side by side: bench/ptxas_regs.sh OLD_BIN NEW_BIN [SCRIPTS…]
# Prints one row per kernel and target: name, old regs, new regs, ratio, old/new spill bytes.
set -euo pipefail
old="$1"; new="$2"; shift 2
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ptxas="${TESSERA_PTXAS:-$("$root/scripts/install-ptxas" 2>/dev/null)}"
scripts=("$@")
[ ${#scripts[@]} -gt 0 ] || scripts=("$root"/tests/ir/*.tsr "$root"/tests/golden/lower_*emu*.tsr "$root"/examples/*.tsr)
tmp="$(mktemp -d)"
for arch in sm_80 sm_90; do
    for tag in old new; do
        bin="$old"; [ "$tag" = new ] && bin="$new"
        for s in "${scripts[@]}"; do
            (cd "$(dirname "$s")" && TESSERA_CUDA=off "$bin" run --target "$arch" --device cpu \
                --emit-ptx "$tmp/$arch/$tag/$(basename "$s" .tsr)" "$(basename "$s")" >/dev/null 2>&1 || true)
        done
    done
    for f in "$tmp/$arch"/new/*/*.ptx; do
        rel="${f#"$tmp/$arch/new/"}"
        k="${rel%.ptx}"
        [ -f "$tmp/$arch/old/$rel" ] || continue
        stat() { "$ptxas" -arch="$arch" -v "$1" -o /dev/null 2>&1 | awk '/Used/ {for(i=1;i<=NF;i++) if($(i+1) ~ /^registers/) r=$i} /spill stores/ {s=$5} END {print r+0, s+0}'; }
        read -r ro so <<<"$(stat "$tmp/$arch/old/$rel")"
        read -r rn sn <<<"$(stat "$f")"
        awk -v k="$k" -v a="$arch" -v ro="$ro" -v rn="$rn" -v so="$so" -v sn="$sn" \
            'BEGIN { printf "%-64s %s %4d %4d %5.2f %d/%d\n", k, a, ro, rn, (ro ? rn/ro : 0), so, sn }'
    done
done
rm -rf "$tmp"
