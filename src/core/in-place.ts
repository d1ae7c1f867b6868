// What reaches existing Machines without a rollout (the CAPI v1beta2 control-plane contract): the labels and
// annotations of spec.machineTemplate.metadata, which also go to each Machine's infrastructure and bootstrap objects,
// and the deletion timeouts, readiness gates and taints of spec.machineTemplate.spec. Pure: given the Machines as read and what the spec asks for, the patches to send.
//
// A Machine records which keys came from the template (TEMPLATE_METADATA_ANNOTATION), so a key removed from the
// template is removed from the Machine, while labels and annotations others put on it are never touched.
import type { Machine } from "../api/capi.ts";
import type { MachineReadinessGate, MachineTaint } from "../api/types.ts";
import {
  LABEL_CLUSTER_NAME,
  LABEL_CONTROL_PLANE,
  LABEL_CONTROL_PLANE_NAME,
  PRE_TERMINATE_HOOK,
  REMEDIATION_FOR_ANNOTATION,
  TEMPLATE_HASH_ANNOTATION,
  TEMPLATE_METADATA_ANNOTATION,
} from "../api/constants.ts";

export type DeletionSeconds = NonNullable<Machine["spec"]["deletion"]>;

export interface InPlaceTarget {
  /** spec.machineTemplate.metadata. */
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** The deletion timeouts the spec sets; one it leaves unset stays as the Machine has it (CAPI may default it). */
  deletion: DeletionSeconds;
  /** The readiness gates and taints the spec sets; unset or empty leaves the Machine's as they are. */
  readinessGates?: MachineReadinessGate[];
  taints?: MachineTaint[];
  /** The template hash Machines made from the current spec carry. */
  templateHash: string;
  /**
   * The hash earlier releases recorded for the same spec (metadata included): such a Machine is up to date, and it
   * is given the current hash, so a metadata change after an upgrade of Quorum does not roll it out.
   */
  legacyTemplateHash: string;
}

/** A merge patch of labels and annotations: a string sets a key, null removes it. */
export interface MetadataPatch {
  labels?: Record<string, string | null>;
  annotations?: Record<string, string | null>;
}

export interface InPlaceUpdate {
  machine: string;
  /** For the Machine's infrastructure and bootstrap objects: the template's keys only. Absent when they need none. */
  clones?: MetadataPatch;
  /** For the Machine: the template's keys, the record of them and the hash, and the deletion timeouts. */
  machinePatch: MetadataPatch & {
    deletion?: DeletionSeconds;
    readinessGates?: MachineReadinessGate[];
    taints?: MachineTaint[];
  };
  /** What changes, for the log: "label tier=gold", "annotation note removed", "nodeDrainTimeoutSeconds 60". */
  changes: string[];
}

/** Keys Quorum sets itself: a template cannot change or remove them. */
const OWN_LABELS = new Set([LABEL_CLUSTER_NAME, LABEL_CONTROL_PLANE, LABEL_CONTROL_PLANE_NAME]);
const OWN_ANNOTATIONS = new Set([
  PRE_TERMINATE_HOOK,
  REMEDIATION_FOR_ANNOTATION,
  TEMPLATE_HASH_ANNOTATION,
  TEMPLATE_METADATA_ANNOTATION,
]);

const DELETION_FIELDS = [
  "nodeDrainTimeoutSeconds",
  "nodeVolumeDetachTimeoutSeconds",
  "nodeDeletionTimeoutSeconds",
] as const satisfies readonly (keyof DeletionSeconds)[];

export interface TemplateKeys {
  labels: string[];
  annotations: string[];
}

/** The template metadata a new Machine gets, without the keys Quorum sets itself. */
export function templateMetadata(target: Pick<InPlaceTarget, "labels" | "annotations">): {
  labels: Record<string, string>;
  annotations: Record<string, string>;
} {
  return {
    labels: withoutKeys(target.labels, OWN_LABELS),
    annotations: withoutKeys(target.annotations, OWN_ANNOTATIONS),
  };
}

/** The value of TEMPLATE_METADATA_ANNOTATION for a Machine made or updated from this template metadata. */
export function templateKeysRecord(target: Pick<InPlaceTarget, "labels" | "annotations">): string {
  const { labels, annotations } = templateMetadata(target);
  return JSON.stringify({ labels: Object.keys(labels).sort(), annotations: Object.keys(annotations).sort() });
}

/** The keys a Machine records as the template's; undefined when it records none or garbage (made before the record). */
export function recordedTemplateKeys(text: string | undefined): TemplateKeys | undefined {
  if (text === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== "object" || parsed === null) return undefined;
    const { labels, annotations } = parsed as Record<string, unknown>;
    if (!isStringArray(labels) || !isStringArray(annotations)) return undefined;
    return { labels, annotations };
  } catch {
    return undefined;
  }
}

