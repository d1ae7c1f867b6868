// Member identity from evidence (src/core/identity.ts), with the states real clusters produce: members named after
// hosts (kubeadm), Machines without a nodeRef while no cloud controller manager sets providerIDs, partial
// Machine addresses, and stale members carrying a live Machine's name.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { mapMembersToMachines, namesMemberId } from "../../../src/core/identity.ts";
import type { Snapshot } from "../../../src/core/snapshot.ts";
import { machine, member, snapshot } from "./fixtures.ts";

const peer = (host: string) => ({ peerURLs: [`https://${host}:2380`], clientURLs: [`https://${host}:2379`] });

describe("identity: which Machine a member belongs to", () => {
  const table: { name: string; build: () => Snapshot; member: string; machine: string | undefined }[] = [
    {
      name: "a member named after its host belongs to the Machine whose address is its peer URL host",
      build: () =>
        snapshot({
          machines: [machine("cp-0", { nodeName: undefined, addresses: ["10.0.0.9"] })],
          members: [member("ip-10-0-0-9", { id: "11", ...peer("10.0.0.9") })],
          nodes: [],
        }),
      member: "11",
      machine: "cp-0",
    },
    {
      name: "a member belongs to the Machine by its Node's address when the Machine reports none of its own",
      build: () =>
        snapshot({
          machines: [machine("cp-0", { nodeName: "ip-10-0-0-9", addresses: [] })],
          members: [member("etcd-x", { id: "12", ...peer("10.0.0.9") })],
          nodes: [{ name: "ip-10-0-0-9", ready: true, controlPlaneLabel: true, addresses: ["10.0.0.9"] }],
        }),
      member: "12",
      machine: "cp-0",
    },
    {
      name: "a member named after a Node that shares the Machine's providerID belongs to it although the Machine has no nodeRef",
      build: () =>
        snapshot({
          machines: [
            machine("cp-0", { nodeName: undefined, providerID: "aws:///us-east-1a/i-0abc", addresses: ["54.1.2.3"] }),
          ],
          members: [member("ip-10-0-0-9", { id: "13", ...peer("10.0.0.9") })],
          nodes: [
            {
              name: "ip-10-0-0-9",
              providerID: "aws:///us-east-1a/i-0abc",
              ready: true,
              controlPlaneLabel: true,
              addresses: ["10.0.0.9"],
            },
          ],
        }),
      member: "13",
      machine: "cp-0",
    },
    {
      name: "a member named after a Node that shares an address with the Machine belongs to it",
      build: () =>
        snapshot({
          machines: [
            machine("cp-0", { nodeName: undefined, providerID: undefined, addresses: ["ip-10-0-0-9.ec2.internal"] }),
          ],
          members: [member("ip-10-0-0-9", { id: "14", ...peer("10.0.0.9") })],
          nodes: [
            { name: "ip-10-0-0-9", ready: true, controlPlaneLabel: true, addresses: ["ip-10-0-0-9.ec2.internal"] },
          ],
        }),
      member: "14",
      machine: "cp-0",
    },
    {
      name: "a member named after a Node nothing ties to the Machine, at an address the Machine lacks, belongs to no Machine",
      build: () =>
        snapshot({
          machines: [
            machine("cp-0", { nodeName: undefined, providerID: "aws:///us-east-1a/i-0abc", addresses: ["54.1.2.3"] }),
          ],
          members: [member("ip-10-0-0-9", { id: "15", ...peer("10.0.0.9") })],
          nodes: [{ name: "ip-10-0-0-9", ready: true, controlPlaneLabel: true, addresses: ["10.0.0.9"] }],
        }),
      member: "15",
      machine: undefined,
    },
    {
      name: "a member whose host is another Machine's address is that Machine's, never the one it is named after",
      build: () =>
        snapshot({
          machines: [machine("m-1", { addresses: ["10.0.0.11"] }), machine("m-2", { addresses: ["10.0.0.12"] })],
          members: [member("m-1", { id: "16", ...peer("10.0.0.12") })],
        }),
      member: "16",
      machine: "m-2",
    },
    {
      name: "a member matching two Machines with equal evidence (a reused address) belongs to neither",
      build: () =>
        snapshot({
          machines: [machine("old", { addresses: ["10.0.0.20"] }), machine("new", { addresses: ["10.0.0.20"] })],
          members: [member("ip-10-0-0-20", { id: "17", ...peer("10.0.0.20") })],
          nodes: [],
        }),
      member: "17",
      machine: undefined,
    },
    {
      name: "a reused address goes to the Machine the member is also named after",
      build: () =>
        snapshot({
          machines: [machine("old", { addresses: ["10.0.0.20"] }), machine("new", { addresses: ["10.0.0.20"] })],
          members: [member("new", { id: "18", ...peer("10.0.0.20") })],
          nodes: [],
        }),
      member: "18",
      machine: "new",
    },
  ];
  for (const row of table) {
    it(row.name, () => {
      const s = row.build();
      assert.equal(mapMembersToMachines(s).get(row.member), row.machine);
    });
  }
});

