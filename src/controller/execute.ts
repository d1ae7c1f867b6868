// Carries out the one Action the planner chose. Every branch is idempotent, because a crash can come between any
// two calls and the next reconcile re-derives the same Action from the sources of truth: a create that finds its
// object counts as done, removing a member that is gone counts as done, deleting a Machine that is gone too.
import type { Machine } from "../api/capi.ts";
import {
  API_VERSION,
  CAPI_API_VERSION,
  KIND,
  LAST_REMEDIATION_ANNOTATION,
  MEMBER_REMOVED_ANNOTATION,
  PRE_TERMINATE_HOOK,
} from "../api/constants.ts";
import type { QuorumControlPlane } from "../api/types.ts";
import type { Action } from "../core/actions.ts";
import type { Snapshot } from "../core/snapshot.ts";
import { unsupportedBootstrapTemplate } from "../core/template-support.ts";
import { buildMachineObjects, nextMachineName } from "./machine-factory.ts";
import { writtenRemediation } from "./remediation-record.ts";
import { isNotFound, type EtcdClusterClient, type ManagementApi } from "../ports/index.ts";
import { confirmVotersStillHealthy } from "./preflight.ts";

export interface ExecutionContext {
  controlPlane: QuorumControlPlane;
  clusterName: string;
  machines: Machine[];
  snapshot: Snapshot;
  management: ManagementApi;
  /** Opened lazily: only actions on etcd need it. */
  etcd: () => Promise<EtcdClusterClient>;
  /** Carries out one of the bootstrap flavour's workload steps (WorkloadAccess.prepareWorkload); returns what changed. */
  prepareWorkload: (step: string) => Promise<string>;
  clock: () => number;
}

export interface ExecutionResult {
  /** What happened, for the Event and the log ("created Machine cp-1a2b3-0 in fd-a"). */
  message: string;
  /** Status fields the action itself must record (the remediation history). */
  statusUpdate?: Record<string, unknown>;
  /** The call was refused for now (a learner etcd finds not caught up yet): look again after this long. */
  retryAfterMs?: number;
  /** Nothing was done: what the plan rested on changed (message says what); the next reconcile re-plans. */
  deferred?: boolean;
  /** Facts for the log line (e.g. when the voters were last confirmed healthy before a removal). */
  logMeta?: Record<string, unknown>;
}

/** After a pre-flight found a voter gone, look again soon: the next plan sees it. */
const PREFLIGHT_RETRY_MS = 250;

/** etcd compares a learner with the leader itself; when it disagrees with our reading, ask again shortly. */
const PROMOTE_RETRY_MS = 250;

export async function execute(action: Action, context: ExecutionContext): Promise<ExecutionResult> {
  const namespace = context.controlPlane.metadata.namespace ?? "default";
  switch (action.kind) {
    case "Wait":
      return { message: action.reason };
    case "CreateMachine":
      return { message: await createMachine(action, context) };
    case "PromoteLearner": {
      const result = await (await context.etcd()).promoteLearner(action.memberId);
      return result.promoted
        ? { message: `promoted learner ${action.memberName} to voter` }
        : { message: `learner ${action.memberName} is not caught up yet; will retry`, retryAfterMs: PROMOTE_RETRY_MS };
    }
    case "ForwardLeadership":
      await (await context.etcd()).moveLeader(action.toMemberId);
      return { message: `moved etcd leadership to ${action.toMemberName}` };
    case "RemoveMember":
    case "RemoveGhost": {
      const etcd = await context.etcd();
      const { lost, confirmedAt } = await confirmVotersStillHealthy(
        etcd,
        context.snapshot,
        action.memberId,
        context.clock,
      );
      if (lost.length > 0)
        return {
          deferred: true,
          retryAfterMs: PREFLIGHT_RETRY_MS,
          message: `not removing etcd member ${action.memberName}: voter${lost.length === 1 ? "" : "s"} ${lost.join(", ")} stopped answering since the plan`,
        };
      if (action.kind === "RemoveMember" && action.machine)
        await recordRemoval(action.machine, action.memberId, namespace, context);
      const { removed } = await etcd.removeMember(action.memberId);
      return {
        message: `${removed ? "removed" : "found already removed"} etcd member ${action.memberName} (${action.memberId})`,
        logMeta: { votersConfirmedAt: new Date(confirmedAt).toISOString() },
      };
    }
    case "PrepareWorkload":
      return { message: await context.prepareWorkload(action.step) };
    case "DeleteMachine":
      await context.management.deleteMachine(namespace, action.machine);
      return { message: `deleted Machine ${action.machine}` };
    case "Remediate": {
      // The remediation is recorded before the Machine is deleted, never after: a crash in between must not lose it
      // (the planner then finds it recorded for this very Machine and lets it through again, with the same record).
      const { remediation } = action;
      const lastRemediation = writtenRemediation(remediation);
      await context.management.patchAnnotations(API_VERSION, KIND, namespace, context.controlPlane.metadata.name, {
        [LAST_REMEDIATION_ANNOTATION]: JSON.stringify(lastRemediation),
      });
      await context.management.deleteMachine(namespace, action.machine);
      return {
        message: `deleted unhealthy Machine ${action.machine} to replace it (remediation retry ${remediation.retryCount})`,
        statusUpdate: { lastRemediation },
      };
    }
    case "ReleaseHook":
    case "AddHook": {
      const machine = context.machines.find((candidate) => candidate.metadata.name === action.machine);
      const value = action.kind === "AddHook" ? "" : null;
      await context.management.patchAnnotations(
        CAPI_API_VERSION,
        "Machine",
        namespace,
        action.machine,
        { [PRE_TERMINATE_HOOK]: value },
        machine?.metadata.resourceVersion,
      );
      return {
        message:
          action.kind === "AddHook"
            ? `added the pre-terminate hook to Machine ${action.machine}`
            : action.membersLeft && action.membersLeft.length > 0
              ? `released the pre-terminate hook of Machine ${action.machine}; its etcd member was not removed`
              : `released the pre-terminate hook of Machine ${action.machine}: its etcd member is gone`,
      };
    }
  }
}

