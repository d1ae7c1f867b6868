// The e2e quorum monitor's verdict: a loss is fewer voters answering than a quorum for two samples in a row, unless
// a linearizable read (which etcd serves only with a quorum of voters behind its leader) succeeded meanwhile.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { QuorumMonitor, type QuorumSample, type WorkloadCluster } from "../../../e2e/lib/workload.ts";

function monitorWith(samples: Partial<QuorumSample>[]): QuorumMonitor {
  // losses() reads only the samples; the workload is never asked for anything here.
  const monitor = new QuorumMonitor({} as WorkloadCluster);
  samples.forEach((sample, index) =>
    monitor.samples.push({
      at: index * 250,
      voters: 2,
      reachableVoters: 2,
      healthyVoters: 2,
      leaderless: false,
      members: [],
      ...sample,
    }),
  );
  return monitor;
}

describe("the e2e quorum monitor", () => {
  it("counts two samples in a row with 1 of 2 voters answering and no linearizable read as a loss", () => {
    const monitor = monitorWith([
      {},
      { reachableVoters: 1, committed: false },
      { reachableVoters: 1, committed: false },
    ]);
    assert.equal(monitor.losses().length, 2);
  });

  it("does not count a voter that serves no client yet while a linearizable read still succeeds (kubeadm's promotion)", () => {
    const monitor = monitorWith([{}, { reachableVoters: 1, committed: true }, { reachableVoters: 1, committed: true }]);
    assert.equal(monitor.losses().length, 0);
  });

  it("does not count a single starved sample", () => {
    const monitor = monitorWith([{}, { reachableVoters: 0, committed: false }, {}]);
    assert.equal(monitor.losses().length, 0);
  });
});
