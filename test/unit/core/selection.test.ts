import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assess } from "../../../src/core/assess.ts";
import {
  chooseFailureDomain,
  isUpToDate,
  outdatedReasons,
  selectMachineForScaleDown,
} from "../../../src/core/selection.ts";
import type { MachineView, MemberView, Snapshot } from "../../../src/core/snapshot.ts";
import {
  dead,
  HASH,
  machine,
  member,
  MINUTE,
  NOW,
  OLD_VERSION,
  snapshot,
  VERSION,
  type SnapshotParts,
} from "./fixtures.ts";

function pick(s: Snapshot): string | undefined {
  return selectMachineForScaleDown(s, assess(s, { kind: "Observe" }))?.machine;
}

function joined(name: string, overrides: Partial<MachineView> = {}, memberOverrides: Partial<MemberView> = {}) {
  return { machine: machine(name, overrides), member: member(name, memberOverrides) };
}

function build(
  entries: { machine: MachineView; member?: MemberView }[],
  controlPlane: SnapshotParts["controlPlane"] = { replicas: entries.length - 1 },
): Snapshot {
  return snapshot({
    machines: entries.map((entry) => entry.machine),
    members: entries.flatMap((entry) => (entry.member ? [entry.member] : [])),
    controlPlane,
  });
}

describe("scale-down selection", () => {
  const table: {
    name: string;
    entries: () => { machine: MachineView; member?: MemberView }[];
    controlPlane?: SnapshotParts["controlPlane"];
    expect: string;
  }[] = [
    {
      name: "a Machine whose member is already gone goes first, before a marked or outdated one",
      entries: () => [
        joined("a", { version: OLD_VERSION, created: NOW - 90 * MINUTE }),
        joined("b", { markedForDeletion: true }),
        { machine: machine("c", { version: OLD_VERSION, created: NOW - 80 * MINUTE }) },
        joined("d"),
      ],
      expect: "c",
    },
    {
      name: "a Machine marked for deletion goes before an outdated one",
      entries: () => [joined("a", { version: OLD_VERSION }), joined("b", { markedForDeletion: true }), joined("c")],
      expect: "b",
    },
    {
      name: "a Machine with remediation requested goes before an outdated one",
      entries: () => [joined("a", { version: OLD_VERSION }), joined("b", { remediationRequested: true }), joined("c")],
      expect: "b",
    },
    {
      name: "an unhealthy outdated Machine goes before a healthy outdated one",
      entries: () => [
        joined("a", { version: OLD_VERSION, created: NOW - 90 * MINUTE }),
        { machine: machine("b", { version: OLD_VERSION }), member: dead("b") },
        joined("c"),
      ],
      expect: "b",
    },
    {
      name: "an outdated Machine goes before an up-to-date one",
      entries: () => [
        joined("a", { created: NOW - 90 * MINUTE }),
        joined("b", { templateHash: "tmpl-0", created: NOW - 10 * MINUTE }),
        joined("c"),
      ],
      expect: "b",
    },
    {
      name: "among equals, one from the failure domain with the most Machines goes",
      entries: () => [
        joined("a", { failureDomain: "fd-a", created: NOW - 90 * MINUTE }),
        joined("b", { failureDomain: "fd-b", created: NOW - 50 * MINUTE }),
        joined("c", { failureDomain: "fd-b", created: NOW - 40 * MINUTE }),
      ],
      expect: "b",
    },
    {
      name: "among equals in equal failure domains, the oldest goes",
      entries: () => [
        joined("a", { failureDomain: "fd-a", created: NOW - 50 * MINUTE }),
        joined("b", { failureDomain: "fd-b", created: NOW - 90 * MINUTE }),
      ],
      expect: "b",
    },
    {
      name: "a full tie is broken by name",
      entries: () => [joined("b", { created: NOW - 50 * MINUTE }), joined("a", { created: NOW - 50 * MINUTE })],
      expect: "a",
    },
    {
      name: "during a rollout the surge Machine that has not joined yet is never picked as 'member gone'",
      entries: () => [
        joined("a", { version: OLD_VERSION }),
        joined("b", { version: OLD_VERSION }),
        joined("c", { version: OLD_VERSION }),
        { machine: machine("n", { created: NOW - MINUTE }) },
      ],
      controlPlane: { replicas: 3 },
      expect: "a",
    },
    {
      name: "in a plain scale-down a Machine whose infrastructure is not ready yet goes first",
      entries: () => [
        joined("a"),
        joined("b"),
        { machine: machine("c", { created: NOW - MINUTE, infrastructureReady: false }) },
      ],
      controlPlane: { replicas: 1 },
      expect: "c",
    },
    {
      // Its kubeadm join may be adding its member: deleted now, the member could come after Quorum looked.
      name: "in a plain scale-down a booting Machine (infrastructure ready, inside its join grace) is not taken as gone",
      entries: () => [
        joined("a", { created: NOW - 3 * MINUTE }),
        joined("b"),
        { machine: machine("c", { created: NOW - MINUTE }) },
      ],
      controlPlane: { replicas: 1 },
      expect: "b",
    },
    {
      name: "in a plain scale-down a Machine that got no member within its join grace goes first",
      entries: () => [joined("a"), joined("b"), { machine: machine("c", { created: NOW - 60 * MINUTE }) }],
      controlPlane: { replicas: 1 },
      expect: "c",
    },
    {
      name: "a Machine already being deleted is not picked again",
      entries: () => [
        joined("a", { deleting: NOW, version: OLD_VERSION }),
        joined("b", { created: NOW - 90 * MINUTE }),
        joined("c"),
      ],
      expect: "b",
    },
  ];
  for (const row of table) {
    it(row.name, () => assert.equal(pick(build(row.entries(), row.controlPlane)), row.expect));
  }

  it("picks the same Machine again after its member was removed (the choice survives a crash)", () => {
    const entries = [
      joined("a", { version: OLD_VERSION, created: NOW - 5 * MINUTE }),
      joined("b", { version: OLD_VERSION, created: NOW - 4 * MINUTE }),
      joined("n"),
    ];
    const before = pick(build(entries));
    const after = pick(
      build(entries.map((entry) => (entry.machine.name === before ? { machine: entry.machine } : entry))),
    );
    assert.equal(after, before);
  });

  it("returns nothing when every Machine is being deleted", () => {
    assert.equal(pick(build([joined("a", { deleting: NOW })])), undefined);
  });
});

