// What the step-latency benchmark knows about when things happened, from three independent observers:
//  - the API server's audit log (every write, exact server time): spec changes, Machines provisioned and gone;
//  - an etcd monitor polling the real members every `intervalMs`: learners started and caught up, leader moves;
//  - the controller's own log (text format, ms timestamps): when it decided each action ("next action: X") and
//    when the call returned (the result line) — the moment its own effect became observable.
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { createEtcdClusterClient } from "../../src/adapters/etcd/client.ts";
import type { EtcdClusterClient } from "../../src/adapters/etcd/types.ts";
import type { MachinePlayer } from "../../test/integration/controller/player.ts";
import { actionsOf, textLogEntries, type ActionRecord } from "../lib/controller-log.ts";

export type { ActionRecord };

export type WorldEventKind =
  | "spec-changed"
  | "machine-created"
  | "machine-provisioned"
  | "machine-deleting"
  | "machine-gone"
  | "learner-started"
  | "process-started"
  | "member-resumed"
  | "caught-up"
  | "promoted"
  | "leader-changed"
  | "member-removed"
  | "hook-released"
  | "etcd-window-open";

export interface WorldEvent {
  at: number;
  kind: WorldEventKind;
  subject: string;
  /** Which observer saw it. */
  source: "audit" | "etcd-monitor" | "controller-log" | "fault-injector";
}

/** How often the monitor looks for new etcd processes (a pid per Machine's member). */
const PROCESS_WATCH_MS = 20;

/**
 * Polls etcd and records transitions of the membership, with a reused client so a round is short. The per-call
 * deadline is short too: a member that is starting accepts connections before it answers, and a long deadline
 * would blind the monitor to a learner that starts and is promoted meanwhile.
 */
export class EtcdMonitor {
  readonly events: WorldEvent[] = [];
  readonly roundMs: number[] = [];
  private stopped = false;
  private loop: Promise<void> | undefined;
  private client: EtcdClusterClient | undefined;
  private clientEndpoints = "";
  private readonly known = new Map<string, { name: string; learner: boolean; started: boolean; caughtUp: boolean }>();
  /** The etcd process of each member, by member name: a new pid is a (re)start. */
  private readonly pids = new Map<string, number>();
  private processWatch: NodeJS.Timeout | undefined;
  private leaderId = "";

  constructor(
    private readonly player: MachinePlayer,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    // The members running now started before the measurement; only later starts are events.
    for (const member of this.player.etcd?.members ?? []) {
      const pid = member.pid();
      if (pid !== undefined) this.pids.set(member.name, pid);
    }
    this.processWatch = setInterval(() => this.watchProcesses(), PROCESS_WATCH_MS);
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.processWatch);
    await this.loop;
    await this.client?.close();
  }

  /**
   * A member's etcd process that is new since the last look, looked for every PROCESS_WATCH_MS whatever the etcd
   * rounds are waiting on: its peer connections, and so etcd's removal window, start after that. The etcd cluster
   * lists a member from its MemberAdd on, before its process is spawned, so a new learner is seen within
   * PROCESS_WATCH_MS of its spawn, as is a restart after a kill. (The player's Machine map lists a member only once
   * it is ready, which dated a new learner's window late: the one step over 1 s in the run of 2026-12-03 18:48 UTC.)
   * The monitor's own first answer from a member comes later still (a new member is dialled when the endpoints
   * change).
   */
  private watchProcesses(): void {
    for (const member of this.player.etcd?.members ?? []) {
      const pid = member.pid();
      if (pid === undefined || !member.isRunning() || this.pids.get(member.name) === pid) continue;
      this.pids.set(member.name, pid);
      this.events.push({ at: Date.now(), kind: "process-started", subject: member.name, source: "etcd-monitor" });
    }
  }

  private clientFor(endpoints: string[]): EtcdClusterClient | undefined {
    const etcd = this.player.etcd;
    if (!etcd || endpoints.length === 0) return undefined;
    const key = endpoints.join(",");
    if (this.client && key === this.clientEndpoints) return this.client;
    void this.client?.close();
    this.clientEndpoints = key;
    this.client = createEtcdClusterClient({
      endpoints,
      credentials: {
        caPem: etcd.credentials.caPem,
        certPem: etcd.credentials.certPem,
        keyPem: etcd.credentials.keyPem,
      },
      callDeadlineMs: 400,
      context: "bench etcd monitor",
    });
    return this.client;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const client = this.clientFor(this.player.liveEndpoints());
      if (client) {
        const started = Date.now();
        try {
          const members = await client.listMembers();
          const statuses = await client.memberStatuses(members);
          const at = Date.now();
          this.roundMs.push(at - started);
          const leader = statuses.find((status) => status.leader);
          const leaderIndex = leader?.raftIndex ?? Number.POSITIVE_INFINITY;
          for (const member of members) {
            const status = statuses.find((candidate) => candidate.memberId === member.id);
            const subject = member.name || member.peerURLs[0];
            const before = this.known.get(member.id) ?? {
              name: subject,
              learner: member.learner,
              started: false,
              caughtUp: false,
            };
            if (!before.started && status?.reachable) {
              before.started = true;
              if (member.learner) this.events.push({ at, kind: "learner-started", subject, source: "etcd-monitor" });
            }
            // etcd promotes a learner once it is in sync with the leader; an idle cluster's index barely moves.
            if (
              member.learner &&
              !before.caughtUp &&
              status?.reachable &&
              (status.raftAppliedIndex ?? -1) >= leaderIndex
            ) {
              before.caughtUp = true;
              this.events.push({ at, kind: "caught-up", subject, source: "etcd-monitor" });
            }
            if (before.learner && !member.learner)
              this.events.push({ at, kind: "promoted", subject, source: "etcd-monitor" });
            before.learner = member.learner;
            before.name = subject;
            this.known.set(member.id, before);
          }
          for (const [id, entry] of this.known) {
            if (!members.some((member) => member.id === id)) {
              this.events.push({ at, kind: "member-removed", subject: entry.name, source: "etcd-monitor" });
              this.known.delete(id);
            }
          }
          if (leader && leader.memberId !== this.leaderId) {
            if (this.leaderId)
              this.events.push({ at, kind: "leader-changed", subject: leader.memberId, source: "etcd-monitor" });
            this.leaderId = leader.memberId;
          }
        } catch {
          // No member answered this round (a member being replaced); the next round looks again.
        }
      }
      await sleep(this.intervalMs);
    }
  }
}

