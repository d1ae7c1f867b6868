// An in-memory API server for one namespace of ConfigMaps, whose watches a test can break.
import type { ListerWatcher } from "../../../src/adapters/kube/informer.ts";
import type { KubeObject, WatchEvent } from "../../../src/adapters/kube/rest.ts";

export interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

interface OpenWatch {
  onEvent: (event: WatchEvent<ConfigMap>) => void;
  resolve: () => void;
  reject: (err: unknown) => void;
  signal: AbortSignal;
  closed: boolean;
}

/** An in-memory API server for one namespace of ConfigMaps whose watch the test can break. */
export class FakeApi implements ListerWatcher<ConfigMap> {
  readonly description: string;
  /** Lists wait for this while set (to hold an informer before its cache syncs). */
  listGate: Promise<void> | undefined;

  constructor(description = "configmaps in namespace ns") {
    this.description = description;
  }
  readonly objects = new Map<string, ConfigMap>();
  listCalls = 0;
  failNextLists = 0;
  private version = 1;
  private watches: OpenWatch[] = [];

  async list() {
    this.listCalls++;
    if (this.listGate) await this.listGate;
    if (this.failNextLists > 0) {
      this.failNextLists--;
      throw new Error("connection refused");
    }
    return { items: [...this.objects.values()], resourceVersion: String(this.version) };
  }

  watch(_rv: string, onEvent: (event: WatchEvent<ConfigMap>) => void, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const open: OpenWatch = {
        onEvent,
        resolve,
        reject: (err) => {
          open.closed = true;
          reject(err);
        },
        signal,
        closed: false,
      };
      this.watches.push(open);
      signal.addEventListener("abort", () => resolve(), { once: true });
    });
  }

  get openWatches(): OpenWatch[] {
    return this.watches.filter((w) => !w.signal.aborted && !w.closed);
  }

  put(name: string, value: string, options: { silently?: boolean } = {}): void {
    this.version++;
    const type = this.objects.has(name) ? "MODIFIED" : "ADDED";
    const obj: ConfigMap = {
      metadata: { name, namespace: "ns", resourceVersion: String(this.version) },
      data: { value },
    };
    this.objects.set(name, obj);
    if (!options.silently) this.emit({ type, object: obj });
  }

  remove(name: string, options: { silently?: boolean } = {}): void {
    this.version++;
    const obj = this.objects.get(name);
    this.objects.delete(name);
    if (obj && !options.silently) this.emit({ type: "DELETED", object: obj });
  }

  emit(event: WatchEvent<ConfigMap>): void {
    for (const w of this.openWatches) {
      try {
        w.onEvent(event);
      } catch (err) {
        w.reject(err);
      }
    }
  }

  breakWatches(err: Error): void {
    for (const w of this.openWatches) w.reject(err);
  }
}
