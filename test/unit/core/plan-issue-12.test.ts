// The planner bugs of issue 12, each reproduced with the state a real cluster produces and shown fixed: a fresh
// cluster whose only member cannot be tied to its Machine, a stale member with a live Machine's name, and a
// scale-down next to a dead voter.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isDisruptive, type Action } from "../../../src/core/actions.ts";
import { plan, type Decision } from "../../../src/core/plan.ts";
import type { MachineView, MemberView, NodeView, Snapshot } from "../../../src/core/snapshot.ts";
import {
  applyIdeal,
  dead,
  healthyMachines,
  machine,
  member,
  MINUTE,
  NOW,
  passesTime,
  snapshot,
  withLeader,
  type SnapshotParts,
} from "./fixtures.ts";

const peer = (host: string) => ({ peerURLs: [`https://${host}:2380`], clientURLs: [`https://${host}:2379`] });

/**
 * Bug 1's Machine: created 30 minutes ago (past the 10-minute join grace), no nodeRef because no cloud controller
 * manager set the Node's providerID, and only its public address in status.addresses.
 */
function freshMachine(name: string, publicAddress: string, overrides: Partial<MachineView> = {}): MachineView {
  return machine(name, {
    created: NOW - 30 * MINUTE,
    nodeName: undefined,
    providerID: `aws:///us-east-1a/i-${name}`,
    addresses: [publicAddress],
    ...overrides,
  });
}

/** kubeadm names the member after the host; its Node has no providerID yet. */
function hostMember(
  host: string,
  ip: string,
  overrides: Partial<MemberView> = {},
): { member: MemberView; node: NodeView } {
  return {
    member: member(host, {
      ...peer(ip),
      firstObserved: NOW - 25 * MINUTE,
      startedObserved: NOW - 25 * MINUTE,
      ...overrides,
    }),
    node: { name: host, ready: true, controlPlaneLabel: true, addresses: [ip, `${host}.ec2.internal`] },
  };
}

function decide(parts: SnapshotParts): Decision {
  return plan(snapshot(parts));
}

function names(action: Action): string {
  return `${action.kind}: ${action.reason}`;
}

