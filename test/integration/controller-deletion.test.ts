// Deleting never wedges (issue 13): a namespace holding a healthy 3-replica cluster goes away, and a
// QuorumControlPlane whose etcd answers nothing (every member SIGSTOPped) lets its Machines go once
// spec.deletion.etcdMemberRemovalTimeout has passed, saying in a Warning Event which members it left in etcd.
// Real kube-apiserver, real etcd members, the controller as its own process, the real CAPI core manager (its
// Cluster and Machine controllers: the Cluster finalizer, pre-terminate hooks, infrastructure deletion) and the real
// kube-controller-manager's namespace controller and garbage collector. The MachinePlayer is only the
// infrastructure provider (an etcd member per TestMachine).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { API_VERSION } from "../../src/api/constants.ts";
import { kubeRequest, kubeRequestOk } from "../env/kube.ts";
import type { MachinePlayer } from "./controller/player.ts";
import { startStack, type ControllerStack } from "./controller/stack.ts";

const DOOMED_NS = "deletion-namespace";
const FROZEN_NS = "deletion-frozen";
const NAME = "c1";
const REMOVAL_TIMEOUT_MS = 30_000;

function controllerLogs(stack: ControllerStack): string {
  return stack.controllers.map((controller) => controller.process.lastLogLines(40)).join("\n");
}

describe("deleting a control plane never wedges", { timeout: 900_000 }, () => {
  let stack: ControllerStack;
  let frozen: MachinePlayer;
  const paused = new Set<{ resume(): void }>();

  before(async () => {
    stack = await startStack({ capi: true, controllerManager: true });
    await stack.createCluster(DOOMED_NS, NAME, { replicas: 3, version: "v1.31.0" });
    frozen = await stack.createCluster(FROZEN_NS, NAME, { replicas: 3, version: "v1.31.0" });
    await stack.patchSpec(FROZEN_NS, NAME, { deletion: { etcdMemberRemovalTimeout: `${REMOVAL_TIMEOUT_MS / 1000}s` } });
    await stack.startController();
    await Promise.all([stack.waitConverged(DOOMED_NS, NAME, 3), stack.waitConverged(FROZEN_NS, NAME, 3)]);
  });

  after(async () => {
    // A stopped process ignores SIGTERM until it continues: resume every member so that stop() can end it.
    for (const member of paused) member.resume();
    await stack?.stop();
  });

  it("deleting the namespace that holds a healthy 3-replica cluster removes it within 2 minutes", async () => {
    await kubeRequestOk(stack.kubeConfig, `/api/v1/namespaces/${DOOMED_NS}`, { method: "DELETE" });
    const deadline = Date.now() + 120_000;
    for (;;) {
      const namespace = await kubeRequest<{ status?: { conditions?: { type: string; message?: string }[] } }>(
        stack.kubeConfig,
        `/api/v1/namespaces/${DOOMED_NS}`,
      );
      if (namespace.status === 404) break;
      if (Date.now() > deadline) {
        const qcp = await kubeRequest<{ status?: unknown }>(
          stack.kubeConfig,
          `/apis/${API_VERSION}/namespaces/${DOOMED_NS}/quorumcontrolplanes/${NAME}`,
        );
        // The namespace controller says in the namespace's conditions what is left and which finalizers hold it.
        const conditions = (namespace.body.status?.conditions ?? []).map((c) => `${c.type}: ${c.message ?? ""}`);
        assert.fail(
          `namespace ${DOOMED_NS} still there after 2 minutes:\n${conditions.join("\n")}\n` +
            `QuorumControlPlane status: ${JSON.stringify(qcp.body.status)}\n${controllerLogs(stack)}\n` +
            `CAPI manager:\n${stack.capi?.process.lastLogLines(30)}`,
        );
      }
      await sleep(1_000);
    }
  });

  it("deleting a QuorumControlPlane whose etcd answers nothing deletes its Machines within the bound plus a minute and names the members left", async () => {
    const members = [...frozen.members.values(), ...(frozen.etcd?.members ?? [])];
    for (const member of members) {
      await member.pause();
      paused.add(member);
    }
    const qcpPath = `/apis/${API_VERSION}/namespaces/${FROZEN_NS}/quorumcontrolplanes/${NAME}`;
    await kubeRequestOk(stack.kubeConfig, qcpPath, { method: "DELETE" });
    const deadline = Date.now() + REMOVAL_TIMEOUT_MS + 60_000;
    for (;;) {
      const qcp = await kubeRequest<{ status?: { conditions?: { type: string; reason: string }[] } }>(
        stack.kubeConfig,
        qcpPath,
      );
      const machines = await stack.machines(FROZEN_NS, NAME);
      if (qcp.status === 404 && machines.length === 0) break;
      const reasons = (qcp.body.status?.conditions ?? []).map((condition) => `${condition.type}=${condition.reason}`);
      if (Date.now() > deadline)
        assert.fail(
          `after ${(REMOVAL_TIMEOUT_MS + 60_000) / 1000} s: QuorumControlPlane ${qcp.status === 404 ? "gone" : "still there"} ` +
            `(${reasons.join(", ")}), Machines left: ${machines.map((machine) => machine.metadata.name).join(", ")}\n${controllerLogs(stack)}`,
        );
      await sleep(500);
    }
    const events = await kubeRequestOk<{ items: { type?: string; reason?: string; message?: string }[] }>(
      stack.kubeConfig,
      `/api/v1/namespaces/${FROZEN_NS}/events?fieldSelector=${encodeURIComponent("reason=EtcdMembersNotRemoved")}`,
    );
    assert.ok(events.items.length >= 1, "a Warning Event says which members were left in etcd");
    for (const event of events.items) {
      assert.equal(event.type, "Warning");
      assert.match(event.message ?? "", /without removing etcd member \S+ \(machine c1-\S+\), if it has one/);
      assert.match(event.message ?? "", /etcd cannot be read/);
    }
  });
});
