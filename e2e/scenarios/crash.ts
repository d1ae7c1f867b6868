// Quorum is killed right after each kind of action (QUORUM_CRASH_AFTER=<kind>:1 makes it exit with 137 before it
// writes status, as a SIGKILL would) during a scale-up, a rolling upgrade and a scale-down; each time a new Quorum
// process starts and must pick up from the sources of truth and finish.
import { setTimeout as sleep } from "node:timers/promises";
import type { Scenario } from "../lib/scenario.ts";
import type { QuorumProcess } from "../lib/stack.ts";
import { NEXT_VERSION, VERSION, type ScenarioDefinition } from "./types.ts";

interface Crash {
  kind: string;
  at: number;
  label: string;
}

/** Restarts Quorum with the next crash point each time it dies with 137, until the list is used up. */
class CrashDriver {
  readonly crashes: Crash[] = [];
  private index = 0;
  private current: QuorumProcess | undefined;
  private stopped = false;
  private loop: Promise<void> | undefined;
  private failure: Error | undefined;

  constructor(
    private readonly s: Scenario,
    private readonly kinds: string[],
  ) {}

  async start(): Promise<void> {
    for (const quorum of this.s.stack.runningQuorums()) await quorum.process.stop(5_000);
    this.current = await this.s.stack.startQuorum({ crashAfter: `${this.kinds[0]}:1` });
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const exit = this.current?.process.exitStatus();
      if (exit && this.current) {
        if (exit.code !== 137) {
          this.failure = new Error(
            `Quorum ${this.current.label} (QUORUM_CRASH_AFTER=${this.current.crashAfter}) exited with ${exit.code ?? exit.signal}, not 137:\n${this.current.process.lastLogLines(15)}`,
          );
          return;
        }
        const kind = this.kinds[this.index];
        this.crashes.push({ kind, at: Date.now(), label: this.current.label });
        this.s.log(`Quorum ${this.current.label} exited with 137 right after its first ${kind}; starting a new one`);
        this.index++;
        const next = this.kinds[this.index];
        try {
          this.current = await this.s.stack.startQuorum(next ? { crashAfter: `${next}:1` } : {});
        } catch (error) {
          // Not thrown from this loop, which nobody awaits until finish(): that would end the whole e2e run.
          this.failure = error instanceof Error ? error : new Error(String(error));
          return;
        }
      }
      await sleep(100);
    }
  }

  /** Stops watching; a Quorum still armed with a crash point is replaced by a plain one. Returns the kinds that never fired. */
  async finish(): Promise<string[]> {
    this.stopped = true;
    await this.loop;
    if (this.failure) throw this.failure;
    const missed = this.kinds.slice(this.index);
    if (this.current?.crashAfter) {
      await this.current.process.stop(5_000);
      this.current = await this.s.stack.startQuorum();
    }
    return missed;
  }
}

/** Moves etcd leadership to the member of the oldest Machine, the one Quorum removes first, so ForwardLeadership happens. */
async function leadershipToOldest(s: Scenario): Promise<string> {
  const machines = (await s.machines()).sort(
    (a, b) =>
      (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? "") ||
      a.metadata.name.localeCompare(b.metadata.name),
  );
  const oldest = machines[0].metadata.name;
  await s.workload.refresh();
  const client = s.workload.etcdClient();
  try {
    const member = (await client.listMembers()).find((candidate) => candidate.name === oldest);
    if (!member) throw new Error(`no etcd member named ${oldest}`);
    await client.moveLeader(member.id);
  } finally {
    await client.close();
  }
  return oldest;
}

async function phase(
  s: Scenario,
  label: string,
  kinds: string[],
  apply: () => Promise<void>,
  replicas: number,
): Promise<void> {
  const driver = new CrashDriver(s, kinds);
  await driver.start();
  await s.operation(label, apply, { replicas });
  const missed = await driver.finish();
  s.check(
    missed.length === 0,
    `${label}: Quorum was killed after each of ${kinds.join(", ")} and its successor finished the job (never reached: ${missed.join(", ") || "none"})`,
  );
}

export const crash: ScenarioDefinition = {
  name: "crash",
  title: "SIGKILL Quorum after each action kind during scale-up, rollout and scale-down; restart; finish",
  async run(s) {
    await s.setup({ replicas: 1, version: VERSION });
    await phase(
      s,
      "scale 1→3, crash after each step",
      ["CreateMachine", "PromoteLearner"],
      () => s.patch({ replicas: 3 }),
      3,
    );
    const victim = await leadershipToOldest(s);
    s.log(`etcd leadership moved to ${victim}, the Machine the upgrade replaces first`);
    await phase(
      s,
      `upgrade ${VERSION}→${NEXT_VERSION}, crash after each step`,
      ["CreateMachine", "PromoteLearner", "ForwardLeadership", "RemoveMember", "DeleteMachine", "ReleaseHook"],
      () => s.patch({ version: NEXT_VERSION }),
      3,
    );
    const next = await leadershipToOldest(s);
    s.log(`etcd leadership moved to ${next}, the Machine the scale-down removes first`);
    await phase(
      s,
      "scale 3→1, crash after each step",
      ["ForwardLeadership", "RemoveMember", "DeleteMachine", "ReleaseHook"],
      () => s.patch({ replicas: 1 }),
      1,
    );
    return 1;
  },
};
