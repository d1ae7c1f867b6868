import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { mergePatch } from "../../../src/controller/merge-patch.ts";

describe("status merge patch", () => {
  it("is empty when nothing changed, so an idle reconcile writes nothing", () => {
    const status = {
      replicas: 3,
      conditions: [{ type: "Available", status: "True" }],
      etcd: { quorum: { voters: 3 } },
    };
    assert.equal(mergePatch(status, structuredClone(status)), undefined);
  });

  it("carries only the changed fields, replaces arrays whole and nulls removed keys", () => {
    const before = {
      replicas: 3,
      readyReplicas: 2,
      nextAction: { kind: "Wait", blockedBy: "member m-1" },
      conditions: [{ type: "A" }],
    };
    const after = {
      replicas: 3,
      readyReplicas: 3,
      nextAction: { kind: "Wait" },
      conditions: [{ type: "A" }, { type: "B" }],
    };
    assert.deepEqual(mergePatch(before, after), {
      readyReplicas: 3,
      nextAction: { blockedBy: null },
      conditions: [{ type: "A" }, { type: "B" }],
    });
  });
});
