// Issue 13: memory and metrics of a deleted QuorumControlPlane are dropped. 500 QuorumControlPlanes are created and
// deleted against the real API server while the controller (its own process) reconciles each: it adds its finalizer,
// observes, records the per-cluster etcd series, and releases the finalizer on deletion. Afterwards no per-cluster
// series is left, and the heap is back near where it was after a warm-up round. Each QuorumControlPlane is labelled for
// a Cluster that names no control plane, so the controller does everything per key but generate certificates (which
// would make the churn cost minutes instead of seconds).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { API_VERSION, CAPI_API_VERSION, KIND, LABEL_CLUSTER_NAME } from "../../src/api/constants.ts";
import { kubeRequest, kubeRequestOk } from "../env/kube.ts";
import { startStack, type ControllerProcess, type ControllerStack } from "./controller/stack.ts";
import { BOOTSTRAP_GROUP, INFRA_GROUP } from "./controller/test-kinds.ts";

const NS = "churn";
const ROUND = 500;
const WARM_UP = 100;
/** Parallel API requests of the test itself. */
const PARALLEL = 16;
/** Heap noise without a forced GC: the V8 heap of an idle controller moves by a few MB between samples. */
const HEAP_TOLERANCE_BYTES = 30 * 1024 * 1024;

async function inParallel(count: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      while (next < count) await fn(next++);
    }),
  );
}

async function scrape(controller: ControllerProcess): Promise<string> {
  const response = await fetch(controller.metricsUrl);
  assert.equal(response.status, 200);
  return response.text();
}

function etcdSeries(text: string): number {
  return text.split("\n").filter((line) => line.startsWith("quorum_etcd_voters{")).length;
}

function heapUsed(text: string): number {
  const line = text.split("\n").find((candidate) => candidate.startsWith("quorum_process_nodejs_heap_size_used_bytes"));
  assert.ok(line, "the controller exports its heap size");
  return Number(line.split(" ").at(-1));
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

/** The lowest heap of a few samples a second apart: V8 collects at idle, so the minimum is the live heap's best estimate. */
async function settledHeap(controller: ControllerProcess): Promise<number> {
  let lowest = Infinity;
  for (let i = 0; i < 6; i++) {
    await sleep(1_000);
    lowest = Math.min(lowest, heapUsed(await scrape(controller)));
  }
  return lowest;
}

describe("a churn of QuorumControlPlanes leaves nothing behind", { timeout: 600_000 }, () => {
  let stack: ControllerStack;
  let controller: ControllerProcess;

  before(async () => {
    stack = await startStack();
    await kubeRequest(stack.kubeConfig, "/api/v1/namespaces", {
      body: { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } },
    });
    controller = await stack.startController();
    await waitFor("the controller's /metrics", async () => {
      try {
        return (await fetch(controller.metricsUrl)).ok;
      } catch {
        return false;
      }
    });
  });

  after(async () => {
    await stack?.stop();
  });

  async function round(prefix: string, count: number): Promise<void> {
    const kc = stack.kubeConfig;
    await inParallel(count, async (i) => {
      const name = `${prefix}-${i}`;
      await kubeRequestOk(kc, `/apis/${CAPI_API_VERSION}/namespaces/${NS}/clusters`, {
        body: {
          apiVersion: CAPI_API_VERSION,
          kind: "Cluster",
          metadata: { name, namespace: NS },
          spec: { paused: false },
        },
      });
      await kubeRequestOk(kc, `/apis/${API_VERSION}/namespaces/${NS}/quorumcontrolplanes`, {
        body: {
          apiVersion: API_VERSION,
          kind: KIND,
          metadata: { name, namespace: NS, labels: { [LABEL_CLUSTER_NAME]: name } },
          spec: {
            replicas: 1,
            version: "v1.31.0",
            machineTemplate: {
              infrastructureRef: { apiGroup: INFRA_GROUP, kind: "TestMachineTemplate", name: "none" },
              bootstrapConfigTemplateRef: {
                apiGroup: BOOTSTRAP_GROUP,
                kind: "TestBootstrapConfigTemplate",
                name: "none",
              },
            },
          },
        },
      });
    });
    // Every one reconciled: finalizer added, etcd observed (no Machine yet), its series recorded.
    await waitFor(`${count} QuorumControlPlanes reconciled`, async () => etcdSeries(await scrape(controller)) >= count);
    await inParallel(count, (i) =>
      kubeRequestOk(kc, `/apis/${API_VERSION}/namespaces/${NS}/quorumcontrolplanes/${prefix}-${i}`, {
        method: "DELETE",
      }),
    );
    await waitFor(`${count} QuorumControlPlanes gone (finalizers released)`, async () => {
      const list = await kubeRequestOk<{ items: unknown[] }>(
        kc,
        `/apis/${API_VERSION}/namespaces/${NS}/quorumcontrolplanes`,
      );
      return list.items.length === 0;
    });
    await inParallel(count, (i) =>
      kubeRequestOk(kc, `/apis/${CAPI_API_VERSION}/namespaces/${NS}/clusters/${prefix}-${i}`, { method: "DELETE" }),
    );
  }

  it("drops every per-cluster metric series and returns to its heap after 500 QuorumControlPlanes come and go", async () => {
    const started = Date.now();
    await round("warm", WARM_UP);
    await waitFor("the warm-up's series dropped", async () => etcdSeries(await scrape(controller)) === 0, 30_000);
    const baseline = await settledHeap(controller);

    await round("churn", ROUND);
    await waitFor("every series dropped", async () => etcdSeries(await scrape(controller)) === 0, 30_000);
    const afterChurn = await settledHeap(controller);
    const grown = afterChurn - baseline;
    assert.ok(
      grown < HEAP_TOLERANCE_BYTES,
      `heap grew by ${(grown / 1024 / 1024).toFixed(1)} MB over ${ROUND} QuorumControlPlanes (baseline ${(baseline / 1024 / 1024).toFixed(1)} MB)`,
    );
    console.log(
      `churn: ${WARM_UP} + ${ROUND} QuorumControlPlanes in ${((Date.now() - started) / 1000).toFixed(0)} s; heap ${(baseline / 1024 / 1024).toFixed(1)} -> ${(afterChurn / 1024 / 1024).toFixed(1)} MB`,
    );
  });
});