describe("identity: same-name claimants are told apart by address, never by member id", () => {
  const live = (id: string) => member("m-2", { id, ...peer("10.0.0.12") });
  const stale = (id: string) => member("m-2", { id, ...peer("10.9.9.40") });
  const machines = [machine("m-2", { addresses: ["10.0.0.12"] })];

  for (const [liveId, staleId] of [
    ["900", "100"],
    ["100", "900"],
  ]) {
    it(`the live member at the Machine's address keeps it and the stale one at an unknown address gets none (live id ${liveId}, stale id ${staleId})`, () => {
      const mapping = mapMembersToMachines(snapshot({ machines, members: [stale(staleId), live(liveId)] }));
      assert.equal(mapping.get(liveId), "m-2");
      assert.equal(mapping.get(staleId), undefined);
    });
  }

  it("two members with the Machine's name, neither at its address, are neither the Machine's", () => {
    const noAddress = [machine("m-2", { addresses: [], nodeName: undefined })];
    const mapping = mapMembersToMachines(
      snapshot({
        machines: noAddress,
        members: [member("m-2", { id: "1", ...peer("10.0.0.12") }), member("m-2", { id: "2", ...peer("10.9.9.40") })],
        nodes: [],
      }),
    );
    assert.equal(mapping.size, 0);
  });

  it("a lone member named like a Machine that reports other IPs belongs to it only once the Machine reports the member's IP", () => {
    // A Machine reporting only its public IP and a stale member with its name look the same; mapping by name handed
    // etcd leadership to such a stale member once the Machine's own member was gone (sim seed 478950346).
    const partial = mapMembersToMachines(
      snapshot({
        machines: [machine("m-2", { addresses: ["54.1.2.3"], nodeName: undefined })],
        members: [member("m-2", { id: "3", ...peer("10.0.0.12") })],
        nodes: [],
      }),
    );
    assert.equal(partial.get("3"), undefined);
    const complete = mapMembersToMachines(
      snapshot({
        machines: [machine("m-2", { addresses: ["54.1.2.3", "10.0.0.12"], nodeName: undefined })],
        members: [member("m-2", { id: "3", ...peer("10.0.0.12") })],
        nodes: [],
      }),
    );
    assert.equal(complete.get("3"), "m-2");
  });
});

describe("identity: the member ids a user lists in quorum-remove-etcd-member", () => {
  const table: { entry: string; id: string; names: boolean }[] = [
    { entry: "10276657743932975437", id: "10276657743932975437", names: true },
    { entry: "8e9e05c52164694d", id: "10276657743932975437", names: true },
    { entry: "0x8E9E05C52164694D", id: "10276657743932975437", names: true },
    { entry: " 8e9e05c52164694d ", id: "10276657743932975437", names: true },
    { entry: "8e9e05c52164694e", id: "10276657743932975437", names: false },
    { entry: "", id: "10276657743932975437", names: false },
    { entry: "m-2", id: "10276657743932975437", names: false },
  ];
  for (const row of table) {
    it(`"${row.entry}" ${row.names ? "names" : "does not name"} member ${row.id}`, () =>
      assert.equal(namesMemberId(row.entry, row.id), row.names));
  }
});
