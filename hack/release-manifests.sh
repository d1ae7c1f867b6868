#!/usr/bin/env bash
# Builds the clusterctl release artefacts in out/ (or $OUT_DIR):
#   control-plane-components.yaml  config/default rendered, with clusterctl variables (${VAR:=default}) for the
#                                  settings a user changes at `clusterctl init` time
#   metadata.yaml                  the release series → contract map
# A clusterctl local repository is laid out as <root>/control-plane-quorum/<version>/<these files>.
#
# Variables in the components file (each has a default, so `clusterctl init` needs none of them set):
#   QUORUM_IMAGE               controller image      (default: $IMAGE below)
#   QUORUM_LOG_LEVEL           debug|info|warn|error (default: info)
#   QUORUM_LOG_FORMAT          json|text             (default: json)
#   QUORUM_CONCURRENCY         control planes reconciled in parallel (default: 10)
#   QUORUM_ETCD_POLL_INTERVAL  etcd membership re-read interval      (default: 10s)
set -euo pipefail
cd "$(dirname "$0")/.."

OUT_DIR="${OUT_DIR:-out}"
VERSION="${VERSION:-v$(node -p 'require("./package.json").version')}"
IMAGE="${IMAGE:-ghcr.io/quorum-capi/quorum-controller:${VERSION}}"

# kubectl's built-in kustomize renders config/; `make deps` may provide one in bin/, else PATH's is used.
KUBECTL="${KUBECTL:-}"
if [ -z "$KUBECTL" ]; then
  if [ -x bin/kubectl ]; then KUBECTL=bin/kubectl; else KUBECTL="$(command -v kubectl || true)"; fi
fi
if [ -z "$KUBECTL" ]; then
  echo "release-manifests: no kubectl in bin/ or on PATH (set KUBECTL=/path/to/kubectl); it renders config/default with its built-in kustomize" >&2
  exit 1
fi

mkdir -p "$OUT_DIR"
rendered="$("$KUBECTL" kustomize config/default)"

# Each substitution must hit exactly one line: a silent miss would ship a components file without the variable.
substitute() {
  local from="$1" to="$2"
  local count
  count="$(grep -cF -- "$from" <<<"$rendered" || true)"
  if [ "$count" != "1" ]; then
    echo "release-manifests: expected exactly one line with '$from' in the rendered config/default, found $count;" \
         "update hack/release-manifests.sh to match config/manager/" >&2
    exit 1
  fi
  rendered="${rendered//"$from"/"$to"}"
}
substitute "image: ghcr.io/quorum-capi/quorum-controller:v0.1.0" "image: \${QUORUM_IMAGE:=${IMAGE}}"
substitute "- --log-level=info" "- --log-level=\${QUORUM_LOG_LEVEL:=info}"
substitute "- --log-format=json" "- --log-format=\${QUORUM_LOG_FORMAT:=json}"
substitute "- --concurrency=10" "- --concurrency=\${QUORUM_CONCURRENCY:=10}"
substitute "- --etcd-poll-interval=10s" "- --etcd-poll-interval=\${QUORUM_ETCD_POLL_INTERVAL:=10s}"

# kustomize's `labels` puts the provider label on every object; check rather than trust it, since clusterctl
# finds (and deletes, on `clusterctl delete`) the provider's objects by this label.
summary="$(node --input-type=module -e '
import { parseAllDocuments } from "yaml";
import { readFileSync } from "node:fs";
const docs = parseAllDocuments(readFileSync(0, "utf8")).map((doc) => doc.toJS()).filter(Boolean);
const unlabelled = docs.filter((o) => o.metadata?.labels?.["cluster.x-k8s.io/provider"] !== "control-plane-quorum");
if (unlabelled.length > 0) {
  console.error("release-manifests: objects without cluster.x-k8s.io/provider=control-plane-quorum: " +
    unlabelled.map((o) => `${o.kind}/${o.metadata?.name}`).join(", ") + "; check config/default/kustomization.yaml labels");
  process.exit(1);
}
console.log(docs.length);
' <<<"$rendered")"

printf '%s\n' "$rendered" >"$OUT_DIR/control-plane-components.yaml"
cp metadata.yaml "$OUT_DIR/metadata.yaml"
echo "release-manifests: wrote $OUT_DIR/control-plane-components.yaml ($summary objects, image ${IMAGE}) and $OUT_DIR/metadata.yaml"
