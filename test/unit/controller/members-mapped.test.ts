// A healthy member that maps to no Machine stops healthy removals until a user acts, so the user must learn of it
// from the QuorumControlPlane alone: which member, which Machines could host it, and the two ways out.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { REMOVE_MEMBER_ANNOTATION } from "../../../src/api/constants.ts";
import { assess } from "../../../src/core/assess.ts";
import { plan } from "../../../src/core/plan.ts";
import { buildSnapshot } from "../../../src/controller/snapshot-builder.ts";
import { computeStatus } from "../../../src/controller/status.ts";
import { machine as machineView, member, MINUTE, NOW, snapshot } from "../core/fixtures.ts";
import { cluster, controlPlane, machine } from "./fixtures.ts";

describe("EtcdMembersMapped", () => {
  it("is False with reason UnmappedMember and names the member, its id, the candidate Machine and the fix", () => {
    // kubeadm named the member after its host; cp-0 has no nodeRef and reports only its public address.
    const s = snapshot({
      machines: [machineView("cp-0", { nodeName: undefined, addresses: ["54.12.3.4"], created: NOW - 30 * MINUTE })],
      members: [
        member("ip-10-0-0-9", {
          id: "10276657743932975437",
          peerURLs: ["https://10.0.0.9:2380"],
          clientURLs: [],
          leader: true,
        }),
      ],
      nodes: [],
      controlPlane: { replicas: 1 },
    });
    const status = computeStatus({
      controlPlane: controlPlane(),
      snapshot: s,
      action: plan(s).action,
      verdict: assess(s, { kind: "Observe" }),
    });
    const condition = status.conditions?.find((candidate) => candidate.type === "EtcdMembersMapped");
    assert.equal(condition?.status, "False");
    assert.equal(condition?.reason, "UnmappedMember");
    for (const word of [
      "ip-10-0-0-9",
      "10276657743932975437",
      "machine cp-0",
      "nodeRef",
      `${REMOVE_MEMBER_ANNOTATION}=10276657743932975437`,
    ]) {
      assert.ok(condition?.message?.includes(word), `message names ${word}: ${condition?.message}`);
    }
    assert.match(status.etcd?.members?.[0]?.state ?? "", /unmapped.*machine cp-0/);
  });

  it("reads the member ids to remove from the QuorumControlPlane annotation, decimal or hex, comma-separated", () => {
    const qcp = controlPlane();
    qcp.metadata.annotations = { [REMOVE_MEMBER_ANNOTATION]: " 8e9e05c52164694d, 42 ,," };
    const built = buildSnapshot({
      now: NOW,
      controlPlane: qcp,
      cluster: cluster(),
      machines: [machine("cp-a")],
      nodes: [],
      etcd: { observed: true, members: [], alarms: [] },
    });
    assert.deepEqual(built.controlPlane.removeMemberIds, ["8e9e05c52164694d", "42"]);
  });
});
