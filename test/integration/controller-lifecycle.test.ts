// The controller against a real kube-apiserver and real etcd members: create with 1 replica, scale to 3, idle
// without writes, roll out a new version, scale back to 1. Quorum is sampled every 250 ms throughout.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { startStack, type ControllerStack, type QuorumMonitor } from "./controller/stack.ts";
import type { MachinePlayer } from "./controller/player.ts";

const NS = "lifecycle";
const NAME = "c1";

describe(
  "QuorumControlPlane lifecycle on a real stack, the controller running as its ServiceAccount",
  { timeout: 900_000 },
  () => {
    let stack: ControllerStack;
    let player: MachinePlayer;
    let monitor: QuorumMonitor;

    before(async () => {
      stack = await startStack({ audit: true, capi: true });
      player = await stack.createCluster(NS, NAME, { replicas: 1, version: "v1.31.0" });
      monitor = stack.monitor(player);
      // The controller runs with nothing but the RBAC config/default ships: the lifecycle below proves it sufficient.
      await stack.installControllerRbac();
      await stack.startController({ asServiceAccount: true });
    });

    after(async () => {
      await stack?.stop();
    });

    it("creates the first Machine and reports its single healthy member", async () => {
      const qcp = await stack.waitConverged(NS, NAME, 1);
      assert.equal(qcp.status?.etcd?.quorum?.voters, 1);
      assert.equal(qcp.status?.initialization?.controlPlaneInitialized, true);
      assert.equal(qcp.status?.conditions?.find((condition) => condition.type === "Available")?.status, "True");
    });

    it("scales 1 → 3 with every new member joining as a learner and promoted", async () => {
      await stack.patchSpec(NS, NAME, { replicas: 3 });
      const qcp = await stack.waitConverged(NS, NAME, 3);
      assert.equal(qcp.status?.etcd?.quorum?.healthyVoters, 3);
      assert.equal(qcp.status?.etcd?.quorum?.failuresTolerated, 1);
      assert.equal(qcp.status?.readyReplicas, 3);
    });

    it("makes no write to the API server while idle for 60 s after converging", async () => {
      await stack.waitConverged(NS, NAME, 3);
      await sleep(5_000); // let the last status write after convergence land
      const auditLog = stack.auditLog as string;
      const username = stack.controllers[0].username;
      const writesBefore = controllerWrites(auditLog, username);
      await sleep(60_000);
      const writesAfter = controllerWrites(auditLog, username);
      assert.ok(writesBefore.length > 0, "the audit log does record the controller's writes");
      assert.deepEqual(writesAfter.slice(writesBefore.length), [], "writes by the controller during the idle minute");
    });

    it("rolls out a new version one Machine at a time without losing quorum", async () => {
      const before = new Set((await stack.machines(NS, NAME)).map((machine) => machine.metadata.name));
      await stack.patchSpec(NS, NAME, { version: "v1.32.0" });
      await stack.waitConverged(NS, NAME, 3, 300_000);
      const now = (await stack.machines(NS, NAME)).map((machine) => machine.metadata.name);
      assert.ok(
        now.every((name) => !before.has(name)),
        `every Machine was replaced (before ${[...before].join(",")}, now ${now.join(",")})`,
      );
      assert.deepEqual(
        player.deletedWithMember,
        [],
        "no Machine lost its infrastructure while its member was still in the membership",
      );
      assert.deepEqual(monitor.losses, [], "etcd never lost quorum");
    });

    it("scales 3 → 1 removing each member before its Machine goes", async () => {
      await stack.patchSpec(NS, NAME, { replicas: 1 });
      const qcp = await stack.waitConverged(NS, NAME, 1);
      assert.equal(qcp.status?.etcd?.quorum?.voters, 1);
      assert.deepEqual(player.deletedWithMember, []);
      assert.deepEqual(monitor.losses, []);
      assert.ok(monitor.samples.filter((sample) => sample.voters > 0).length > 100, "the monitor really sampled etcd");
    });

    it("exposes actions by kind and the step latency of each in /metrics", async () => {
      const text = await fetch(stack.controllers[0].metricsUrl).then((response) => response.text());
      for (const kind of ["CreateMachine", "PromoteLearner", "RemoveMember", "DeleteMachine", "ReleaseHook"]) {
        assert.match(text, new RegExp(`quorum_actions_total\\{kind="${kind}"\\} [1-9]`), `actions of kind ${kind}`);
        assert.match(
          text,
          new RegExp(`quorum_step_latency_seconds_count\\{kind="${kind}"\\} [1-9]`),
          `step latency of ${kind}`,
        );
      }
      assert.match(text, /quorum_etcd_voters\{cluster="lifecycle\/c1"\} 1/);
      assert.match(text, /quorum_reconcile_duration_seconds_count\{result="acted"\} [1-9]/);
    });
  },
);

/** Write requests made by the controller's own user, from the apiserver's audit log. */
function controllerWrites(auditLog: string, username: string): string[] {
  return readFileSync(auditLog, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map(
      (line) =>
        JSON.parse(line) as { user?: { username?: string }; verb?: string; requestURI?: string; stage?: string },
    )
    .filter((event) => event.user?.username === username && event.stage === "ResponseComplete")
    .map((event) => `${event.verb} ${event.requestURI}`);
}
