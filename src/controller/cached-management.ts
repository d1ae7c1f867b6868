// The ManagementApi of one reconcile: reads of the QuorumControlPlane, its Cluster and its Machines come from the
// informer caches the controller watches anyway (no API request at all on an idle reconcile); writes go to the
// API server and leave an expectation of what the cache must show once it has caught up (expectations.ts).
// Templates are still read from the API server, at most once per reconcile each: the first Machine's reconcile needs
// them both to give them their owner reference and to clone them.
import type { Cluster, Machine } from "../api/capi.ts";
import { API_VERSION, KIND } from "../api/constants.ts";
import { concernsControlPlane } from "../api/ownership.ts";
import type { Unstructured } from "../api/objects.ts";
import type { ObjectRef, QuorumControlPlane } from "../api/types.ts";
import type { EventQueue } from "./event-queue.ts";
import type { CacheLookup, Expectations } from "./expectations.ts";
import type { ManagementApi } from "../ports/index.ts";

/** The informer caches, holding what src/controller/cached-fields.ts keeps of each object. */
export interface ManagementCaches {
  controlPlane(key: string): QuorumControlPlane | undefined;
  cluster(key: string): Cluster | undefined;
  /** Machines of a namespace that carry a control-plane-name label (ours and other control planes'). */
  machines(namespace: string): Machine[];
  machine(key: string): Machine | undefined;
}

export function cacheLookup(caches: ManagementCaches): CacheLookup {
  return (kind, object) => (kind === "Machine" ? caches.machine(object) : caches.controlPlane(object));
}

/**
 * `key` is the QuorumControlPlane being reconciled: every write made through this object is expected under it.
 * Objects handed out are the cached ones, deep-frozen the first time they are handed out: nothing a reconcile does
 * can change what the cache holds (a write throws a TypeError in strict-mode code), and an idle reconcile copies
 * nothing. The informers replace an object on every event, so each version is frozen once.
 */
