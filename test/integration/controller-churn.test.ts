// Issue 13: memory and metrics of a deleted QuorumControlPlane are dropped. 500 QuorumControlPlanes are created and
// deleted against the real API server while the controller (its own process) reconciles each: it adds its finalizer,
// observes, records the per-cluster etcd series, and releases the finalizer on deletion. Afterwards no per-cluster
// series is left, and the live heap (after a full collection) is back near where it was after a warm-up round. Each QuorumControlPlane is labelled for
// a Cluster that names no control plane, so the controller does everything per key but generate certificates (which
// would make the churn cost minutes instead of seconds).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { API_VERSION, CAPI_API_VERSION, KIND, LABEL_CLUSTER_NAME } from "../../src/api/constants.ts";
import { kubeRequest, kubeRequestOk } from "../env/kube.ts";
import { makeTempDir } from "../env/processes.ts";
import { startStack, type ControllerProcess, type ControllerStack } from "./controller/stack.ts";
import { BOOTSTRAP_GROUP, INFRA_GROUP } from "./controller/test-kinds.ts";

const NS = "churn";
const ROUND = 500;
const WARM_UP = 100;
/** Parallel API requests of the test itself. */
const PARALLEL = 16;
/** What the live heap may move by between two full collections of an idle controller. */
const HEAP_TOLERANCE_BYTES = 5 * 1024 * 1024;

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

/**
 * The live heap: the controller runs with --heapsnapshot-signal, and writing a heap snapshot starts with a full
 * garbage collection, so the heap read right after it holds only what is still referenced.
 */
async function liveHeap(controller: ControllerProcess, diagnosticDir: string): Promise<number> {
  const before = new Set(readdirSync(diagnosticDir));
  process.kill(controller.process.pid, "SIGUSR2");
  let snapshot: string | undefined;
  let size = -1;
  await waitFor("the heap snapshot", async () => {
    snapshot ??= readdirSync(diagnosticDir).find((file) => file.endsWith(".heapsnapshot") && !before.has(file));
    if (!snapshot) return false;
    const now = statSync(join(diagnosticDir, snapshot)).size;
    const done = now > 0 && now === size;
    size = now;
    return done;
  });
  rmSync(join(diagnosticDir, snapshot!), { force: true });
  return heapUsed(await scrape(controller));
}

describe("a churn of QuorumControlPlanes leaves nothing behind", { timeout: 600_000 }, () => {
  let stack: ControllerStack;
  let controller: ControllerProcess;
  const diagnosticDir = makeTempDir("churn-heap");

  before(async () => {
    stack = await startStack();
    await kubeRequest(stack.kubeConfig, "/api/v1/namespaces", {
      body: { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } },
    });
    controller = await stack.startController({
      env: { NODE_OPTIONS: `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${diagnosticDir}` },
    });
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
              spec: {
                infrastructureRef: { apiGroup: INFRA_GROUP, kind: "TestMachineTemplate", name: "none" },
                bootstrapConfigTemplateRef: {
                  apiGroup: BOOTSTRAP_GROUP,
                  kind: "TestBootstrapConfigTemplate",
                  name: "none",
                },
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
    const baseline = await liveHeap(controller, diagnosticDir);

    await round("churn", ROUND);
    await waitFor("every series dropped", async () => etcdSeries(await scrape(controller)) === 0, 30_000);
    const afterChurn = await liveHeap(controller, diagnosticDir);
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
