// Properties of plan() over random snapshots. The oracles below recompute quorum and membership from the raw
// snapshot on purpose, without assess(), so a bug in assess cannot hide itself.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { isDisruptive, type Action } from "../../../src/core/actions.ts";
import { MIN_RECHECK_MS, plan } from "../../../src/core/plan.ts";
import type { MachineView, MemberView, Snapshot } from "../../../src/core/snapshot.ts";
import { clusterView, controlPlane, MINUTE, NOW, OLD_VERSION, VERSION } from "./fixtures.ts";

const RUNS = 400;

type MemberKind = "none" | "voter" | "learner" | "unstarted";

const machineArb = fc.record({
  kind: fc.constantFrom<MemberKind>("none", "voter", "voter", "voter", "voter", "learner", "unstarted"),
  old: fc.boolean(),
  domain: fc.constantFrom<string | undefined>("fd-a", "fd-b", "fd-c", undefined),
  ageMin: fc.integer({ min: 0, max: 120 }),
  deleting: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  hook: fc.integer({ min: 0, max: 29 }).map((n) => n !== 0),
  remediationRequested: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  failed: fc.integer({ min: 0, max: 19 }).map((n) => n === 0),
  marked: fc.integer({ min: 0, max: 19 }).map((n) => n === 0),
  hasNode: fc.integer({ min: 0, max: 4 }).map((n) => n !== 0),
  drainFinished: fc.constantFrom<boolean | undefined>(true, false, undefined),
  reachable: fc.integer({ min: 0, max: 4 }).map((n) => n !== 0),
  erroring: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  applied: fc.integer({ min: 0, max: 5000 }),
  firstSeenMin: fc.integer({ min: 0, max: 120 }),
  startedSecondsAgo: fc.integer({ min: 0, max: 12 }),
  progressMin: fc.integer({ min: 0, max: 20 }),
});

const strayArb = fc.record({
  learner: fc.boolean(),
  reachable: fc.boolean(),
  firstSeenMin: fc.integer({ min: 0, max: 30 }),
});

