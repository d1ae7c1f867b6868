// Which Machines' API server certificates are read, how the expiry reaches the Snapshot, and how it is recorded on the
// Machine so that a restarted controller needs no dial and an idle reconcile writes nothing.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Machine } from "../../../src/api/capi.ts";
import { CERTIFICATES_EXPIRY_ANNOTATION } from "../../../src/api/constants.ts";
import { machinesToRead, recordExpiries } from "../../../src/controller/certificates-expiry.ts";
import { buildSnapshot } from "../../../src/controller/snapshot-builder.ts";
import type { ManagementApi } from "../../../src/ports/index.ts";
import { cluster, controlPlane, machine } from "./fixtures.ts";

const NOW = Date.parse("2026-11-29T12:00:00Z");
const EXPIRY = Date.parse("2026-12-03T10:00:00Z");
const withDays = controlPlane({ rollout: { before: { certificatesExpiryDays: 7 } } });
const addresses = (candidate: Machine) => (candidate.status?.addresses ?? []).map((address) => address.address ?? "");

function annotated(candidate: Machine, value: string): Machine {
  return {
    ...candidate,
    metadata: {
      ...candidate.metadata,
      annotations: { ...candidate.metadata.annotations, [CERTIFICATES_EXPIRY_ANNOTATION]: value },
    },
  };
}

function snapshotOf(machines: Machine[], certificatesExpiries?: Record<string, number>) {
  return buildSnapshot({
    now: NOW,
    controlPlane: withDays,
    cluster: cluster(),
    machines,
    nodes: [],
    etcd: { observed: true, members: [], alarms: [] },
    ...(certificatesExpiries ? { certificatesExpiries } : {}),
  });
}

function recordingManagement(calls: string[], fail?: Error): ManagementApi {
  return {
    patchAnnotations: async (_apiVersion, kind, namespace, name, annotations, resourceVersion) => {
      if (fail) throw fail;
      calls.push(`${kind} ${namespace}/${name} ${JSON.stringify(annotations)} at ${resourceVersion ?? "-"}`);
      return "2";
    },
  } as Partial<ManagementApi> as ManagementApi;
}

describe("certificate expiry in the controller", () => {
  it("reads only Machines with a Node, not being deleted and without the annotation, and only with the setting set", () => {
    const machines = [
      { ...machine("cp-a", { node: "node-a" }), metadata: { ...machine("cp-a").metadata, uid: "u-a" } },
      machine("cp-b"),
      machine("cp-c", { node: "node-c", deleting: "2026-11-29T11:00:00Z" }),
      annotated(machine("cp-d", { node: "node-d" }), "2027-11-29T10:00:00Z"),
    ];
    assert.deepEqual(machinesToRead(withDays, machines, addresses), [
      { name: "cp-a", uid: "u-a", address: "127.0.1.5" },
    ]);
    assert.deepEqual(machinesToRead(controlPlane(), machines, addresses), [], "the setting unset reads nothing");
  });

  it("takes the expiry from the Machine's annotation, else from what was read this reconcile", () => {
    const snapshot = snapshotOf(
      [annotated(machine("cp-a"), "2026-12-01T00:00:00Z"), machine("cp-b"), machine("cp-c")],
      { "cp-a": EXPIRY, "cp-b": EXPIRY },
    );
    assert.equal(snapshot.controlPlane.certificatesExpiryDays, 7);
    assert.deepEqual(
      snapshot.machines.map((view) => [view.name, view.certificatesExpiry]),
      [
        ["cp-a", Date.parse("2026-12-01T00:00:00Z")],
        ["cp-b", EXPIRY],
        ["cp-c", undefined],
      ],
    );
  });

  it("records a read expiry on its Machine as RFC 3339 at the resourceVersion read, and nothing once it is there", async () => {
    const calls: string[] = [];
    const read = { ...machine("cp-a"), metadata: { ...machine("cp-a").metadata, resourceVersion: "1" } };
    const snapshot = snapshotOf([read]);
    const first = await recordExpiries(
      withDays,
      [read],
      snapshot,
      { "cp-a": EXPIRY + 123 },
      recordingManagement(calls),
    );
    assert.deepEqual(first, { recorded: ["Machine cp-a: certificates expire 2026-12-03T10:00:00Z"] });
    assert.deepEqual(calls, [`Machine ns/cp-a {"${CERTIFICATES_EXPIRY_ANNOTATION}":"2026-12-03T10:00:00Z"} at 1`]);
    const again = await recordExpiries(
      withDays,
      [annotated(read, "2026-12-03T10:00:00Z")],
      snapshot,
      { "cp-a": EXPIRY },
      recordingManagement(calls),
    );
    assert.deepEqual(again, { recorded: [] });
    assert.equal(calls.length, 1, "an idle reconcile writes nothing");
  });

  it("reports a failed write naming the Machine and the value, for the next reconcile to try again", async () => {
    const snapshot = snapshotOf([machine("cp-a")]);
    const result = await recordExpiries(
      withDays,
      [machine("cp-a")],
      snapshot,
      { "cp-a": EXPIRY },
      recordingManagement([], Object.assign(new Error("conflict"), { code: 409 })),
    );
    assert.match(result.problem ?? "", /2026-12-03T10:00:00Z on Machine ns\/cp-a .*tries again.*conflict/);
  });
});
