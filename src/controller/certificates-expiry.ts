// spec.rollout.before.certificatesExpiryDays: which Machines' API server serving certificates to read (through the
// workload port, which dials only kubeadm Machines), and recording what was read on the Machine. The planner sees the
// expiry in the Snapshot (MachineView.certificatesExpiry) and rolls out Machines whose certificates expire soon.
//
// Recorded on the Machine, in CAPI's own annotation machine.cluster.x-k8s.io/certificates-expiry, where KCP records
// it on the KubeadmConfig: the Machine is in Quorum's watch cache, so a restarted controller reads the expiry from
// there without a dial or another API read (the KubeadmConfig is not watched), and CAPI's Machine controller reads
// the same annotation from the Machine first (before the bootstrap config) into Machine.status.certificatesExpiryDate.
// A value already there (Quorum's, or a user's) is read, never dialled for nor overwritten.
import type { Machine } from "../api/capi.ts";
import { CAPI_API_VERSION, CERTIFICATES_EXPIRY_ANNOTATION } from "../api/constants.ts";
import type { QuorumControlPlane } from "../api/types.ts";
import type { Snapshot } from "../core/snapshot.ts";
import type { ManagementApi, ServingMachine } from "../ports/index.ts";

/**
 * The Machines whose expiry is to be read: only while the setting is set, not being deleted, without the annotation,
 * and with a Node (the API server has started: KCP waits for the nodeRef too) and an address to dial.
 */
export function machinesToRead(
  controlPlane: QuorumControlPlane,
  machines: readonly Machine[],
  addressesOf: (machine: Machine) => string[],
): ServingMachine[] {
  if (controlPlane.spec.rollout?.before?.certificatesExpiryDays === undefined) return [];
  if (controlPlane.metadata.deletionTimestamp) return [];
  return machines.flatMap((machine) => {
    const address = addressesOf(machine)[0];
    if (
      machine.metadata.deletionTimestamp ||
      machine.metadata.annotations?.[CERTIFICATES_EXPIRY_ANNOTATION] !== undefined ||
      !machine.status?.nodeRef?.name ||
      address === undefined
    )
      return [];
    return [{ name: machine.metadata.name, uid: machine.metadata.uid ?? "", address }];
  });
}

/**
 * Records each expiry read this reconcile on its Machine, at the resourceVersion it was read (a Machine changed since
 * is a conflict; the next reconcile tries again, reading the expiry from the adapter's cache meanwhile). Run only in
 * reconciles with no action under way, like the in-place updates: the patch moves the Machine's resourceVersion, which
 * an action's preconditions were taken from. Never for a paused or deleting control plane. Once recorded, nothing is
 * read or written again (an idle reconcile writes nothing).
 */
export async function recordExpiries(
  controlPlane: QuorumControlPlane,
  machines: readonly Machine[],
  snapshot: Snapshot,
  expiries: Record<string, number>,
  management: ManagementApi,
): Promise<{ recorded: string[]; problem?: string }> {
  const recorded: string[] = [];
  if (controlPlane.metadata.deletionTimestamp || snapshot.cluster.paused || snapshot.controlPlane.paused)
    return { recorded };
  const namespace = controlPlane.metadata.namespace ?? "default";
  for (const machine of machines) {
    const expiry = expiries[machine.metadata.name];
    if (expiry === undefined || machine.metadata.annotations?.[CERTIFICATES_EXPIRY_ANNOTATION] !== undefined) continue;
    // RFC 3339 in whole seconds, as KCP writes it (time.RFC3339) and CAPI's Machine controller parses it.
    const value = new Date(Math.floor(expiry / 1000) * 1000).toISOString().replace(".000Z", "Z");
    try {
      await management.patchAnnotations(
        CAPI_API_VERSION,
        "Machine",
        namespace,
        machine.metadata.name,
        { [CERTIFICATES_EXPIRY_ANNOTATION]: value },
        machine.metadata.resourceVersion,
      );
    } catch (error) {
      const cause = error instanceof Error ? error.message : String(error);
      return {
        recorded,
        problem: `could not record the certificates expiry ${value} on Machine ${namespace}/${machine.metadata.name} (the next reconcile tries again): ${cause}`,
      };
    }
    recorded.push(`Machine ${machine.metadata.name}: certificates expire ${value}`);
  }
  return { recorded };
}
