#!/usr/bin/env bash
# The one-way dependency rule, checked: every `#include "<component>/..."`
# in a component's sources must name a component that the table in
# docs/architecture.md (between the layers:begin/end markers) allows.
# Usage: scripts/check-layers.sh [ROOT]   (exit 1 and file:line per violation)
set -euo pipefail
root=${1:-.}
doc=$root/docs/architecture.md
table=$(sed -n '/<!-- layers:begin -->/,/<!-- layers:end -->/p' "$doc" |
        awk -F"|" '/^\| `/ { gsub(/[` ]/, "", $2); gsub(/[` ]/, "", $3); print $2 ":" $3 }')
[ -n "$table" ] || { echo "check-layers: no dependency table in $doc" >&2; exit 2; }
declare -A allowed=()
components=()
while IFS=: read -r comp deps; do
    components+=("$comp")
    allowed[$comp]=" $comp $(echo "$deps" | tr ',' ' ') "
done <<<"$table"
bad=0
for comp in "${components[@]}"; do
    [ -d "$root/$comp" ] || continue
    while IFS=: read -r file line text; do
        dep=$(sed -E 's/.*#[[:space:]]*include[[:space:]]*"([^/"]+)\/.*/\1/' <<<"$text")
        # Only includes of a component count (generated headers such as
        # onnx/onnx.pb-c.h live under build/gen).
        [ -n "${allowed[$dep]+x}" ] || continue
        case ${allowed[$comp]} in
        *" $dep "*) ;;
        *) echo "${file#"$root"/}:$line: $comp may not include $dep (docs/architecture.md: dependency rule)"
           bad=1 ;;
        esac
    done < <(grep -rnE '^\s*#\s*include "[^/"]+/' "$root/$comp" --include='*.c' --include='*.h' || true)
done
exit $bad