const snapshotArb = fc
  .record({
    machines: fc.array(machineArb, { maxLength: 6 }),
    strays: fc.array(strayArb, { maxLength: 2 }),
    leaderPick: fc.nat(),
    replicas: fc.constantFrom(1, 3, 3, 5),
    maxSurge: fc.constantFrom<0 | 1>(0, 1),
    memberRemoval: fc.constantFrom<"BeforeDelete" | "AfterDrain">("BeforeDelete", "AfterDrain"),
    cpDeleting: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
    paused: fc.integer({ min: 0, max: 19 }).map((n) => n === 0),
    clusterPaused: fc.integer({ min: 0, max: 19 }).map((n) => n === 0),
    infraReady: fc.integer({ min: 0, max: 19 }).map((n) => n !== 0),
    observed: fc.integer({ min: 0, max: 19 }).map((n) => n !== 0),
    alarm: fc.integer({ min: 0, max: 19 }).map((n) => n === 0),
    lastRemediationMin: fc.option(fc.integer({ min: 0, max: 90 })),
    retryCount: fc.integer({ min: 0, max: 4 }),
  })
  .map((world): Snapshot => {
    const machines: MachineView[] = [];
    const members: MemberView[] = [];
    world.machines.forEach((spec, index) => {
      const name = `m-${index}`;
      const address = `10.0.0.${index + 2}`;
      machines.push({
        name,
        created: NOW - spec.ageMin * MINUTE,
        ...(spec.deleting ? { deleting: NOW - MINUTE } : {}),
        version: spec.old ? OLD_VERSION : VERSION,
        templateHash: "tmpl-1",
        ...(spec.domain ? { failureDomain: spec.domain } : {}),
        memberName: name,
        ...(spec.hasNode ? { nodeName: name } : {}),
        addresses: [address],
        infrastructureReady: true,
        bootstrapReady: true,
        hasPreTerminateHook: spec.hook,
        remediationRequested: spec.remediationRequested,
        failed: spec.failed,
        markedForDeletion: spec.marked,
        ...(spec.drainFinished !== undefined ? { drainFinished: spec.drainFinished } : {}),
      });
      if (spec.kind === "none") return;
      members.push({
        id: String(1000 + index),
        name: spec.kind === "unstarted" ? "" : name,
        peerURLs: [`https://${address}:2380`],
        clientURLs: [`https://${address}:2379`],
        learner: spec.kind === "learner",
        reachable: spec.kind !== "unstarted" && spec.reachable,
        leader: false,
        raftAppliedIndex: spec.applied,
        errors: spec.erroring ? ["etcdserver: request timed out"] : [],
        firstObserved: NOW - spec.firstSeenMin * MINUTE,
        ...(spec.kind === "unstarted"
          ? {}
          : { startedObserved: NOW - Math.min(spec.firstSeenMin * MINUTE, spec.startedSecondsAgo * 1_000) }),
        lastProgress: NOW - spec.progressMin * MINUTE,
      });
    });
    world.strays.forEach((stray, index) => {
      members.push({
        id: String(9000 + index),
        name: `stray-${index}`,
        peerURLs: [`https://10.9.9.${index + 2}:2380`],
        clientURLs: [],
        learner: stray.learner,
        reachable: stray.reachable,
        leader: false,
        errors: [],
        firstObserved: NOW - stray.firstSeenMin * MINUTE,
        lastProgress: NOW,
      });
    });
    const candidates = members.filter(
      (candidate) => !candidate.learner && candidate.reachable && candidate.name !== "",
    );
    if (candidates.length > 0) {
      const leader = candidates[world.leaderPick % candidates.length];
      leader.leader = true;
      leader.raftAppliedIndex = 5000;
    }
    const base = controlPlane();
    return {
      now: NOW,
      controlPlane: {
        ...base,
        replicas: world.replicas,
        maxSurge: world.maxSurge,
        memberRemoval: world.memberRemoval,
        deleting: world.cpDeleting,
        paused: world.paused,
        remediation: {
          ...base.remediation,
          ...(world.lastRemediationMin !== null
            ? {
                last: {
                  machine: "m-gone",
                  time: NOW - world.lastRemediationMin * MINUTE,
                  retryCount: world.retryCount,
                },
              }
            : {}),
        },
      },
      cluster: clusterView({ paused: world.clusterPaused, infrastructureReady: world.infraReady }),
      machines,
      nodes: machines
        .filter((candidate) => candidate.nodeName)
        .map((candidate) => ({
          name: candidate.name,
          ready: true,
          controlPlaneLabel: true,
          addresses: candidate.addresses,
        })),
      etcd: world.observed
        ? {
            observed: true,
            members,
            alarms: world.alarm && members.length > 0 ? [{ memberId: members[0].id, alarm: "NOSPACE" }] : [],
          }
        : { observed: false, error: "dial tcp: connection refused", members: [], alarms: [] },
    };
  });

function healthyByOracle(member: MemberView): boolean {
  return member.name !== "" && member.reachable && member.errors.length === 0;
}

/**
 * A control plane being deleted whose etcd cannot be read or has no healthy quorum: no member can be removed, so its
 * Machines go with their members (src/core/deletion.ts), and every such step must say so.
 */
function deletionGaveUpOnEtcd(s: Snapshot): boolean {
  if (!s.controlPlane.deleting) return false;
  if (!s.etcd.observed) return true;
  const voters = s.etcd.members.filter((candidate) => !candidate.learner);
  return voters.filter(healthyByOracle).length < Math.floor(voters.length / 2) + 1;
}

