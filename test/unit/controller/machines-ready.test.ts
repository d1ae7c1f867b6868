// MachinesReady tells a user who must act: a workload kubeconfig Secret Quorum refuses (exec, auth-provider, ...)
// gets its own reason, so alerting and `kubectl wait` see it, while a merely unreachable API server does not.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assess } from "../../../src/core/assess.ts";
import { plan } from "../../../src/core/plan.ts";
import { computeStatus } from "../../../src/controller/status.ts";
import { machine, member, snapshot } from "../core/fixtures.ts";
import { controlPlane } from "./fixtures.ts";

function machinesReady(nodes: { nodesError?: string; nodesErrorReason?: string }) {
  const s = snapshot({
    machines: [machine("cp-0")],
    members: [member("cp-0", { leader: true })],
    nodes: [],
    controlPlane: { replicas: 1 },
  });
  const status = computeStatus({
    controlPlane: controlPlane(),
    snapshot: s,
    action: plan(s).action,
    verdict: assess(s, { kind: "Observe" }),
    ...nodes,
  });
  return status.conditions?.find((condition) => condition.type === "MachinesReady");
}

describe("MachinesReady", () => {
  it("is False with reason WorkloadKubeconfigRejected and the Secret's refusal in its message when the kubeconfig is refused", () => {
    const refusal =
      'Secret team-a/prod-kubeconfig: data key "value": field users[0] "prod-admin".user.exec is refused (...): remove it';
    const condition = machinesReady({ nodesError: refusal, nodesErrorReason: "WorkloadKubeconfigRejected" });
    assert.equal(condition?.status, "False");
    assert.equal(condition?.reason, "WorkloadKubeconfigRejected");
    assert.ok(condition?.message?.includes(refusal), condition?.message);
  });

  it("stays Ready while the workload API is only unreachable, saying so in its message", () => {
    const condition = machinesReady({
      nodesError: "workload API server https://10.0.0.1:6443 could not be reached",
      nodesErrorReason: "WorkloadAPIUnavailable",
    });
    assert.equal(condition?.status, "True");
    assert.equal(condition?.reason, "Ready");
    assert.match(condition?.message ?? "", /workload Nodes not readable: workload API server/);
  });
});
