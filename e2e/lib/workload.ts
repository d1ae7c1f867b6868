// What a scenario observes of the workload cluster, independently of Quorum: its etcd (keys written before each
// operation and read back after, quorum sampled every 250 ms) and its API through the load balancer (a client
// that keeps sending requests and counts answers).
import { request } from "node:https";
import { setTimeout as sleep } from "node:timers/promises";
import { Etcd3 } from "etcd3";
import { parse } from "yaml";
import { secretName } from "../../src/api/constants.ts";
import { issueCertificate, loadCA, oneDay, validFor } from "../../src/adapters/certs/pki.ts";
import { createEtcdClusterClient } from "../../src/adapters/etcd/client.ts";
import type { EtcdClientCredentials, EtcdClusterClient, EtcdMember } from "../../src/adapters/etcd/types.ts";
import { eventually, kubeRequest } from "../../test/env/index.ts";
import { etcdObserverPort } from "../provider/kubeadm/firewall.ts";
import { observerSidePort } from "./observer-tunnel.ts";
import type { E2EStack } from "./stack.ts";

const KEY_PREFIX = "/e2e/keys/";

export class WorkloadCluster {
  credentials: EtcdClientCredentials | undefined;
  /**
   * Machine name → client URL, for every ProcessMachine that reported an address (refreshed by refresh()); a kubeadm
   * Machine's etcd is dialled on the observer's side port, as its firewall admits no one else from outside.
   */
  private addresses = new Map<string, string>();
  private readonly written = new Map<string, string>();

  constructor(
    readonly stack: E2EStack,
    readonly namespace: string,
    readonly cluster: string,
  ) {}

  /** Waits for the cluster's etcd CA Secret (Quorum creates it) and signs a client certificate with it. */
  async init(): Promise<void> {
    const secret = await eventually(
      `Secret ${this.namespace}/${secretName.etcd(this.cluster)}`,
      async () => {
        const response = await kubeRequest<{ data: Record<string, string> }>(
          this.stack.kubeConfig,
          `/api/v1/namespaces/${this.namespace}/secrets/${secretName.etcd(this.cluster)}`,
        );
        return response.status === 200 ? response.body : { waiting: `HTTP ${response.status}` };
      },
      { timeoutMs: 120_000 },
    );
    const decode = (key: string) => Buffer.from(secret.data[key], "base64").toString("utf8");
    const ca = await loadCA(decode("tls.crt"), decode("tls.key"));
    const client = await issueCertificate(ca, {
      commonName: "e2e-observer",
      usages: "client",
      validity: validFor(oneDay),
    });
    this.credentials = { caPem: ca.certPem, certPem: client.certPem, keyPem: client.keyPem };
  }

  async refresh(): Promise<void> {
    const machines = await this.stack.processMachines(this.namespace);
    for (const machine of machines) {
      const address = machine.status?.addresses?.[0]?.address;
      if (address && machine.metadata.labels?.["cluster.x-k8s.io/cluster-name"] === this.cluster)
        this.addresses.set(machine.metadata.name, `https://${address}:${etcdObserverPort(address)}`);
    }
    // Forget Machines that are gone for good; their addresses are never reused.
    const names = new Set(machines.map((machine) => machine.metadata.name));
    for (const name of [...this.addresses.keys()]) if (!names.has(name)) this.addresses.delete(name);
  }

  endpoints(): string[] {
    return [...this.addresses.values()];
  }

  private keysClient(): Etcd3 {
    return this.kvClient({ deadlineMs: 5_000 });
  }

  /** An etcd3 client to every member's client URL, each call bounded by `deadlineMs`. */
  kvClient(options: { deadlineMs: number }): Etcd3 {
    const credentials = this.credentials;
    if (!credentials) throw new Error("WorkloadCluster.init() first");
    return new Etcd3({
      hosts: this.endpoints(),
      credentials: {
        rootCertificate: Buffer.from(credentials.caPem),
        certChain: Buffer.from(credentials.certPem),
        privateKey: Buffer.from(credentials.keyPem),
      },
      grpcOptions: { "grpc.ssl_target_name_override": "localhost" },
      defaultCallOptions: () => ({ deadline: Date.now() + options.deadlineMs }),
    });
  }

  /** Writes `count` keys for an operation (retrying each until it is acknowledged) and remembers them. */
  async writeKeys(operation: string, count = 1_000): Promise<void> {
    await this.refresh();
    const client = this.keysClient();
    try {
      const keys = Array.from(
        { length: count },
        (_, i) =>
          [`${KEY_PREFIX}${operation}/${String(i).padStart(4, "0")}`, `${operation}-${i}-${Date.now()}`] as const,
      );
      for (let start = 0; start < keys.length; start += 50) {
        await Promise.all(
          keys.slice(start, start + 50).map(async ([key, value]) => {
            for (let attempt = 1; ; attempt++) {
              try {
                await client.put(key).value(value);
                this.written.set(key, value);
                return;
              } catch (error) {
                if (attempt >= 10)
                  throw new Error(`could not write key ${key} to the workload etcd: ${(error as Error).message}`, {
                    cause: error,
                  });
                await sleep(500);
              }
            }
          }),
        );
      }
    } finally {
      client.close();
    }
  }

