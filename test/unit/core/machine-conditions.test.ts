import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ownedMachineConditions } from "../../../src/core/machine-conditions.ts";
import { formatTime } from "../../../src/core/format.ts";
import type { Action } from "../../../src/core/actions.ts";
import { machine, MINUTE, NOW, OLD_VERSION, snapshot, VERSION } from "./fixtures.ts";

const WAIT: Action = { kind: "Wait", reason: "etcd is healthy", recheckAfterMs: 10_000 };

describe("the conditions Quorum owns on its Machines", () => {
  it("calls a Machine at the spec up to date and says why another is not, one line per reason as KCP writes them", () => {
    const owned = ownedMachineConditions(
      snapshot({
        machines: [machine("cp-new"), machine("cp-old", { version: OLD_VERSION, templateHash: "tmpl-0" })],
      }),
      WAIT,
    );
    assert.deepEqual(owned.get("cp-new")?.set, [{ type: "UpToDate", status: "True", reason: "UpToDate", message: "" }]);
    assert.deepEqual(owned.get("cp-old")?.set, [
      {
        type: "UpToDate",
        status: "False",
        reason: "NotUpToDate",
        message: `* Version ${OLD_VERSION} → ${VERSION}\n* Machine template changed`,
      },
    ]);
  });

  it("marks Machines made before spec.rollout.after as not up to date once that time has come", () => {
    const owned = ownedMachineConditions(
      snapshot({
        machines: [machine("cp-a", { created: NOW - 10 * MINUTE })],
        controlPlane: { rolloutAfter: NOW - MINUTE },
      }),
      WAIT,
    );
    assert.equal(owned.get("cp-a")?.set[0].message, "* Created before spec.rollout.after");
  });

  it("answers a MachineHealthCheck with RemediationDeferred while it waits and MachineDeleting once it replaces the Machine", () => {
    const sick = snapshot({ machines: [machine("cp-a", { remediationRequested: true }), machine("cp-b")] });
    const waiting = ownedMachineConditions(sick, WAIT).get("cp-a")?.set[1];
    assert.equal(waiting?.type, "OwnerRemediated");
    assert.equal(waiting?.status, "False");
    assert.equal(waiting?.reason, "RemediationDeferred");
    const acting = ownedMachineConditions(sick, {
      kind: "Remediate",
      machine: "cp-a",
      remediation: { machine: "cp-a", time: 0, retryCount: 0 },
      reason: "unhealthy",
    }).get("cp-a");
    assert.deepEqual(acting?.set[1], {
      type: "OwnerRemediated",
      status: "False",
      reason: "MachineDeleting",
      message: "Machine is deleting",
    });
    assert.equal(
      ownedMachineConditions(sick, WAIT).get("cp-b")?.set.length,
      1,
      "a healthy Machine gets no OwnerRemediated",
    );
  });

  it("keeps the RemediationDeferred message the same from one poll to the next, so waiting writes nothing", () => {
    const sick = snapshot({ machines: [machine("cp-a", { remediationRequested: true })] });
    const first = ownedMachineConditions(sick, { kind: "Wait", reason: "remediated 3s ago", recheckAfterMs: 1 });
    const second = ownedMachineConditions(sick, { kind: "Wait", reason: "remediated 4s ago", recheckAfterMs: 1 });
    assert.deepEqual(first.get("cp-a"), second.get("cp-a"));
  });

  it("says CannotBeRemediated, and until when, on a replacement whose line of failed replacements reached maxRetry", () => {
    const line = { machine: "cp-old", time: NOW - 20 * MINUTE, retryCount: 3 };
    const failing = (retryCount: number, now = NOW) =>
      ownedMachineConditions(
        snapshot({
          now,
          machines: [machine("cp-a", { remediationRequested: true, remediationFor: { ...line, retryCount } })],
        }),
        WAIT,
      ).get("cp-a")?.set[1];
    assert.deepEqual(failing(3), {
      type: "OwnerRemediated",
      status: "False",
      reason: "CannotBeRemediated",
      message: `4 replacements in a row failed within minHealthyPeriod 1h (maxRetry 3); this Machine replaces cp-old, and Quorum does not replace it before ${formatTime(line.time + 60 * MINUTE)}; find why replacements fail, then delete it by hand`,
    });
    assert.deepEqual(failing(3, NOW + MINUTE), failing(3), "the message does not change while it waits");
    assert.equal(failing(2)?.reason, "RemediationDeferred", "a retry maxRetry still allows");
    assert.equal(failing(3, NOW + 41 * MINUTE)?.reason, "RemediationDeferred", "past minHealthyPeriod, a first try");
  });

  it("counts one failed replacement in the singular when maxRetry is 0", () => {
    const once = { machine: "cp-old", time: NOW - 20 * MINUTE, retryCount: 0 };
    const base = snapshot().controlPlane;
    const owned = ownedMachineConditions(
      snapshot({
        controlPlane: { remediation: { ...base.remediation, maxRetry: 0 } },
        machines: [machine("cp-a", { remediationRequested: true, remediationFor: once })],
      }),
      WAIT,
    ).get("cp-a")?.set[1];
    assert.equal(owned?.reason, "CannotBeRemediated");
    assert.match(owned?.message ?? "", /^1 replacement in a row failed within minHealthyPeriod 1h \(maxRetry 0\); /);
  });

  it("takes a stale OwnerRemediated off a Machine that recovered before Quorum acted, but not off one being deleted", () => {
    const owned = ownedMachineConditions(
      snapshot({
        machines: [
          machine("cp-a", { remediationWithdrawn: true }),
          machine("cp-b", { remediationWithdrawn: true, deleting: NOW - MINUTE }),
        ],
      }),
      WAIT,
    );
    assert.deepEqual(owned.get("cp-a")?.remove, ["OwnerRemediated"]);
    assert.deepEqual(owned.get("cp-b")?.remove, []);
  });

  it("leaves a Machine it cannot read without conditions rather than guess whether it is up to date", () => {
    const owned = ownedMachineConditions(
      snapshot({ machines: [machine("cp-a", { malformed: "no spec.version" })] }),
      WAIT,
    );
    assert.equal(owned.has("cp-a"), false);
  });
});
