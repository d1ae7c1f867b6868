// Deleting never wedges (issue 13): a namespace holding a healthy 3-replica cluster goes away, and a
// QuorumControlPlane whose etcd answers nothing (every member SIGSTOPped) lets its Machines go once
// spec.deletion.etcdMemberRemovalTimeout has passed, saying in a Warning Event which members it left in etcd.
// Real kube-apiserver, real etcd members, the controller as its own process. This harness runs no
// kube-controller-manager, so the test plays the namespace controller (discovery, then deletecollection of every
// namespaced resource, then finalize), and CAPI's Cluster finalizer, which holds the Cluster until its control
// plane is gone; the MachinePlayer plays CAPI's Machine controller (it waits for pre-terminate hooks).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { API_VERSION, CAPI_API_VERSION } from "../../src/api/constants.ts";
import { kubeRequest, kubeRequestOk } from "../env/kube.ts";
import type { MachinePlayer } from "./controller/player.ts";
import { startStack, type ControllerStack } from "./controller/stack.ts";

const DOOMED_NS = "deletion-namespace";
const FROZEN_NS = "deletion-frozen";
const NAME = "c1";
const CLUSTER_FINALIZER = "cluster.cluster.x-k8s.io";
const REMOVAL_TIMEOUT_MS = 30_000;

interface Listed {
  items: { metadata: { name: string; finalizers?: string[]; deletionTimestamp?: string } }[];
}

interface ApiResource {
  name: string;
  namespaced: boolean;
  verbs: string[];
}

/** Every namespaced resource that can be deleted by collection, as the namespace controller finds them. */
async function namespacedCollections(stack: ControllerStack): Promise<string[]> {
  const paths: string[] = [];
  const core = await kubeRequestOk<{ resources: ApiResource[] }>(stack.kubeConfig, "/api/v1");
  for (const resource of core.resources) if (deletable(resource)) paths.push(`/api/v1/namespaces/NS/${resource.name}`);
  const groups = await kubeRequestOk<{ groups: { preferredVersion: { groupVersion: string } }[] }>(
    stack.kubeConfig,
    "/apis",
  );
  for (const group of groups.groups) {
    const version = group.preferredVersion.groupVersion;
    const list = await kubeRequestOk<{ resources: ApiResource[] }>(stack.kubeConfig, `/apis/${version}`);
    for (const resource of list.resources)
      if (deletable(resource)) paths.push(`/apis/${version}/namespaces/NS/${resource.name}`);
  }
  return paths;
}

function deletable(resource: ApiResource): boolean {
  return resource.namespaced && !resource.name.includes("/") && resource.verbs.includes("deletecollection");
}

/**
 * One pass of the namespace controller over a terminating namespace: delete every object left; once none is left,
 * finalize the namespace. CAPI's part: the Cluster's finalizer goes once no QuorumControlPlane is left. Returns what
 * is still there.
 */
async function namespaceControllerPass(stack: ControllerStack, namespace: string, paths: string[]): Promise<string[]> {
  const left: string[] = [];
  const controlPlanes = await kubeRequestOk<Listed>(
    stack.kubeConfig,
    `/apis/${API_VERSION}/namespaces/${namespace}/quorumcontrolplanes`,
  );
  for (const path of paths.map((template) => template.replace("/NS/", `/${namespace}/`))) {
    const listed = await kubeRequest<Listed>(stack.kubeConfig, path);
    if (listed.status !== 200 || listed.body.items.length === 0) continue;
    left.push(...listed.body.items.map((item) => `${path.split("/").at(-1)}/${item.metadata.name}`));
    await kubeRequest(stack.kubeConfig, path, { method: "DELETE" });
    if (path.endsWith("/clusters") && controlPlanes.items.length === 0) {
      for (const cluster of listed.body.items) {
        const finalizers = (cluster.metadata.finalizers ?? []).filter((finalizer) => finalizer !== CLUSTER_FINALIZER);
        await kubeRequest(stack.kubeConfig, `${path}/${cluster.metadata.name}`, {
          method: "PATCH",
          body: { metadata: { finalizers } },
        });
      }
    }
  }
  if (left.length === 0) {
    await kubeRequest(stack.kubeConfig, `/api/v1/namespaces/${namespace}/finalize`, {
      method: "PUT",
      body: { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace }, spec: { finalizers: [] } },
    });
  }
  return left;
}

async function addClusterFinalizer(stack: ControllerStack, namespace: string): Promise<void> {
  await kubeRequestOk(stack.kubeConfig, `/apis/${CAPI_API_VERSION}/namespaces/${namespace}/clusters/${NAME}`, {
    method: "PATCH",
    body: { metadata: { finalizers: [CLUSTER_FINALIZER] } },
  });
}

function controllerLogs(stack: ControllerStack): string {
  return stack.controllers.map((controller) => controller.process.lastLogLines(40)).join("\n");
}

describe("deleting a control plane never wedges", { timeout: 900_000 }, () => {
  let stack: ControllerStack;
  let frozen: MachinePlayer;
  const paused = new Set<{ resume(): void }>();

  before(async () => {
    stack = await startStack();
    await stack.createCluster(DOOMED_NS, NAME, { replicas: 3, version: "v1.31.0" });
    frozen = await stack.createCluster(FROZEN_NS, NAME, { replicas: 3, version: "v1.31.0" });
    await stack.patchSpec(FROZEN_NS, NAME, { deletion: { etcdMemberRemovalTimeout: `${REMOVAL_TIMEOUT_MS / 1000}s` } });
    for (const namespace of [DOOMED_NS, FROZEN_NS]) await addClusterFinalizer(stack, namespace);
    await stack.startController();
    await Promise.all([stack.waitConverged(DOOMED_NS, NAME, 3), stack.waitConverged(FROZEN_NS, NAME, 3)]);
  });

  after(async () => {
    // A stopped process ignores SIGTERM until it continues: resume every member so that stop() can end it.
    for (const member of paused) member.resume();
    await stack?.stop();
  });

  it("deleting the namespace that holds a healthy 3-replica cluster removes it within 2 minutes", async () => {
    const paths = await namespacedCollections(stack);
    await kubeRequestOk(stack.kubeConfig, `/api/v1/namespaces/${DOOMED_NS}`, { method: "DELETE" });
    const deadline = Date.now() + 120_000;
    let left: string[] = [];
    for (;;) {
      const namespace = await kubeRequest(stack.kubeConfig, `/api/v1/namespaces/${DOOMED_NS}`);
      if (namespace.status === 404) break;
      if (Date.now() > deadline) {
        const qcp = await kubeRequest<{ status?: unknown }>(
          stack.kubeConfig,
          `/apis/${API_VERSION}/namespaces/${DOOMED_NS}/quorumcontrolplanes/${NAME}`,
        );
        assert.fail(
          `namespace ${DOOMED_NS} still there after 2 minutes; left: ${left.join(", ")}\n` +
            `QuorumControlPlane status: ${JSON.stringify(qcp.body.status)}\n${controllerLogs(stack)}`,
        );
      }
      left = await namespaceControllerPass(stack, DOOMED_NS, paths);
      await sleep(1_000);
    }
  });

  it("deleting a QuorumControlPlane whose etcd answers nothing deletes its Machines within the bound plus a minute and names the members left", async () => {
    const members = [...frozen.members.values(), ...(frozen.etcd?.members ?? [])];
    for (const member of members) {
      member.pause();
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