  /** Reads every key written so far; returns those missing or changed. */
  async lostKeys(): Promise<string[]> {
    await this.refresh();
    const client = this.keysClient();
    try {
      const read = await eventually(
        "the workload etcd to answer a read of the e2e keys",
        async () => client.getAll().prefix(KEY_PREFIX).strings(),
        { timeoutMs: 60_000, intervalMs: 1_000 },
      );
      return [...this.written].filter(([key, value]) => read[key] !== value).map(([key]) => key);
    } finally {
      client.close();
    }
  }

  get keysWritten(): number {
    return this.written.size;
  }

  /** A client for membership calls and statuses (the scenario's own, e.g. to inject a ghost). */
  etcdClient(): EtcdClusterClient {
    if (!this.credentials) throw new Error("WorkloadCluster.init() first");
    return createEtcdClusterClient({
      endpoints: this.endpoints(),
      credentials: this.credentials,
      callDeadlineMs: 3_000,
      context: `e2e observer of ${this.namespace}/${this.cluster}`,
      tunnel: observerSidePort,
    });
  }

  /** Admin kubeconfig of the workload cluster (the control-plane endpoint is the load balancer). */
  async kubeconfig(): Promise<{ server: string; caPem: string; certPem: string; keyPem: string }> {
    const secret = await eventually(
      `Secret ${this.namespace}/${secretName.kubeconfig(this.cluster)}`,
      async () => {
        const response = await kubeRequest<{ data: Record<string, string> }>(
          this.stack.kubeConfig,
          `/api/v1/namespaces/${this.namespace}/secrets/${secretName.kubeconfig(this.cluster)}`,
        );
        return response.status === 200 ? response.body : { waiting: `HTTP ${response.status}` };
      },
      { timeoutMs: 120_000 },
    );
    const config = parse(Buffer.from(secret.data.value, "base64").toString("utf8")) as {
      clusters: { cluster: { server: string; "certificate-authority-data": string } }[];
      users: { user: { "client-certificate-data": string; "client-key-data": string } }[];
    };
    const b64 = (text: string) => Buffer.from(text, "base64").toString("utf8");
    return {
      server: config.clusters[0].cluster.server,
      caPem: b64(config.clusters[0].cluster["certificate-authority-data"]),
      certPem: b64(config.users[0].user["client-certificate-data"]),
      keyPem: b64(config.users[0].user["client-key-data"]),
    };
  }
}

export interface MemberSample {
  id: string;
  name: string;
  learner: boolean;
  healthy: boolean;
}

export interface QuorumSample {
  at: number;
  /** -1 when no member answered the member list (the monitor was blind for this sample). */
  voters: number;
  /** Voters that answered a status call within 1 s. */
  reachableVoters: number;
  /** Reachable voters that reported no error (during a leader election they report "no leader"). */
  healthyVoters: number;
  /** No reachable member knew a leader: an election was going on. */
  leaderless: boolean;
  members: MemberSample[];
  /**
   * Asked only when fewer voters than a quorum answered: whether a linearizable read (etcd confirms the leader with a
   * quorum of voters first) succeeded within 1 s anyway — a voter that takes part in raft but serves no client yet.
   */
  committed?: boolean;
}

/** Samples the workload etcd every 250 ms: voters from the member list, health from a status call to each member. */
export class QuorumMonitor {
  readonly samples: QuorumSample[] = [];
  private stopped = false;
  private loop: Promise<void> | undefined;
  private client: EtcdClusterClient | undefined;
  private clientEndpoints = "";
  private readonly leaderClients = new Map<string, EtcdClusterClient>();
  private probeClient: Etcd3 | undefined;
  private probeEndpoints = "";

  constructor(private readonly workload: WorkloadCluster) {}

  start(): void {
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    await this.client?.close();
    this.probeClient?.close();
    for (const client of this.leaderClients.values()) await client.close();
  }

  private leaderClient(endpoint: string): EtcdClusterClient {
    let client = this.leaderClients.get(endpoint);
    if (!client && this.workload.credentials) {
      client = createEtcdClusterClient({
        endpoints: [endpoint],
        credentials: this.workload.credentials,
        callDeadlineMs: 1_000,
        context: "e2e quorum monitor (leader)",
        tunnel: observerSidePort,
      });
      this.leaderClients.set(endpoint, client);
    }
    if (!client) throw new Error("no credentials");
    return client;
  }

