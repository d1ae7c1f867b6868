// The few Secret operations the certificate and workload adapters need, behind an interface so their logic
// is tested against an in-memory store and runs against client-node's CoreV1Api (or an informer cache for
// reads) in production.
import { ApiException, type CoreV1Api, type V1Secret } from "@kubernetes/client-node";
import type { OwnerReference } from "../../api/types.ts";
import { isNamespaceTerminating, secretKey, statusMessageOf, type SecretRef } from "../errors.ts";
import { errorMessage } from "../kube/log.ts";

/** A Secret as plain JSON. `data` values are base64, as the API serves them. */
export interface SecretObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: OwnerReference[];
    /** Kept so that a replace (a PUT, which sets what it is given) leaves another controller's finalizers on. */
    finalizers?: string[];
  };
  type?: string;
  data?: Record<string, string>;
}

export interface SecretStore {
  /** undefined when the Secret does not exist. */
  get(ref: SecretRef): Promise<SecretObject | undefined>;
  /**
   * The Secret without its data (undefined when it does not exist), for callers that only need to know that it is
   * there and which version it is: a cache may keep no data of the Secrets it is only asked this of. A store without
   * it answers with get() (secretMetadata).
   */
  getMetadata?(ref: SecretRef): Promise<SecretObject | undefined>;
  /**
   * Whether a synced cache holds no Secret `ref` (false when it cannot tell). Enough for a caller that creates the
   * Secret when it is absent: the create's AlreadyExists corrects a cache that lags behind, so no GET confirms the
   * absence (secretBeforeCreate, secretMetadataBeforeCreate; a store without it is always read).
   */
  knownAbsent?(ref: SecretRef): boolean;
  /** "exists" when a Secret of that name is already there; it is then left untouched. */
  create(secret: SecretObject): Promise<"created" | "exists">;
  /** Replaces a Secret; metadata.resourceVersion, when set, makes it fail if someone changed it meanwhile. */
  replace(secret: SecretObject): Promise<SecretObject>;
}

/** SecretStore on client-node's CoreV1Api. */
export function coreV1SecretStore(core: CoreV1Api): SecretStore {
  return {
    async get(ref) {
      try {
        return fromV1(await core.readNamespacedSecret({ name: ref.name, namespace: ref.namespace }));
      } catch (error) {
        if (error instanceof ApiException && error.code === 404) return undefined;
        throw apiError("read", ref, error);
      }
    },
    async create(secret) {
      const ref = refOf(secret);
      try {
        await core.createNamespacedSecret({ namespace: ref.namespace, body: toV1(secret) });
        return "created";
      } catch (error) {
        if (error instanceof ApiException && error.code === 409) return "exists";
        throw apiError("create", ref, error);
      }
    },
    async replace(secret) {
      const ref = refOf(secret);
      try {
        return fromV1(
          await core.replaceNamespacedSecret({ name: ref.name, namespace: ref.namespace, body: toV1(secret) }),
        );
      } catch (error) {
        throw apiError("replace", ref, error);
      }
    },
  };
}

/** `store.getMetadata(ref)`, or get() for a store without it (its answer then carries the data too). */
export function secretMetadata(store: SecretStore, ref: SecretRef): Promise<SecretObject | undefined> {
  return store.getMetadata ? store.getMetadata(ref) : store.get(ref);
}

/** secretMetadata for a caller that creates the Secret when it is absent: undefined when the store knows it absent. */
export async function secretMetadataBeforeCreate(
  store: SecretStore,
  ref: SecretRef,
): Promise<SecretObject | undefined> {
  return store.knownAbsent?.(ref) ? undefined : secretMetadata(store, ref);
}

/** get() for a caller that creates the Secret when it is absent: undefined when the store knows it absent. */
export async function secretBeforeCreate(store: SecretStore, ref: SecretRef): Promise<SecretObject | undefined> {
  return store.knownAbsent?.(ref) ? undefined : store.get(ref);
}

/** A copy of `secret` without its data. */
export function withoutData(secret: SecretObject): SecretObject {
  const { data: _data, ...rest } = secret;
  return rest;
}

export function refOf(secret: SecretObject): SecretRef {
  return { namespace: secret.metadata.namespace, name: secret.metadata.name };
}

/** Text of a data key, or undefined when the key is absent or empty. */
export function dataText(secret: SecretObject, key: string): string | undefined {
  const encoded = secret.data?.[key];
  if (encoded === undefined || encoded === "") return undefined;
  const text = Buffer.from(encoded, "base64").toString("utf8");
  return text.trim() === "" ? undefined : text;
}

export function encodeData(data: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(data).map(([key, text]) => [key, Buffer.from(text, "utf8").toString("base64")]),
  );
}

/**
 * The SecretObject of a Secret as the API serves it (a client-node V1Secret, or the raw JSON of a list or
 * watch): only the fields Quorum reads, every map copied, so callers never share state with the source.
 */
export function fromV1(secret: V1Secret): SecretObject {
  const metadata = secret.metadata ?? {};
  const result: SecretObject = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: metadata.name ?? "",
      namespace: metadata.namespace ?? "",
    },
  };
  if (metadata.uid) result.metadata.uid = metadata.uid;
  if (metadata.resourceVersion) result.metadata.resourceVersion = metadata.resourceVersion;
  if (metadata.labels) result.metadata.labels = { ...metadata.labels };
  if (metadata.annotations) result.metadata.annotations = { ...metadata.annotations };
  if (metadata.ownerReferences) {
    result.metadata.ownerReferences = metadata.ownerReferences.map((owner) => {
      const reference: OwnerReference = {
        apiVersion: owner.apiVersion,
        kind: owner.kind,
        name: owner.name,
        uid: owner.uid,
      };
      if (owner.controller !== undefined) reference.controller = owner.controller;
      if (owner.blockOwnerDeletion !== undefined) reference.blockOwnerDeletion = owner.blockOwnerDeletion;
      return reference;
    });
  }
  if (metadata.finalizers && metadata.finalizers.length > 0) result.metadata.finalizers = [...metadata.finalizers];
  if (secret.type) result.type = secret.type;
  if (secret.data) result.data = { ...secret.data };
  return result;
}

function toV1(secret: SecretObject): V1Secret {
  return { apiVersion: "v1", kind: "Secret", ...secret } as V1Secret;
}

function apiError(verb: string, ref: SecretRef, error: unknown): Error {
  if (error instanceof ApiException) {
    const detail = statusMessageOf(error.body);
    const fix =
      error.code === 403 && isNamespaceTerminating(error.body)
        ? `namespace ${ref.namespace} is being deleted, so nothing new can be created in it; the QuorumControlPlane there is deleted with it and needs no new Secret`
        : error.code === 403
          ? "grant Quorum's ServiceAccount get/create/update on secrets in this namespace"
          : error.code === 409
            ? "it changed meanwhile; the next reconcile reads it again"
            : "retry on the next reconcile";
    return new Error(`Secret ${secretKey(ref)}: ${verb} failed with HTTP ${error.code}: ${detail}: ${fix}`, {
      cause: error,
    });
  }
  return new Error(`Secret ${secretKey(ref)}: ${verb} failed: ${errorMessage(error)}: retry on the next reconcile`, {
    cause: error,
  });
}