interface AuditEvent {
  stage: string;
  verb: string;
  user: { username: string };
  objectRef?: { resource?: string; subresource?: string; name?: string; namespace?: string };
  responseStatus?: { code?: number };
  stageTimestamp: string;
}

/** World events from the audit log: what the user (spec), the player (provisioning, teardown) and Quorum changed. */
export function auditWorldEvents(path: string, controllerUser: string): WorldEvent[] {
  const events: WorldEvent[] = [];
  const deleting = new Set<string>();
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (!line.trim()) continue;
    const event = JSON.parse(line) as AuditEvent;
    const code = event.responseStatus?.code ?? 0;
    if (event.stage !== "ResponseComplete" || code < 200 || code >= 300) continue;
    const at = Date.parse(event.stageTimestamp);
    const ref = event.objectRef ?? {};
    const subject = ref.name ?? "";
    const byController = event.user.username === controllerUser;
    if (ref.resource === "quorumcontrolplanes" && !ref.subresource && event.verb === "patch" && !byController)
      events.push({ at, kind: "spec-changed", subject, source: "audit" });
    if (ref.resource !== "machines") continue;
    if (event.verb === "create") events.push({ at, kind: "machine-created", subject, source: "audit" });
    if (event.verb === "delete") {
      deleting.add(subject);
      events.push({ at, kind: "machine-deleting", subject, source: "audit" });
    }
    if (ref.subresource === "status" && !byController)
      events.push({ at, kind: "machine-provisioned", subject, source: "audit" });
    // The player's last write to a deleting Machine drops its finalizer: the Machine is gone.
    if (!ref.subresource && event.verb === "patch" && !byController && deleting.has(subject))
      events.push({ at, kind: "machine-gone", subject, source: "audit" });
  }
  return events;
}

/** Actions from the controller's text log (bench/lib/controller-log.ts reads the lines). */
export function controllerActions(logText: string): ActionRecord[] {
  return actionsOf(textLogEntries(logText));
}

/** The effects of Quorum's own calls, observable the moment each call returned. */
export function actionEffects(actions: ActionRecord[]): WorldEvent[] {
  const effectOf: Record<string, WorldEventKind> = {
    PromoteLearner: "promoted",
    RemoveMember: "member-removed",
    RemoveGhost: "member-removed",
    ForwardLeadership: "leader-changed",
    DeleteMachine: "machine-deleting",
    ReleaseHook: "hook-released",
    CreateMachine: "machine-created",
  };
  return actions
    .filter((action) => !action.retry && action.completedAt !== undefined && effectOf[action.kind])
    .map((action) => ({
      at: action.completedAt as number,
      kind: effectOf[action.kind],
      subject: action.message,
      source: "controller-log" as const,
    }));
}

/**
 * etcd refuses a voter removal until the leader has had enough voters connected for its HealthInterval (5 s), so
 * a removal can become possible only that long after a member's etcd process started (or, paused, was resumed): its
 * peer connections are new then. One derived event per start or resume; dated from the process, not from the
 * monitor's first answer, so that the window errs early and a removal's latency errs long, never short.
 */
export function removalWindowEvents(events: WorldEvent[], healthIntervalMs: number): WorldEvent[] {
  return events
    .filter((event) => event.kind === "process-started" || event.kind === "member-resumed")
    .map((event) => ({
      at: event.at + healthIntervalMs,
      kind: "etcd-window-open" as const,
      subject: event.subject,
      source: event.source,
    }));
}

/** A learner's first answer against its etcd process start, both seen by the monitor. */
export interface FirstAnswer {
  member: string;
  processStartedAt: number;
  answeredAt: number;
  delayMs: number;
}

/**
 * How long each learner took from its process start to its first answer. etcd serves clients only once the member has
 * published its name through raft, and a joiner that gets the leader's snapshot can lose that first proposal and
 * answer only when it retries, 7 s later (etcd's request timeout); its peer connections were up all along.
 */
export function firstAnswers(events: WorldEvent[]): FirstAnswer[] {
  const answers: FirstAnswer[] = [];
  for (const answered of events.filter((event) => event.kind === "learner-started")) {
    const started = events
      .filter(
        (event) => event.kind === "process-started" && event.subject === answered.subject && event.at <= answered.at,
      )
      .pop();
    if (!started) continue;
    answers.push({
      member: answered.subject,
      processStartedAt: started.at,
      answeredAt: answered.at,
      delayMs: answered.at - started.at,
    });
  }
  return answers;
}
