#!/usr/bin/env bash
# `make run`: see Quorum work on this machine.
#   - without KUBECONFIG: builds what it needs (make deps), starts a local management plane (kube-apiserver, CAPI
#     core manager, the process provider from e2e/, Quorum), applies the sample 3-replica process cluster
#     (config/samples/cluster-process.yaml) and shows live progress until it is ready, then keeps showing every step;
#     Ctrl-C stops everything it started (e2e/local.ts).
#   - with KUBECONFIG set: runs only the Quorum controller against that management cluster (extra arguments are
#     passed to it, e.g. `make run ARGS="--leader-elect"`).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${KUBECONFIG:-}" ]; then
  bash hack/deps.sh npm
  echo "==> KUBECONFIG is set: running only the Quorum controller against ${KUBECONFIG}"
  exec node --import tsx src/main.ts --kubeconfig "${KUBECONFIG%%:*}" --log-format text "$@"
fi

bash hack/deps.sh
exec node --import tsx e2e/local.ts
