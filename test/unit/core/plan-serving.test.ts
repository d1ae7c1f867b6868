// Issue 13: an old Machine leaves only after the Machines that stay are seen serving (their Nodes Ready through the
// workload API); while that API cannot be read, removals of healthy voters wait and say why. And the next action
// tells the truth when quorum is lost or the workload cannot be read, instead of "nothing to do".
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { plan } from "../../../src/core/plan.ts";
import type { Snapshot, WorkloadView } from "../../../src/core/snapshot.ts";
import {
  dead,
  healthyMachines,
  idOf,
  machine,
  member,
  MINUTE,
  NOW,
  nodeFor,
  OLD_VERSION,
  snapshot,
  withLeader,
} from "./fixtures.ts";

const READABLE: WorkloadView = { expected: true, readable: true };
const UNREADABLE: WorkloadView = {
  expected: true,
  readable: false,
  error: "x509: certificate signed by unknown authority",
};

/** A surge rollout at its removal step: three outdated Machines (n-1 leads) and the new n-1, joined and healthy. */
function rolloutAtRemoval(workload: WorkloadView | undefined, nodeReady: (name: string) => boolean = () => true) {
  const old = healthyMachines(3, "m", { version: OLD_VERSION });
  const fresh = machine("n-1", { failureDomain: "fd-a", created: NOW - 5 * MINUTE });
  const machines = [...old.machines, fresh];
  const base = snapshot({
    machines,
    members: withLeader([...old.members, member("n-1")], "n-1"),
    nodes: machines.map((candidate) => ({ ...nodeFor(candidate), ready: nodeReady(candidate.name) })),
  });
  return withWorkload(base, workload);
}

function withWorkload(base: Snapshot, workload: WorkloadView | undefined): Snapshot {
  return workload ? { ...base, workload } : base;
}

