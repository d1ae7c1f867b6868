// A cluster that lost its etcd quorum has no leader to confirm the member list: status still shows the list one member
// answered with on its own, and says that it is unconfirmed and why, so a user reading it does not take it as current.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assess } from "../../../src/core/assess.ts";
import { plan } from "../../../src/core/plan.ts";
import { computeStatus } from "../../../src/controller/status.ts";
import { dead, healthyMachines, snapshot } from "../core/fixtures.ts";
import { controlPlane } from "./fixtures.ts";

describe("status with a member list the leader did not confirm", () => {
  it("shows the members and says in EtcdClusterHealthy that the list is one member's own view, and why", () => {
    const h = healthyMachines(3);
    const read = snapshot({
      machines: h.machines,
      members: [{ ...h.members[0], leader: false, errors: ["etcdserver: no leader"] }, dead("m-2"), dead("m-3")],
    });
    const cause = "etcd of cluster default/wl (member list): not reachable: no endpoint answered within 2000 ms";
    const s = { ...read, etcd: { ...read.etcd, unconfirmed: cause } };
    const status = computeStatus({
      controlPlane: controlPlane(),
      snapshot: s,
      action: plan(s).action,
      verdict: assess(s, { kind: "Observe" }),
    });
    assert.equal(status.etcd?.members?.length, 3);
    const condition = status.conditions?.find((candidate) => candidate.type === "EtcdClusterHealthy");
    assert.equal(condition?.status, "False");
    assert.ok(
      condition?.message?.includes(
        `the member list shown is one member's own view, the leader could not confirm it: ${cause}`,
      ),
      condition?.message,
    );
    assert.equal(status.nextAction?.kind, "Wait");
  });
});
