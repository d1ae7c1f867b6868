import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  assess,
  mapMembersToMachines,
  memberStatuses,
  peerHost,
  quorumStatus,
  type MachineClass,
  type MemberClass,
  type PlannedOp,
} from "../../../src/core/assess.ts";
import type { Snapshot } from "../../../src/core/snapshot.ts";
import { dead, healthyMachines, idOf, machine, member, MINUTE, NOW, SECOND, snapshot } from "./fixtures.ts";

const observe: PlannedOp = { kind: "Observe" };

describe("assess: mapping members to Machines", () => {
  const table: { name: string; build: () => Snapshot; member: string; machine: string | undefined }[] = [
    {
      name: "a member named like the Machine's memberName belongs to it",
      build: () =>
        snapshot({
          machines: [machine("m-1", { memberName: "etcd-a", nodeName: undefined, addresses: [] })],
          members: [member("etcd-a", { peerURLs: ["https://10.8.0.1:2380"] })],
        }),
      member: "etcd-a",
      machine: "m-1",
    },
    {
      name: "a member named like the Machine's Node belongs to it",
      build: () =>
        snapshot({
          machines: [machine("m-1", { memberName: "m-1", nodeName: "ip-10-0-0-5", addresses: [] })],
          members: [member("ip-10-0-0-5", { peerURLs: ["https://10.8.0.2:2380"] })],
        }),
      member: "ip-10-0-0-5",
      machine: "m-1",
    },
    {
      name: "a member named like the Machine itself belongs to it",
      build: () =>
        snapshot({
          machines: [machine("m-1", { memberName: "other", nodeName: undefined, addresses: [] })],
          members: [member("m-1", { peerURLs: ["https://10.8.0.3:2380"] })],
        }),
      member: "m-1",
      machine: "m-1",
    },
    {
      name: "an unnamed member belongs to the Machine whose address is its peer URL host",
      build: () =>
        snapshot({
          machines: [machine("m-1", { nodeName: undefined, addresses: ["10.7.0.9"] })],
          members: [member("", { id: "42", peerURLs: ["https://10.7.0.9:2380"] })],
        }),
      member: "42",
      machine: "m-1",
    },
    {
      name: "an IPv6 peer URL matches the Machine address",
      build: () =>
        snapshot({
          machines: [machine("m-1", { nodeName: undefined, addresses: ["fd00::5"] })],
          members: [member("host-x", { peerURLs: ["https://[fd00::5]:2380"] })],
        }),
      member: "host-x",
      machine: "m-1",
    },
    {
      name: "a member named like the Machine but at an IP the Machine does not report belongs to none (a stale same-name member looks the same)",
      build: () =>
        snapshot({
          machines: [machine("m-1", { addresses: ["10.7.0.1"] })],
          members: [member("m-1", { peerURLs: ["https://10.8.0.3:2380"], clientURLs: ["https://10.8.0.3:2379"] })],
        }),
      member: "m-1",
      machine: undefined,
    },
    {
      name: "a member whose name and address match no Machine belongs to none",
      build: () =>
        snapshot({ machines: [machine("m-1")], members: [member("stray", { peerURLs: ["https://10.9.9.9:2380"] })] }),
      member: "stray",
      machine: undefined,
    },
  ];
  for (const row of table) {
    it(row.name, () => {
      const s = row.build();
      const target = s.etcd.members.find((candidate) => candidate.name === row.member || candidate.id === row.member);
      assert.ok(target);
      assert.equal(mapMembersToMachines(s).get(target.id), row.machine);
    });
  }

  it("when two members claim one Machine the started voter keeps it and the other maps to none", () => {
    const s = snapshot({
      machines: [machine("m-1")],
      members: [
        member("m-1"),
        member("", { id: "77", peerURLs: [`https://${machine("m-1").addresses[0]}:2380`], learner: true }),
      ],
    });
    const mapping = mapMembersToMachines(s);
    assert.equal(mapping.get(idOf("m-1")), "m-1");
    assert.equal(mapping.get("77"), undefined);
  });

  it("parses peer URL hosts", () => {
    assert.equal(peerHost("https://10.0.0.1:2380"), "10.0.0.1");
    assert.equal(peerHost("http://etcd-0.local"), "etcd-0.local");
    assert.equal(peerHost("https://[::1]:2380"), "::1");
    assert.equal(peerHost("not a url"), undefined);
  });
});