/**
 * Writes on the Machine which member Quorum removes, before it does (MEMBER_REMOVED_ANNOTATION): a crash in between
 * leaves the record with the member still there, which changes nothing. A Machine already gone needs no record.
 */
async function recordRemoval(
  machineName: string,
  memberId: string,
  namespace: string,
  context: ExecutionContext,
): Promise<void> {
  const machine = context.machines.find((candidate) => candidate.metadata.name === machineName);
  if (!machine || machine.metadata.annotations?.[MEMBER_REMOVED_ANNOTATION] === memberId) return;
  try {
    await context.management.patchAnnotations(CAPI_API_VERSION, "Machine", namespace, machineName, {
      [MEMBER_REMOVED_ANNOTATION]: memberId,
    });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

/** A referenced template Quorum cannot create Machines from: only the user can fix it, and status says how. */
export class UnsupportedTemplateError extends Error {
  readonly reason = "UnsupportedTemplate";
}

async function createMachine(
  { failureDomain, remediationFor }: Extract<Action, { kind: "CreateMachine" }>,
  context: ExecutionContext,
): Promise<string> {
  const { controlPlane, management, snapshot } = context;
  const namespace = controlPlane.metadata.namespace ?? "default";
  const key = `QuorumControlPlane ${namespace}/${controlPlane.metadata.name}`;
  const template = controlPlane.spec.machineTemplate.spec;
  const [infrastructureTemplate, bootstrapConfigTemplate] = await Promise.all([
    management.getReferenced(
      template.infrastructureRef,
      namespace,
      `${key} spec.machineTemplate.spec.infrastructureRef`,
    ),
    management.getReferenced(
      template.bootstrapConfigTemplateRef,
      namespace,
      `${key} spec.machineTemplate.spec.bootstrapConfigTemplateRef`,
    ),
  ]);
  const unsupported = unsupportedBootstrapTemplate(bootstrapConfigTemplate);
  if (unsupported) throw new UnsupportedTemplateError(`${key}: ${unsupported}`);
  // Names still held by a Machine or an etcd member are taken: reusing a member's name would make a stale
  // member look like the new Machine's.
  const taken = new Set([
    ...snapshot.machines.map((machine) => machine.name),
    ...snapshot.etcd.members.map((member) => member.name),
  ]);
  const machineName = nextMachineName(
    controlPlane.metadata.name,
    snapshot.controlPlane.version,
    snapshot.controlPlane.templateHash,
    taken,
  );
  const objects = buildMachineObjects({
    controlPlane,
    clusterName: context.clusterName,
    machineName,
    ...(failureDomain ? { failureDomain } : {}),
    templateHash: snapshot.controlPlane.templateHash,
    ...(remediationFor ? { remediationFor } : {}),
    infrastructureTemplate,
    bootstrapConfigTemplate,
  });
  // Clones first, the Machine last: CAPI only acts on the Machine, and a Machine whose clones are missing
  // would fail instead of waiting.
  await management.createIfAbsent(objects.infrastructure);
  await management.createIfAbsent(objects.bootstrap);
  await management.createIfAbsent(objects.machine);
  return `created Machine ${machineName}${failureDomain ? ` in failure domain ${failureDomain}` : ""} at ${objects.machine.spec.version}${remediationFor ? ` to replace Machine ${remediationFor.machine}` : ""}`;
}
