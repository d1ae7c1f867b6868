// Two spec/Cluster options on the real stack: memberRemoval AfterDrain (the Machine is deleted first, its member is
// removed in the pre-terminate hook phase) and pausing (Cluster.spec.paused stops every action until unpaused).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { CAPI_API_VERSION } from "../../src/api/constants.ts";
import { kubeRequestOk } from "../env/kube.ts";
import type { MachinePlayer } from "./controller/player.ts";
import { startStack, type ControllerStack, type QuorumMonitor } from "./controller/stack.ts";

const NS = "options";

describe("memberRemoval AfterDrain and pausing", { timeout: 900_000 }, () => {
  let stack: ControllerStack;
  let drainPlayer: MachinePlayer;
  let monitor: QuorumMonitor;

  before(async () => {
    stack = await startStack({ capi: true });
    drainPlayer = await stack.createCluster(NS, "drain", {
      replicas: 3,
      version: "v1.31.0",
      memberRemoval: "AfterDrain",
    });
    monitor = stack.monitor(drainPlayer);
    await stack.createCluster(NS, "paused", { replicas: 1, version: "v1.31.0" });
    await stack.startController();
    await Promise.all([stack.waitConverged(NS, "drain", 3), stack.waitConverged(NS, "paused", 1)]);
  });

  after(async () => {
    await stack?.stop();
  });

  it("rolls out with AfterDrain: each Machine is deleted before its member is removed, and its member goes before its infrastructure", async () => {
    const before = new Set((await stack.machines(NS, "drain")).map((machine) => machine.metadata.name));
    const deletedWhileMember: string[] = [];
    let watching = true;
    // Sample: a Machine that is deleting while its member still exists is the AfterDrain order showing.
    const sampler = (async () => {
      while (watching) {
        const qcp = await stack.getControlPlane(NS, "drain");
        for (const machine of await stack.machines(NS, "drain")) {
          const member = qcp.status?.etcd?.members?.find((candidate) => candidate.machine === machine.metadata.name);
          if (machine.metadata.deletionTimestamp && member && !deletedWhileMember.includes(machine.metadata.name))
            deletedWhileMember.push(machine.metadata.name);
        }
        await sleep(150);
      }
    })();
    await stack.patchSpec(NS, "drain", { version: "v1.32.0" });
    try {
      await stack.waitConverged(NS, "drain", 3, 300_000);
    } finally {
      watching = false;
      await sampler;
    }
    const now = (await stack.machines(NS, "drain")).map((machine) => machine.metadata.name);
    assert.ok(
      now.every((name) => !before.has(name)),
      "every Machine was replaced",
    );
    assert.ok(
      deletedWhileMember.length > 0,
      "a Machine was seen deleting while its member was still listed (AfterDrain order)",
    );
    assert.deepEqual(
      drainPlayer.deletedWithMember,
      [],
      "the hook held every Machine's infrastructure until its member was removed",
    );
    assert.deepEqual(monitor.losses, []);
  });

  it("does nothing while the Cluster is paused, says so, and resumes when unpaused", async () => {
    const clusterPath = `/apis/${CAPI_API_VERSION}/namespaces/${NS}/clusters/paused`;
    await kubeRequestOk(stack.kubeConfig, clusterPath, { method: "PATCH", body: { spec: { paused: true } } });
    await sleep(2_000);
    await stack.patchSpec(NS, "paused", { replicas: 3 });
    await sleep(8_000);
    assert.equal((await stack.machines(NS, "paused")).length, 1, "no Machine was created while paused");
    const qcp = await stack.getControlPlane(NS, "paused");
    assert.equal(qcp.status?.conditions?.find((condition) => condition.type === "Paused")?.status, "True");
    assert.match(qcp.status?.nextAction?.message ?? "", /paused: Cluster options\/paused has spec\.paused/);
    await kubeRequestOk(stack.kubeConfig, clusterPath, { method: "PATCH", body: { spec: { paused: false } } });
    const resumed = await stack.waitConverged(NS, "paused", 3);
    assert.equal(resumed.status?.conditions?.find((condition) => condition.type === "Paused")?.status, "False");
  });
});
