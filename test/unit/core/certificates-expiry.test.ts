// spec.rollout.before.certificatesExpiryDays: a Machine whose API server certificates expire within that many days
// is outdated, so the ordinary rollout (one Machine at a time, surge, every gate) replaces it.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assess } from "../../../src/core/assess.ts";
import { plan } from "../../../src/core/plan.ts";
import { formatTime } from "../../../src/core/format.ts";
import { isUpToDate, outdatedReasons, selectMachineForScaleDown } from "../../../src/core/selection.ts";
import { healthyMachines, machine, member, MINUTE, NOW, snapshot } from "./fixtures.ts";

const DAY = 24 * 60 * MINUTE;
const YEAR_AGO = NOW - 360 * DAY;

describe("certificate-expiry rollout", () => {
  it("a Machine whose certificates expire in 5 days with certificatesExpiryDays 7 is outdated, and the reason names the date and the setting", () => {
    const expiry = NOW + 5 * DAY;
    const s = snapshot({ controlPlane: { certificatesExpiryDays: 7 } });
    const reasons = outdatedReasons(s, machine("a", { created: YEAR_AGO, certificatesExpiry: expiry }));
    assert.deepEqual(reasons, [
      `certificates expire ${new Date(expiry).toISOString().replace(/\.\d{3}Z$/, "Z")}, within spec.rollout.before.certificatesExpiryDays (7)`,
    ]);
  });

  it("a Machine whose certificates expire after the notice is up to date", () => {
    const s = snapshot({ controlPlane: { certificatesExpiryDays: 7 } });
    assert.equal(isUpToDate(s, machine("a", { created: YEAR_AGO, certificatesExpiry: NOW + 8 * DAY })), true);
  });

  it("a Machine whose expiry is unknown is not outdated for it", () => {
    const s = snapshot({ controlPlane: { certificatesExpiryDays: 7 } });
    assert.equal(isUpToDate(s, machine("a", { created: YEAR_AGO })), true);
  });

  it("names a time as RFC 3339 UTC in whole seconds, as Date would, across leap years and centuries", () => {
    for (const text of [
      "1970-01-01T00:00:00Z",
      "2000-02-29T23:59:59Z",
      "2024-12-31T12:00:00Z",
      "2026-12-03T10:00:00Z",
      "2100-03-01T00:00:01Z",
    ])
      assert.equal(formatTime(Date.parse(text) + 999), text);
    for (let ms = 0; ms < 5e12; ms += 7_777_777_777)
      assert.equal(formatTime(ms), new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z"));
  });

  it("without the setting, certificates about to expire roll nothing out", () => {
    assert.equal(isUpToDate(snapshot(), machine("a", { created: YEAR_AGO, certificatesExpiry: NOW + DAY })), true);
  });

  it("a Machine whose certificates were issued for no longer than the notice is not replaced, since its replacement would be too", () => {
    // certificatesExpiryDays 400 against kubeadm's 365-day certificates: replacing would never end.
    const s = snapshot({ controlPlane: { certificatesExpiryDays: 400 } });
    assert.equal(isUpToDate(s, machine("a", { created: NOW - DAY, certificatesExpiry: NOW + 364 * DAY })), true);
  });

  it("the Machine whose certificates expire is rolled out first: a new Machine is created, then the expiring one leaves before older ones", () => {
    const { machines, members } = healthyMachines(3);
    const expiring = machines.map((candidate) =>
      candidate.name === "m-2"
        ? { ...candidate, created: YEAR_AGO, certificatesExpiry: NOW + 5 * DAY }
        : { ...candidate, certificatesExpiry: NOW + 300 * DAY },
    );
    const before = snapshot({ controlPlane: { certificatesExpiryDays: 7 }, machines: expiring, members });
    const created = plan(before).action;
    assert.equal(created.kind, "CreateMachine");
    assert.match(
      created.reason,
      /m-2.*certificates expire .*, within spec.rollout.before.certificatesExpiryDays \(7\)/,
    );

    // The new Machine has joined: a scale-down back to 3 takes m-2, although m-1 is older.
    const after = snapshot({
      controlPlane: { certificatesExpiryDays: 7 },
      machines: [...expiring, machine("m-4", { created: NOW - MINUTE })],
      members: [...members, member("m-4")],
    });
    const choice = selectMachineForScaleDown(after, assess(after, { kind: "Observe" }));
    assert.equal(choice?.machine, "m-2");
    assert.match(choice?.why ?? "", /certificates expire .*certificatesExpiryDays \(7\)/);
  });
});