describe("assess: classifying members and Machines", () => {
  const memberTable: { name: string; build: () => Snapshot; member: string; expect: MemberClass; stalled?: boolean }[] =
    [
      {
        name: "a started, answering voter is a healthy voter",
        build: () => snapshot(healthyMachines(3)),
        member: "m-2",
        expect: "healthy-voter",
      },
      {
        name: "a voter that does not answer is an unhealthy voter",
        build: () => {
          const h = healthyMachines(3);
          h.members[1] = dead("m-2");
          return snapshot(h);
        },
        member: "m-2",
        expect: "unhealthy-voter",
      },
      {
        name: "a voter that answers with an error is an unhealthy voter",
        build: () => {
          const h = healthyMachines(3);
          h.members[1] = member("m-2", { errors: ["etcdserver: no leader"] });
          return snapshot(h);
        },
        member: "m-2",
        expect: "unhealthy-voter",
      },
      {
        name: "a learner on a provisioning Machine is a joining learner, not a ghost, even long after it appeared",
        build: () => {
          const h = healthyMachines(3);
          return snapshot({
            machines: [...h.machines, machine("n-1", { created: NOW - MINUTE, nodeName: undefined })],
            members: [...h.members, member("n-1", { learner: true, firstObserved: NOW - 60 * MINUTE })],
          });
        },
        member: "n-1",
        expect: "joining-learner",
        stalled: true,
      },
      {
        name: "an unstarted member added by a provisioning Machine is an unstarted joiner",
        build: () => {
          const h = healthyMachines(3);
          const joining = machine("n-1", { created: NOW - MINUTE, nodeName: undefined, addresses: ["10.6.0.1"] });
          return snapshot({
            machines: [...h.machines, joining],
            members: [
              ...h.members,
              member("", {
                id: "99",
                peerURLs: ["https://10.6.0.1:2380"],
                reachable: false,
                firstObserved: NOW - 30 * SECOND,
              }),
            ],
          });
        },
        member: "99",
        expect: "unstarted-joiner",
        stalled: false,
      },
      {
        name: "a member that maps to no Machine is a ghost only after the grace period",
        build: () => {
          const h = healthyMachines(3);
          return snapshot({
            ...h,
            members: [
              ...h.members,
              dead("old", { peerURLs: ["https://10.9.9.9:2380"], firstObserved: NOW - 5 * MINUTE }),
            ],
          });
        },
        member: "old",
        expect: "ghost",
      },
      {
        name: "a member that maps to no Machine within the grace period keeps its etcd class",
        build: () => {
          const h = healthyMachines(3);
          return snapshot({
            ...h,
            members: [
              ...h.members,
              dead("old", { peerURLs: ["https://10.9.9.9:2380"], firstObserved: NOW - 5 * MINUTE + SECOND }),
            ],
          });
        },
        member: "old",
        expect: "unhealthy-voter",
      },
    ];
  for (const row of memberTable) {
    it(row.name, () => {
      const verdict = assess(row.build(), observe);
      const found = verdict.members.find((candidate) => candidate.name === row.member || candidate.id === row.member);
      assert.ok(found, `member ${row.member} is assessed`);
      assert.equal(found.class, row.expect);
      if (row.stalled !== undefined) assert.equal(found.stalled, row.stalled);
    });
  }

  const machineTable: { name: string; build: () => Snapshot; machine: string; expect: MachineClass }[] = [
    {
      name: "a Machine with a started voter has joined",
      build: () => snapshot(healthyMachines(1)),
      machine: "m-1",
      expect: "joined",
    },
    {
      name: "a young Machine without a member is provisioning",
      build: () => snapshot({ machines: [machine("m-1", { created: NOW - 9 * MINUTE })] }),
      machine: "m-1",
      expect: "provisioning",
    },
    {
      name: "a Machine without a member past the join grace period has lost it",
      build: () => snapshot({ machines: [machine("m-1", { created: NOW - 10 * MINUTE })] }),
      machine: "m-1",
      expect: "member-lost",
    },
    {
      name: "a deleting Machine whose member is still there is deleting with its member",
      build: () => snapshot({ machines: [machine("m-1", { deleting: NOW })], members: [member("m-1")] }),
      machine: "m-1",
      expect: "deleting-with-member",
    },
    {
      name: "a deleting Machine whose member is gone is deleting with its member gone",
      build: () =>
        snapshot({
          machines: [machine("m-1", { deleting: NOW })],
          members: [member("m-2", { peerURLs: ["https://10.9.0.2:2380"] })],
        }),
      machine: "m-1",
      expect: "deleting-member-gone",
    },
  ];
  for (const row of machineTable) {
    it(row.name, () => {
      const verdict = assess(row.build(), observe);
      assert.equal(verdict.machines.find((candidate) => candidate.name === row.machine)?.class, row.expect);
    });
  }
});

