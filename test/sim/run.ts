// One schedule: build the world from the seed, then each step let the world move, inject faults (while they
// last), reconcile once (observe -> plan -> execute, crashing between calls at random) and check the invariants.
// After faults stop, the control plane must reach the spec within a bound and never sit still short of it.
import type { Action } from "../../src/core/actions.ts";
import type { MachineView, Snapshot } from "../../src/core/snapshot.ts";
import { evolve } from "./evolve.ts";
import { callsFor, runCall } from "./execute.ts";
import { bootFaultFor, endFaults, injectFault } from "./faults.ts";
import { checkCall, checkQuorumKept, converged, fingerprint, type Finding } from "./invariants.ts";
import { observe } from "./observe.ts";
import type { Prng } from "./prng.ts";
import { createScenario } from "./scenario.ts";
import { describeAction, describeSetup, describeWorld } from "./trace.ts";
import { hasQuorum, STEP_MS, type World } from "./world.ts";

/** What the simulator needs of a planner: the real plan(), or a variant built with makePlanner(parts). */
export type Plan = (snapshot: Snapshot) => { action: Action };
/** Builds a schedule's planner; seed-bug variants that pick at random draw from the schedule's own stream. */
export type PlannerFactory = (rng: Prng) => Plan;

/** After faults stop, the spec must be reached within this many steps... */
export const CONVERGENCE_BOUND = 300;
/** ...and the world must never stand still this long short of it (longer than any timer in SIM_TIMERS). */
export const STUCK_BOUND = 60;
/** Once converged, the planner must leave the control plane alone for this many reconciles. */
const SETTLE_STEPS = 3;

export interface ScheduleResult {
  seed: number;
  outcome: "ok" | "violation" | "stuck";
  finding?: Finding;
  steps: number;
  /** One line per step, only when tracing. */
  trace: string[];
}

export function runSchedule(seed: number, planner: PlannerFactory, options: { trace?: boolean } = {}): ScheduleResult {
  const { world, profile, rngs } = createScenario(seed);
  const plan = planner(rngs.planner);
  const trace: string[] = [];
  if (options.trace) trace.push(describeSetup(seed, world));
  const finish = (outcome: ScheduleResult["outcome"], finding?: Finding): ScheduleResult => {
    if (options.trace && finding) trace.push(`${finding.kind.toUpperCase()} [${finding.rule}] at step ${world.step}: ${finding.message}`);
    return { seed, outcome, ...(finding ? { finding } : {}), steps: world.step, trace };
  };

  let lastFingerprint = "";
  let lastChange = world.faultsUntil;
  let convergedSince: number | undefined;
  let previousMachines: MachineView[] | undefined;
  /** A crashed controller comes back after a lease handover: no reconcile until this step. */
  let controllerBackAt = 0;
  for (;;) {
    evolve(world);
    const faulting = world.step < world.faultsUntil;
    const events: string[] = [];
    if (world.step === world.faultsUntil) events.push(endFaults(world));
    if (faulting) {
      const fault = injectFault(world, rngs.faults, profile);
      if (fault) events.push(fault);
    }

    if (world.step < controllerBackAt) {
      if (options.trace) trace.push(`${events.length > 0 ? ` ! ${events.join("; ")}\n` : ""}#${world.step} controller down (restarting)\n    world: ${describeWorld(world)}`);
      continue;
    }
    // While faults are on, the Machine informer sometimes lags one reconcile behind.
    const stale = faulting && previousMachines !== undefined && rngs.controller.chance(profile.staleCacheRate) ? previousMachines : undefined;
    const { snapshot, memory } = observe(world, stale);
    previousMachines = stale ? previousMachines : snapshot.machines;
    let action: Action;
    try {
      action = plan(snapshot).action;
    } catch (error) {
      return finish("violation", { kind: "violation", rule: "planner throws", message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    }
    if (convergedSince !== undefined && action.kind !== "Wait") {
      return finish("violation", { kind: "violation", rule: "4 converges", message: `the control plane was at the spec, yet the planner chose ${describeAction(action)}` });
    }

    const calls = callsFor(action);
    const crashAt = faulting && rngs.controller.chance(profile.crashRate) ? rngs.controller.int(0, calls.length - 1) : undefined;
    const bootFault = action.kind === "CreateMachine" ? bootFaultFor(world, rngs.faults, profile) : undefined;
    const hadQuorum = hasQuorum(world);
    const results: string[] = [];
    for (let index = 0; index < calls.length; index++) {
      if (index === crashAt) {
        const lost = rngs.controller.chance(profile.memoryLossRate);
        if (lost) world.memory = { members: new Map() };
        controllerBackAt = world.step + 1 + rngs.controller.int(0, 2);
        // A restarted controller lists everything afresh: its first reconcile sees no lagging cache.
        previousMachines = undefined;
        results.push(`CRASH${lost ? " (status memory lost)" : ""}`);
        break;
      }
      const finding = checkCall(world, snapshot, calls[index]);
      if (finding) {
        if (options.trace) trace.push(stepLine(world.step, events, action, results, world));
        return finish("violation", finding);
      }
      results.push(`${calls[index].name}: ${runCall(world, calls[index], { action, snapshot, memory, ...(bootFault ? { bootFault } : {}) })}`);
    }
    if (options.trace) trace.push(stepLine(world.step, events, action, results, world));
    const lostQuorum = checkQuorumKept(world, hadQuorum, describeAction(action));
    if (lostQuorum) return finish("violation", lostQuorum);

    if (faulting) continue;
    if (converged(world)) {
      convergedSince ??= world.step;
      if (world.step - convergedSince >= SETTLE_STEPS) return finish("ok");
      continue;
    }
    convergedSince = undefined;
    const current = fingerprint(world);
    if (current !== lastFingerprint) {
      lastFingerprint = current;
      lastChange = world.step;
    }
    if (world.step - lastChange >= STUCK_BOUND) {
      return finish("stuck", { kind: "stuck", rule: "5 never stuck", message: `nothing changed for ${STUCK_BOUND} steps short of the spec; the planner keeps choosing ${describeAction(action)}` });
    }
    if (world.step - world.faultsUntil >= CONVERGENCE_BOUND) {
      return finish("violation", { kind: "violation", rule: "4 converges", message: `not at the spec ${CONVERGENCE_BOUND} steps after faults stopped, though it keeps acting (last: ${describeAction(action)})` });
    }
  }
}

function stepLine(step: number, events: string[], action: Action, results: string[], world: World): string {
  const faults = events.length > 0 ? ` ! ${events.join("; ")}\n` : "";
  return `${faults}#${step} t+${(step * STEP_MS) / 1000}s ${describeAction(action)}\n    calls: ${results.join(", ") || "-"}\n    world: ${describeWorld(world)}`;
}