/** The member a Machine owns, by name only: the generator never lets names and addresses disagree. */
function memberOfMachine(s: Snapshot, machine: MachineView): MemberView | undefined {
  // By name, or (an unstarted member has none yet) by its peer URL on one of the Machine's addresses.
  const atAddress = (candidate: MemberView) =>
    candidate.peerURLs.some((url) => machine.addresses.some((address) => url.includes(`//${address}:`)));
  return s.etcd.members.find(
    (candidate) =>
      (candidate.name !== "" &&
        (candidate.name === machine.memberName ||
          candidate.name === machine.nodeName ||
          candidate.name === machine.name)) ||
      atAddress(candidate),
  );
}

describe("plan: properties over random snapshots", () => {
  it("is deterministic and leaves its input untouched: the same snapshot gives the same decision", () => {
    fc.assert(
      fc.property(snapshotArb, (s) => {
        const before = JSON.stringify(s);
        const first = plan(s);
        assert.equal(JSON.stringify(s), before, "plan must not mutate the snapshot");
        assert.deepEqual(plan(structuredClone(s)).action, first.action);
      }),
      { numRuns: RUNS },
    );
  });

  it("never removes a member when the voters left behind would lack a healthy quorum", () => {
    fc.assert(
      fc.property(snapshotArb, (s) => {
        const { action } = plan(s);
        if (action.kind !== "RemoveMember" && action.kind !== "RemoveGhost") return;
        const projected = s.etcd.members.filter((candidate) => !candidate.learner && candidate.id !== action.memberId);
        const healthy = projected.filter(healthyByOracle).length;
        assert.ok(
          projected.length > 0 && healthy >= Math.floor(projected.length / 2) + 1,
          `${action.kind} ${action.memberName} leaves ${healthy} healthy of ${projected.length}: ${action.reason}`,
        );
      }),
      { numRuns: RUNS },
    );
  });

  it("never deletes a Machine whose member is a healthy voter when members are removed before deletion", () => {
    fc.assert(
      fc.property(snapshotArb, (s) => {
        const { action } = plan(s);
        if (
          (action.kind !== "DeleteMachine" && action.kind !== "Remediate") ||
          s.controlPlane.memberRemoval !== "BeforeDelete"
        )
          return;
        const target = s.machines.find((candidate) => candidate.name === action.machine);
        assert.ok(target, `${action.kind} names an existing Machine`);
        const owned = memberOfMachine(s, target);
        // The exceptions: the last member of a control plane being deleted goes with its Machine, and so does every
        // member of one whose etcd can no longer remove any, saying so.
        const lastOfDeletedControlPlane = s.controlPlane.deleting && s.etcd.members.length === 1;
        const gaveUp = deletionGaveUpOnEtcd(s) && action.reason.includes("without removing");
        assert.ok(
          !owned || owned.learner || !healthyByOracle(owned) || lastOfDeletedControlPlane || gaveUp,
          `${action.kind} ${action.machine} while ${owned?.name} is a healthy voter: ${action.reason}`,
        );
      }),
      { numRuns: RUNS },
    );
  });

  it("never acts disruptively while paused or while etcd cannot be read, and always says when to look again", () => {
    fc.assert(
      fc.property(snapshotArb, (s) => {
        const { action } = plan(s);
        assert.ok(action.reason.length > 0);
        if (action.kind === "Wait") assert.ok(action.recheckAfterMs >= MIN_RECHECK_MS);
        if (s.controlPlane.paused || s.cluster.paused) assert.equal(action.kind, "Wait");
        if (!s.etcd.observed && !s.controlPlane.deleting)
          assert.ok(!isDisruptive(action), `${action.kind} without the member list`);
        // A control plane being deleted lets its Machines go without the member list, and says so.
        if (!s.etcd.observed && s.controlPlane.deleting && action.kind !== "Wait")
          assert.ok(
            (action.kind === "DeleteMachine" || action.kind === "ReleaseHook") &&
              action.reason.includes("without removing"),
            `${action.kind} without the member list: ${action.reason}`,
          );
      }),
      { numRuns: RUNS },
    );
  });

  it("only names Machines and members that exist", () => {
    fc.assert(
      fc.property(snapshotArb, (s) => {
        const { action } = plan(s);
        const machineNames = new Set(s.machines.map((candidate) => candidate.name));
        const memberIds = new Set(s.etcd.members.map((candidate) => candidate.id));
        const named = action as Action & {
          machine?: string;
          memberId?: string;
          fromMemberId?: string;
          toMemberId?: string;
        };
        if (named.machine !== undefined) assert.ok(machineNames.has(named.machine), named.machine);
        for (const id of [named.memberId, named.fromMemberId, named.toMemberId])
          if (id !== undefined) assert.ok(memberIds.has(id), id);
        if (action.kind === "ForwardLeadership") {
          const target = s.etcd.members.find((candidate) => candidate.id === action.toMemberId);
          assert.ok(target && !target.learner && healthyByOracle(target), "leadership only goes to a healthy voter");
        }
      }),
      { numRuns: RUNS },
    );
  });
});

