// The controller against a real kube-apiserver and real etcd members: create with 1 replica, scale to 3, idle
// without writes, roll out a new version, scale back to 1. Quorum is sampled every 250 ms throughout.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { MetaV1Condition } from "../../src/api/capi.ts";
import { CAPI_API_VERSION } from "../../src/api/constants.ts";
import { kubeRequestOk } from "../env/kube.ts";
import { startStack, type ControllerStack, type QuorumMonitor } from "./controller/stack.ts";
import { BOOTSTRAP_GROUP, INFRA_GROUP, TEST_VERSION } from "./controller/test-kinds.ts";
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
      // The v1beta2 counter is CAPI's Machine Ready condition, which waits for a Node (this stack runs none); the
      // deprecated v1beta1 counter is Quorum's own reading, a healthy voter.
      assert.equal(qcp.status?.deprecated?.v1beta1?.readyReplicas, 3);
      const capiReady = (await stack.machines(NS, NAME)).filter((machine) =>
        machine.status?.conditions?.some((condition) => condition.type === "Ready" && condition.status === "True"),
      );
      assert.equal(qcp.status?.readyReplicas, capiReady.length);
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

    it("carries a label and an annotation of spec.machineTemplate.metadata to every Machine and its clones in place, then removes them, replacing none", async () => {
      const names = (await stack.machines(NS, NAME)).map((machine) => machine.metadata.name).sort();
      await stack.patchSpec(NS, NAME, {
        machineTemplate: { metadata: { labels: { tier: "gold" }, annotations: { "example.com/owner": "team-a" } } },
      });
      await waitForObjects(names, (object) =>
        object.metadata.labels?.tier === "gold" && object.metadata.annotations?.["example.com/owner"] === "team-a"
          ? undefined
          : `labels ${JSON.stringify(object.metadata.labels)}, annotations ${JSON.stringify(object.metadata.annotations)}`,
      );
      await stack.patchSpec(NS, NAME, {
        machineTemplate: { metadata: { labels: { tier: null }, annotations: { "example.com/owner": null } } },
      });
      await waitForObjects(names, (object) =>
        object.metadata.labels?.tier === undefined && object.metadata.annotations?.["example.com/owner"] === undefined
          ? undefined
          : `still labels ${JSON.stringify(object.metadata.labels)}`,
      );
      const qcp = await stack.waitConverged(NS, NAME, 3);
      assert.deepEqual(
        (await stack.machines(NS, NAME)).map((machine) => machine.metadata.name).sort(),
        names,
        "no Machine was replaced",
      );
      assert.equal(qcp.status?.conditions?.find((condition) => condition.type === "Reconciled")?.status, "True");
    });

    /** Waits until each Machine, TestMachine and TestBootstrapConfig named in `names` passes `check` (undefined = passes). */
    async function waitForObjects(
      names: string[],
      check: (object: {
        metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
      }) => string | undefined,
    ): Promise<void> {
      const kinds = [
        `/apis/${CAPI_API_VERSION}/namespaces/${NS}/machines`,
        `/apis/${INFRA_GROUP}/${TEST_VERSION}/namespaces/${NS}/testmachines`,
        `/apis/${BOOTSTRAP_GROUP}/${TEST_VERSION}/namespaces/${NS}/testbootstrapconfigs`,
      ];
      const deadline = Date.now() + 60_000;
      let failing: string[] = [];
      while (Date.now() < deadline) {
        failing = [];
        for (const kind of kinds)
          for (const name of names) {
            const object = await kubeRequestOk<{
              metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
            }>(stack.kubeConfig, `${kind}/${name}`);
            const problem = check(object);
            if (problem) failing.push(`${kind}/${name}: ${problem}`);
          }
        if (failing.length === 0) return;
        await sleep(500);
      }
      assert.fail(
        `not updated in place within 60 s:\n${failing.join("\n")}\n${stack.controllers[0].process.lastLogLines(20)}`,
      );
    }

    /** Waits (60 s) until one Machine (or, with `every`, each) has condition `type` matching `accept`; returns the first. */
    async function machineCondition(
      type: string,
      accept: (condition: MetaV1Condition) => boolean,
      options: { every?: boolean } = {},
    ): Promise<MetaV1Condition> {
      const deadline = Date.now() + 60_000;
      let seen = "";
      while (Date.now() < deadline) {
        const machines = await stack.machines(NS, NAME);
        const found = machines.map((machine) =>
          machine.status?.conditions?.find((condition) => condition.type === type),
        );
        seen = machines.map((machine, i) => `${machine.metadata.name}: ${JSON.stringify(found[i])}`).join("\n");
        const matching = found.filter(
          (condition): condition is MetaV1Condition => condition !== undefined && accept(condition),
        );
        if (matching.length > 0 && (!options.every || matching.length === machines.length)) return matching[0];
        await sleep(200);
      }
      assert.fail(
        `no Machine${options.every ? "s all" : ""} with the expected ${type} condition within 60 s:\n${seen}`,
      );
    }

    it("rolls out a new version one Machine at a time without losing quorum", async () => {
      const before = new Set((await stack.machines(NS, NAME)).map((machine) => machine.metadata.name));
      await stack.patchSpec(NS, NAME, { version: "v1.32.0" });
      // The old Machines say why they are replaced, where CAPI's tools (clusterctl describe, the Cluster's RollingOut) look.
      const outdated = await machineCondition(
        "UpToDate",
        (condition) => condition.status === "False" && /Version v1\.31\.\d+ → v1\.32\.0/.test(condition.message ?? ""),
      );
      assert.equal(outdated.reason, "NotUpToDate");
      await stack.waitConverged(NS, NAME, 3, 300_000);
      await machineCondition("UpToDate", (condition) => condition.status === "True", { every: true });
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
