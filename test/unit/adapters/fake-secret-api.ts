// An in-memory API server for Secrets: a SecretStore (the GETs and writes, counted) and a ListerWatcher of the
// Secrets labelled cluster.x-k8s.io/cluster-name (what the cache sees), sharing one state. Watch events can be
// held back to play a watch that lags behind the writes.
import { LABEL_CLUSTER_NAME } from "../../../src/api/constants.ts";
import { fromV1, type SecretObject, type SecretStore } from "../../../src/adapters/certs/secret-store.ts";
import type { SecretRef } from "../../../src/adapters/errors.ts";
import type { ListerWatcher } from "../../../src/adapters/kube/informer.ts";
import type { WatchEvent } from "../../../src/adapters/kube/rest.ts";

/** A Secret as the API server serves it, with the fields the cache must not keep. */
export type ServedSecret = SecretObject & {
  metadata: SecretObject["metadata"] & { creationTimestamp?: string; managedFields?: unknown[] };
};

interface OpenWatch {
  onEvent: (event: WatchEvent<SecretObject>) => void;
  signal: AbortSignal;
}

const keyOf = (ref: SecretRef) => `${ref.namespace}/${ref.name}`;
const selected = (secret: SecretObject | undefined) => secret?.metadata.labels?.[LABEL_CLUSTER_NAME] !== undefined;

export class FakeSecretApi implements ListerWatcher<SecretObject> {
  readonly description = "secrets in all namespaces (labels cluster.x-k8s.io/cluster-name)";
  readonly objects = new Map<string, ServedSecret>();
  /** GETs of single Secrets through `store`. */
  gets = 0;
  lists = 0;
  /** Lists are answered as of their request, but delivered only once this resolves. */
  listGate: Promise<void> | undefined;
  /** While true, watch events queue up until `releaseEvents()`. */
  holdEvents = false;
  private held: WatchEvent<SecretObject>[] = [];
  private watches: OpenWatch[] = [];
  private version = 100;

  /** The API-backed store: answers like coreV1SecretStore (a SecretObject, base64 data). */
  readonly store: SecretStore = {
    get: async (ref) => {
      this.gets++;
      const served = this.objects.get(keyOf(ref));
      return served && fromV1(structuredClone(served) as SecretObject);
    },
    create: async (secret) => {
      if (this.objects.has(keyOf(secret.metadata))) return "exists";
      this.write(structuredClone(secret));
      return "created";
    },
    replace: async (secret) => {
      const current = this.objects.get(keyOf(secret.metadata));
      if (!current) throw new Error(`Secret ${keyOf(secret.metadata)} not found`);
      if (secret.metadata.resourceVersion && secret.metadata.resourceVersion !== current.metadata.resourceVersion) {
        throw new Error(`Secret ${keyOf(secret.metadata)}: conflict`);
      }
      return fromV1(this.write(structuredClone(secret)) as SecretObject);
    },
  };

  /** Someone else (a user with kubectl, CAPI) writes a Secret; data given as text. */
  put(namespace: string, name: string, data: Record<string, string>, labels?: Record<string, string>): ServedSecret {
    return this.write({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { namespace, name, ...(labels ? { labels } : {}) },
      type: "cluster.x-k8s.io/secret",
      data: Object.fromEntries(Object.entries(data).map(([key, text]) => [key, Buffer.from(text).toString("base64")])),
    });
  }

  remove(namespace: string, name: string): void {
    const key = keyOf({ namespace, name });
    const old = this.objects.get(key);
    if (!old) return;
    this.objects.delete(key);
    this.version++;
    if (selected(old))
      this.emit({
        type: "DELETED",
        object: { ...old, metadata: { ...old.metadata, resourceVersion: String(this.version) } },
      });
  }

  releaseEvents(): void {
    this.holdEvents = false;
    const events = this.held;
    this.held = [];
    for (const event of events) this.emit(event);
  }

  async list(): Promise<{ items: SecretObject[]; resourceVersion: string }> {
    this.lists++;
    // Answered as of the request: writes while the gate holds the answer are not in it.
    const items = [...this.objects.values()].filter(selected).map((secret) => structuredClone(secret));
    const resourceVersion = String(this.version);
    if (this.listGate) await this.listGate;
    return { items, resourceVersion };
  }

  watch(
    _resourceVersion: string,
    onEvent: (event: WatchEvent<SecretObject>) => void,
    signal: AbortSignal,
  ): Promise<void> {
    return new Promise<void>((resolve) => {
      this.watches.push({ onEvent, signal });
      signal.addEventListener("abort", () => resolve(), { once: true });
    });
  }

  private write(secret: ServedSecret): ServedSecret {
    const key = keyOf(secret.metadata);
    const old = this.objects.get(key);
    this.version++;
    const served: ServedSecret = {
      ...secret,
      metadata: {
        ...secret.metadata,
        uid: old?.metadata.uid ?? `uid-${this.version}`,
        resourceVersion: String(this.version),
        creationTimestamp: "2030-01-01T00:00:00Z",
        managedFields: [{ manager: "kubectl", operation: "Update", fieldsV1: { "f:data": {} } }],
      },
    };
    this.objects.set(key, served);
    // The label selector as the API server applies it to a watch: losing the label reads as a delete.
    if (selected(served))
      this.emit({ type: old && selected(old) ? "MODIFIED" : "ADDED", object: structuredClone(served) });
    else if (selected(old)) this.emit({ type: "DELETED", object: structuredClone(served) });
    return structuredClone(served);
  }

  private emit(event: WatchEvent<SecretObject>): void {
    if (this.holdEvents) {
      this.held.push(event);
      return;
    }
    for (const open of this.watches) if (!open.signal.aborted) open.onEvent(event);
  }
}