  /**
   * Samples where fewer voters than a quorum answered and a linearizable read failed too. A leader election among a
   * quorum of live voters (they answer, reporting "no leader" for a second or two) is not a loss; it is counted by
   * leaderless(). Nor is a voter that takes part in raft without answering clients yet: kubeadm promotes its learner
   * as soon as etcd allows (the learner's log in sync), and etcd 3.6 served clients only ~6 s later in the kubeadm
   * scenario (e2e/README.md), while reads and writes through the leader went on.
   */
  losses(from = 0, to = Infinity): QuorumSample[] {
    const lost = (sample: QuorumSample | undefined) =>
      sample !== undefined &&
      sample.voters > 0 &&
      sample.reachableVoters < Math.floor(sample.voters / 2) + 1 &&
      sample.committed !== true;
    // A loss is a state: it counts when the next sample still shows it (or no sample follows). One sample in which
    // all five healthy voters of a scale-up "did not answer" (the witness itself starved on two loaded cores) failed
    // a lifecycle run; a loss Quorum's own action causes (a removal) outlasts the next 250 ms sample.
    return this.samples.filter(
      (sample, index) =>
        sample.at >= from &&
        sample.at <= to &&
        lost(sample) &&
        (index === this.samples.length - 1 || lost(this.samples[index + 1])),
    );
  }

  leaderless(from = 0, to = Infinity): QuorumSample[] {
    return this.samples.filter(
      (sample) => sample.at >= from && sample.at <= to && sample.voters > 0 && sample.leaderless,
    );
  }

  /** Longest run of consecutive blind samples, in ms. */
  longestBlindMs(): number {
    let longest = 0;
    let start: number | undefined;
    for (const sample of this.samples) {
      if (sample.voters < 0) {
        start ??= sample.at;
        longest = Math.max(longest, sample.at - start);
      } else start = undefined;
    }
    return longest;
  }

  private async run(): Promise<void> {
    let lastRefresh = 0;
    while (!this.stopped) {
      const started = Date.now();
      if (started - lastRefresh > 1_000) {
        await this.workload.refresh().catch(() => undefined);
        lastRefresh = started;
      }
      await this.sample().catch(() =>
        this.samples.push({
          at: Date.now(),
          voters: -1,
          reachableVoters: -1,
          healthyVoters: -1,
          leaderless: false,
          members: [],
        }),
      );
      await sleep(Math.max(0, 250 - (Date.now() - started)));
    }
  }

  /** A linearizable read through whichever member answers, within 1 s: etcd serves it only with a quorum behind it. */
  private async probe(): Promise<boolean> {
    const endpoints = this.workload.endpoints();
    const key = endpoints.join(",");
    if (!this.probeClient || key !== this.probeEndpoints) {
      this.probeClient?.close();
      this.probeClient = this.workload.kvClient({ deadlineMs: 1_000 });
      this.probeEndpoints = key;
    }
    try {
      await this.probeClient.get("e2e/quorum-monitor-probe").string();
      return true;
    } catch {
      return false;
    }
  }

  private async sample(): Promise<void> {
    const endpoints = this.workload.endpoints();
    if (endpoints.length === 0 || !this.workload.credentials) return;
    const key = endpoints.join(",");
    if (!this.client || key !== this.clientEndpoints) {
      await this.client?.close();
      this.client = createEtcdClusterClient({
        endpoints,
        credentials: this.workload.credentials,
        callDeadlineMs: 1_000,
        context: "e2e quorum monitor",
        tunnel: observerSidePort,
      });
      this.clientEndpoints = key;
    }
    const listed: EtcdMember[] = await this.client.listMembers();
    let statuses = await this.client.memberStatuses(listed);
    // etcd (3.4 to 3.7; 3.6 and 3.7 read a request with `linearizable` set through the leader, which this monitor
    // does not send) serves the member list from the answering member's own state, so a member that was just removed
    // may still list itself and its old peers. The leader's list is the membership that counts for quorum.
    const leaderStatus = statuses.find((status) => status.reachable && status.leader && status.endpoint);
    let members = listed;
    if (leaderStatus?.endpoint) {
      members = await this.leaderClient(leaderStatus.endpoint)
        .listMembers()
        .catch(() => listed);
      const missing = members.filter((member) => !statuses.some((status) => status.memberId === member.id));
      if (missing.length > 0) statuses = [...statuses, ...(await this.client.memberStatuses(missing))];
    }
    const statusOf = (id: string) => statuses.find((candidate) => candidate.memberId === id);
    const healthy = (id: string) => {
      const status = statusOf(id);
      return status !== undefined && status.reachable && status.errors.length === 0;
    };
    const voters = members.filter((member) => !member.learner);
    const reachable = statuses.filter((status) => status.reachable);
    const reachableVoters = voters.filter((voter) => statusOf(voter.id)?.reachable).length;
    const committed =
      voters.length > 0 && reachableVoters < Math.floor(voters.length / 2) + 1 ? await this.probe() : undefined;
    this.samples.push({
      at: Date.now(),
      voters: voters.length,
      reachableVoters,
      ...(committed === undefined ? {} : { committed }),
      healthyVoters: voters.filter((voter) => healthy(voter.id)).length,
      leaderless: reachable.length > 0 && reachable.every((status) => !status.leaderId || status.leaderId === "0"),
      members: members.map((member) => ({
        id: member.id,
        name: member.name,
        learner: member.learner,
        healthy: healthy(member.id),
      })),
    });
  }
}