describe("assess: quorum numbers and status", () => {
  it("counts one dead voter of three as 2 healthy of 3, quorum 2, no failure tolerated", () => {
    const h = healthyMachines(3);
    h.members[2] = dead("m-3");
    const verdict = assess(snapshot(h), observe);
    assert.deepEqual(quorumStatus(verdict), { voters: 3, healthyVoters: 2, quorumSize: 2, failuresTolerated: 0 });
    assert.equal(verdict.hasQuorum, true);
  });

  it("counts a ghost as a voter, so three healthy members next to a dead ghost tolerate no failure", () => {
    const h = healthyMachines(3);
    const verdict = assess(
      snapshot({ ...h, members: [...h.members, dead("ghost", { peerURLs: ["https://10.9.9.9:2380"] })] }),
      observe,
    );
    assert.deepEqual(quorumStatus(verdict), { voters: 4, healthyVoters: 3, quorumSize: 3, failuresTolerated: 0 });
  });

  it("does not count a learner as a voter", () => {
    const h = healthyMachines(3);
    const verdict = assess(
      snapshot({
        machines: [...h.machines, machine("n-1", { created: NOW })],
        members: [...h.members, member("n-1", { learner: true })],
      }),
      observe,
    );
    assert.equal(verdict.quorum.voters, 3);
  });

  it("summarises every member for status.etcd.members with its Machine, Node, role and error", () => {
    const h = healthyMachines(2);
    h.members[1] = dead("m-2");
    const statuses = memberStatuses(assess(snapshot(h), observe));
    assert.deepEqual(
      statuses.map((status) => [
        status.name,
        status.machine,
        status.node,
        status.leader,
        status.healthy,
        status.learner,
      ]),
      [
        ["m-1", "m-1", "m-1", true, true, false],
        ["m-2", "m-2", "m-2", false, false, false],
      ],
    );
    assert.match(statuses[1].error ?? "", /unreachable/);
    assert.equal(statuses[0].state, "leader");
  });

  it("shows a learner's progress in its state", () => {
    const h = healthyMachines(1);
    const verdict = assess(
      snapshot({
        machines: [...h.machines, machine("n-1", { created: NOW })],
        members: [...h.members, member("n-1", { learner: true, raftAppliedIndex: 4200, firstObserved: NOW - MINUTE })],
      }),
      observe,
    );
    assert.equal(verdict.members.find((candidate) => candidate.name === "n-1")?.state, "learner, 84% caught up");
  });
});

