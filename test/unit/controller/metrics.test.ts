import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createMetrics } from "../../../src/controller/metrics.ts";

const quorum = { voters: 3, healthyVoters: 3, failuresTolerated: 1 };

async function seriesOf(metrics: ReturnType<typeof createMetrics>): Promise<string[]> {
  const text = await metrics.registry.metrics();
  return text.split("\n").filter((line) => line.startsWith("quorum_etcd_"));
}

describe("per-cluster etcd metrics", () => {
  it("drop every series of a QuorumControlPlane once it is forgotten", async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    metrics.recordEtcd("ns/a", "ns/c-a", quorum);
    metrics.recordEtcd("ns/b", "ns/c-b", quorum);
    assert.equal((await seriesOf(metrics)).length, 6);
    metrics.forget("ns/a");
    const left = await seriesOf(metrics);
    assert.equal(left.length, 3);
    assert.ok(left.every((line) => line.includes('cluster="ns/c-b"')));
    assert.equal(metrics.trackedControlPlanes, 1);
  });

  it("keep a Cluster's series while another QuorumControlPlane still reports it", async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    metrics.recordEtcd("ns/a", "ns/c", quorum);
    metrics.recordEtcd("ns/copy", "ns/c", quorum);
    metrics.forget("ns/copy");
    assert.equal((await seriesOf(metrics)).length, 3);
    metrics.forget("ns/a");
    assert.deepEqual(await seriesOf(metrics), []);
  });

  it("move a QuorumControlPlane's series when it reports another Cluster", async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    metrics.recordEtcd("ns/a", "ns/old", quorum);
    metrics.recordEtcd("ns/a", "ns/new", quorum);
    const left = await seriesOf(metrics);
    assert.equal(left.length, 3);
    assert.ok(left.every((line) => line.includes('cluster="ns/new"')));
  });
});
