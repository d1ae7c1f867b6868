// A member that dies in a settled cluster shows in status at once, not at the next poll: the controller keeps a
// connection to every member and looks at the cluster when one closes. The controller runs here with both etcd
// poll intervals at 10 minutes, so only that trigger (no poll, no Kubernetes object changes when an etcd process
// dies on a host that stays up) can show the death within the test's wait.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { eventually } from "../env/index.ts";
import type { MachinePlayer } from "./controller/player.ts";
import { startStack, type ControllerProcess, type ControllerStack } from "./controller/stack.ts";

const NS = "connection";
const NAME = "cw";

describe("a killed etcd member in a settled cluster, with 10-minute etcd polls", { timeout: 600_000 }, () => {
  let stack: ControllerStack;
  let player: MachinePlayer;
  let controller: ControllerProcess;

  before(async () => {
    stack = await startStack({ capi: true });
    player = await stack.createCluster(NS, NAME, { replicas: 3, version: "v1.31.0" });
    // Converged with the stack's 1 s polls, then watched by a controller that polls every 10 minutes.
    const converging = await stack.startController();
    await stack.waitConverged(NS, NAME, 3);
    await converging.process.stop(5_000);
    controller = await stack.startController({
      args: ["--etcd-poll-interval", "10m", "--etcd-idle-poll-interval", "10m"],
    });
  });

  after(async () => {
    await stack?.stop();
  });

  it("shows the member unhealthy within seconds and says why it looked", async () => {
    const settled = await stack.waitConverged(NS, NAME, 3);
    const follower = settled.status?.etcd?.members?.find(
      (member) => !member.leader && member.machine && player.members.get(member.machine)?.isRunning(),
    );
    const harness = follower?.machine ? player.members.get(follower.machine) : undefined;
    assert.ok(follower && harness, "a follower with a running member");
    // The controller's first reconcile observed etcd (it wrote the status above) and holds its connections now.
    await eventually(
      "the controller has looked at the cluster",
      async () => /nothing to do/.test(controller.process.lastLogLines(400)) || { waiting: "no reconcile logged yet" },
      { timeoutMs: 60_000 },
    );
    await harness.kill();
    try {
      await eventually(
        `status shows ${follower.name} unhealthy`,
        async () => {
          const seen = (await stack.getControlPlane(NS, NAME)).status?.etcd?.members?.find(
            (member) => member.id === follower.id,
          );
          return seen?.healthy === false || { waiting: `status says ${JSON.stringify(seen)}` };
        },
        { timeoutMs: 60_000 },
      );
      assert.match(
        controller.process.lastLogLines(400),
        new RegExp(`the connection to etcd member \\S*${harness.address}\\S* closed; looking at the cluster now`),
      );
    } finally {
      await harness.start();
    }
  });
});
