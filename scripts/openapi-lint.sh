#!/usr/bin/env bash
# npm run openapi:lint: writes the document (npm run openapi) and lints it with Redocly and Spectral,
# pinned versions. Exits non-zero when either reports an error (Spectral: also on warnings).
set -uo pipefail
cd "$(dirname "$0")/.."
REDOCLY=@redocly/cli@2.77.0
SPECTRAL=@stoplight/spectral-cli@6.16.3

npm run -s openapi -- openapi.json || exit 1
status=0
echo "==> Redocly ($REDOCLY, redocly.yaml)"
npx --yes "$REDOCLY" lint openapi.json --config redocly.yaml || status=1
echo "==> Spectral ($SPECTRAL, .spectral.yaml)"
npx --yes "$SPECTRAL" lint openapi.json --ruleset .spectral.yaml --fail-severity warn || status=1
exit $status
