// Crash safety: for every action kind, the controller is SIGKILLed (exit 137) right after its first action of that
// kind (QUORUM_CRASH_AFTER), then restarted with nothing in memory. It must finish the operation with no Machine or
// member left over, never lose quorum, and never let a Machine's infrastructure go while its member remains.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { API_VERSION, CAPI_API_VERSION, PRE_TERMINATE_HOOK } from "../../src/api/constants.ts";
import { createEtcdClusterClient } from "../../src/adapters/etcd/client.ts";
import type { ActionKind } from "../../src/core/actions.ts";
import { kubeRequestOk } from "../env/kube.ts";
import type { MachinePlayer } from "./controller/player.ts";
import { startStack, type ControllerProcess, type ControllerStack, type QuorumMonitor } from "./controller/stack.ts";

const NS = "crash";
const NAME = "c2";

describe("the controller resumes and finishes after a crash right after any action", { timeout: 1_800_000 }, () => {
  let stack: ControllerStack;
  let player: MachinePlayer;
  let monitor: QuorumMonitor;
  let minor = 31;

  before(async () => {
    stack = await startStack({ capi: true });
    player = await stack.createCluster(NS, NAME, { replicas: 3, version: `v1.${minor}.0` });
    monitor = stack.monitor(player);
    const controller = await stack.startController();
    await stack.waitConverged(NS, NAME, 3);
    await controller.process.stop(5_000);
  });

  after(async () => {
    await stack?.stop();
  });

  /** Starts a crashing controller, triggers the operation, waits for exit 137, restarts cleanly and waits to converge. */
  async function crashThenFinish(kind: ActionKind, trigger: () => Promise<void>): Promise<void> {
    const crashing = await stack.startController({ env: { QUORUM_CRASH_AFTER: `${kind}:1` } });
    let exit: Awaited<typeof crashing.process.exited> | undefined;
    // The deadline's timer is cancelled once the race is decided: a pending 180 s timer kept the test process alive
    // for up to 3 minutes after its last test.
    const deadline = new AbortController();
    try {
      await trigger();
      exit = await Promise.race([
        crashing.process.exited,
        sleep(180_000, undefined, { signal: deadline.signal }).catch(() => undefined),
      ]);
    } finally {
      deadline.abort();
      // A failed trigger must not leave a second controller running into the next test.
      if (crashing.process.isRunning()) await crashing.process.kill();
    }
    assert.ok(exit, `the controller never executed ${kind} within 180 s:\n${crashing.process.lastLogLines(30)}`);
    assert.equal(exit.code, 137, `exit after ${kind}: ${JSON.stringify(exit)}\n${crashing.process.lastLogLines(30)}`);
    assert.match(
      crashing.process.lastLogLines(200),
      new RegExp(`QUORUM_CRASH_AFTER: exiting with 137 after ${kind} #1`),
    );
    const restarted: ControllerProcess = await stack.startController();
    try {
      await stack.waitConverged(NS, NAME, 3, 240_000);
      await assertNoLeftovers();
    } finally {
      await restarted.process.stop(5_000);
    }
  }

  async function assertNoLeftovers(): Promise<void> {
    const machines = await stack.machines(NS, NAME);
    const etcd = player.etcd;
    assert.ok(etcd);
    const client = createEtcdClusterClient({
      endpoints: player.liveEndpoints(),
      credentials: etcd.credentials,
      callDeadlineMs: 3_000,
    });
    try {
      const members = await client.listMembers();
      assert.equal(members.length, 3, `members: ${members.map((member) => member.name || member.id).join(", ")}`);
      assert.ok(members.every((member) => !member.learner));
    } finally {
      await client.close();
    }
    assert.equal(machines.length, 3);
    assert.deepEqual(player.deletedWithMember, [], "no Machine's infrastructure went while its member was still there");
    assert.deepEqual(monitor.losses, [], "etcd never lost quorum");
  }

  /** A version bump (one minor at a time, as the CRD demands), with leadership first moved onto the oldest Machine. */
  async function rollout(): Promise<void> {
    await moveLeaderToOldestMachine();
    minor += 1;
    await stack.patchSpec(NS, NAME, { version: `v1.${minor}.0` });
  }

  /** The oldest Machine is replaced first, so its member leading makes ForwardLeadership a certain step. */
  async function moveLeaderToOldestMachine(): Promise<void> {
    const machines = await stack.machines(NS, NAME);
    const oldest = [...machines].sort(
      (a, b) =>
        (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? "") ||
        a.metadata.name.localeCompare(b.metadata.name),
    )[0];
    const address = oldest.status?.addresses?.[0]?.address;
    const etcd = player.etcd;
    assert.ok(etcd && address);
    const client = createEtcdClusterClient({
      endpoints: player.liveEndpoints(),
      credentials: etcd.credentials,
      callDeadlineMs: 3_000,
    });
    try {
      const members = await client.listMembers();
      const target = members.find((member) => member.peerURLs.some((url) => url.includes(`//${address}:`)));
      assert.ok(target, `no member for the oldest Machine ${oldest.metadata.name} (${address})`);
      await client.moveLeader(target.id);
    } finally {
      await client.close();
    }
  }

  for (const kind of [
    "CreateMachine",
    "PromoteLearner",
    "ForwardLeadership",
    "RemoveMember",
    "DeleteMachine",
    "ReleaseHook",
  ] as const) {
    it(`finishes a rolling upgrade after a crash right after ${kind}`, async () => {
      await crashThenFinish(kind, rollout);
    });
  }

  it("finishes adding the pre-terminate hook after a crash right after AddHook", async () => {
    await crashThenFinish("AddHook", async () => {
      const machine = (await stack.machines(NS, NAME))[0];
      await kubeRequestOk(
        stack.kubeConfig,
        `/apis/${CAPI_API_VERSION}/namespaces/${NS}/machines/${machine.metadata.name}`,
        { method: "PATCH", body: { metadata: { annotations: { [PRE_TERMINATE_HOOK]: null } } } },
      );
    });
    for (const machine of await stack.machines(NS, NAME))
      assert.ok(
        PRE_TERMINATE_HOOK in (machine.metadata.annotations ?? {}),
        `${machine.metadata.name} has the hook again`,
      );
  });

  it("finishes removing a ghost member after a crash right after RemoveGhost", async () => {
    await crashThenFinish("RemoveGhost", async () => {
      const etcd = player.etcd;
      assert.ok(etcd);
      // A member no Machine owns, on an address no Machine has: a ghost once its 20 s grace period is over.
      const client = createEtcdClusterClient({
        endpoints: player.liveEndpoints(),
        credentials: etcd.credentials,
        callDeadlineMs: 3_000,
      });
      try {
        // etcd refuses new members for a few seconds after a member (re)joined ("unhealthy cluster"): retry.
        for (let attempt = 0; ; attempt++) {
          try {
            await client.addMember([`https://${etcd.subnet.address(250)}:2380`], { learner: true });
            break;
          } catch (error) {
            if (attempt >= 30 || !/unhealthy cluster/.test(String(error))) throw error;
            await sleep(1_000);
          }
        }
      } finally {
        await client.close();
      }
    });
    const qcp = await stack.getControlPlane(NS, NAME);
    assert.ok((qcp.status?.etcd?.members ?? []).every((member) => member.machine !== undefined));
  });

  it("finishes a remediation after a crash right after Remediate", async () => {
    await crashThenFinish("Remediate", async () => {
      const machine = (await stack.machines(NS, NAME))[0];
      await kubeRequestOk(
        stack.kubeConfig,
        `/apis/${CAPI_API_VERSION}/namespaces/${NS}/machines/${machine.metadata.name}/status`,
        {
          method: "PATCH",
          body: {
            status: {
              // As a MachineHealthCheck marks an unhealthy Machine: both conditions False.
              conditions: [
                {
                  type: "HealthCheckSucceeded",
                  status: "False",
                  reason: "UnhealthyNode",
                  message: "test",
                  lastTransitionTime: new Date().toISOString(),
                },
                {
                  type: "OwnerRemediated",
                  status: "False",
                  reason: "WaitingForRemediation",
                  message: "test",
                  lastTransitionTime: new Date().toISOString(),
                },
              ],
            },
          },
        },
      );
    });
    const qcp = await kubeRequestOk<{ status?: { lastRemediation?: { machine: string } } }>(
      stack.kubeConfig,
      `/apis/${API_VERSION}/namespaces/${NS}/quorumcontrolplanes/${NAME}`,
    );
    assert.ok(qcp.status?.lastRemediation?.machine, "the remediation is recorded in status");
  });
});
