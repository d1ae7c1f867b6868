// Two and three controller processes with --leader-elect on one real kube-apiserver: only the Lease holder acts;
// SIGKILL of the holder mid-rollout hands over within 20 s and the rollout finishes; rewriting the Lease's holder
// makes the old holder stop acting and the new one receive events and act (the k3s lease-mismatch bug).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { kubeRequestOk } from "../env/kube.ts";
import { startStack, type ControllerProcess, type ControllerStack, type QuorumMonitor } from "./controller/stack.ts";
import type { MachinePlayer } from "./controller/player.ts";

const NS = "leader";
const NAME = "c3";
const LEASE = "/apis/coordination.k8s.io/v1/namespaces/default/leases/quorum-test-leader";

interface Lease {
  metadata: { resourceVersion: string };
  spec: { holderIdentity?: string; renewTime?: string; leaseDurationSeconds?: number; leaseTransitions?: number };
}

async function scrape(controller: ControllerProcess): Promise<{ actions: number; leader: number }> {
  const text = await fetch(controller.metricsUrl).then((response) => response.text());
  const sum = (name: string) =>
    text
      .split("\n")
      .filter((line) => line.startsWith(name) && !line.startsWith("#"))
      .reduce((total, line) => total + Number(line.split(" ").pop()), 0);
  return { actions: sum("quorum_actions_total"), leader: sum("quorum_leader ") };
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await sleep(200);
  }
}

describe("leader election between controller processes", { timeout: 900_000 }, () => {
  let stack: ControllerStack;
  let player: MachinePlayer;
  let monitor: QuorumMonitor;
  const byIdentity = new Map<string, ControllerProcess>();

  before(async () => {
    stack = await startStack();
    player = await stack.createCluster(NS, NAME, { replicas: 3, version: "v1.31.0" });
    monitor = stack.monitor(player);
    for (const identity of ["quorum-a", "quorum-b"])
      byIdentity.set(identity, await stack.startController({ leaderElect: true, identity }));
  });

  after(async () => {
    await stack?.stop();
  });

  async function holder(): Promise<string | undefined> {
    return (await kubeRequestOk<Lease>(stack.kubeConfig, LEASE)).spec.holderIdentity;
  }

  it("lets only the Lease holder act", async () => {
    await stack.waitConverged(NS, NAME, 3);
    const leader = await holder();
    assert.ok(leader && byIdentity.has(leader), `holder ${leader}`);
    const standby = [...byIdentity.keys()].find((identity) => identity !== leader) as string;
    const [leaderMetrics, standbyMetrics] = await Promise.all([
      scrape(byIdentity.get(leader) as ControllerProcess),
      scrape(byIdentity.get(standby) as ControllerProcess),
    ]);
    assert.ok(leaderMetrics.actions >= 3, `the holder created the Machines (${leaderMetrics.actions} actions)`);
    assert.equal(standbyMetrics.actions, 0, "the standby never acted");
    assert.equal(leaderMetrics.leader, 1);
    assert.equal(standbyMetrics.leader, 0);
  });

  it("hands over within 20 s when the holder is SIGKILLed mid-rollout, and the new holder finishes the rollout", async () => {
    const leader = (await holder()) as string;
    const standby = [...byIdentity.keys()].find((identity) => identity !== leader) as string;
    const original = new Set((await stack.machines(NS, NAME)).map((machine) => machine.metadata.name));
    await stack.patchSpec(NS, NAME, { version: "v1.32.0" });
    await until("the rollout's first new Machine", 60_000, async () =>
      (await stack.machines(NS, NAME)).some((machine) => !original.has(machine.metadata.name)) ? true : undefined,
    );
    const killedAt = Date.now();
    await (byIdentity.get(leader) as ControllerProcess).process.kill();
    await until(`${standby} holding the Lease`, 20_000, async () => ((await holder()) === standby ? true : undefined));
    const handoverMs = Date.now() - killedAt;
    assert.ok(handoverMs <= 20_000, `hand-over took ${handoverMs} ms`);
    await stack.waitConverged(NS, NAME, 3, 240_000);
    assert.ok((await scrape(byIdentity.get(standby) as ControllerProcess)).actions > 0, "the new holder acted");
    assert.deepEqual(player.deletedWithMember, []);
    assert.deepEqual(monitor.losses, []);
    byIdentity.delete(leader);
  });

  it("stops the old holder and starts the new one when the Lease holder is rewritten, and the new one acts on events", async () => {
    const old = (await holder()) as string;
    const oldProcess = byIdentity.get(old) as ControllerProcess;
    const fresh = await stack.startController({ leaderElect: true, identity: "quorum-c" });
    byIdentity.set("quorum-c", fresh);
    await until("quorum-c serving metrics", 60_000, async () =>
      (await scrape(fresh)).leader === 0 ? true : undefined,
    );

    const lease = await kubeRequestOk<Lease>(stack.kubeConfig, LEASE);
    const renewTime = new Date().toISOString().replace("Z", "000Z");
    await kubeRequestOk(stack.kubeConfig, LEASE, {
      method: "PUT",
      body: { ...lease, spec: { ...lease.spec, holderIdentity: "quorum-c", renewTime } },
    });

    await until(`${old} stopping its workers`, 15_000, async () =>
      (await scrape(oldProcess)).leader === 0 ? true : undefined,
    );
    await until("quorum-c running its workers", 30_000, async () =>
      (await scrape(fresh)).leader === 1 ? true : undefined,
    );
    const oldActions = (await scrape(oldProcess)).actions;

    // An event the new holder must receive: its informers started after it registered its handlers.
    await stack.patchSpec(NS, NAME, { replicas: 5 });
    await stack.waitConverged(NS, NAME, 5, 240_000);
    assert.ok((await scrape(fresh)).actions >= 2, "the new holder created the two Machines");
    assert.equal((await scrape(oldProcess)).actions, oldActions, "the old holder did nothing after losing the Lease");
    assert.equal(await holder(), "quorum-c");
    assert.deepEqual(monitor.losses, []);
  });
});