describe("plan: members that map to no Machine", () => {
  /** A started voter that answers and maps to no Machine: the generator's strays never share a name or address. */
  const healthyStrayVoters = (s: Snapshot) =>
    s.etcd.members.filter(
      (candidate) => candidate.name.startsWith("stray-") && !candidate.learner && healthyByOracle(candidate),
    );

  it("never removes a healthy member that maps to no Machine, nor takes away a Machine without a member while one exists", () => {
    fc.assert(
      fc.property(snapshotArb, (s) => {
        const strays = healthyStrayVoters(s);
        // A control plane being deleted takes every member with it: nothing is left to protect.
        if (strays.length === 0 || s.controlPlane.deleting) return;
        const { action } = plan(s);
        if (action.kind === "RemoveMember" || action.kind === "RemoveGhost")
          assert.ok(
            !strays.some((stray) => stray.id === action.memberId),
            `${action.kind} of healthy ${action.memberName}: ${action.reason}`,
          );
        if (action.kind === "DeleteMachine" || action.kind === "Remediate" || action.kind === "ReleaseHook") {
          const target = s.machines.find((candidate) => candidate.name === action.machine);
          assert.ok(
            target && memberOfMachine(s, target),
            `${action.kind} ${action.machine}, which has no member, next to healthy ${strays[0].name}: ${action.reason}`,
          );
        }
      }),
      { numRuns: RUNS },
    );
  });
});

// Liveness: a world of joined Machines, each with its voter (some dead, some with remediation requested), where fewer
// Machines are wanted. Nothing in
// it changes by itself (a dead member stays dead), so a Wait there is a Wait forever.
const shrinkingArb = fc
  .record({
    members: fc.array(
      fc.record({
        dead: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
        erroring: fc.boolean(),
        marked: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
        old: fc.boolean(),
        ageMin: fc.integer({ min: 30, max: 300 }),
        domain: fc.constantFrom("fd-a", "fd-b", "fd-c"),
      }),
      { minLength: 2, maxLength: 6 },
    ),
    replicas: fc.constantFrom(1, 3, 5),
    maxSurge: fc.constantFrom<0 | 1>(0, 1),
    memberRemoval: fc.constantFrom<"BeforeDelete" | "AfterDrain">("BeforeDelete", "AfterDrain"),
    namedAfterHost: fc.boolean(),
    leaderPick: fc.nat(),
  })
  .map((world): Snapshot => {
    const machines: MachineView[] = [];
    const members: MemberView[] = [];
    world.members.forEach((spec, index) => {
      const name = `m-${index}`;
      const address = `10.0.0.${index + 2}`;
      // kubeadm names the member and the Node after the host; the Machine learns the Node from its nodeRef.
      const host = world.namedAfterHost ? `ip-10-0-0-${index + 2}` : name;
      machines.push({
        name,
        created: NOW - spec.ageMin * MINUTE,
        version: spec.old ? OLD_VERSION : VERSION,
        templateHash: "tmpl-1",
        failureDomain: spec.domain,
        memberName: host,
        nodeName: host,
        addresses: [address],
        infrastructureReady: true,
        bootstrapReady: true,
        hasPreTerminateHook: true,
        // A MachineHealthCheck asked for it: it should leave first, unless it cannot leave yet.
        remediationRequested: spec.marked,
        failed: false,
        markedForDeletion: false,
      });
      members.push({
        id: String(2000 + index),
        name: host,
        peerURLs: [`https://${address}:2380`],
        clientURLs: [`https://${address}:2379`],
        learner: false,
        reachable: !(spec.dead && !spec.erroring),
        leader: false,
        errors: spec.dead && spec.erroring ? ["etcdserver: no leader"] : [],
        firstObserved: NOW - spec.ageMin * MINUTE,
        startedObserved: NOW - spec.ageMin * MINUTE,
        lastProgress: NOW,
      });
    });
    const healthy = members.filter(healthyByOracle);
    if (healthy.length > 0) healthy[world.leaderPick % healthy.length].leader = true;
    return {
      now: NOW,
      controlPlane: {
        ...controlPlane(),
        replicas: world.replicas,
        maxSurge: world.maxSurge,
        memberRemoval: world.memberRemoval,
      },
      cluster: clusterView(),
      machines,
      nodes: machines.map((candidate) => ({
        name: candidate.nodeName ?? candidate.name,
        ready: true,
        controlPlaneLabel: true,
        addresses: candidate.addresses,
      })),
      etcd: { observed: true, members, alarms: [] },
    };
  });

