// The Deleting condition tells a user where a deletion stands: members still removed one at a time (and until
// when), or Machines going without theirs, naming the members left in etcd and why.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assess } from "../../../src/core/assess.ts";
import { plan } from "../../../src/core/plan.ts";
import type { Snapshot } from "../../../src/core/snapshot.ts";
import { statusFor } from "../../../src/controller/status.ts";
import { dead, healthyMachines, MINUTE, NOW, snapshot } from "../core/fixtures.ts";
import { controlPlane } from "./fixtures.ts";

function conditionsOf(view: Snapshot) {
  const { action } = plan(view);
  const status = statusFor({
    controlPlane: controlPlane(),
    now: view.now,
    observed: { snapshot: view, action, verdict: assess(view, { kind: "Observe" }) },
  });
  return status.conditions ?? [];
}

const deleting = { deleting: true, deletion: { startedAt: NOW - MINUTE, etcdMemberRemovalTimeoutMs: 10 * MINUTE } };

describe("the Deleting condition", () => {
  it("is False while the control plane is not being deleted", () => {
    const deletingCondition = conditionsOf(snapshot(healthyMachines(3))).find((c) => c.type === "Deleting");
    assert.equal(deletingCondition?.status, "False");
    assert.equal(deletingCondition?.reason, "NotDeleting");
  });

  it("says members are removed one at a time, and from when Machines go without them", () => {
    const condition = conditionsOf(snapshot({ ...healthyMachines(3), controlPlane: deleting })).find(
      (c) => c.type === "Deleting",
    );
    assert.equal(condition?.reason, "RemovingEtcdMembers");
    assert.match(condition?.message ?? "", new RegExp(new Date(NOW + 9 * MINUTE).toISOString()));
    assert.match(condition?.message ?? "", /spec\.deletion\.etcdMemberRemovalTimeout 10m/);
  });

  it("names the members left in etcd and why once it gives up on them", () => {
    const parts = healthyMachines(3);
    parts.members[1] = dead("m-2");
    parts.members[2] = dead("m-3");
    const conditions = conditionsOf(snapshot({ ...parts, controlPlane: deleting }));
    const condition = conditions.find((c) => c.type === "Deleting");
    assert.equal(condition?.reason, "EtcdMembersNotRemoved");
    assert.match(condition?.message ?? "", /etcd has lost quorum/);
    for (const name of ["m-1", "m-2", "m-3"])
      assert.match(condition?.message ?? "", new RegExp(`member ${name} \\(id`));
  });

  it("does not claim the certificates were checked, since a deletion does not look at them", () => {
    const view = snapshot({ ...healthyMachines(3), controlPlane: deleting });
    assert.equal(
      conditionsOf(view).find((c) => c.type === "CertificatesAvailable"),
      undefined,
    );
  });
});
