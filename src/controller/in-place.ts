// Carries spec.machineTemplate's in-place fields (metadata, deletion timeouts, readiness gates, taints) to the
// existing Machines without a rollout, as the CAPI v1beta2 contract asks; the decision is src/core/in-place.ts. Each Machine's infrastructure
// and bootstrap objects are patched first and the Machine last: the Machine's record of the template's keys is
// written only once its clones have them, so a crash in between is finished by the next reconcile.
import type { Cluster, Machine } from "../api/capi.ts";
import { CAPI_API_VERSION, PAUSED_ANNOTATION } from "../api/constants.ts";
import type { QuorumControlPlane } from "../api/types.ts";
import { inPlaceUpdates } from "../core/in-place.ts";
import { isConflict, type ManagementApi } from "../ports/index.ts";
import { deletionTimeouts, machineTemplateMetadata } from "./machine-factory.ts";
import type { Problem } from "./status.ts";

export interface InPlaceResult {
  /** "cp-abc12-0: label tier=gold, spec.deletion.nodeDrainTimeoutSeconds 60", one per Machine updated. */
  updated: string[];
  problem?: Problem;
}

/**
 * Updates the Machines (not those being deleted) whose template metadata or deletion timeouts differ from the spec.
 * Not for a paused control plane or Cluster: pausing stops every write to the Machines. A failure does not stop the
 * reconcile: it is returned for status and tried again on the next one.
 */
export async function keepMachinesInPlace(
  controlPlane: QuorumControlPlane,
  cluster: Cluster,
  machines: readonly Machine[],
  management: ManagementApi,
  hashes: { templateHash: string; legacyTemplateHash: string },
): Promise<InPlaceResult> {
  if (cluster.spec?.paused === true || controlPlane.metadata.annotations?.[PAUSED_ANNOTATION] !== undefined)
    return { updated: [] };
  const namespace = controlPlane.metadata.namespace ?? "default";
  const { readinessGates, taints } = controlPlane.spec.machineTemplate.spec;
  const updates = inPlaceUpdates(machines, {
    ...machineTemplateMetadata(controlPlane),
    deletion: deletionTimeouts(controlPlane),
    ...(readinessGates ? { readinessGates } : {}),
    ...(taints ? { taints } : {}),
    ...hashes,
  });
  const updated: string[] = [];
  for (const update of updates) {
    const machine = machines.find((candidate) => candidate.metadata.name === update.machine);
    if (!machine) continue;
    try {
      if (update.clones) {
        const clones = [machine.spec.infrastructureRef, machine.spec.bootstrap.configRef];
        for (const ref of clones) if (ref) await management.patchInPlace(ref, namespace, update.clones);
      }
      await management.patchInPlace(
        { apiVersion: CAPI_API_VERSION, kind: "Machine", name: update.machine },
        namespace,
        update.machinePatch,
        machine.metadata.resourceVersion,
      );
      updated.push(`${update.machine}: ${update.changes.join(", ") || "record of the template's keys"}`);
    } catch (error) {
      // The Machine changed since it was read: its watch event is on the way, and the next reconcile decides again.
      if (isConflict(error)) return { updated };
      const cause = error instanceof Error ? error.message : String(error);
      return {
        updated,
        problem: {
          reason: "InPlaceUpdateFailed",
          message: `could not update Machine ${namespace}/${update.machine} in place from spec.machineTemplate (${update.changes.join(", ")}): ${cause}`,
        },
      };
    }
  }
  return { updated };
}