describe("up-to-date checks", () => {
  it("a Machine at the spec's version and template is up to date", () => {
    assert.equal(isUpToDate(snapshot(), machine("a")), true);
  });

  it("names each way a Machine is outdated: version, template, rolloutAfter", () => {
    const s = snapshot({ controlPlane: { rolloutAfter: NOW - MINUTE } });
    assert.deepEqual(
      outdatedReasons(s, machine("a", { version: OLD_VERSION, templateHash: "other", created: NOW - 2 * MINUTE })),
      [`version ${OLD_VERSION} → ${VERSION}`, "machine template changed", "created before spec.rollout.after"],
    );
  });

  it("rolloutAfter in the future outdates nothing yet", () => {
    assert.equal(
      isUpToDate(
        snapshot({ controlPlane: { rolloutAfter: NOW + MINUTE } }),
        machine("a", { created: NOW - 2 * MINUTE }),
      ),
      true,
    );
  });

  it("a Machine created after rolloutAfter is up to date", () => {
    assert.equal(
      isUpToDate(
        snapshot({ controlPlane: { rolloutAfter: NOW - 2 * MINUTE } }),
        machine("a", { created: NOW - MINUTE }),
      ),
      true,
    );
  });

  it("a Machine without a recorded template hash is not rolled out for that alone", () => {
    assert.equal(isUpToDate(snapshot(), machine("a", { templateHash: undefined })), true);
    assert.equal(isUpToDate(snapshot(), machine("a", { templateHash: HASH })), true);
  });

  it("a Machine carrying the hash an earlier release recorded for the current spec is up to date; any other hash is not", () => {
    const s = snapshot({ controlPlane: { legacyTemplateHash: "legacy-of-current" } });
    assert.equal(isUpToDate(s, machine("a", { templateHash: "legacy-of-current" })), true);
    assert.deepEqual(outdatedReasons(s, machine("a", { templateHash: "other" })), ["machine template changed"]);
  });
});

describe("failure domain for a new Machine", () => {
  it("goes to the failure domain with the fewest Machines", () => {
    const s = snapshot({
      machines: [machine("a", { failureDomain: "fd-a" }), machine("b", { failureDomain: "fd-c" })],
    });
    assert.equal(chooseFailureDomain(s), "fd-b");
  });

  it("breaks ties by name and ignores Machines being deleted", () => {
    const s = snapshot({
      machines: [machine("a", { failureDomain: "fd-a", deleting: NOW }), machine("b", { failureDomain: "fd-b" })],
    });
    assert.equal(chooseFailureDomain(s), "fd-a");
  });

  it("is unset when the Cluster has no failure domains", () => {
    assert.equal(chooseFailureDomain(snapshot({ cluster: { failureDomains: [] } })), undefined);
  });
});
