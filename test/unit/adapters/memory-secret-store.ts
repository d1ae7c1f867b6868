// An in-memory SecretStore with the API server's create/replace semantics that matter here: AlreadyExists on
// create, resourceVersion preconditions on replace, a new resourceVersion on every write.
import type { SecretObject, SecretStore } from "../../../src/adapters/certs/secret-store.ts";
import type { SecretRef } from "../../../src/adapters/errors.ts";

export class MemorySecretStore implements SecretStore {
  readonly secrets = new Map<string, SecretObject>();
  readonly writes: { verb: "create" | "replace"; name: string }[] = [];
  private version = 1;

  async get(ref: SecretRef): Promise<SecretObject | undefined> {
    const secret = this.secrets.get(`${ref.namespace}/${ref.name}`);
    return secret && structuredClone(secret);
  }

  async create(secret: SecretObject): Promise<"created" | "exists"> {
    const key = `${secret.metadata.namespace}/${secret.metadata.name}`;
    if (this.secrets.has(key)) return "exists";
    this.put(secret);
    this.writes.push({ verb: "create", name: secret.metadata.name });
    return "created";
  }

  async replace(secret: SecretObject): Promise<SecretObject> {
    const key = `${secret.metadata.namespace}/${secret.metadata.name}`;
    const current = this.secrets.get(key);
    if (!current) throw new Error(`Secret ${key} not found`);
    if (secret.metadata.resourceVersion && secret.metadata.resourceVersion !== current.metadata.resourceVersion) {
      throw new Error(`Secret ${key}: conflict`);
    }
    this.writes.push({ verb: "replace", name: secret.metadata.name });
    return this.put(secret);
  }

  /** Seeds a Secret as a user would create it (data given as text). */
  seed(namespace: string, name: string, data: Record<string, string>, extra: Partial<SecretObject> = {}): SecretObject {
    return this.put({
      apiVersion: "v1",
      kind: "Secret",
      ...extra,
      metadata: { namespace, name, ...extra.metadata },
      data: Object.fromEntries(Object.entries(data).map(([key, text]) => [key, Buffer.from(text).toString("base64")])),
    });
  }

  private put(secret: SecretObject): SecretObject {
    const stored = structuredClone(secret);
    stored.metadata.resourceVersion = String(this.version++);
    this.secrets.set(`${secret.metadata.namespace}/${secret.metadata.name}`, stored);
    return structuredClone(stored);
  }
}
