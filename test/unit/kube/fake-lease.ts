import assert from "node:assert/strict";
import type { Lease, LeaseClient, LeaseSpec } from "../../../src/adapters/kube/leader.ts";
import { KubeApiError } from "../../../src/adapters/kube/rest.ts";

/** One Lease in memory with the API server's optimistic concurrency. */
export class LeaseStore {
  lease: Lease | undefined;
  private version = 0;
  writes: LeaseSpec[] = [];
  /** Writes refused because the Lease changed since the writer read it (or was created first by another). */
  conflicts = 0;

  clientFor(): LeaseClient & { partitioned: boolean } {
    const store = this;
    const client = {
      description: "Lease ns/test",
      partitioned: false,
      async get(signal: AbortSignal) {
        await client.reachable(signal);
        return store.lease && structuredClone(store.lease);
      },
      async create(spec: LeaseSpec, signal: AbortSignal) {
        await client.reachable(signal);
        if (store.lease) {
          store.conflicts++;
          throw new KubeApiError("POST", "leases", 409, { reason: "AlreadyExists" }, "");
        }
        store.lease = { metadata: { name: "test", namespace: "ns", resourceVersion: String(++store.version) }, spec };
        store.writes.push(spec);
        return structuredClone(store.lease);
      },
      async replace(lease: Lease, signal: AbortSignal) {
        await client.reachable(signal);
        if (!store.lease || lease.metadata.resourceVersion !== store.lease.metadata.resourceVersion) {
          store.conflicts++;
          throw new KubeApiError("PUT", "leases", 409, { reason: "Conflict" }, "");
        }
        store.lease = { ...lease, metadata: { ...lease.metadata, resourceVersion: String(++store.version) } };
        store.writes.push(lease.spec ?? {});
        return structuredClone(store.lease);
      },
      /** A partitioned client's calls hang until their deadline, like requests to an unreachable server. */
      reachable(signal: AbortSignal): Promise<void> {
        if (!client.partitioned) return Promise.resolve();
        return new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
      },
    };
    return client;
  }

  /** What `kubectl edit lease` would do: a write that bumps the resourceVersion. */
  setHolder(holderIdentity: string): void {
    assert.ok(this.lease);
    this.lease = {
      ...this.lease,
      metadata: { ...this.lease.metadata, resourceVersion: String(++this.version) },
      spec: { ...this.lease.spec, holderIdentity },
    };
  }
}
