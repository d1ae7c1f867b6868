// The process kubelet's static pod supervision (e2e/provider/kubeadm/pod-supervisor.ts) with stand-in binaries:
// shell scripts named like bin/<component>-<minor>, so the back-off and the stop on removal are seen without etcd.
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { after, describe, it } from "node:test";
import { stringify } from "yaml";
import { PodSupervisor } from "../../../e2e/provider/kubeadm/pod-supervisor.ts";
import { isProcessAlive } from "../../../test/env/processes.ts";

const dir = mkdtempSync(join(tmpdir(), "quorum-unit-supervisor-"));
const binDir = join(dir, "bin");
const manifests = join(dir, "manifests");
mkdirSync(binDir);
mkdirSync(manifests);
const script = (name: string, body: string) => {
  writeFileSync(join(binDir, name), `#!/bin/sh\n${body}\n`);
  chmodSync(join(binDir, name), 0o755);
};
// A component that fails at once, and one that runs until stopped.
script("kube-scheduler-1.37", 'echo "scheduler args: $*"; exit 3');
script("kube-apiserver-1.37", "exec sleep 600");

function manifest(name: string, image: string, command: string[]): string {
  return stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "kube-system" },
    spec: { containers: [{ name, image, command }] },
  });
}

describe("the static pod supervisor", () => {
  const lines: string[] = [];
  const supervisor = new PodSupervisor({
    manifestsDir: manifests,
    binDir,
    logDir: dir,
    nodeName: "n1",
    initialBackoffMs: 50,
    maxBackoffMs: 200,
    stopGraceMs: 2_000,
    log: (line) => lines.push(line),
  });
  after(async () => {
    await supervisor.stopAll();
    rmSync(dir, { recursive: true, force: true });
  });

  async function syncUntil(what: string, done: () => boolean, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}; log:\n${lines.join("\n")}`);
      await supervisor.sync();
      await sleep(20);
    }
  }

  it("restarts a process that exits with a back-off that doubles up to its cap, counting restarts", async () => {
    const command = ["kube-scheduler", "--leader-elect=true"];
    writeFileSync(
      join(manifests, "kube-scheduler.yaml"),
      manifest("kube-scheduler", "k8s/kube-scheduler:v1.37.2", command),
    );
    const scheduler = () => [...supervisor.pods.values()].find((pod) => pod.pod.name === "kube-scheduler");
    await syncUntil("5 restarts", () => (scheduler()?.state.restartCount ?? 0) >= 5);
    const delays = lines.flatMap((line) => /kube-scheduler .*restarting in (\d+) ms/.exec(line)?.[1] ?? []).map(Number);
    assert.deepEqual(delays.slice(0, 5), [50, 100, 200, 200, 200]);
    assert.equal(scheduler()?.state.lastExit?.exitCode, 3);
    assert.equal(scheduler()?.state.waiting?.reason, "CrashLoopBackOff");
    assert.match(readFileSync(join(dir, "kube-scheduler.log"), "utf8"), /scheduler args: --leader-elect=true/);
    rmSync(join(manifests, "kube-scheduler.yaml"));
    await syncUntil("the scheduler is forgotten", () => scheduler() === undefined);
  });

  it("stops a running process when its manifest is removed, and ignores hidden files", async () => {
    writeFileSync(join(manifests, ".kube-apiserver.yaml.swp"), "not a manifest");
    writeFileSync(
      join(manifests, "kube-apiserver.yaml"),
      manifest("kube-apiserver", "k8s/kube-apiserver:v1.37.2", ["kube-apiserver"]),
    );
    const apiServer = () => [...supervisor.pods.values()].find((pod) => pod.pod.name === "kube-apiserver");
    await syncUntil("the apiserver stand-in runs", () => apiServer()?.process !== undefined);
    const pid = apiServer()!.process!.pid;
    assert.equal(supervisor.pods.size, 1, "the hidden file is not a pod");
    rmSync(join(manifests, "kube-apiserver.yaml"));
    await supervisor.sync();
    assert.equal(isProcessAlive(pid), false);
    assert.ok(lines.some((line) => line.includes(`stopped static pod kube-apiserver (pid ${pid}, manifest removed)`)));
  });
});
