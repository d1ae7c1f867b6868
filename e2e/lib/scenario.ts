// The frame every scenario runs in: a fresh stack and cluster, the observers (keys, quorum monitor, traffic
// client, Machine recorder), operations that write 1,000 keys first and check them after, the checks that hold
// across all scenarios (no lost key, no quorum loss, no member still present when its Machine's processes stop,
// nothing leaked), and the numbers the summary reports.
import { readFileSync, existsSync, readdirSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import type { Cluster, Machine } from "../../src/api/capi.ts";
import { CAPI_API_VERSION } from "../../src/api/constants.ts";
import { kubeRequest } from "../../test/env/kube.ts";
import type { QuorumControlPlane } from "../../src/api/types.ts";
import { isProcessAlive } from "../../test/env/processes.ts";
import { E2EStack, type ClusterSpec, type StackOptions } from "./stack.ts";
import { QuorumMonitor, TrafficClient, WorkloadCluster } from "./workload.ts";

export interface ControllerAction {
  at: number;
  decidedAt: number;
  /**
   * For a member removal: when Quorum last confirmed, right before sending it, that the other voters still answered.
   * The removal rests on that observation, not on the older one it was planned on.
   */
  confirmedAt?: number;
  kind: string;
  message: string;
  quorum: string;
}

export interface WorldEvent {
  at: number;
  kind: string;
  subject: string;
}

export interface OperationResult {
  label: string;
  startedAt: number;
  endedAt: number;
  lostKeys: number;
  rollout: boolean;
  client: { total: number; ok: number; ratio: number; retried: number };
  quorumLosses: number;
}

export interface StepLatency {
  kind: string;
  at: number;
  latencyMs: number;
  after: string;
}

export interface ScenarioResult {
  name: string;
  title: string;
  passed: boolean;
  error?: string;
  startedAt: number;
  wallMs: number;
  operations: OperationResult[];
  steps: StepLatency[];
  latency: { count: number; p50Ms: number; p99Ms: number };
  keysWritten: number;
  lostKeys: number;
  client: { total: number; ok: number; ratio: number; retried: number };
  quorumLosses: number;
  /** Samples taken during a leader election (live voters, none knowing a leader). */
  leaderlessSamples: number;
  quorumSamples: number;
  longestBlindMs: number;
  leaks: string[];
  checks: string[];
  notes: string[];
  logDir: string;
}

export class ScenarioFailure extends Error {}

export class Scenario {
  readonly startedAt = Date.now();
  stack!: E2EStack;
  workload!: WorkloadCluster;
  monitor!: QuorumMonitor;
  traffic: TrafficClient | undefined;
  readonly operations: OperationResult[] = [];
  readonly userEvents: WorldEvent[] = [];
  readonly machineEvents: WorldEvent[] = [];
  readonly checks: string[] = [];
  readonly notes: string[] = [];
  readonly machineSnapshots: { at: number; machines: { name: string; deleting: boolean; provisioned: boolean }[] }[] =
    [];
  /** A window the suite draws as an SVG timeline (the rolling upgrade). */
  timelineWindow: { title: string; from: number; to: number; file: string } | undefined;
  private recorderStopped = false;
  private recorder: Promise<void> | undefined;
  readonly namespace: string;
  readonly cluster = "demo";

  constructor(
    readonly name: string,
    readonly title: string,
  ) {
    this.namespace = name;
  }

  log(message: string): void {
    const seconds = ((Date.now() - this.startedAt) / 1000).toFixed(1).padStart(6);
    process.stdout.write(`[${this.name} ${seconds}s] ${message}\n`);
  }

  /** Starts the stack (without Quorum), creates the cluster, starts the observers. */
  async setup(
    spec: Omit<ClusterSpec, "namespace" | "name">,
    options: StackOptions & { startQuorum?: (stack: E2EStack) => Promise<void> } = {},
  ): Promise<void> {
    this.log("starting a fresh stack: management kube-apiserver, CRDs, CAPI core manager, process provider");
    this.stack = await E2EStack.start(this.name, options);
    this.log(
      `stack up (logs in ${this.stack.dir}); starting Quorum and creating cluster ${this.namespace}/${this.cluster} with ${spec.replicas} replica(s)`,
    );
    if (options.startQuorum) await options.startQuorum(this.stack);
    else await this.stack.startQuorum();
    await this.stack.createCluster({ namespace: this.namespace, name: this.cluster, ...spec });
    this.userEvents.push({ at: Date.now(), kind: "cluster-created", subject: this.cluster });
    this.recorder = this.recordMachines();
    this.workload = new WorkloadCluster(this.stack, this.namespace, this.cluster);
    await this.workload.init();
    this.monitor = new QuorumMonitor(this.workload);
    this.monitor.start();
    await this.waitConverged(spec.replicas, 300_000);
    this.traffic = new TrafficClient(await this.workload.kubeconfig());
    this.traffic.start();
    this.log(`cluster converged at ${spec.replicas} replica(s); observers running`);
  }

  check(condition: unknown, message: string): void {
    if (!condition) throw new ScenarioFailure(message);
    this.checks.push(message);
  }

  /**
   * One user operation: write 1,000 keys, apply the change, wait until the control plane converges, read every key
   * written so far. The traffic client's answers during the operation count toward the rollout success ratio.
   */
  async operation(
    label: string,
    apply: () => Promise<void>,
    expect: { replicas: number; timeoutMs?: number; rollout?: boolean; during?: () => Promise<void> },
  ): Promise<OperationResult> {
    await this.workload.writeKeys(label);
    this.log(`${label}: wrote 1,000 keys (${this.workload.keysWritten} in total); applying the change`);
    const startedAt = Date.now();
    this.userEvents.push({ at: startedAt, kind: "user-operation", subject: label });
    await apply();
    if (expect.during) await expect.during();
    await this.waitConverged(expect.replicas, expect.timeoutMs ?? 600_000);
    const endedAt = Date.now();
    const lost = await this.workload.lostKeys();
    const client = this.traffic
      ? this.traffic.between(startedAt, endedAt)
      : { total: 0, ok: 0, ratio: 1, retried: 0, errors: [] };
    const result: OperationResult = {
      label,
      startedAt,
      endedAt,
      lostKeys: lost.length,
      rollout: expect.rollout ?? true,
      client: { total: client.total, ok: client.ok, ratio: client.ratio, retried: client.retried },
      quorumLosses: this.monitor.losses(startedAt, endedAt).length,
    };
    this.operations.push(result);
    const errors = [...new Set(client.errors.map((error) => error.slice(0, 120)))].slice(0, 3);
    this.log(
      `${label}: converged in ${((endedAt - startedAt) / 1000).toFixed(1)} s; lost keys ${lost.length}; client ${client.ok}/${client.total} ok (${client.retried} retried after a dropped connection)` +
        `${errors.length ? ` (errors: ${errors.join(" | ")})` : ""}; quorum losses ${result.quorumLosses}`,
    );
    this.check(
      lost.length === 0,
      `${label}: every key written before it is readable after it${lost.length ? ` (lost ${lost.length}, e.g. ${lost.slice(0, 5).join(", ")})` : ` (${this.workload.keysWritten} keys)`}`,
    );
    const losses = this.monitor.losses(startedAt, endedAt);
    const describe = (sample: (typeof losses)[number]) =>
      `${new Date(sample.at).toISOString()}: ${sample.reachableVoters} of ${sample.voters} voters answered (${sample.members.map((member) => `${member.name || member.id}${member.learner ? " learner" : ""}${member.healthy ? "" : " down"}`).join(", ")})`;
    this.check(
      losses.length === 0,
      `${label}: etcd kept quorum in every 250 ms sample${losses.length ? ` (lost: ${losses.slice(0, 3).map(describe).join("; ")})` : ""}`,
    );
    return result;
  }

  async controlPlane(): Promise<QuorumControlPlane> {
    return this.stack.controlPlane(this.namespace, this.cluster);
  }

  async machines(): Promise<Machine[]> {
    return this.stack.machines(this.namespace, this.cluster);
  }

  async patch(spec: Record<string, unknown>): Promise<void> {
    await this.stack.patchControlPlane(this.namespace, this.cluster, spec);
  }

  /**
   * Converged: `replicas` Machines, none deleting, all at the spec's version and up to date; as many etcd members, all
   * healthy voters mapped to a Machine; every ProcessMachine Running (etcd and kube-apiserver up, Node registered).
   */
  async waitConverged(replicas: number, timeoutMs: number): Promise<QuorumControlPlane> {
    const deadline = Date.now() + timeoutMs;
    let last = "";
    while (Date.now() < deadline) {
      try {
        const qcp = await this.controlPlane();
        const machines = await this.machines();
        const processMachines = (await this.stack.processMachines(this.namespace)).filter(
          (machine) => machine.metadata.labels?.["cluster.x-k8s.io/cluster-name"] === this.cluster,
        );
        const members = qcp.status?.etcd?.members ?? [];
        const converged =
          machines.length === replicas &&
          machines.every(
            (machine) => !machine.metadata.deletionTimestamp && machine.spec.version === qcp.spec.version,
          ) &&
          members.length === replicas &&
          members.every((member) => member.healthy && !member.learner && member.machine !== undefined) &&
          qcp.status?.upToDateReplicas === replicas &&
          qcp.status?.observedGeneration === qcp.metadata.generation &&
          processMachines.length === replicas &&
          processMachines.every((machine) => machine.status?.phase === "Running");
        if (converged) return qcp;
        last =
          `Machines: ${machines.map((machine) => `${machine.metadata.name}${machine.metadata.deletionTimestamp ? ` (deleting: ${machine.status?.conditions?.find((condition) => condition.type === "Deleting")?.message ?? "?"})` : ""} ${machine.spec.version}`).join(", ")}; ` +
          `ProcessMachines: ${processMachines.map((machine) => `${machine.metadata.name}=${machine.status?.phase}`).join(", ")}; etcd ${qcp.status?.etcd?.summary}; next: ${qcp.status?.nextAction?.message}`;
      } catch (error) {
        last = `error: ${(error as Error).message}`;
      }
      for (const quorum of this.stack.quorums) {
        const exit = quorum.process.exitStatus();
        // A replica that loses the Lease exits (1) on purpose, saying so in its last log lines.
        const lostLeadership = exit?.code === 1 && quorum.process.lastLogLines(5).includes("leadership lost: exiting");
        if (
          exit &&
          !lostLeadership &&
          exit.code !== 137 &&
          exit.code !== 0 &&
          exit.signal !== "SIGKILL" &&
          exit.signal !== "SIGTERM"
        ) {
          throw new ScenarioFailure(
            `Quorum ${quorum.label} exited with ${exit.code ?? exit.signal}; last log lines:\n${quorum.process.lastLogLines(20)}`,
          );
        }
      }
      await sleep(300);
    }
    throw new ScenarioFailure(
      `the control plane did not converge to ${replicas} replicas within ${timeoutMs / 1000} s; last seen: ${last}\n${this.quorumTail()}`,
    );
  }

  quorumTail(lines = 15): string {
    return this.stack.quorums
      .map(
        (quorum) =>
          `--- ${quorum.label} (${quorum.process.isRunning() ? "running" : "exited"}) ---\n${quorum.process.lastLogLines(lines)}`,
      )
      .join("\n");
  }

  /** Records Machine creations, deletions and disappearances every 250 ms (for latencies and the timeline). */
  private async recordMachines(): Promise<void> {
    const seen = new Map<string, { deleting: boolean; provisioned: boolean }>();
    let infrastructureProvisioned = false;
    while (!this.recorderStopped) {
      try {
        if (!infrastructureProvisioned) {
          const cluster = await kubeRequest<Cluster>(
            this.stack.kubeConfig,
            `/apis/${CAPI_API_VERSION}/namespaces/${this.namespace}/clusters/${this.cluster}`,
          );
          if (cluster.status === 200 && cluster.body.status?.initialization?.infrastructureProvisioned) {
            infrastructureProvisioned = true;
            this.machineEvents.push({
              at: Date.now(),
              kind: "cluster-infrastructure-provisioned",
              subject: this.cluster,
            });
          }
        }
        const machines = await this.machines();
        const at = Date.now();
        const names = new Set<string>();
        for (const machine of machines) {
          const name = machine.metadata.name;
          names.add(name);
          const deleting = Boolean(machine.metadata.deletionTimestamp);
          const provisioned = machine.status?.initialization?.infrastructureProvisioned === true;
          const before = seen.get(name);
          if (!before) this.machineEvents.push({ at, kind: "machine-created", subject: name });
          if (deleting && !before?.deleting) this.machineEvents.push({ at, kind: "machine-deleting", subject: name });
          if (provisioned && !before?.provisioned)
            this.machineEvents.push({ at, kind: "machine-provisioned", subject: name });
          seen.set(name, { deleting, provisioned });
        }
        for (const name of [...seen.keys()]) {
          if (!names.has(name)) {
            this.machineEvents.push({ at, kind: "machine-gone", subject: name });
            seen.delete(name);
          }
        }
        this.machineSnapshots.push({
          at,
          machines: machines.map((machine) => ({
            name: machine.metadata.name,
            deleting: Boolean(machine.metadata.deletionTimestamp),
            provisioned: machine.status?.initialization?.infrastructureProvisioned === true,
          })),
        });
      } catch {
        // The management API is busy; the next sample catches up.
      }
      await sleep(250);
    }
  }

  /** Member events derived from the quorum monitor's samples. */
  memberEvents(): WorldEvent[] {
    const events: WorldEvent[] = [];
    const known = new Map<string, { name: string; learner: boolean }>();
    for (const sample of this.monitor?.samples ?? []) {
      if (sample.voters < 0) continue;
      const ids = new Set(sample.members.map((member) => member.id));
      for (const member of sample.members) {
        const before = known.get(member.id);
        if (!before) events.push({ at: sample.at, kind: "member-added", subject: member.name || member.id });
        if (member.name && !before?.name) events.push({ at: sample.at, kind: "member-started", subject: member.name });
        if (before?.learner && !member.learner)
          events.push({ at: sample.at, kind: "member-promoted", subject: member.name });
        known.set(member.id, { name: member.name, learner: member.learner });
      }
      for (const [id, member] of [...known]) {
        if (!ids.has(id)) {
          events.push({ at: sample.at, kind: "member-removed", subject: member.name || id });
          known.delete(id);
        }
      }
    }
    return events;
  }

  /** Every action the Quorum processes carried out, from their JSON logs. */
  controllerActions(): ControllerAction[] {
    const actions: ControllerAction[] = [];
    for (const quorum of this.stack?.quorums ?? []) {
      if (!existsSync(quorum.logFile)) continue;
      let decided: { at: number; kind: string } | undefined;
      for (const line of readFileSync(quorum.logFile, "utf8").split("\n")) {
        if (!line.startsWith("{")) continue;
        let entry: {
          message?: string;
          action?: string;
          timestamp?: string;
          level?: string;
          votersConfirmedAt?: string;
        };
        try {
          entry = JSON.parse(line);
        } catch {
          continue;
        }
        if (!entry.action || !entry.timestamp || entry.action === "Wait") continue;
        const at = Date.parse(entry.timestamp);
        if (entry.message?.startsWith("next action:")) decided = { at, kind: entry.action };
        // Completed actions only: not a conflict re-plan, not a removal etcd deferred.
        else if (
          entry.level === "info" &&
          !entry.message?.includes("hit a conflict") &&
          !entry.message?.includes(" deferred: ")
        ) {
          actions.push({
            at,
            decidedAt: decided?.kind === entry.action ? decided.at : at,
            ...(entry.votersConfirmedAt ? { confirmedAt: Date.parse(entry.votersConfirmedAt) } : {}),
            kind: entry.action,
            message: entry.message ?? "",
            quorum: quorum.label,
          });
          decided = undefined;
        }
      }
    }
    return actions.sort((a, b) => a.at - b.at);
  }

  /** Quorum process starts and leadership gains, from their logs: the next action may follow either. */
  private quorumStarts(): WorldEvent[] {
    const events: WorldEvent[] = [];
    for (const quorum of this.stack.quorums) {
      if (!existsSync(quorum.logFile)) continue;
      for (const line of readFileSync(quorum.logFile, "utf8").split("\n")) {
        const kind = line.includes("quorum controller starting")
          ? "quorum-started"
          : line.includes("leader election: became leader")
            ? "became-leader"
            : undefined;
        if (!kind || !line.startsWith("{")) continue;
        try {
          events.push({
            at: Date.parse((JSON.parse(line) as { timestamp: string }).timestamp),
            kind,
            subject: quorum.label,
          });
        } catch {
          // A torn last line of a killed process.
        }
      }
    }
    return events;
  }

  /** Provider events that can enable a controller step (a member started, a Machine's processes stopped...). */
  providerWorldEvents(): WorldEvent[] {
    const enabling = new Set([
      "etcd-started",
      "etcd-exited",
      "etcd-restarted",
      "stopped",
      "infrastructure-deleted",
      "provisioned",
    ]);
    return this.stack
      .providerEvents()
      .filter((event) => event.namespace === this.namespace && enabling.has(event.kind))
      .map((event) => ({ at: event.at, kind: event.kind, subject: event.machine ?? event.cluster }));
  }

  /**
   * Controller-added latency of each step: from the last observable change of the world before the step was decided
   * (a user operation, a Machine or member change, a provider event, the previous action, a Quorum start or
   * leadership gain, the end of a designed wait such as a ghost's grace period) to the decision. Changes observed by
   * polling are seen up to 250 ms late, so this over- rather than under-estimates.
   */
  stepLatencies(): StepLatency[] {
    const actions = this.controllerActions();
    const world: WorldEvent[] = [
      ...this.userEvents,
      ...this.machineEvents,
      ...this.memberEvents(),
      ...this.providerWorldEvents(),
      ...this.quorumStarts(),
      ...actions.map((action) => ({ at: action.at, kind: `action ${action.kind}`, subject: action.quorum })),
    ].sort((a, b) => a.at - b.at);
    return actions.map((action) => {
      const before = world.filter((event) => event.at <= action.decidedAt).at(-1);
      return {
        kind: action.kind,
        at: action.at,
        latencyMs: before ? action.decidedAt - before.at : 0,
        after: before ? `${before.kind} ${before.subject}` : "start",
      };
    });
  }

  /**
   * Checks at the end of every scenario: no Machine's processes stopped while its member was still in etcd, the
   * running processes are exactly those of the current Machines; then stops the stack and checks no process is left.
   */
  async finish(expectedReplicas: number): Promise<string[]> {
    const leaks: string[] = [];
    const stopped = this.stack
      .providerEvents()
      .filter((event) => event.kind === "infrastructure-deleted" && event.namespace === this.namespace);
    const withMember = stopped.filter((event) => event.memberPresent === true);
    this.check(
      withMember.length === 0,
      `no Machine's processes stopped while its etcd member was still in the membership (${stopped.length} Machines stopped${withMember.length ? `; violated by ${withMember.map((event) => event.machine).join(", ")}` : ""})`,
    );
    const processMachines = await this.stack.processMachines(this.namespace);
    const currentPids = new Set(
      processMachines
        .flatMap((machine) => [machine.status?.processes?.etcd?.pid, machine.status?.processes?.apiServer?.pid])
        .filter((pid): pid is number => pid !== undefined),
    );
    const alive = this.stack.providerPids().filter((pid) => isProcessAlive(pid));
    const stray = alive.filter((pid) => !currentPids.has(pid));
    if (stray.length > 0) leaks.push(`processes of deleted Machines still running: ${stray.join(", ")}`);
    if (currentPids.size !== 2 * expectedReplicas)
      leaks.push(
        `${currentPids.size} Machine processes run for ${expectedReplicas} Machines (expected ${2 * expectedReplicas})`,
      );
    const members = (await this.controlPlane()).status?.etcd?.members ?? [];
    const unowned = members.filter((member) => member.machine === undefined);
    if (unowned.length > 0)
      leaks.push(`etcd members without a Machine: ${unowned.map((member) => member.name || member.id).join(", ")}`);
    await this.stopObservers();
    await this.stack.stop();
    await sleep(500);
    const leftover = this.stack.leakedPids();
    if (leftover.length > 0) leaks.push(`processes alive after the stack stopped: ${leftover.join(", ")}`);
    const underDir = processesUnder(this.stack.dir);
    if (underDir.length > 0) leaks.push(`processes still using ${this.stack.dir}: ${underDir.join(", ")}`);
    return leaks;
  }

  async stopObservers(): Promise<void> {
    this.recorderStopped = true;
    await this.recorder;
    await this.traffic?.stop();
    await this.monitor?.stop();
  }
}

/** PIDs of live processes whose command line mentions `dir` (data dirs, certificates, logs of the stack). */
function processesUnder(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (cmdline.includes(dir)) pids.push(Number(entry));
    } catch {
      // The process exited meanwhile.
    }
  }
  return pids;
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index];
}
