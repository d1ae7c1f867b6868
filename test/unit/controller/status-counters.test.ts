// The replica counters as the CAPI v1beta2 contract defines them (from the Machines' Ready, Available and UpToDate
// conditions), which the topology controller compares with spec.replicas before it upgrades anything, beside the
// deprecated v1beta1 counters (Quorum's own reading: a healthy etcd voter with a Ready Node).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assess } from "../../../src/core/assess.ts";
import { plan } from "../../../src/core/plan.ts";
import { computeStatus } from "../../../src/controller/status.ts";
import type { Snapshot } from "../../../src/core/snapshot.ts";
import { machine, member, OLD_VERSION, snapshot } from "../core/fixtures.ts";
import { controlPlane } from "./fixtures.ts";

function statusOf(s: Snapshot) {
  return computeStatus({
    controlPlane: controlPlane(),
    snapshot: s,
    action: plan(s).action,
    verdict: assess(s, { kind: "Observe" }),
  });
}

describe("the contract's replica counters", () => {
  it("count Ready and Available Machines by CAPI's conditions, not by Quorum's own etcd reading", () => {
    // Three healthy voters; CAPI has seen the Node of only two Machines, and one of them is not Available yet.
    const s = snapshot({
      machines: [
        machine("cp-0", { capiReady: true, capiAvailable: true }),
        machine("cp-1", { capiReady: true }),
        machine("cp-2"),
      ],
      members: [member("cp-0", { leader: true }), member("cp-1"), member("cp-2")],
      controlPlane: { replicas: 3 },
    });
    const status = statusOf(s);
    assert.equal(status.replicas, 3);
    assert.equal(status.readyReplicas, 2);
    assert.equal(status.availableReplicas, 1);
    assert.equal(status.deprecated?.v1beta1?.readyReplicas, 3, "v1beta1 keeps counting healthy voters");
  });

  it("count up-to-date Machines as the UpToDate condition Quorum writes says, and MachinesUpToDate names the rest", () => {
    const s = snapshot({
      machines: [machine("cp-0"), machine("cp-1", { version: OLD_VERSION })],
      members: [member("cp-0", { leader: true }), member("cp-1")],
      controlPlane: { replicas: 2 },
    });
    const status = statusOf(s);
    assert.equal(status.upToDateReplicas, 1);
    const condition = status.conditions?.find((candidate) => candidate.type === "MachinesUpToDate");
    assert.equal(condition?.status, "False");
    assert.equal(condition?.reason, "NotUpToDate");
    assert.match(condition?.message ?? "", /^cp-1 not up to date/);
  });

  it("report MachinesUpToDate True with reason NoReplicas before the first Machine exists", () => {
    const status = statusOf(snapshot({ machines: [], members: [], controlPlane: { replicas: 1 } }));
    const condition = status.conditions?.find((candidate) => candidate.type === "MachinesUpToDate");
    assert.equal(condition?.status, "True");
    assert.equal(condition?.reason, "NoReplicas");
  });

  it("say initialised for a kubeadm control plane only once kubeadm init uploaded kubeadm-config, not at its first healthy member", () => {
    const base = snapshot({ machines: [machine("cp-0")], members: [member("cp-0", { leader: true })] });
    const steps = (initialized: boolean | undefined) => ({
      ...base,
      workloadSteps: { flavour: "kubeadm", steps: [], ...(initialized === undefined ? {} : { initialized }) },
    });
    assert.equal(statusOf(base).initialization?.controlPlaneInitialized, true, "generic: the first healthy member");
    assert.equal(statusOf(steps(false)).initialization?.controlPlaneInitialized, false);
    assert.equal(statusOf(steps(undefined)).initialization?.controlPlaneInitialized, false, "unknown is not yet");
    assert.equal(statusOf(steps(true)).initialization?.controlPlaneInitialized, true);
  });
});
