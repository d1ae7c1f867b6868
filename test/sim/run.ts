// One schedule: build the world from the seed, then each step let the world move, inject faults (while they
// last), run the real reconcile() of src/controller once against the world's ports (crashing after a random port
// call) and check the invariants. After faults stop, the control plane must reach the spec within a bound and
// never sit still short of it.
import type { Action } from "../../src/core/actions.ts";
import { assess } from "../../src/core/assess.ts";
import type { Decision } from "../../src/core/plan.ts";
import type { Snapshot } from "../../src/core/snapshot.ts";
import { reconcile, type ReconcilerDeps } from "../../src/controller/reconcile.ts";
import type { Logger } from "../../src/ports/index.ts";
import { CallGate, SimCrash, SimViolation, type CrashPoint } from "./calls.ts";
import { evolve } from "./evolve.ts";
import { bootFaultFor, endFaults, injectFault, kubeletOutage, racingOutage } from "./faults.ts";
import {
  followLostMachineFix,
  followNodelessMachineFix,
  followUnlabelledNodeFix,
  followUnmappedMemberFix,
} from "./operator.ts";
import {
  certificatesDueWithin,
  certificatesShortOfSpec,
  checkJoinHolds,
  checkLostMachineOffers,
  checkQuorumKept,
  converged,
  fingerprint,
  kubeadmShortOfSpec,
  machinesAtSpec,
  staticPodsShortOfSpec,
  type Finding,
} from "./invariants.ts";
import type { Prng } from "./prng.ts";
import { SimPorts } from "./ports.ts";
import { createScenario } from "./scenario.ts";
import { describeAction, describeSetup, describeWorld } from "./trace.ts";
import {
  certificatesDue,
  hasQuorum,
  NAMESPACE,
  STEP_MS,
  trackMemberOutages,
  trackNodeReadiness,
  type World,
} from "./world.ts";

/** What the simulator needs of a planner: the real plan(), or a variant built with makePlanner(parts). */
export type Plan = (snapshot: Snapshot) => { action: Action; assessment?: Decision["assessment"] };
/** Builds a schedule's planner; seed-bug variants that pick at random draw from the schedule's own stream. */
export type PlannerFactory = (rng: Prng) => Plan;

/** Probability that a step with faults on also stops a kubelet (faults.ts, kubeletOutage). */
const KUBELET_OUTAGE_RATE = 0.03;
/** After faults stop, the spec must be reached within this many steps... */
export const CONVERGENCE_BOUND = 300;
/** ...and the world must never stand still this long short of it (longer than any timer in SIM_TIMERS). */
export const STUCK_BOUND = 60;
/**
 * Once the Machines are at the spec, every Machine's static pods must run spec.version within this many steps (rule
 * 10): nothing changes them after a join, so a shortfall here is a rollout that "finished" without upgrading what
 * kubeadm runs. (kubeadm-config, kube-proxy and the bindings are part of the spec: rules 4 and 5 judge them.)
 */
const KUBEADM_BOUND = 10;
/** Once converged, the planner must leave the control plane alone for this many reconciles. */
const SETTLE_STEPS = 3;
/**
 * A schedule at the spec does not end while a Machine's certificates fall within spec.rollout.before.
 * certificatesExpiryDays in this many steps: the rollout they need is part of the schedule (scenario.ts places every
 * such moment no later than 60 steps after faults stop).
 */
const CERTIFICATES_LOOKAHEAD = 100;

const quiet: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

export interface ScheduleResult {
  seed: number;
  outcome: "ok" | "violation" | "stuck";
  finding?: Finding;
  steps: number;
  /** One line per step, only when tracing. */
  trace: string[];
}