describe("issue 12 bug 1: a live member that maps to no Machine never gets its Machine remediated", () => {
  const lone = () => {
    const { member: only, node } = hostMember("ip-10-0-0-9", "10.0.0.9", { leader: true });
    return {
      machines: [freshMachine("cp-0", "54.12.3.4")],
      members: [only],
      nodes: [node],
      controlPlane: { replicas: 1 },
    } satisfies SnapshotParts;
  };

  it("after the join grace period it waits, naming the unmapped member, the candidate Machine and the fix, instead of remediating cp-0", () => {
    const decision = decide(lone());
    assert.equal(decision.action.kind, "Wait", names(decision.action));
    for (const word of ["ip-10-0-0-9", "cp-0", "quorum-remove-etcd-member"])
      assert.ok(decision.action.reason.includes(word), `reason names ${word}: ${decision.action.reason}`);
    const assessed = decision.assessment.members[0];
    assert.equal(assessed.class, "unmapped");
    assert.deepEqual(assessed.candidates, ["cp-0"]);
    assert.match(assessed.state, /unmapped.*machine cp-0/);
  });

  it("names at most five candidate Machines, so the status stays readable during a long rollout", () => {
    const parts = lone();
    const machines = ["cp-0", "cp-1", "cp-2", "cp-3", "cp-4", "cp-5", "cp-6"].map((name, index) =>
      freshMachine(name, `54.12.3.${index + 4}`),
    );
    const state = decide({ ...parts, machines }).assessment.members[0].state;
    assert.match(state, /machine cp-4 \(and 2 more\)/);
    assert.ok(!state.includes("cp-5"), state);
  });

  it("stays unmapped, not a ghost, however long past the ghost grace period", () => {
    const parts = lone();
    const decision = decide({
      ...parts,
      members: parts.members.map((candidate) => ({ ...candidate, firstObserved: NOW - 24 * 60 * MINUTE })),
    });
    assert.equal(decision.assessment.members[0].class, "unmapped");
    assert.equal(decision.action.kind, "Wait", names(decision.action));
  });

  it("keeps the pre-terminate hook of cp-0 when something else deletes it, since releasing it would destroy the only etcd", () => {
    const parts = lone();
    const decision = decide({ ...parts, machines: [freshMachine("cp-0", "54.12.3.4", { deleting: NOW - MINUTE })] });
    assert.notEqual(decision.action.kind, "ReleaseHook", names(decision.action));
    assert.ok(!isDisruptive(decision.action), names(decision.action));
  });

  it("does not hold back the deletion of the whole control plane, which takes every member with it", () => {
    const parts = lone();
    const decision = decide({
      ...parts,
      machines: [freshMachine("cp-0", "54.12.3.4", { deleting: NOW - MINUTE })],
      controlPlane: { replicas: 1, deleting: true },
    });
    assert.equal(decision.action.kind, "ReleaseHook", names(decision.action));
  });

  it("maps the member once the Node gets the Machine's providerID, and then has nothing to do", () => {
    const parts = lone();
    const nodes = parts.nodes.map((node) => ({ ...node, providerID: "aws:///us-east-1a/i-cp-0" }));
    const decision = decide({ ...parts, nodes });
    assert.equal(decision.assessment.members[0].machine, "cp-0");
    assert.match(decision.action.reason, /nothing to do/);
  });

  const three = (remediate: boolean): SnapshotParts => {
    const a = hostMember("ip-10-0-0-9", "10.0.0.9");
    const b = hostMember("ip-10-0-0-10", "10.0.0.10", { reachable: false, errors: ["context deadline exceeded"] });
    const c = hostMember("ip-10-0-0-11", "10.0.0.11", { leader: true });
    // cp-1 and cp-2 have their nodeRef; cp-0 does not, and its member runs on an address it does not report.
    const machines = [
      freshMachine("cp-0", "54.12.3.4"),
      freshMachine("cp-1", "54.12.3.5", { nodeName: "ip-10-0-0-10", remediationRequested: remediate }),
      freshMachine("cp-2", "54.12.3.6", { nodeName: "ip-10-0-0-11" }),
    ];
    return {
      machines,
      members: [a.member, b.member, c.member],
      nodes: [a.node, b.node, c.node],
      controlPlane: { replicas: 3 },
    };
  };

  it("with three Machines and one voter dead, it never touches cp-0, which would leave 1 of 3 voters healthy", () => {
    const decision = decide(three(false));
    assert.equal(decision.action.kind, "Wait", names(decision.action));
    assert.ok(decision.action.reason.includes("ip-10-0-0-9"), decision.action.reason);
  });

  it("with three Machines, never spends quorum on any step of a walk, and may still remediate the dead voter's Machine", () => {
    let current: Snapshot = snapshot(three(true));
    const seen: string[] = [];
    for (let step = 0; step < 12; step++) {
      const { action } = plan(current);
      seen.push(action.kind);
      assert.ok(!("machine" in action && action.machine === "cp-0" && isDisruptive(action)), names(action));
      assert.notEqual(action.kind === "ReleaseHook" && action.machine, "cp-0", names(action));
      if (action.kind === "Wait" && !passesTime(action)) break;
      current = applyIdeal(current, action);
      const voters = current.etcd.members.filter((candidate) => !candidate.learner);
      const healthy = voters.filter((candidate) => candidate.reachable && candidate.errors.length === 0).length;
      assert.ok(
        healthy >= Math.floor(voters.length / 2) + 1,
        `after ${action.kind}: ${healthy} healthy of ${voters.length}`,
      );
    }
    assert.equal(seen[0], "RemoveMember", `the dead voter of cp-1 goes first: ${seen.join(" ")}`);
    assert.ok(
      current.etcd.members.some((candidate) => candidate.name === "ip-10-0-0-9"),
      "cp-0's member is still there",
    );
  });
});

describe("issue 12 bug 2: a stale member with a live Machine's name never costs the live one", () => {
  // m-2's own member and a stale "m-2" (a host reset and re-joined, a forgotten VM) at an address no Machine has.
  // The stale id sorts first: ranking by id is what removed the live member.
  const build = (stale: "reachable" | "unreachable", extra: Partial<SnapshotParts> = {}): SnapshotParts => {
    const h = healthyMachines(3);
    const staleMember =
      stale === "reachable"
        ? member("m-2", { id: "1", ...peer("10.9.9.40"), firstObserved: NOW - 30 * MINUTE })
        : dead("m-2", { id: "1", ...peer("10.9.9.40"), firstObserved: NOW - 30 * MINUTE });
    return { machines: h.machines, members: [staleMember, ...withLeader(h.members, "m-1")], ...extra };
  };
  const liveId = () => healthyMachines(3).members[1].id;

  it("when the stale member is dead it is a ghost and removed after its grace period, and the live one keeps m-2", () => {
    const decision = decide(build("unreachable"));
    assert.equal(decision.action.kind, "RemoveGhost", names(decision.action));
    assert.equal(decision.action.kind === "RemoveGhost" && decision.action.memberId, "1");
    assert.equal(decision.assessment.members.find((candidate) => candidate.id === liveId())?.machine, "m-2");
  });

  it("when the stale member answers it is unmapped: not removed, the live one keeps m-2, and a scale-down waits", () => {
    const idle = decide(build("reachable"));
    assert.ok(!isDisruptive(idle.action), names(idle.action));
    assert.equal(idle.assessment.members.find((candidate) => candidate.id === "1")?.class, "unmapped");
    const down = decide(build("reachable", { controlPlane: { replicas: 1 } }));
    assert.equal(down.action.kind, "Wait", names(down.action));
    assert.ok(down.action.reason.includes("quorum-remove-etcd-member=1"), down.action.reason);
  });

  it("when a user lists the stale member's id in the annotation, that member is removed, never the live one", () => {
    for (const id of ["1", "0x1"]) {
      const decision = decide(build("reachable", { controlPlane: { removeMemberIds: [id] } }));
      assert.equal(decision.action.kind, "RemoveMember", names(decision.action));
      assert.equal(decision.action.kind === "RemoveMember" && decision.action.memberId, "1");
    }
  });

  it("never removes m-2's own live member on any step of a scale-down walk", () => {
    for (const stale of ["reachable", "unreachable"] as const) {
      let current = snapshot(build(stale, { controlPlane: { replicas: 1 } }));
      for (let step = 0; step < 20; step++) {
        const { action } = plan(current);
        if (action.kind === "RemoveMember" || action.kind === "RemoveGhost") {
          // m-2 may leave on a scale-down, but only as m-2's member after the stale one is gone.
          assert.ok(
            action.memberId !== liveId() || !current.etcd.members.some((candidate) => candidate.id === "1"),
            `${stale}: ${names(action)}`,
          );
        }
        if (action.kind === "Wait" && !passesTime(action)) break;
        current = applyIdeal(current, action);
      }
    }
  });
});