export interface TrafficRequest {
  at: number;
  ok: boolean;
  ms: number;
  /** The first attempt failed on a dropped connection and the retry was answered. */
  retried: boolean;
  error?: string;
}

/** Connection-level failures: the request may not have reached an apiserver, or its answer was cut off. */
const DROPPED_CONNECTION =
  /ECONNRESET|ECONNREFUSED|socket hang up|EPIPE|socket disconnected before secure TLS connection/;

/**
 * A workload API client going through the load balancer: one request every 50 ms (a ratio is asserted to the
 * percent, so a short operation still needs a few hundred requests), alternately creating a
 * ConfigMap (a write that needs an etcd quorum) and listing ConfigMaps (a quorum read). Each request opens a new
 * connection, so each is routed by the load balancer's current view of healthy backends. Like client-go, a request
 * whose connection was dropped is retried once (the create reuses its name, so an AlreadyExists answer means the
 * first attempt was committed); anything else — an error status, a timeout — is a failure.
 */
export class TrafficClient {
  readonly requests: TrafficRequest[] = [];
  private stopped = false;
  private loop: Promise<void> | undefined;
  private counter = 0;

  constructor(private readonly config: { server: string; caPem: string; certPem: string; keyPem: string }) {}

  start(): void {
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  between(from: number, to: number): { total: number; ok: number; ratio: number; retried: number; errors: string[] } {
    const window = this.requests.filter((entry) => entry.at >= from && entry.at <= to);
    const ok = window.filter((entry) => entry.ok).length;
    return {
      total: window.length,
      ok,
      ratio: window.length === 0 ? 1 : ok / window.length,
      retried: window.filter((entry) => entry.retried).length,
      errors: window.filter((entry) => !entry.ok).map((entry) => entry.error ?? "?"),
    };
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const started = Date.now();
      const n = this.counter++;
      const attempt = () =>
        n % 2 === 0
          ? this.send("POST", "/api/v1/namespaces/default/configmaps", {
              apiVersion: "v1",
              kind: "ConfigMap",
              metadata: { name: `e2e-traffic-${n}` },
              data: { n: String(n) },
            })
          : this.send("GET", "/api/v1/namespaces/default/configmaps?limit=5");
      let result = await attempt();
      let retried = false;
      if (!result.ok && DROPPED_CONNECTION.test(result.error ?? "")) {
        await sleep(100);
        const second = await attempt();
        retried = true;
        result =
          second.ok || second.status === 409
            ? { ok: true }
            : { ok: false, error: `${result.error}; retry: ${second.error}` };
      }
      this.requests.push({
        at: started,
        ms: Date.now() - started,
        retried,
        ok: result.ok,
        ...(result.error ? { error: result.error } : {}),
      });
      await sleep(Math.max(0, 50 - (Date.now() - started)));
    }
  }

  private send(
    method: "GET" | "POST",
    path: string,
    body?: unknown,
  ): Promise<{ ok: boolean; status?: number; error?: string }> {
    const url = new URL(path, this.config.server);
    return new Promise((resolve) => {
      const req = request(
        url,
        {
          method,
          ca: this.config.caPem,
          cert: this.config.certPem,
          key: this.config.keyPem,
          agent: false,
          timeout: 5_000,
          headers: { "Content-Type": "application/json", Accept: "application/json" },
        },
        (response) => {
          let text = "";
          response.setEncoding("utf8");
          response.on("data", (chunk: string) => (text += chunk));
          response.on("end", () => {
            const status = response.statusCode ?? 0;
            resolve(
              status >= 200 && status < 300
                ? { ok: true, status }
                : { ok: false, status, error: `HTTP ${status}: ${text.slice(0, 200)}` },
            );
          });
          response.on("error", (error) => resolve({ ok: false, error: error.message }));
        },
      );
      req.on("timeout", () => req.destroy(new Error("no answer within 5 s")));
      req.on("error", (error) => resolve({ ok: false, error: error.message }));
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
  }
}