export async function runSchedule(
  seed: number,
  planner: PlannerFactory,
  options: { trace?: boolean } = {},
): Promise<ScheduleResult> {
  const { world, profile, rngs } = createScenario(seed);
  const plan = planner(rngs.planner);
  const ports = new SimPorts(world, { bootFault: () => bootFaultFor(world, rngs.faults, profile) });
  // The same controller also reconciles the second QuorumControlPlane of a secondOwner world.
  const copyPorts = world.copy ? new SimPorts(world, { bootFault: () => undefined, asCopy: true }) : undefined;
  const trace: string[] = [];
  if (options.trace) trace.push(describeSetup(seed, world));
  const finish = (outcome: ScheduleResult["outcome"], finding?: Finding): ScheduleResult => {
    if (options.trace && finding)
      trace.push(`${finding.kind.toUpperCase()} [${finding.rule}] at step ${world.step}: ${finding.message}`);
    return { seed, outcome, ...(finding ? { finding } : {}), steps: world.step, trace };
  };

  let lastFingerprint = "";
  let lastChange = world.faultsUntil;
  let convergedSince: number | undefined;
  /** Since when the Machines are at the spec while some of their static pods are not (rule 10, kubeadm worlds). */
  let machinesAtSpecSince: number | undefined;
  /** A crashed controller comes back after a lease handover: no reconcile until this step. */
  let controllerBackAt = 0;
  for (;;) {
    evolve(world);
    // Time alone takes a world off the spec when a Machine's certificates fall within the notice: the planner is then
    // right to act, and the spec must be reached again (and is counted as changing, not as standing still).
    if (convergedSince !== undefined && world.machines.some((machine) => certificatesDue(world, machine))) {
      convergedSince = undefined;
      lastChange = world.step;
    }
    const faulting = world.step < world.faultsUntil;
    const events: string[] = [];
    if (world.step === world.faultsUntil) events.push(endFaults(world));
    if (faulting) {
      const fault = injectFault(world, rngs.faults, profile);
      if (fault) events.push(fault);
      const kubelet = rngs.kubelet.chance(KUBELET_OUTAGE_RATE) ? kubeletOutage(world, rngs.kubelet) : undefined;
      if (kubelet) events.push(kubelet);
    }
    const operator = followUnmappedMemberFix(world);
    if (operator) events.push(operator);
    const deleted = world.traits.noNodeReadyCheck ? followLostMachineFix(world) : undefined;
    if (deleted) events.push(deleted);
    const halfJoined = followUnlabelledNodeFix(world);
    if (halfJoined) events.push(halfJoined);
    const nodeless = followNodelessMachineFix(world);
    if (nodeless) events.push(nodeless);
    trackNodeReadiness(world);
    trackMemberOutages(world);

    if (world.step < controllerBackAt) {
      if (options.trace)
        trace.push(
          `${events.length > 0 ? ` ! ${events.join("; ")}\n` : ""}#${world.step} controller down (restarting)\n    world: ${describeWorld(world)}`,
        );
      continue;
    }
    // While faults are on, the Machine informer sometimes lags one reconcile behind.
    ports.lagging = faulting && ports.canLag && rngs.controller.chance(profile.staleCacheRate);
    const crash = faulting && rngs.controller.chance(profile.crashRate) ? crashPoint(rngs.controller) : undefined;
    const step = await reconcileOnce(world, ports, plan, crash, (planned) =>
      planned.kind === "RemoveMember" || planned.kind === "RemoveGhost"
        ? racingOutage(world, rngs.race, planned.memberId)
        : undefined,
    );
    if (step.raced) events.push(step.raced);
    if (step.plannerError !== undefined) {
      const error = step.plannerError;
      return finish("violation", {
        kind: "violation",
        rule: "planner throws",
        message: error instanceof Error ? (error.stack ?? error.message) : String(error),
      });
    }
    const action = step.action;
    if (step.crashed) {
      const lost = rngs.controller.chance(profile.memoryLossRate);
      if (lost) {
        delete world.status;
        // With status gone every connection age restarts at the next sighting, outages included.
        for (const member of world.members) if (!member.up) member.outageSeen = true;
      }
      controllerBackAt = world.step + 1 + rngs.controller.int(0, 2);
      ports.restart();
      if (lost) step.calls.push("(status lost)");
    }
    if (options.trace) trace.push(stepLine(world.step, events, action, step.calls, world));
    if (step.finding) return finish("violation", step.finding);
    if (copyPorts && !step.crashed) {
      const copy = await reconcileOnce(world, copyPorts, plan, undefined);
      if (options.trace)
        trace.push(
          `    ${copyPorts.name}: ${copy.action ? describeAction(copy.action) : "(no plan)"}\n    ${copyPorts.name} calls: ${copy.calls.join(", ") || "-"}`,
        );
      if (copy.finding) return finish("violation", copy.finding);
      if (copy.action && copy.action.kind !== "Wait") {
        return finish("violation", {
          kind: "violation",
          rule: "7 one owner",
          message: `${copyPorts.name}, which the Cluster does not name, chose ${describeAction(copy.action)}`,
        });
      }
      if (copy.unexpected !== undefined || copy.plannerError !== undefined) {
        const error = copy.unexpected ?? copy.plannerError;
        return finish("violation", {
          kind: "violation",
          rule: "reconcile throws",
          message: `${copyPorts.name}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
        });
      }
    }
    if (step.unexpected !== undefined) {
      const error = step.unexpected;
      return finish("violation", {
        kind: "violation",
        rule: "reconcile throws",
        message: error instanceof Error ? (error.stack ?? error.message) : String(error),
      });
    }
    if (convergedSince !== undefined && action && action.kind !== "Wait") {
      return finish("violation", {
        kind: "violation",
        rule: "4 converges",
        message: `the control plane was at the spec, yet the planner chose ${describeAction(action)}`,
      });
    }
    const lostQuorum = checkQuorumKept(world, step.hadQuorum, action ? describeAction(action) : "a reconcile");
    if (lostQuorum) return finish("violation", lostQuorum);
    // Rules 11 and 13 read the status this reconcile wrote; a crashed one may have left an older one.
    const offered = step.crashed
      ? undefined
      : (checkLostMachineOffers(world) ?? (ports.lagging ? undefined : checkJoinHolds(world)));
    if (offered) return finish("violation", offered);

    if (faulting) continue;
    if (converged(world)) {
      convergedSince ??= world.step;
      if (world.step - convergedSince >= SETTLE_STEPS && !certificatesDueWithin(world, CERTIFICATES_LOOKAHEAD))
        return finish("ok");
      continue;
    }
    convergedSince = undefined;
    const shortfall = machinesAtSpec(world) ? staticPodsShortOfSpec(world) : undefined;
    if (shortfall === undefined) machinesAtSpecSince = undefined;
    else if (world.step - (machinesAtSpecSince ??= world.step) >= KUBEADM_BOUND) {
      return finish("violation", {
        kind: "violation",
        rule: "10 an upgrade upgrades",
        message: `the Machines are at the spec ${KUBEADM_BOUND} steps, but ${shortfall}`,
      });
    }
    const current = fingerprint(world);
    if (current !== lastFingerprint) {
      lastFingerprint = current;
      lastChange = world.step;
    }
    const kubeadm = kubeadmShortOfSpec(world);
    const certificates = certificatesShortOfSpec(world);
    const last = `${action ? describeAction(action) : "nothing (no plan)"}${kubeadm ? `; kubeadm: ${kubeadm}` : ""}${certificates ? `; certificates: ${certificates}` : ""}`;
    if (world.step - lastChange >= STUCK_BOUND) {
      return finish("stuck", {
        kind: "stuck",
        rule: "5 never stuck",
        message: `nothing changed for ${STUCK_BOUND} steps short of the spec; the planner keeps choosing ${last}`,
      });
    }
    if (world.step - world.faultsUntil >= CONVERGENCE_BOUND) {
      return finish("violation", {
        kind: "violation",
        rule: "4 converges",
        message: `not at the spec ${CONVERGENCE_BOUND} steps after faults stopped, though it keeps acting (last: ${last})`,
      });
    }
  }
}

/** A crash falls after one of the first few calls of reading, or of acting (including before the first). */
function crashPoint(rng: Prng): CrashPoint {
  return rng.chance(0.25) ? { phase: "observe", after: rng.int(1, 8) } : { phase: "act", after: rng.int(0, 4) };
}

interface ReconcileStep {
  /** What the planner chose, when the reconcile got that far. */
  action?: Action;
  calls: string[];
  crashed: boolean;
  hadQuorum: boolean;
  finding?: Finding;
  plannerError?: unknown;
  /** An error reconcile() let out that is neither its own ReconcileError nor the simulated crash. */
  unexpected?: unknown;
  /** What changed in the world between the plan and the action. */
  raced?: string;
}

/** One real reconcile() against the world's ports, through a fresh CallGate. */
async function reconcileOnce(
  world: World,
  ports: SimPorts,
  plan: Plan,
  crash: CrashPoint | undefined,
  /** Changes the world between the plan and the action (the racingOutage trait); returns what it did. */
  afterPlan?: (action: Action) => string | undefined,
): Promise<ReconcileStep> {
  const gate = new CallGate(
    world,
    crash,
    ports.name === world.controlPlaneName ? undefined : `QuorumControlPlane ${NAMESPACE}/${ports.name}`,
  );
  ports.gate = gate;
  const result: ReconcileStep = { calls: gate.log, crashed: false, hadQuorum: hasQuorum(world) };
  const deps: ReconcilerDeps = {
    management: ports.management,
    workload: ports.workload,
    planner: (snapshot) => {
      let decision: ReturnType<Plan>;
      try {
        decision = plan(snapshot);
      } catch (error) {
        result.plannerError = error;
        throw error;
      }
      result.action = decision.action;
      gate.planned(snapshot);
      const raced = afterPlan?.(decision.action);
      if (raced) result.raced = raced;
      // A toy planner may return only its action; status is then built from the plain assessment.
      return { action: decision.action, assessment: decision.assessment ?? assess(snapshot, { kind: "Observe" }) };
    },
    clock: () => world.now,
    log: quiet,
    crash: { afterAction: () => {} },
    etcdPollIntervalMs: STEP_MS,
  };
  try {
    await reconcile(NAMESPACE, ports.name, deps);
  } catch (error) {
    if (!gate.crashed && !gate.finding && result.plannerError === undefined && !isExpected(error))
      result.unexpected = error;
  }
  result.crashed = gate.crashed;
  if (gate.finding) result.finding = gate.finding;
  return result;
}

/** reconcile() reports failed calls as its ReconcileError (the work queue backs off and retries). */
function isExpected(error: unknown): boolean {
  return (
    error instanceof Error &&
    (error.name === "ReconcileError" || error instanceof SimCrash || error instanceof SimViolation)
  );
}

function stepLine(step: number, events: string[], action: Action | undefined, calls: string[], world: World): string {
  const faults = events.length > 0 ? ` ! ${events.join("; ")}\n` : "";
  return `${faults}#${step} t+${(step * STEP_MS) / 1000}s ${action ? describeAction(action) : "(no plan)"}\n    calls: ${calls.join(", ") || "-"}\n    world: ${describeWorld(world)}`;
}