describe("issue 12 bug 3: a scale-down next to a dead voter removes the dead voter's Machine first and reaches the spec", () => {
  const table: { name: string; machines: number; replicas: number; deadMachine: string; remediate?: string }[] = [
    { name: "3 -> 1 with m-2 dead", machines: 3, replicas: 1, deadMachine: "m-2" },
    { name: "3 -> 1 with m-3 dead", machines: 3, replicas: 1, deadMachine: "m-3" },
    { name: "3 -> 2 with m-3 dead", machines: 3, replicas: 2, deadMachine: "m-3" },
    { name: "5 -> 3 with m-4 dead", machines: 5, replicas: 3, deadMachine: "m-4" },
    // The healthy Machine a MachineHealthCheck flagged cannot leave while m-2's voter is dead: m-2 must go first.
    {
      name: "3 -> 1 with m-2 dead and remediation requested for healthy m-1",
      machines: 3,
      replicas: 1,
      deadMachine: "m-2",
      remediate: "m-1",
    },
  ];
  for (const row of table) {
    it(`${row.name}: the dead voter's Machine goes first and the walk ends at ${row.replicas} healthy members`, () => {
      const h = healthyMachines(row.machines);
      for (const candidate of h.machines) candidate.remediationRequested = candidate.name === row.remediate;
      const members = h.members.map((candidate) =>
        candidate.name === row.deadMachine ? dead(candidate.name) : candidate,
      );
      let current = snapshot({ machines: h.machines, members, controlPlane: { replicas: row.replicas } });
      const actions: Action[] = [];
      for (let step = 0; step < 40; step++) {
        const { action } = plan(current);
        if (action.kind === "Wait" && !passesTime(action)) break;
        if (action.kind !== "Wait") actions.push(action);
        current = applyIdeal(current, action);
      }
      const firstRemoval = actions.find((action) => action.kind === "RemoveMember");
      assert.equal(
        firstRemoval?.kind === "RemoveMember" && firstRemoval.machine,
        row.deadMachine,
        actions.map(names).join("\n"),
      );
      const active = current.machines.filter((candidate) => candidate.deleting === undefined);
      assert.equal(active.length, row.replicas, actions.map(names).join("\n"));
      assert.equal(current.etcd.members.length, row.replicas);
      assert.ok(current.etcd.members.every((candidate) => candidate.reachable && candidate.errors.length === 0));
      assert.match(plan(current).action.reason, /nothing to do/);
    });
  }
});

describe("issue 12 bug 3: a Machine being deleted does not wait forever on a dead voter that could leave", () => {
  it("removes the dead voter's Machine first when fewer Machines are wanted, which unblocks the deletion", () => {
    // A user deleted healthy m-1 (its member must leave first), m-5's voter is dead, and 4 active Machines are one
    // more than the 3 replicas: removing m-1's healthy member is refused while m-5 lives; removing m-5's is not.
    const h = healthyMachines(5);
    h.machines[0].deleting = NOW - MINUTE;
    const members = withLeader(h.members, "m-2").map((candidate) =>
      candidate.name === "m-5" ? dead("m-5") : candidate,
    );
    const decision = decide({ machines: h.machines, members, controlPlane: { replicas: 3 } });
    assert.equal(decision.action.kind, "RemoveMember", names(decision.action));
    assert.equal(decision.action.kind === "RemoveMember" && decision.action.machine, "m-5");
    const after = applyIdeal(
      snapshot({ machines: h.machines, members, controlPlane: { replicas: 3 } }),
      decision.action,
    );
    const next = plan(after).action;
    assert.ok(
      next.kind === "RemoveMember" || next.kind === "ForwardLeadership" || next.kind === "DeleteMachine",
      names(next),
    );
  });
});
