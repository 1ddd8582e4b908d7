#!/bin/bash
# The API reference of the Swift engine and the wire contract (issue 35): DocC archives for DuetClient and
# DuetProtocol under .build/docs/, built with swift-docc-plugin, any DocC warning (an unresolved symbol link, a missing
# article) failing it. Not part of a tier: it builds the two targets' symbol graphs (about a minute after `swift build`).
#
#   scripts/docs.sh            # both archives
#   scripts/docs.sh DuetClient # one
set -euo pipefail
cd "$(dirname "$0")/.."
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(DuetClient DuetProtocol)
mkdir -p .build/docs
for target in "${targets[@]}"; do
  log=".build/docs/$target.log"
  swift package --allow-writing-to-directory .build/docs generate-documentation --target "$target" \
    --output-path ".build/docs/$target.doccarchive" --warnings-as-errors 2>&1 | tee "$log"  # pipefail: DocC's status
done
printf "docs: .build/docs/%s.doccarchive\n" "${targets[@]}"
