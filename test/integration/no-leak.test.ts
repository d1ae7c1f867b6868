// No etcd, kube-apiserver or CAPI process started by a test outlives it: not when the test stops what it
// started, not when it fails midway, and not when its process is killed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  allStartedPids,
  eventually,
  isProcessAlive,
  makeTempDir,
  removeTempDir,
  repoRoot,
  runningProcesses,
  startApiServer,
  startEtcdCluster,
} from "../env/index.ts";

interface StartedProcess {
  pid: number;
  command: string;
}

const fixture = join(repoRoot, "test/env/fixtures/leaky-test-process.ts");

/** Runs the fixture as a child test process; resolves once it has written its PIDs (or exited). */
function runLeakyTestProcess(mode: "fail" | "hang", stack: "etcd" | "full") {
  const dir = makeTempDir("leak-fixture");
  const pidsFile = join(dir, "pids.json");
  const child = spawn(process.execPath, ["--import", "tsx", fixture], {
    cwd: repoRoot,
    env: {
      ...process.env,
      QUORUM_LEAK_FIXTURE_MODE: mode,
      QUORUM_LEAK_FIXTURE_STACK: stack,
      QUORUM_LEAK_FIXTURE_PIDS: pidsFile,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  let exitedAlready = false;
  void exited.then(() => (exitedAlready = true));
  const started = async (): Promise<StartedProcess[]> =>
    eventually(
      "the leaky test process to start its processes",
      async () => {
        if (existsSync(pidsFile)) return JSON.parse(readFileSync(pidsFile, "utf8")) as StartedProcess[];
        if (exitedAlready) throw new Error(`it exited before writing ${pidsFile}:\n${output}`);
        return { waiting: "no PID file yet" };
      },
      { timeoutMs: 240_000, context: () => output },
    );
  return { child, exited, started, output: () => output, cleanup: () => removeTempDir(dir) };
}

async function assertAllGone(processes: StartedProcess[], situation: string): Promise<void> {
  assert.ok(processes.length > 0);
  await eventually(
    `every process to be gone ${situation}`,
    async () => {
      const alive = processes.filter((p) => isProcessAlive(p.pid, p.command));
      return alive.length === 0
        ? true
        : { waiting: `still running: ${alive.map((p) => `${p.command} pid ${p.pid}`).join(", ")}` };
    },
    { timeoutMs: 15_000 },
  );
}

test("a test that stops its etcd cluster and kube-apiserver leaves none of their processes running", async () => {
  const cluster = await startEtcdCluster({ members: 3 });
  const apiServer = await startApiServer();
  const pids = [
    ...cluster.members.map((m) => ({ pid: m.pid()!, command: "etcd" })),
    { pid: apiServer.process.pid, command: "kube-apiserver" },
    ...apiServer.etcd.members.map((m) => ({ pid: m.pid()!, command: "etcd" })),
  ];
  for (const { pid } of pids) assert.ok(allStartedPids().includes(pid), `pid ${pid} is in the harness registry`);
  assert.ok(pids.every((p) => isProcessAlive(p.pid, p.command)));

  await apiServer.stop();
  await cluster.stop();
  assert.deepEqual(
    pids.filter((p) => isProcessAlive(p.pid, p.command)),
    [],
    "stop() returns only after the processes have exited",
  );
  assert.deepEqual(
    runningProcesses().map((p) => p.name),
    [],
  );
});

test("a test process that fails midway leaves no etcd, kube-apiserver or CAPI manager running", async () => {
  const run = runLeakyTestProcess("fail", "full");
  try {
    const processes = await run.started();
    assert.deepEqual([...new Set(processes.map((p) => p.command))].sort(), ["capi-manager", "etcd", "kube-apiserver"]);
    const exit = await run.exited;
    assert.equal(exit.code, 1, `the child test process fails:\n${run.output()}`);
    assert.match(run.output(), /failing on purpose midway/);
    await assertAllGone(processes, "after the failed test process exited");
  } finally {
    run.child.kill("SIGKILL");
    run.cleanup();
  }
});

for (const signal of ["SIGKILL", "SIGTERM", "SIGINT"] as const) {
  test(`a test process ended by ${signal} leaves none of its etcd members running`, async () => {
    const run = runLeakyTestProcess("hang", "etcd");
    try {
      const processes = await run.started();
      assert.ok(
        processes.every((p) => isProcessAlive(p.pid, p.command)),
        "its members run while it hangs",
      );
      run.child.kill(signal);
      const exit = await run.exited;
      assert.equal(exit.signal, signal, `the child died of ${signal}:\n${run.output()}`);
      await assertAllGone(processes, `after ${signal}`);
    } finally {
      run.child.kill("SIGKILL");
      run.cleanup();
    }
  });
}
