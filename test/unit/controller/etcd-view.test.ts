import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, it } from "node:test";
import { EndpointUnreachableError } from "../../../src/adapters/errors.ts";
import type { EtcdClusterClient, EtcdMember, EtcdMemberStatus, ListMembersOptions } from "../../../src/ports/index.ts";
import { observeEtcd, toEtcdView, type EtcdObservation } from "../../../src/controller/etcd-view.ts";

const members: EtcdMember[] = [
  {
    id: "11",
    name: "cp-a",
    peerURLs: ["https://10.0.0.1:2380"],
    clientURLs: ["https://10.0.0.1:2379"],
    learner: false,
  },
  {
    id: "22",
    name: "cp-b",
    peerURLs: ["https://10.0.0.2:2380"],
    clientURLs: ["https://10.0.0.2:2379"],
    learner: false,
  },
  { id: "33", name: "", peerURLs: ["https://10.0.0.3:2380"], clientURLs: [], learner: true },
];
const statuses: EtcdMemberStatus[] = [
  {
    memberId: "11",
    endpoint: "https://10.0.0.1:2379",
    reachable: true,
    leader: true,
    leaderId: "11",
    raftTerm: 3,
    raftIndex: 100,
    raftAppliedIndex: 100,
    dbSize: 20480,
    errors: [],
  },
  {
    memberId: "22",
    endpoint: "https://10.0.0.2:2379",
    reachable: false,
    leader: false,
    errors: ["no answer within 1000 ms"],
  },
  { memberId: "33", reachable: false, leader: false, errors: ["member has not started yet (no client URLs)"] },
];
const observation: EtcdObservation = { members, statuses, alarms: [{ memberId: "11", alarm: "NOSPACE" }] };

function fakeClient(overrides: Partial<EtcdClusterClient>): EtcdClusterClient {
  const unused = async () => {
    throw new Error("not used");
  };
  return {
    listMembers: async () => members,
    memberStatuses: async () => statuses,
    alarms: async () => [],
    addMember: unused,
    promoteLearner: unused,
    removeMember: unused,
    moveLeader: unused,
    close: async () => {},
    ...overrides,
  };
}

describe("etcd view", () => {
  it("shows every member with its status, including unreachable and unstarted ones, and the alarms", () => {
    const view = toEtcdView({ ok: true, observation });
    assert.equal(view.observed, true);
    assert.deepEqual(view.alarms, [{ memberId: "11", alarm: "NOSPACE" }]);
    assert.deepEqual(
      view.members.map((member) => [
        member.id,
        member.name,
        member.learner,
        member.reachable,
        member.leader,
        member.raftAppliedIndex,
        member.errors,
      ]),
      [
        ["11", "cp-a", false, true, true, 100, []],
        ["22", "cp-b", false, false, false, undefined, ["no answer within 1000 ms"]],
        ["33", "", true, false, false, undefined, ["member has not started yet (no client URLs)"]],
      ],
    );
  });

  it("reports an unobserved membership with the reason when no endpoint answered", async () => {
    const failing = fakeClient({
      listMembers: async () => {
        throw new EndpointUnreachableError(
          "etcd of cluster team-a/prod",
          new Map([["https://10.0.0.1:2379", "connection refused"]]),
          1000,
        );
      },
    });
    const view = toEtcdView(await observeEtcd(failing));
    assert.equal(view.observed, false);
    assert.deepEqual(view.members, []);
    assert.match(
      view.error ?? "",
      /etcd of cluster team-a\/prod: not reachable: no endpoint answered within 1000 ms \(https:\/\/10\.0\.0\.1:2379: connection refused\)/,
    );
  });

  it("reads the member list linearizable, and without a leader shows a member's own view marked unconfirmed", async () => {
    const asked: (ListMembersOptions | undefined)[] = [];
    const leaderless = fakeClient({
      listMembers: async (options) => {
        asked.push(options);
        if (options?.serializable) return members;
        throw new EndpointUnreachableError(
          "etcd of cluster team-a/prod",
          new Map([["https://10.0.0.1:2379", "context deadline exceeded"]]),
          2000,
        );
      },
    });
    const view = toEtcdView(await observeEtcd(leaderless));
    assert.deepEqual(asked, [undefined, { serializable: true }]);
    assert.equal(view.observed, true);
    assert.equal(view.members.length, 3);
    assert.match(view.unconfirmed ?? "", /no endpoint answered within 2000 ms .*context deadline exceeded/);

    const askedWithLeader: (ListMembersOptions | undefined)[] = [];
    const healthy = toEtcdView(
      await observeEtcd(fakeClient({ listMembers: async (options) => (askedWithLeader.push(options), members) })),
    );
    assert.deepEqual(askedWithLeader, [undefined]);
    assert.equal(healthy.unconfirmed, undefined);
  });

  it("asks for a member's own view while a confirmed list is late, not only after it failed", async () => {
    // Without a leader the confirmed list waits out its deadline: the own view asked only then would double it.
    const asked: string[] = [];
    let failConfirmed: (error: Error) => void = () => {};
    const leaderless = fakeClient({
      listMembers: (options) => {
        asked.push(options?.serializable ? "own view" : "confirmed");
        if (options?.serializable) return Promise.resolve(members);
        return new Promise<EtcdMember[]>((_, reject) => {
          failConfirmed = reject;
        });
      },
    });
    const observing = observeEtcd(leaderless, { ownViewAfterMs: 1 });
    for (let waited = 0; !asked.includes("own view") && waited < 1000; waited++) await sleep(5);
    assert.deepEqual(asked, ["confirmed", "own view"], "the own view is asked while the confirmed list is pending");
    failConfirmed(new Error("no answer within 2000 ms"));
    const view = toEtcdView(await observing);
    assert.equal(view.members.length, 3);
    assert.equal(view.unconfirmed, "no answer within 2000 ms");
    assert.deepEqual(asked, ["confirmed", "own view"]);
  });

  it("does not ask again for a list it could not read for a reason only a user can fix", async () => {
    const asked: (ListMembersOptions | undefined)[] = [];
    const badCertificate = fakeClient({
      listMembers: async (options) => {
        asked.push(options);
        throw Object.assign(new Error("etcd of cluster team-a/prod: the client certificate has expired"), {
          reason: "CertificateExpired",
          needsUser: true,
        });
      },
    });
    const view = toEtcdView(await observeEtcd(badCertificate));
    assert.deepEqual(asked, [undefined]);
    assert.equal(view.observed, false);
    assert.match(view.error ?? "", /certificate has expired/);
  });

  it("treats alarms it could not read as an unknown alarm rather than as no alarm", async () => {
    const client = fakeClient({
      alarms: async () => {
        throw new Error("deadline exceeded");
      },
    });
    const result = await observeEtcd(client);
    assert.ok(result.ok);
    assert.equal(result.observation.members.length, 3);
    assert.deepEqual(result.observation.alarms, [{ memberId: "0", alarm: "UNKNOWN (deadline exceeded)" }]);
  });
});