export function cachedManagement(
  api: ManagementApi,
  caches: ManagementCaches,
  expectations: Expectations,
  key: string,
  /** Where Events go, to be sent in the background; without it each is sent before event() resolves. */
  events?: EventQueue,
): ManagementApi {
  const machineKey = (namespace: string, name: string) => `${namespace}/${name}`;
  // This object lives for one reconcile (controller.ts makes one per reconcile), and so does what it read.
  const referenced = new Map<string, Promise<Unstructured>>();
  const referencedKey = (ref: ObjectRef, namespace: string) =>
    `${ref.apiVersion ?? ref.apiGroup ?? ""}/${ref.kind}/${ref.namespace ?? namespace}/${ref.name}`;
  return {
    async getControlPlane(namespace, name) {
      const cached = readOnly(caches.controlPlane(`${namespace}/${name}`));
      // Items of a list response may come without apiVersion and kind; Events need both.
      return cached && { ...cached, apiVersion: cached.apiVersion ?? API_VERSION, kind: cached.kind ?? KIND };
    },
    async getCluster(namespace, name) {
      return readOnly(caches.cluster(`${namespace}/${name}`));
    },
    async listControlPlaneMachines(namespace, controlPlaneName, clusterName) {
      const concerned = caches
        .machines(namespace)
        .filter((machine) => concernsControlPlane(machine, controlPlaneName, clusterName));
      return concerned
        .map((machine) => readOnly(machine) as Machine)
        .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    },
    getReferenced(ref, namespace, referencedBy) {
      const readKey = referencedKey(ref, namespace);
      const known = referenced.get(readKey);
      if (known) return known;
      const read = api.getReferenced(ref, namespace, referencedBy);
      referenced.set(readKey, read);
      // A failed read is not kept: whoever asks next in this reconcile asks the API server again.
      read.catch(() => referenced.delete(readKey));
      return read;
    },
    async createIfAbsent(object) {
      const result = await api.createIfAbsent(object);
      if (object.kind === "Machine")
        expectations.expectPresent(
          key,
          "Machine",
          machineKey(object.metadata.namespace ?? "default", object.metadata.name),
        );
      return result;
    },
    async deleteMachine(namespace, name) {
      const cached = caches.machine(machineKey(namespace, name));
      await api.deleteMachine(namespace, name);
      if (cached && !cached.metadata.deletionTimestamp)
        expectations.expectChange(
          key,
          "Machine",
          machineKey(namespace, name),
          cached.metadata.resourceVersion,
          undefined,
          { deleting: true },
        );
    },
    async patchAnnotations(apiVersion, kind, namespace, name, annotations, resourceVersion) {
      const cached = kind === "Machine" ? caches.machine(machineKey(namespace, name)) : undefined;
      const before = resourceVersion ?? cached?.metadata.resourceVersion;
      const written = await api.patchAnnotations(apiVersion, kind, namespace, name, annotations, resourceVersion);
      if (kind === "Machine")
        expectations.expectChange(key, "Machine", machineKey(namespace, name), before, written, {
          mayBeGone: cached !== undefined,
        });
      return written;
    },
    async patchInPlace(ref, namespace, patch, resourceVersion) {
      const cached = ref.kind === "Machine" ? caches.machine(machineKey(namespace, ref.name)) : undefined;
      const written = await api.patchInPlace(ref, namespace, patch, resourceVersion);
      if (ref.kind === "Machine" && written !== undefined)
        expectations.expectChange(
          key,
          "Machine",
          machineKey(namespace, ref.name),
          resourceVersion ?? cached?.metadata.resourceVersion,
          written,
          { mayBeGone: cached !== undefined },
        );
      return written;
    },
    async setMachineConditions(namespace, name, conditions, resourceVersion) {
      const cached = caches.machine(machineKey(namespace, name));
      const written = await api.setMachineConditions(namespace, name, conditions, resourceVersion);
      if (written !== undefined)
        expectations.expectChange(key, "Machine", machineKey(namespace, name), resourceVersion, written, {
          mayBeGone: cached !== undefined,
        });
      return written;
    },
    // Templates are not cached, so no expectation: the next reconcile reads the template again. Later in this one the
    // template is seen with the references written (its spec, which a CreateMachine clones, is what was read), and with
    // the resourceVersion read, so a write made from it is a conflict, never a lost change.
    // A refused write (a conflict) forgets the read, so that reading again asks the API server.
    async setOwnerReferences(object, ownerReferences) {
      const readKeys: string[] = [];
      for (const [readKey, read] of referenced)
        if ((await read.catch(() => undefined)) === object) readKeys.push(readKey);
      try {
        await api.setOwnerReferences(object, ownerReferences);
      } catch (error) {
        for (const readKey of readKeys) referenced.delete(readKey);
        throw error;
      }
      const written = { ...object, metadata: { ...object.metadata, ownerReferences } };
      for (const readKey of readKeys) referenced.set(readKey, Promise.resolve(written));
    },
    async setFinalizers(controlPlane, finalizers) {
      const written = await api.setFinalizers(controlPlane, finalizers);
      expectations.expectChange(key, "QuorumControlPlane", key, controlPlane.metadata.resourceVersion, written, {
        mayBeGone: true,
      });
      return written;
    },
    async patchStatus(controlPlane, status) {
      const written = await api.patchStatus(controlPlane, status);
      expectations.expectChange(
        key,
        "QuorumControlPlane",
        key,
        controlPlane.metadata.resourceVersion,
        written.metadata?.resourceVersion,
      );
      return written;
    },
    event: (controlPlane, type, reason, message, now) =>
      (events ?? api).event(controlPlane, type, reason, message, now),
  };
}

const frozenObjects = new WeakSet<object>();

function readOnly<T>(object: T | undefined): T | undefined {
  if (object === undefined || object === null || typeof object !== "object" || frozenObjects.has(object)) return object;
  deepFreeze(object);
  frozenObjects.add(object);
  return object;
}

function deepFreeze(value: unknown): void {
  if (value === null || typeof value !== "object" || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const child of Object.values(value)) deepFreeze(child);
}
