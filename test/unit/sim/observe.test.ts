// The simulator is only as good as the snapshots it hands the planner: they must look like what the real
// observe() reports, including the awkward cases (unstarted members, no quorum, nothing answering).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { observe } from "../../sim/observe.ts";
import { createScenario } from "../../sim/scenario.ts";
import { electLeader, newMemberId, type World } from "../../sim/world.ts";

/** A schedule whose world starts as a converged control plane of three. */
function convergedThree(): World {
  for (let seed = 1; ; seed++) {
    const { world } = createScenario(seed);
    if (world.machines.length === 3) return world;
  }
}

describe("simulated observe()", () => {
  it("lists an added member that has not started with an empty name and only its peer URL", () => {
    const world = convergedThree();
    world.members.push({ id: newMemberId(world), name: "", peerHost: "10.0.9.9", learner: true, started: false, up: false, lostForGood: false, appliedIndex: 0, catchUpRate: 0 });
    const unstarted = observe(world).snapshot.etcd.members.find((member) => member.peerURLs[0] === "https://10.0.9.9:2380");
    assert.ok(unstarted);
    assert.equal(unstarted.name, "");
    assert.deepEqual(unstarted.clientURLs, []);
    assert.equal(unstarted.reachable, false);
  });

  it("shows no Nodes and reports 'no leader' on the members that answer once etcd lost quorum", () => {
    const world = convergedThree();
    world.members[0].up = false;
    world.members[1].up = false;
    electLeader(world);
    const { snapshot } = observe(world);
    assert.deepEqual(snapshot.nodes, []);
    assert.ok(snapshot.etcd.observed);
    const answering = snapshot.etcd.members.filter((member) => member.reachable);
    assert.equal(answering.length, 1);
    assert.deepEqual(answering[0].errors, ["etcdserver: no leader"]);
  });

  it("reports etcd as not observed, with a reason, when no member on a Machine answers", () => {
    const world = convergedThree();
    for (const member of world.members) member.up = false;
    electLeader(world);
    const { etcd } = observe(world).snapshot;
    assert.equal(etcd.observed, false);
    assert.deepEqual(etcd.members, []);
    assert.match(etcd.error ?? "", /no etcd member answered/);
  });

  it("keeps a member's first sighting across reconciles and starts it afresh after status was lost", () => {
    const world = convergedThree();
    const id = world.members[0].id;
    const remembered = world.memory.members.get(id)!.firstObserved;
    assert.equal(observe(world).snapshot.etcd.members.find((member) => member.id === id)?.firstObserved, remembered);
    world.memory = { members: new Map() };
    assert.equal(observe(world).snapshot.etcd.members.find((member) => member.id === id)?.firstObserved, world.now);
  });
});