describe("assess: planned operations", () => {
  it("removing the one dead voter of three keeps quorum: 2 of 2 healthy", () => {
    const h = healthyMachines(3);
    h.members[2] = dead("m-3");
    const verdict = assess(snapshot(h), { kind: "RemoveMember", memberId: idOf("m-3") });
    assert.equal(verdict.allowed, true);
    assert.equal(verdict.keepsQuorum, true);
    assert.deepEqual([verdict.projected.voters, verdict.projected.healthyVoters], [2, 2]);
  });

  it("removing a healthy voter while another is dead is refused and names the dead one", () => {
    const h = healthyMachines(3);
    h.members[2] = dead("m-3");
    const verdict = assess(snapshot(h), { kind: "RemoveMember", memberId: idOf("m-2") });
    assert.equal(verdict.allowed, false);
    assert.equal(verdict.keepsQuorum, false);
    assert.ok(verdict.blockers.some((blocker) => blocker.subject.includes("m-3")));
  });

  it("removing a healthy voter of five with one dead keeps quorum but fails the strict policy", () => {
    const h = healthyMachines(5);
    h.members[4] = dead("m-5");
    const verdict = assess(snapshot(h), { kind: "RemoveMember", memberId: idOf("m-2") });
    assert.equal(verdict.keepsQuorum, true);
    assert.equal(verdict.strict, false);
    assert.equal(verdict.allowed, false);
    assert.deepEqual(
      verdict.blockers.map((blocker) => blocker.subject),
      ["member m-5"],
    );
  });

  it("removing a dead voter of five while another is also dead is allowed: it never lowers the failures tolerated", () => {
    const h = healthyMachines(5);
    h.members[3] = dead("m-4");
    h.members[4] = dead("m-5");
    assert.equal(assess(snapshot(h), { kind: "RemoveMember", memberId: idOf("m-5") }).allowed, true);
  });

  it("counts a Machine that is still joining as an unhealthy voter in the projection", () => {
    const h = healthyMachines(3);
    const s = snapshot({
      machines: [...h.machines, machine("n-1", { created: NOW - MINUTE, nodeName: undefined })],
      members: h.members,
    });
    const verdict = assess(s, { kind: "RemoveMember", memberId: idOf("m-1") });
    assert.deepEqual([verdict.projected.voters, verdict.projected.healthyVoters], [3, 2]);
    assert.equal(verdict.allowed, false);
    assert.ok(verdict.blockers.some((blocker) => blocker.subject === "machine n-1"));
  });

  it("names deleting the Machine as the way past its down voter only while quorum holds and nobody replaces it", () => {
    const fix = /if machine m-3 is lost, delete it/;
    const down = healthyMachines(3);
    down.members[2] = dead("m-3");
    const why = (s: Snapshot) =>
      assess(s, { kind: "CreateMachine" })
        .blockers.map((blocker) => blocker.why)
        .join("; ");
    assert.match(why(snapshot(down)), fix);
    const marked = {
      ...down,
      machines: down.machines.map((m) => (m.name === "m-3" ? { ...m, remediationRequested: true } : m)),
    };
    assert.doesNotMatch(why(snapshot(marked)), fix);
    const lost = healthyMachines(3);
    lost.members[1] = dead("m-2");
    lost.members[2] = dead("m-3");
    assert.match(why(snapshot(lost)), /only 1 of 3 voters are healthy/);
    assert.doesNotMatch(why(snapshot(lost)), /delete it/);
  });

  it("offers deleting the Machine of a member that stopped answering only once it has been down for machineLostAfter", () => {
    // A reboot or an etcd restart: the member went away a minute ago and will most likely come back.
    const rebooting = healthyMachines(3);
    rebooting.members[2] = dead("m-3", { downObserved: NOW - MINUTE });
    const why = (s: Snapshot) =>
      assess(s, { kind: "CreateMachine" })
        .blockers.map((blocker) => blocker.why)
        .join("; ");
    const early = why(snapshot(rebooting));
    assert.match(early, /is an unhealthy voter \(unreachable; context deadline exceeded\) since \S+Z/);
    assert.ok(early.includes(new Date(NOW - MINUTE).toISOString().replace(".000Z", "Z")), early);
    assert.doesNotMatch(early, /is lost/);
    // Down five minutes (the default machineLostAfter): nothing short of a lost Machine explains it.
    rebooting.members[2] = dead("m-3", { downObserved: NOW - 5 * MINUTE });
    assert.match(why(snapshot(rebooting)), /since \S+Z; if machine m-3 is lost, delete it/);
    // A member that answers with an alarm is not coming back by waiting: the way out stays at once.
    const alarmed = healthyMachines(3);
    alarmed.members[2] = member("m-3", { errors: ["etcdserver: mvcc: database space exceeded"] });
    assert.match(why(snapshot(alarmed)), /if machine m-3 is lost, delete it/);
  });

  it("refuses to add a member next to a dead voter: 2 healthy of 4 would be below quorum", () => {
    const h = healthyMachines(3);
    h.members[2] = dead("m-3");
    const verdict = assess(snapshot(h), { kind: "CreateMachine" });
    assert.equal(verdict.allowed, false);
    assert.equal(verdict.keepsQuorum, false);
  });

  it("allows growing from one healthy voter although no spare can exist while the second joins", () => {
    const verdict = assess(snapshot(healthyMachines(1)), { kind: "CreateMachine" });
    assert.equal(verdict.allowed, true);
    assert.equal(verdict.keepsQuorum, false);
  });

  it("allows deleting a Machine whose member is gone even next to a dead voter: etcd does not change", () => {
    const h = healthyMachines(4);
    h.members[1] = dead("m-2");
    const verdict = assess(snapshot({ machines: h.machines, members: h.members.slice(0, 3) }), {
      kind: "DeleteMachine",
      machine: "m-4",
    });
    assert.equal(verdict.allowed, true);
    assert.deepEqual(verdict.blockers, []);
  });

  it("refuses to delete a Machine whose voter is still a member when members are removed before deletion", () => {
    const verdict = assess(snapshot(healthyMachines(3)), { kind: "DeleteMachine", machine: "m-2" });
    assert.equal(verdict.allowed, false);
    assert.match(verdict.blockers[0].why, /BeforeDelete/);
  });

  it("judges a deletion under AfterDrain as the removal of its member", () => {
    const verdict = assess(snapshot({ ...healthyMachines(3), controlPlane: { memberRemoval: "AfterDrain" } }), {
      kind: "DeleteMachine",
      machine: "m-2",
    });
    assert.equal(verdict.allowed, true);
    assert.deepEqual([verdict.projected.voters, verdict.projected.healthyVoters], [2, 2]);
  });

  it("refuses to release the hook of a Machine whose member is still in etcd", () => {
    const h = healthyMachines(3);
    h.machines[1].deleting = NOW;
    const verdict = assess(snapshot(h), { kind: "ReleaseHook", machine: "m-2" });
    assert.equal(verdict.allowed, false);
    assert.match(verdict.blockers[0].why, /ghost/);
  });

  it("promotes a learner only once it is within 90% of the leader", () => {
    const h = healthyMachines(3);
    const build = (applied: number) =>
      snapshot({
        machines: [...h.machines, machine("n-1", { created: NOW })],
        members: [...h.members, member("n-1", { learner: true, raftAppliedIndex: applied })],
      });
    const behind = assess(build(4000), { kind: "PromoteLearner", memberId: idOf("n-1") });
    assert.equal(behind.allowed, false);
    assert.match(behind.blockers[0].why, /80% caught up/);
    assert.equal(assess(build(4600), { kind: "PromoteLearner", memberId: idOf("n-1") }).allowed, true);
  });

  it("removes a ghost only when it is one, and only when that keeps quorum", () => {
    const h = healthyMachines(3);
    const young = snapshot({
      ...h,
      members: [...h.members, dead("old", { peerURLs: ["https://10.9.9.9:2380"], firstObserved: NOW - MINUTE })],
    });
    assert.equal(assess(young, { kind: "RemoveGhost", memberId: idOf("old") }).allowed, false);
    const ripe = snapshot({
      ...h,
      members: [...h.members, dead("old", { peerURLs: ["https://10.9.9.9:2380"], firstObserved: NOW - 6 * MINUTE })],
    });
    assert.equal(assess(ripe, { kind: "RemoveGhost", memberId: idOf("old") }).allowed, true);
  });

  it("blocks strict operations on an alarm and on a Machine deleted without Quorum's hook", () => {
    const h = healthyMachines(5);
    h.machines[4].deleting = NOW;
    h.machines[4].hasPreTerminateHook = false;
    const verdict = assess(snapshot({ ...h, alarms: [{ memberId: idOf("m-3"), alarm: "NOSPACE" }] }), {
      kind: "RemoveMember",
      memberId: idOf("m-2"),
    });
    assert.equal(verdict.allowed, false);
    assert.deepEqual(verdict.blockers.map((blocker) => blocker.subject).sort(), ["alarm NOSPACE", "machine m-5"]);
  });

  it("without the member list allows only the very first Machine and names the error", () => {
    const empty = snapshot({ observed: false, error: "no endpoints" });
    assert.equal(assess(empty, { kind: "CreateMachine" }).allowed, true);
    const some = snapshot({ machines: [machine("m-1")], observed: false, error: "dial timeout" });
    for (const op of [
      { kind: "CreateMachine" },
      { kind: "DeleteMachine", machine: "m-1" },
      { kind: "ReleaseHook", machine: "m-1" },
    ] as PlannedOp[]) {
      const verdict = assess(some, op);
      assert.equal(verdict.allowed, false);
      assert.match(verdict.blockers[0].why, /dial timeout/);
    }
  });

  it("lets the last Machine go with its member when the control plane is being deleted", () => {
    const verdict = assess(snapshot({ ...healthyMachines(1), controlPlane: { deleting: true } }), {
      kind: "DeleteMachine",
      machine: "m-1",
    });
    assert.equal(verdict.allowed, true);
    assert.equal(
      assess(snapshot({ ...healthyMachines(1) }), { kind: "RemoveMember", memberId: idOf("m-1") }).allowed,
      false,
    );
  });
});
