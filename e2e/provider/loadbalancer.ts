// The control-plane endpoint of a process cluster: a TCP load balancer (TLS passes through to the apiservers)
// that sends each new connection to the next backend whose kube-apiserver answers GET /readyz with 200. Like a
// cloud load balancer it knows nothing about etcd: a backend whose member was removed drops out only because its
// apiserver stops being ready. A backend marked down also loses its open connections (HAProxy's
// `on-marked-down shutdown-sessions`): clients such as CAPI's cluster cache hold one HTTP/2 connection for good,
// and would otherwise stay pinned to an apiserver whose etcd member is gone, every request timing out.
import { createServer, connect, type Server, type Socket } from "node:net";
import { request } from "node:https";

export interface Backend {
  machine: string;
  address: string;
  port: number;
  healthy: boolean;
  /** Consecutive failed checks; FAILURES_TO_MARK_DOWN take a backend out, one success brings it back. */
  failures: number;
}

/** Two failed checks in a row (about 0.4 s apart), so one slow answer on a loaded machine cuts no session. */
const FAILURES_TO_MARK_DOWN = 2;

export interface LoadBalancerOptions {
  host: string;
  port: number;
  healthIntervalMs?: number;
  healthTimeoutMs?: number;
  onChange?: (backends: Backend[]) => void;
}

export class LoadBalancer {
  private readonly backends = new Map<string, Backend>();
  private readonly connections = new Map<string, Set<Socket>>();
  private server: Server | undefined;
  private timer: NodeJS.Timeout | undefined;
  private next = 0;
  private checking = false;
  /** The cluster CA, to verify the apiservers' serving certificates during health checks; known once it exists. */
  private caPem: string | undefined;

  constructor(private readonly options: LoadBalancerOptions) {}

  get endpoint(): { host: string; port: number } {
    return { host: this.options.host, port: this.options.port };
  }

  async start(): Promise<void> {
    const server = createServer((client) => this.forward(client));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ host: this.options.host, port: this.options.port, exclusive: true }, () => {
        server.off("error", reject);
        resolve();
      });
    });
    server.on("error", () => {
      // Accept errors (e.g. EMFILE) affect one connection; the listener stays up.
    });
    this.server = server;
    const interval = this.options.healthIntervalMs ?? 200;
    this.timer = setInterval(() => void this.checkAll(), interval);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    for (const sockets of this.connections.values()) for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  setCA(caPem: string): void {
    this.caPem = caPem;
  }

  add(machine: string, address: string, port: number): void {
    if (this.backends.has(machine)) return;
    this.backends.set(machine, { machine, address, port, healthy: false, failures: 0 });
    void this.checkAll();
  }

  /** Stops sending connections to the machine at once (before its processes stop) and closes those it has. */
  remove(machine: string): void {
    if (this.backends.delete(machine)) this.options.onChange?.(this.list());
    this.shutdownSessions(machine);
  }

  /** Marks a backend down without waiting for the next check, e.g. when its etcd process just exited. */
  markDown(machine: string): void {
    const backend = this.backends.get(machine);
    if (!backend || !backend.healthy) return;
    backend.healthy = false;
    backend.failures = Math.max(backend.failures, FAILURES_TO_MARK_DOWN);
    this.shutdownSessions(machine);
    this.options.onChange?.(this.list());
  }

  private shutdownSessions(machine: string): void {
    const sockets = this.connections.get(machine);
    if (!sockets) return;
    for (const socket of sockets) socket.destroy();
    this.connections.delete(machine);
  }

  list(): Backend[] {
    return [...this.backends.values()].map((backend) => ({ ...backend }));
  }

  private forward(client: Socket): void {
    const healthy = [...this.backends.values()].filter((backend) => backend.healthy);
    if (healthy.length === 0) {
      client.destroy();
      return;
    }
    const backend = healthy[this.next++ % healthy.length];
    const upstream = connect({ host: backend.address, port: backend.port });
    const sockets = this.connections.get(backend.machine) ?? new Set<Socket>();
    this.connections.set(backend.machine, sockets);
    sockets.add(client);
    sockets.add(upstream);
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("error", close);
    upstream.on("error", close);
    client.on("close", close);
    upstream.on("close", close);
    client.pipe(upstream);
    upstream.pipe(client);
  }

  private async checkAll(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      const results = await Promise.all(
        [...this.backends.values()].map(async (backend) => ({ backend, ok: await this.ready(backend) })),
      );
      let changed = false;
      for (const { backend, ok } of results) {
        if (!this.backends.has(backend.machine)) continue;
        backend.failures = ok ? 0 : backend.failures + 1;
        const healthy = ok || (backend.healthy && backend.failures < FAILURES_TO_MARK_DOWN);
        if (healthy === backend.healthy) continue;
        changed = true;
        backend.healthy = healthy;
        if (!healthy) this.shutdownSessions(backend.machine);
      }
      if (changed) this.options.onChange?.(this.list());
    } finally {
      this.checking = false;
    }
  }

  private ready(backend: Backend): Promise<boolean> {
    const timeout = this.options.healthTimeoutMs ?? 1_000;
    return new Promise((resolve) => {
      const req = request(
        {
          host: backend.address,
          port: backend.port,
          path: "/readyz",
          method: "GET",
          ca: this.caPem,
          agent: false,
          timeout,
        },
        (response) => {
          response.resume();
          response.on("end", () => resolve(response.statusCode === 200));
          response.on("error", () => resolve(false));
        },
      );
      req.on("timeout", () => req.destroy(new Error("timeout")));
      req.on("error", () => resolve(false));
      req.end();
    });
  }
}
