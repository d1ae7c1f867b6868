// Secret reads served from a list+watch cache instead of one GET per Secret per reconcile.
//
// Each reconcile reads the cluster's CA Secrets and its kubeconfig; at a few hundred clusters those GETs alone
// saturate the API server (issue 7, bench/README.md). The cache watches the Secrets labelled
// `cluster.x-k8s.io/cluster-name` (the selector CAPI's own managers cache Secrets by) and keeps only the ones
// Quorum reads, `<cluster>-ca|-etcd|-sa|-proxy|-kubeconfig`: the same label sits on CAPI's bootstrap-data
// Secrets, tens of KB each, which would otherwise dominate the controller's memory at 1,000 clusters.
//
// Of `<cluster>-sa` and `-proxy` the cache keeps no data: Quorum only asks whether they exist and which version they
// are (getMetadata), and their keys (an RSA key pair for -sa) were a third of the Secret cache's memory (issue 19); a
// get() of one is a GET.
//
// Anything the cache does not hold is read with a GET, so a wrong or late cache costs a request, never a
// wrong answer: a user's CA Secret without the label, the moments before the first list. The one exception is
// knownAbsent, whose caller creates what is absent and so learns from AlreadyExists what a lagging cache missed.
// Writes go to the API server; a replaced Secret is served from a small overlay until the watch shows a newer version
// than the one it replaced, so the next reconcile does not act on what it just changed, and a created one is served
// as written until the watch delivers it (at most CREATED_KEPT_MS, then a GET).
import { LABEL_CLUSTER_NAME, secretName } from "../../api/constants.ts";
import { internStrings } from "../../api/intern.ts";
import { secretKey, type SecretRef } from "../errors.ts";
import {
  Informer,
  kubeListerWatcher,
  type InformerOptions,
  type KubeListerWatcherOptions,
  type ListerWatcher,
} from "../kube/informer.ts";
import type { KubeRest, ResourceRef } from "../kube/rest.ts";
import { fromV1, refOf, withoutData, type SecretObject, type SecretStore } from "./secret-store.ts";

/** How long a Secret this process created is served as written while the watch has not delivered it. */
export const CREATED_KEPT_MS = 30_000;

export const SECRETS: ResourceRef = { group: "", version: "v1", plural: "secrets", namespaced: true };

export interface CachedSecretStoreOptions {
  /** Answers what the cache cannot, and takes every write: coreV1SecretStore in production. */
  inner: SecretStore;
  /** The API server to list and watch; not needed when `listerWatcher` is given. */
  rest?: KubeRest;
  /** Only this namespace (the controller's --namespace); all namespaces when unset. */
  namespace?: string;
  /** Replaces the API server as the source of the cache (tests). */
  listerWatcher?: ListerWatcher<SecretObject>;
  listerWatcherOptions?: KubeListerWatcherOptions;
  /** Backoff, resync, clock and logger of the informer; its transform is this store's. */
  informer?: Omit<InformerOptions<SecretObject>, "transform">;
  /** Milliseconds now, for how long a created Secret is served as written (Date.now by default). */
  now?: () => number;
}

export interface CachedSecretStoreStats {
  /** get() answered from the cache or the overlay. */
  cacheReads: number;
  /** get() passed to the inner store (not cached, or not synced yet). */
  apiReads: number;
}

/** A Secret Quorum reads by name for the cluster its label names; only these are worth their memory. */
export function isQuorumClusterSecret(secret: SecretObject): boolean {
  const cluster = secret.metadata.labels?.[LABEL_CLUSTER_NAME];
  if (!cluster) return false;
  return Object.values(secretName).some((nameOf) => nameOf(cluster) === secret.metadata.name);
}

/** A Secret Quorum only checks for (getMetadata): the cache keeps it without data. */
export function isPresenceOnlySecret(secret: SecretObject): boolean {
  const cluster = secret.metadata.labels?.[LABEL_CLUSTER_NAME];
  return cluster !== undefined && [secretName.sa(cluster), secretName.proxy(cluster)].includes(secret.metadata.name);
}

/** What this process last wrote to a Secret, and the versions the cache may still show from before. */
interface Overlay {
  secret: SecretObject;
  staleVersions: Set<string>;
}

export class CachedSecretStore implements SecretStore {
  readonly stats: CachedSecretStoreStats = { cacheReads: 0, apiReads: 0 };
  private readonly inner: SecretStore;
  private readonly informer: Informer<SecretObject>;
  private readonly overlays = new Map<string, Overlay>();
  /** Secrets this process created that the watch has not delivered yet: as the cache would hold them, and when. */
  private readonly created = new Map<string, { secret: SecretObject; at: number }>();
  private readonly transform: (secret: SecretObject) => SecretObject | undefined;
  private readonly namespace: string | undefined;
  private readonly now: () => number;

  constructor(options: CachedSecretStoreOptions) {
    this.inner = options.inner;
    this.namespace = options.namespace;
    this.now = options.now ?? Date.now;
    // fromV1 keeps only what get() returns: no managedFields, no bootstrap data.
    this.transform = (secret) =>
      !isQuorumClusterSecret(secret)
        ? undefined
        : isPresenceOnlySecret(secret)
          ? internStrings(withoutData(fromV1(secret)))
          : internStrings(fromV1(secret));
    let source = options.listerWatcher;
    if (!source) {
      if (!options.rest)
        throw new Error("CachedSecretStore: pass `rest` (the management API server) or a `listerWatcher`");
      source = kubeListerWatcher<SecretObject>(
        options.rest,
        {
          resource: SECRETS,
          labelSelector: LABEL_CLUSTER_NAME,
          ...(options.namespace ? { namespace: options.namespace } : {}),
        },
        options.listerWatcherOptions,
      );
    }
    this.informer = new Informer(source, { ...options.informer, transform: this.transform });
    const supersede = (secret: SecretObject) => {
      this.created.delete(secretKey(refOf(secret)));
      this.dropOverlayIfSuperseded(secret);
    };
    this.informer.addHandlers({
      add: supersede,
      update: supersede,
      // Gone from the cache: get() asks the API server, which knows better than any overlay.
      delete: (secret) => {
        const key = secretKey(refOf(secret));
        this.overlays.delete(key);
        this.created.delete(key);
      },
    });
  }

