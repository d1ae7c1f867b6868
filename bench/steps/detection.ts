// How long a member that fails in a settled cluster takes to show in status (issue 19), for a failure no Kubernetes
// object reflects (the etcd process fails, its host stays up). A settled cluster's etcd is read every
// --etcd-idle-poll-interval (src/flags.ts), but the controller keeps a connection to every member and looks at once
// when one closes: a killed member ("kill", SIGKILL) shows within a second or so, a hung one ("pause", SIGSTOP: its
// socket stays open and silent) at the next idle poll. Each sample waits for the cluster to be settled again (status:
// nothing to do, every member healthy, written right after a poll), waits a random 0–5 s, fails a follower's etcd,
// and times failure → status naming it unhealthy (status read every 100 ms). The failure thus lands early in the
// poll cycle: a hung member's figures are near the worst case (one whole idle poll), not a failure at a random
// moment (which would average half of it). The member is restarted (resumed) before the next sample.
import { setTimeout as sleep } from "node:timers/promises";
import type { ControllerStack } from "../../test/integration/controller/stack.ts";
import type { MachinePlayer } from "../../test/integration/controller/player.ts";
import { progress } from "../lib/results.ts";
import { rounded, summarize, type Summary } from "../lib/stats.ts";

export type DetectionFault = "kill" | "pause";

export interface DetectionResults {
  fault: DetectionFault;
  samples: number;
  /** Failure → status shows the member unhealthy, ms. */
  detectedMs: Summary;
  samplesMs: number[];
  /** The controller's --etcd-idle-poll-interval in this run (its default). */
  idlePollSeconds: number;
  /**
   * When each paused member was resumed (just before SIGCONT) and its name: its peer connections are new after that,
   * which reopens etcd's removal window (a killed member's restart is a new process, which the etcd monitor dates).
   */
  resumed: { at: number; member: string }[];
}

const STATUS_READ_MS = 100;

export async function measureDetection(
  name: string,
  stack: ControllerStack,
  player: MachinePlayer,
  where: { namespace: string; cluster: string },
  options: { fault: DetectionFault; samples: number; idlePollSeconds: number; timeoutMs: number },
): Promise<DetectionResults> {
  const samplesMs: number[] = [];
  const resumed: DetectionResults["resumed"] = [];
  const status = async () => (await stack.getControlPlane(where.namespace, where.cluster)).status;
  const settle = async (what: string) => {
    const settledBy = Date.now() + options.timeoutMs;
    for (;;) {
      const current = await status();
      const members = current?.etcd?.members ?? [];
      const settled =
        members.length > 0 &&
        members.every((member) => member.healthy && !member.learner) &&
        (current?.nextAction?.message ?? "").startsWith("nothing to do");
      if (settled) return;
      if (Date.now() > settledBy) throw new Error(`${what}: the cluster did not settle within ${options.timeoutMs} ms`);
      await sleep(STATUS_READ_MS);
    }
  };
  for (let i = 1; i <= options.samples; i++) {
    await settle(`detection sample ${i}`);
    await sleep(Math.random() * 5_000);
    const listed = (await status())?.etcd?.members ?? [];
    const follower = listed.find((member) => !member.leader && member.machine && player.members.has(member.machine));
    const harness = follower?.machine ? player.members.get(follower.machine) : undefined;
    if (!follower || !harness) throw new Error(`detection sample ${i}: no follower with a running member to fail`);
    if (options.fault === "kill") await harness.kill();
    else await harness.pause();
    const killedAt = Date.now();
    for (;;) {
      const seen = (await status())?.etcd?.members?.find((member) => member.id === follower.id);
      if (seen && !seen.healthy) break;
      if (Date.now() - killedAt > options.timeoutMs)
        throw new Error(
          `detection sample ${i}: status did not show ${follower.name} unhealthy within ${options.timeoutMs} ms`,
        );
      await sleep(STATUS_READ_MS);
    }
    const detected = Date.now() - killedAt;
    samplesMs.push(detected);
    progress(
      name,
      `detection ${i}/${options.samples}: ${follower.name} ${options.fault === "kill" ? "killed" : "paused"}, status said so after ${(detected / 1000).toFixed(1)} s`,
    );
    if (options.fault === "kill") await harness.start();
    else {
      resumed.push({ at: Date.now(), member: harness.name });
      harness.resume();
    }
  }
  // The next phase starts from a settled cluster, as it would without this measurement.
  await settle("after the detection samples");
  return {
    fault: options.fault,
    samples: samplesMs.length,
    detectedMs: rounded(summarize(samplesMs)),
    samplesMs,
    idlePollSeconds: options.idlePollSeconds,
    resumed,
  };
}