/** Fewer Machines wanted: more than replicas, or a maxSurge-0 rollout (3 or more replicas) that removes first. */
function wantsFewer(s: Snapshot): boolean {
  const outdated = s.machines.some((candidate) => candidate.version !== s.controlPlane.version);
  return (
    s.machines.length > s.controlPlane.replicas ||
    (s.controlPlane.maxSurge === 0 &&
      s.controlPlane.replicas >= 3 &&
      outdated &&
      s.machines.length >= s.controlPlane.replicas)
  );
}

/**
 * Some voter can go without risk, by the oracle: a healthy quorum commits the change, the rest keeps a healthy
 * quorum, and a healthy voter goes only when every other voter is healthy (the strict policy).
 */
function someRemovalSafe(s: Snapshot): boolean {
  const voters = s.etcd.members;
  const healthy = voters.filter(healthyByOracle).length;
  if (healthy < Math.floor(voters.length / 2) + 1) return false;
  // During a rollout the up-to-date Machine's down voter is the one the rollout keeps: it is waited for, not removed,
  // while that Machine is younger than memberJoinGracePeriod.
  const rollingOut = s.machines.some((machine) => machine.version !== s.controlPlane.version);
  const kept = (leaving: MemberView) =>
    rollingOut &&
    !healthyByOracle(leaving) &&
    s.machines.some(
      (machine) =>
        machine.version === s.controlPlane.version &&
        s.now - machine.created < s.controlPlane.etcd.memberJoinGracePeriodMs &&
        memberOfMachine(s, machine)?.id === leaving.id,
    );
  return voters.some((leaving) => {
    if (kept(leaving)) return false;
    const left = healthy - (healthyByOracle(leaving) ? 1 : 0);
    const strictHolds = !healthyByOracle(leaving) || healthy === voters.length;
    return voters.length > 1 && left >= Math.floor((voters.length - 1) / 2) + 1 && strictHolds;
  });
}

describe("plan: liveness", () => {
  it("never waits when fewer Machines are wanted and some member can leave without risk (a dead voter goes first)", () => {
    fc.assert(
      fc.property(shrinkingArb, (s) => {
        if (!wantsFewer(s) || !someRemovalSafe(s)) return;
        const { action } = plan(s);
        assert.notEqual(action.kind, "Wait", action.reason);
      }),
      { numRuns: RUNS },
    );
  });
});