  get description(): string {
    return this.informer.description;
  }

  /** Starts listing and watching; reads fall back to GET until the first list has arrived. */
  start(): void {
    this.informer.start();
  }

  /** Stops the watch; resolves once it has ended. Reads then go to the API server. */
  async stop(): Promise<void> {
    await this.informer.stop();
    this.overlays.clear();
    this.created.clear();
  }

  get synced(): boolean {
    return this.informer.hasSynced();
  }

  /** Resolves once the first list is cached; rejects if `signal` aborts or the store stops first. */
  waitForSync(signal?: AbortSignal): Promise<void> {
    return this.informer.waitForSync(signal);
  }

  async get(ref: SecretRef): Promise<SecretObject | undefined> {
    const cached = this.cached(ref);
    // A Secret cached without its data is read from the API server, like one not cached.
    if (!cached || (isPresenceOnlySecret(cached) && !cached.data)) {
      this.stats.apiReads++;
      return this.inner.get(ref);
    }
    this.stats.cacheReads++;
    return fromV1(cached);
  }

  async getMetadata(ref: SecretRef): Promise<SecretObject | undefined> {
    const cached = this.cached(ref);
    if (!cached) {
      this.stats.apiReads++;
      const secret = await this.inner.get(ref);
      return secret && withoutData(secret);
    }
    this.stats.cacheReads++;
    return withoutData(fromV1(cached));
  }

  /** Once synced, the cache's "absent" (see SecretStore); before the first list it cannot tell. */
  knownAbsent(ref: SecretRef): boolean {
    if (!this.informer.hasSynced() || this.cached(ref)) return false;
    this.stats.cacheReads++;
    return true;
  }

  /** What the cache (or the overlay of this process's last write) holds of `ref`; undefined before the first list. */
  private cached(ref: SecretRef): SecretObject | undefined {
    const key = secretKey(ref);
    const cached = this.informer.hasSynced() ? this.informer.get(key) : undefined;
    if (!cached) return this.createdNotYetWatched(key);
    const overlay = this.overlays.get(key);
    if (overlay && overlay.staleVersions.has(cached.metadata.resourceVersion ?? "")) return overlay.secret;
    this.overlays.delete(key);
    return cached;
  }

  async create(secret: SecretObject): Promise<"created" | "exists"> {
    const outcome = await this.inner.create(secret);
    // Served as written until the watch delivers it, if the watch will: a Secret it does not select (another
    // namespace, no cluster-name label) is read with a GET, as always.
    const cachedForm = outcome === "created" && this.listsIn(secret) ? this.transform(secret) : undefined;
    if (cachedForm) this.created.set(secretKey(refOf(secret)), { secret: cachedForm, at: this.now() });
    return outcome;
  }

  /** A Secret this process created a moment ago (CREATED_KEPT_MS at most) that the watch has not delivered yet. */
  private createdNotYetWatched(key: string): SecretObject | undefined {
    const created = this.created.get(key);
    if (!created) return undefined;
    if (this.now() - created.at <= CREATED_KEPT_MS) return created.secret;
    // The watch never brought it (deleted since, or the watch is stuck): a GET knows.
    this.created.delete(key);
    return undefined;
  }

  /** Whether `secret` is in the namespace the informer lists (its label selector is the transform's check). */
  private listsIn(secret: SecretObject): boolean {
    return this.namespace === undefined || secret.metadata.namespace === this.namespace;
  }

  async replace(secret: SecretObject): Promise<SecretObject> {
    const key = secretKey(refOf(secret));
    const cachedBefore = this.informer.get(key)?.metadata.resourceVersion;
    const written = await this.inner.replace(secret);
    this.created.delete(key);
    // A Secret the cache never holds is always read with a GET, which needs no overlay.
    if (!isQuorumClusterSecret(written)) return written;
    const staleVersions = new Set(this.overlays.get(key)?.staleVersions);
    // The version the caller replaced and the one the cache held: the watch may still deliver either (or a
    // list started before the write may), and only a version other than these is news.
    for (const version of [secret.metadata.resourceVersion, cachedBefore]) if (version) staleVersions.add(version);
    if (written.metadata.resourceVersion) staleVersions.delete(written.metadata.resourceVersion);
    const nowCached = this.informer.get(key)?.metadata.resourceVersion;
    if (staleVersions.size > 0 && (nowCached === undefined || staleVersions.has(nowCached))) {
      this.overlays.set(key, { secret: written, staleVersions });
    } else {
      // The watch already brought this write or a later one.
      this.overlays.delete(key);
    }
    return written;
  }

  private dropOverlayIfSuperseded(secret: SecretObject): void {
    const key = secretKey(refOf(secret));
    const overlay = this.overlays.get(key);
    if (overlay && !overlay.staleVersions.has(secret.metadata.resourceVersion ?? "")) this.overlays.delete(key);
  }
}