describe("an old Machine leaves only once the Machines that stay are seen serving", () => {
  it("removes the outdated member once every Machine that stays has a Ready Node", () => {
    const { action } = plan(rolloutAtRemoval(READABLE));
    assert.equal(action.kind, "RemoveMember", action.reason);
    assert.equal((action as { memberId: string }).memberId, idOf("m-1"));
  });

  it("waits, naming the replacement, while its Node is not Ready", () => {
    const { action } = plan(rolloutAtRemoval(READABLE, (name) => name !== "n-1"));
    assert.equal(action.kind, "Wait", action.reason);
    assert.match(action.reason, /machine n-1's Node n-1 is not Ready/);
    // A kubelet that stopped for good keeps it NotReady: nothing but a MachineHealthCheck or the user gets past it.
    assert.match(action.reason, /if machine n-1 is lost, delete it/);
    assert.equal(action.kind === "Wait" && action.blockedBy, "machine n-1");
  });

  it("names a replacement whose Node is NotReady only briefly without the way past a lost Machine", () => {
    // Every join: the kubelet registered the Node a minute ago and the network plugin has not started on it yet.
    const base = rolloutAtRemoval(READABLE, (name) => name !== "n-1");
    const starting = NOW - MINUTE;
    const nodes = base.nodes.map((node) => (node.name === "n-1" ? { ...node, notReadySince: starting } : node));
    const { action } = plan({ ...base, nodes });
    assert.equal(action.kind, "Wait", action.reason);
    assert.match(action.reason, /machine n-1's Node n-1 is not Ready since \S+Z:/);
    assert.ok(action.reason.includes(new Date(starting).toISOString().replace(".000Z", "Z")), action.reason);
    assert.doesNotMatch(action.reason, /is lost/);
    // Five minutes on (remediation.machineLostAfter's default), nothing short of a lost kubelet explains it: the way out
    // is offered.
    const lostAfterMs = base.controlPlane.remediation.machineLostAfterMs;
    assert.equal(lostAfterMs, 5 * MINUTE);
    const later = plan({ ...base, nodes, now: starting + lostAfterMs });
    assert.equal(later.action.kind, "Wait", later.action.reason);
    assert.match(later.action.reason, /if machine n-1 is lost, delete it/);
    // A user who set machineLostAfter to 30s gets it after 30 seconds.
    const remediation = { ...base.controlPlane.remediation, machineLostAfterMs: 30_000 };
    const sooner = plan({ ...base, nodes, controlPlane: { ...base.controlPlane, remediation } });
    assert.match(sooner.action.reason, /if machine n-1 is lost, delete it/);
  });

  it("takes an outdated Machine whose Node is NotReady first: with it staying, no other voter could leave", () => {
    // m-1 is the oldest and would go first; m-3's kubelet stopped (its member and API server run on).
    const { action } = plan(rolloutAtRemoval(READABLE, (name) => name !== "m-3"));
    assert.equal(action.kind, "RemoveMember", action.reason);
    assert.equal((action as { memberId: string }).memberId, idOf("m-3"));
    assert.match(action.reason, /its Node m-3 is not Ready and it is outdated/);
  });

  it("waits while the replacement has no Node at all", () => {
    const base = rolloutAtRemoval(READABLE);
    const { action } = plan({ ...base, nodes: base.nodes.filter((node) => node.name !== "n-1") });
    assert.equal(action.kind, "Wait", action.reason);
    assert.match(action.reason, /machine n-1 has no Node yet/);
  });

  it("waits and names the cause while the workload API cannot be read, though etcd is healthy", () => {
    const base = rolloutAtRemoval(UNREADABLE);
    const { action } = plan({ ...base, nodes: [] });
    assert.equal(action.kind, "Wait", action.reason);
    assert.match(action.reason, /workload API cannot be read \(x509: certificate signed by unknown authority\)/);
    assert.equal(action.kind === "Wait" && action.blockedBy, "workload API");
  });

  it("does not check Nodes when there is no workload API to ask (no control-plane endpoint)", () => {
    const base = rolloutAtRemoval({ expected: false, readable: false });
    const { action } = plan({ ...base, nodes: [] });
    assert.equal(action.kind, "RemoveMember", action.reason);
  });

  it("still takes a dead voter's Machine out for remediation while the workload API cannot be read", () => {
    const h = healthyMachines(3);
    h.machines[2].remediationRequested = true;
    const members = [h.members[0], h.members[1], dead("m-3")];
    const { action } = plan(withWorkload(snapshot({ machines: h.machines, members, nodes: [] }), UNREADABLE));
    assert.equal(action.kind, "RemoveMember", action.reason);
    assert.equal((action as { memberId: string }).memberId, idOf("m-3"));
  });
});

describe("the next action says what blocks progress", () => {
  it("names the down voters and the lost quorum instead of 'nothing to do' when 2 of 3 voters are down", () => {
    const h = healthyMachines(3);
    const members = [h.members[0], dead("m-2"), dead("m-3")];
    const { action } = plan(withWorkload(snapshot({ machines: h.machines, members }), READABLE));
    assert.equal(action.kind, "Wait");
    assert.doesNotMatch(action.reason, /nothing to do/);
    assert.match(action.reason, /lost quorum: only 1 of 3 voters are healthy \(quorum 2\)/);
    assert.match(action.reason, /member m-2 is down/);
    assert.equal(action.kind === "Wait" && action.blockedBy, "member m-2, member m-3");
  });

  it("says the workload API cannot be read when the spec is met", () => {
    const h = healthyMachines(3);
    const { action } = plan(
      withWorkload(snapshot({ machines: h.machines, members: h.members, nodes: [] }), UNREADABLE),
    );
    assert.equal(action.kind, "Wait");
    assert.doesNotMatch(action.reason, /nothing to do/);
    assert.match(action.reason, /workload API cannot be read \(x509/);
    assert.equal(action.kind === "Wait" && action.blockedBy, "workload API");
  });

  it("still says 'nothing to do' for a healthy cluster whose Nodes are Ready", () => {
    const h = healthyMachines(3);
    const { action } = plan(withWorkload(snapshot({ machines: h.machines, members: h.members }), READABLE));
    assert.match(action.reason, /^nothing to do/);
  });
});

describe("an etcd Quorum cannot read", () => {
  it("is looked at every 15 s, not every second, when only a user can fix why", () => {
    const h = healthyMachines(3);
    const base = snapshot({
      machines: h.machines,
      observed: false,
      error: "Secret ns/c1-etcd: data key tls.key is empty",
    });
    const { action } = plan({ ...base, etcd: { ...base.etcd, needsUser: true } });
    assert.equal(action.kind, "Wait");
    assert.equal(action.kind === "Wait" && action.recheckAfterMs, 15_000);
    assert.match(action.reason, /waiting alone will not fix this/);
    const transient = plan(snapshot({ machines: h.machines, observed: false, error: "connection refused" })).action;
    assert.equal(transient.kind === "Wait" && transient.recheckAfterMs, 1_000);
  });
});