/** The in-place updates the Machines need (those being deleted are left alone); empty when all are in step. */
export function inPlaceUpdates(machines: readonly Machine[], target: InPlaceTarget): InPlaceUpdate[] {
  const wanted = templateMetadata(target);
  const record = templateKeysRecord(target);
  const updates: InPlaceUpdate[] = [];
  for (const machine of machines) {
    if (machine.metadata.deletionTimestamp) continue;
    const labels = machine.metadata.labels ?? {};
    const annotations = machine.metadata.annotations ?? {};
    const recorded = recordedTemplateKeys(annotations[TEMPLATE_METADATA_ANNOTATION]);
    const changes: string[] = [];
    const labelPatch = keyPatch(labels, wanted.labels, recorded?.labels ?? [], OWN_LABELS, "label", changes);
    const annotationPatch = keyPatch(
      annotations,
      wanted.annotations,
      recorded?.annotations ?? [],
      OWN_ANNOTATIONS,
      "annotation",
      changes,
    );
    // Without a record the clones' state is unknown (clones of older releases lack the template's annotations):
    // they get every template key once, with the record.
    const clones: MetadataPatch = recorded
      ? pruned({ labels: labelPatch, annotations: annotationPatch })
      : pruned({
          labels: { ...wanted.labels, ...labelPatch },
          annotations: { ...wanted.annotations, ...annotationPatch },
        });
    const bookkeeping: Record<string, string> = {};
    if (annotations[TEMPLATE_METADATA_ANNOTATION] !== record) bookkeeping[TEMPLATE_METADATA_ANNOTATION] = record;
    const hash = annotations[TEMPLATE_HASH_ANNOTATION];
    if (hash === target.legacyTemplateHash && hash !== target.templateHash) {
      bookkeeping[TEMPLATE_HASH_ANNOTATION] = target.templateHash;
      changes.push("template hash recorded without metadata");
    }
    const deletion: DeletionSeconds = {};
    for (const field of DELETION_FIELDS) {
      const value = target.deletion[field];
      if (value !== undefined && machine.spec.deletion?.[field] !== value) {
        deletion[field] = value;
        changes.push(`spec.deletion.${field} ${value}`);
      }
    }
    const lists: Pick<InPlaceUpdate["machinePatch"], "readinessGates" | "taints"> = {};
    for (const field of ["readinessGates", "taints"] as const) {
      const wantedList = target[field];
      // CAPI's Machine schema refuses an empty list: an empty one in the spec means "leave them".
      if (!wantedList || wantedList.length === 0) continue;
      if (JSON.stringify(machine.spec[field] ?? []) === JSON.stringify(wantedList)) continue;
      Object.assign(lists, { [field]: structuredClone(wantedList) });
      changes.push(`spec.${field}`);
    }
    const machinePatch = {
      ...pruned({ labels: labelPatch, annotations: { ...annotationPatch, ...bookkeeping } }),
      ...(Object.keys(deletion).length > 0 ? { deletion } : {}),
      ...lists,
    };
    if (Object.keys(machinePatch).length === 0) continue;
    updates.push({
      machine: machine.metadata.name,
      ...(Object.keys(clones).length > 0 ? { clones } : {}),
      machinePatch,
      changes,
    });
  }
  return updates;
}

function keyPatch(
  current: Record<string, string>,
  wanted: Record<string, string>,
  recorded: readonly string[],
  own: ReadonlySet<string>,
  what: string,
  changes: string[],
): Record<string, string | null> {
  const patch: Record<string, string | null> = {};
  for (const [key, value] of Object.entries(wanted)) {
    if (current[key] === value) continue;
    patch[key] = value;
    changes.push(`${what} ${key}=${value}`);
  }
  for (const key of recorded) {
    if (key in wanted || own.has(key) || !(key in current)) continue;
    patch[key] = null;
    changes.push(`${what} ${key} removed`);
  }
  return patch;
}

function pruned(patch: MetadataPatch): MetadataPatch {
  return {
    ...(patch.labels && Object.keys(patch.labels).length > 0 ? { labels: patch.labels } : {}),
    ...(patch.annotations && Object.keys(patch.annotations).length > 0 ? { annotations: patch.annotations } : {}),
  };
}

function withoutKeys(values: Record<string, string>, keys: ReadonlySet<string>): Record<string, string> {
  return Object.fromEntries(Object.entries(values).filter(([key]) => !keys.has(key)));
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}
