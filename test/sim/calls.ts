// Every call the real reconcile() makes through the world's ports passes this schedule's CallGate first: the gate
// judges the call by its effect on the world before it takes effect (invariants.ts), records it for the trace, and
// plays the crash: after call N the controller process is gone, so that call and every later one throws SimCrash.
import type { Snapshot } from "../../src/core/snapshot.ts";
import { checkCall, type Finding } from "./invariants.ts";
import type { World } from "./world.ts";

/** What one port call does to the world; the invariants judge calls by their effect. */
export type Effect =
  | { kind: "none" }
  | { kind: "create-machine"; failureDomain?: string }
  | { kind: "promote-learner"; memberId: string }
  | { kind: "move-leader"; toMemberId: string }
  | { kind: "remove-member"; memberId: string }
  | { kind: "delete-machine"; machine: string }
  | { kind: "set-hook"; machine: string; hook: boolean }
  /** The controller records that it remediates this Machine (its remediation memory), right before deleting it. */
  | { kind: "record-remediation"; machine: string }
  /** kubeadm worlds: the kubeadm-config ClusterConfiguration replaced with this document. */
  | { kind: "write-kubeadm-config"; document: string }
  /** kubeadm worlds: kube-proxy's DaemonSet moved to this image. */
  | { kind: "move-kube-proxy"; image: string }
  /** kubeadm worlds: a ClusterRoleBinding created. */
  | { kind: "create-binding"; name: string }
  | { kind: "write-status" };

export interface Call {
  name: string;
  effect: Effect;
}

/**
 * Where a reconcile crashes: after `after` port calls counted from its start (while it observes) or from the moment
 * the planner decided (while it acts and writes status). Counting the two apart keeps crashes inside actions as
 * frequent as crashes while reading, though reading makes most of the calls.
 */
export interface CrashPoint {
  phase: "observe" | "act";
  after: number;
}

/** The controller process died: thrown by every port call from the crash on. */
export class SimCrash extends Error {
  constructor() {
    super("simulated crash: the controller process is gone");
    this.name = "SimCrash";
  }
}

/** A call broke a rule: it did not take effect, and the schedule ends with the finding. */
export class SimViolation extends Error {
  constructor(readonly finding: Finding) {
    super(finding.message);
    this.name = "SimViolation";
  }
}

/**
 * etcd refused a call for good (not one of the "not yet" refusals, which the world raises as the port's
 * EtcdRetryLaterError, as the real adapter does); carries etcd's own words like the adapter's EtcdOperationError.
 */
export class SimEtcdError extends Error {
  readonly reason = "EtcdOperationFailed";
  constructor(
    operation: string,
    readonly etcdMessage: string,
  ) {
    super(`etcd ${operation} failed: ${etcdMessage}`);
    this.name = "SimEtcdError";
  }
}

/** An API server answer with its HTTP code (409 conflict, 404 not found), or an endpoint that did not answer. */
export class SimApiError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly reason = "ApiError",
  ) {
    super(message);
    this.name = "SimApiError";
  }
}

export class CallGate {
  /** One entry per call, in order, for the trace. */
  readonly log: string[] = [];
  crashed = false;
  finding?: Finding;
  /** What the planner decided on, once it has. */
  snapshot?: Snapshot;
  private phase: CrashPoint["phase"] = "observe";
  private callsInPhase = 0;

  constructor(
    private readonly world: World,
    private readonly crash?: CrashPoint,
    /** Set for the second QuorumControlPlane of a secondOwner world: every call that changes the world breaks rule 7. */
    private readonly notOwner?: string,
  ) {}

  /** The planner has decided: from here on calls count towards an "act" crash point. */
  planned(snapshot: Snapshot): void {
    this.snapshot = snapshot;
    this.phase = "act";
    this.callsInPhase = 0;
  }

  /** Called by a port before it acts; throws when the process is gone or the call breaks a rule. */
  call(name: string, effect: Effect): void {
    if (this.crashed || this.finding) throw new SimCrash();
    if (this.crash && this.crash.phase === this.phase && this.callsInPhase >= this.crash.after) {
      this.crashed = true;
      this.log.push("CRASH");
      throw new SimCrash();
    }
    this.callsInPhase++;
    if (this.notOwner !== undefined && effect.kind !== "none" && effect.kind !== "write-status") {
      const finding: Finding = {
        kind: "violation",
        rule: "7 one owner",
        message: `${this.notOwner}, which the Cluster does not name, made the call "${name}"`,
      };
      this.finding = finding;
      this.log.push(`${name}: BREAKS RULE 7`);
      throw new SimViolation(finding);
    }
    if (this.snapshot && effect.kind !== "none" && effect.kind !== "write-status") {
      const finding = checkCall(this.world, this.snapshot, { name, effect });
      if (finding) {
        this.finding = finding;
        this.log.push(`${name}: BREAKS RULE ${finding.rule}`);
        throw new SimViolation(finding);
      }
    }
    this.log.push(name);
  }

  /** The call in flight succeeded with this answer. */
  done<T>(value: T, outcome = "ok"): T {
    if (outcome !== "ok") this.log[this.log.length - 1] += `: ${outcome}`;
    return value;
  }

  /** The call in flight failed with this error (returned, for the port to throw). */
  fail<E extends Error>(error: E): E {
    // An ApiException's message runs over lines (code, message, body, headers): the trace keeps its first.
    this.log[this.log.length - 1] += `: ${error.message.split("\n")[0]}`;
    return error;
  }

  /** Something the world did in answer to a call (a boot fault decided for a new Machine). */
  note(text: string): void {
    this.log[this.log.length - 1] += ` (${text})`;
  }
}
