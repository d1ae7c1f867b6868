// Real etcd clusters for tests: each member on its own loopback address (127.a.b.N, a random free /24) with
// the standard ports 2379 (client) and 2380 (peer), TLS everywhere with a generated CA.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Etcd3, type IMember } from "etcd3";
import {
  createCA,
  issueCertificate,
  oneDay,
  validFor,
  type CertificateAuthority,
} from "../../src/adapters/certs/pki.ts";
import {
  makeTempDir,
  removeTempDir,
  startProcess,
  waitUntilReady,
  type ManagedProcess,
  type ProcessExit,
} from "./processes.ts";
import { httpGet, reserveLoopbackSubnet, type LoopbackSubnet } from "./net.ts";
import { etcdBinary } from "./tools.ts";

export const etcdClientPort = 2379;
export const etcdPeerPort = 2380;

/** Every member certificate carries this DNS name, so clients can verify by name instead of by IP. */
export const etcdTlsServerName = "localhost";

export interface EtcdClusterOptions {
  /** Voting members started together (default 3). */
  members?: number;
  /** TLS with client-certificate auth on client and peer URLs (default true). */
  tls?: boolean;
  /** Prefix of member names (default "m": m1, m2, ...). */
  namePrefix?: string;
  /** Readiness timeout per member (default 60 s; the test machine is shared). */
  readyTimeoutMs?: number;
  /** Extra etcd flags for every member, e.g. ["--election-timeout=2000"]. */
  extraArgs?: string[];
  /** Sign member certificates with this CA (e.g. the one in a cluster's `<cluster>-etcd` Secret). */
  ca?: CertificateAuthority;
  /** Loopback addresses to reserve, for members added later (default members + 2). */
  capacity?: number;
  /** The etcd binary (default: QUORUM_ETCD or bin/etcd), e.g. builtBinary("etcd-3.6") for the 1.36 pin. */
  binary?: string;
}

/** What a client needs to talk to the cluster: PEM strings (empty when the cluster runs without TLS). */
export interface EtcdClientCredentials {
  caPem: string;
  certPem: string;
  keyPem: string;
  /** Name to verify member certificates against (they all carry it). */
  serverName: string;
}

export interface EtcdMember {
  readonly name: string;
  readonly address: string;
  readonly clientURL: string;
  readonly peerURL: string;
  readonly dataDir: string;
  readonly logFile: string;
  /** The running process, if any. */
  process(): ManagedProcess | undefined;
  pid(): number | undefined;
  isRunning(): boolean;
  /**
   * Starts (or restarts, keeping its data dir) and waits until /health says true. `learner` only documents
   * the caller's intent: learners answer /health like voters.
   */
  start(options?: { learner?: boolean }): Promise<void>;
  /** SIGTERM, then SIGKILL after the grace period. */
  stop(): Promise<ProcessExit | undefined>;
  /** SIGKILL: a crash. */
  kill(): Promise<ProcessExit | undefined>;
  /** SIGSTOP, resolving once the process is stopped: it keeps its sockets but answers nothing, like a hung machine. */
  pause(): Promise<void>;
  /** SIGCONT after pause(). */
  resume(): void;
}

export interface EtcdCluster {
  readonly tls: boolean;
  /** Members created by the harness, including added and removed ones. */
  readonly members: readonly EtcdMember[];
  /** The CA that signed every certificate (use it to sign more clients). Undefined without TLS. */
  readonly ca: CertificateAuthority | undefined;
  readonly credentials: EtcdClientCredentials;
  readonly subnet: LoopbackSubnet;
  /** Client URLs of the members started by startEtcdCluster and addMember, minus removed ones. */
  endpoints(): string[];
  member(name: string): EtcdMember;
  /**
   * A client with the cluster's credentials and a deadline on every call (etcd3 ignores dialTimeout).
   * Pass endpoints to pin it to some members (etcd3 sends each call to a random host). Closed on stop().
   */
  client(options?: { endpoints?: string[]; callTimeoutMs?: number }): Etcd3;
  /**
   * Adds a member to the membership (as a learner unless `learner: false`) without starting it; call
   * `member.start()` next. Retries the "unhealthy cluster" refusal etcd gives right after a cluster starts.
   */
  addMember(options?: { learner?: boolean; timeoutMs?: number; name?: string }): Promise<EtcdMember>;
  /** Promotes a learner, retrying while etcd says it is not yet in sync with the leader. */
  promoteMember(member: EtcdMember, options?: { timeoutMs?: number }): Promise<void>;
  /** Removes a member from the membership, then stops its process. */
  removeMember(member: EtcdMember): Promise<void>;
  /** The membership as etcd reports it. */
  memberList(): Promise<IMember[]>;
  /** The etcd member ID of a harness member (looked up by peer URL; works for unstarted learners too). */
  memberId(member: EtcdMember): Promise<string>;
  /** Stops every member and client, releases the loopback subnet and removes the data dirs. Idempotent. */
  stop(): Promise<void>;
}

interface MemberSpec {
  name: string;
  hostNumber: number;
}

export async function startEtcdCluster(options: EtcdClusterOptions = {}): Promise<EtcdCluster> {
  const memberCount = options.members ?? 3;
  const tls = options.tls ?? true;
  const namePrefix = options.namePrefix ?? "m";
  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  if (!Number.isInteger(memberCount) || memberCount < 1 || memberCount > 200) {
    throw new Error(`startEtcdCluster: members must be an integer 1..200 (got ${memberCount})`);
  }
  const binary = options.binary ?? etcdBinary();
  // Room for members added later (learners, replacements) in the same /24.
  const subnet = await reserveLoopbackSubnet({
    hosts: Math.max(options.capacity ?? 0, memberCount + 2),
    ports: [etcdClientPort, etcdPeerPort],
  });
  const rootDir = makeTempDir(`etcd-${subnet.prefix}`);
  const scheme = tls ? "https" : "http";
  const clusterToken = `quorum-test-${randomBytes(6).toString("hex")}`;

  const ca = !tls ? undefined : (options.ca ?? (await createCA(`etcd-ca ${subnet.prefix}.0/24`, validFor(7 * oneDay))));
  const credentials: EtcdClientCredentials = { caPem: "", certPem: "", keyPem: "", serverName: etcdTlsServerName };
  if (ca) {
    const client = await issueCertificate(ca, {
      commonName: "quorum-test-client",
      usages: "client",
      validity: validFor(oneDay),
    });
    credentials.caPem = ca.certPem;
    credentials.certPem = client.certPem;
    credentials.keyPem = client.keyPem;
  }

  const members: EtcdMember[] = [];
  const removed = new Set<EtcdMember>();
  const clients: Etcd3[] = [];
  let nextHostNumber = 1;
  let stopped = false;

  const memberPeerEntry = (name: string, hostNumber: number) =>
    `${name}=${scheme}://${subnet.address(hostNumber)}:${etcdPeerPort}`;

  const createMember = async (spec: MemberSpec, initialCluster: () => string, initialState: "new" | "existing") => {
    const address = subnet.address(spec.hostNumber);
    // A name can come back (a replacement Machine reusing it): its data dir is a new one, like a new disk.
    const memberDir = join(rootDir, `${spec.name}-${spec.hostNumber}`);
    const dataDir = join(memberDir, "data");
    mkdirSync(memberDir, { recursive: true });
    const logFile = join(memberDir, "etcd.log");
    const clientURL = `${scheme}://${address}:${etcdClientPort}`;
    const peerURL = `${scheme}://${address}:${etcdPeerPort}`;
    const tlsArgs: string[] = [];
    if (ca) {
      // Peers authenticate each other with the same certificate they serve with, hence "both" usages.
      const cert = await issueCertificate(ca, {
        commonName: spec.name,
        dnsNames: [etcdTlsServerName, spec.name],
        ipAddresses: [address],
        usages: "both",
        validity: validFor(oneDay),
      });
      writeFileSync(join(memberDir, "ca.crt"), ca.certPem);
      writeFileSync(join(memberDir, "member.crt"), cert.certPem);
      writeFileSync(join(memberDir, "member.key"), cert.keyPem, { mode: 0o600 });
      const file = (name: string) => join(memberDir, name);
      tlsArgs.push(
        `--cert-file=${file("member.crt")}`,
        `--key-file=${file("member.key")}`,
        `--trusted-ca-file=${file("ca.crt")}`,
        "--client-cert-auth",
        `--peer-cert-file=${file("member.crt")}`,
        `--peer-key-file=${file("member.key")}`,
        `--peer-trusted-ca-file=${file("ca.crt")}`,
        "--peer-client-cert-auth",
      );
    }
    let current: ManagedProcess | undefined;
    let everStarted = false;

    const member: EtcdMember = {
      name: spec.name,
      address,
      clientURL,
      peerURL,
      dataDir,
      logFile,
      process: () => current,
      pid: () => current?.pid,
      isRunning: () => current?.isRunning() ?? false,
      async start() {
        if (stopped) throw new Error(`etcd member ${spec.name}: its cluster was stopped; start a new cluster`);
        if (current?.isRunning()) return;
        const args = [
          `--name=${spec.name}`,
          `--data-dir=${dataDir}`,
          `--listen-client-urls=${clientURL}`,
          `--advertise-client-urls=${clientURL}`,
          `--listen-peer-urls=${peerURL}`,
          `--initial-advertise-peer-urls=${peerURL}`,
          `--initial-cluster=${initialCluster()}`,
          // Once a data dir exists etcd ignores the initial-cluster flags; "existing" is right for restarts.
          `--initial-cluster-state=${everStarted ? "existing" : initialState}`,
          `--initial-cluster-token=${clusterToken}`,
          "--logger=zap",
          "--log-outputs=stderr",
          ...tlsArgs,
          ...(options.extraArgs ?? []),
        ];
        everStarted = true;
        current = startProcess({
          name: `etcd member ${spec.name} (${address})`,
          command: binary,
          args,
          env: withoutEtcdVariables(process.env),
          logFile,
        });
        await waitUntilMemberReady(member, current);
      },
      stop: async () => current?.stop(10_000),
      kill: async () => current?.kill(),
      pause: async () => current?.pause(),
      resume: () => current?.resume(),
    };
    members.push(member);
    return member;
  };

  // /health is true once the member sees a leader and serves a linearizable read; learners answer it too (etcd 3.4.23,
  // 3.6.16 and 3.7.3: test/integration/etcd-rules.test.ts), while 3.6+'s /readyz fails for them ("non_learner").
  const waitUntilMemberReady = async (member: EtcdMember, proc: ManagedProcess) => {
    const url = `${member.clientURL}/health`;
    await waitUntilReady({
      process: proc,
      what: `GET ${url}`,
      timeoutMs: readyTimeoutMs,
      probe: async () => {
        const { status, body } = await httpGet(
          url,
          tls
            ? {
                ca: credentials.caPem,
                cert: credentials.certPem,
                key: credentials.keyPem,
                servername: credentials.serverName,
              }
            : {},
        );
        return status === 200 && /"health"\s*:\s*"true"/.test(body) ? true : `HTTP ${status}: ${body.trim()}`;
      },
    });
  };

  const initialSpecs: MemberSpec[] = [];
  for (let i = 0; i < memberCount; i++)
    initialSpecs.push({ name: `${namePrefix}${i + 1}`, hostNumber: nextHostNumber++ });
  const initialClusterFlag = initialSpecs.map((spec) => memberPeerEntry(spec.name, spec.hostNumber)).join(",");

  const cluster: EtcdCluster = {
    tls,
    members,
    ca,
    credentials,
    subnet,
    endpoints: () => members.filter((m) => !removed.has(m)).map((m) => m.clientURL),
    member(name) {
      const found = members.find((m) => m.name === name);
      if (!found)
        throw new Error(
          `etcd cluster ${subnet.prefix}.0/24 has no member ${name} (members: ${members.map((m) => m.name).join(", ")})`,
        );
      return found;
    },
    client(clientOptions = {}) {
      const callTimeoutMs = clientOptions.callTimeoutMs ?? 5_000;
      const client = new Etcd3({
        hosts: clientOptions.endpoints ?? cluster.endpoints(),
        ...(tls
          ? {
              credentials: {
                rootCertificate: Buffer.from(credentials.caPem),
                certChain: Buffer.from(credentials.certPem),
                privateKey: Buffer.from(credentials.keyPem),
              },
              grpcOptions: { "grpc.ssl_target_name_override": etcdTlsServerName },
            }
          : {}),
        defaultCallOptions: () => ({ deadline: Date.now() + callTimeoutMs }),
      });
      clients.push(client);
      return client;
    },
    async memberList() {
      return (await withAdminClient((c) => c.cluster.memberList({}))).members;
    },
    async memberId(member) {
      const found = (await cluster.memberList()).find((m) => m.peerURLs.includes(member.peerURL));
      if (!found) throw new Error(`etcd member ${member.name} (${member.peerURL}) is not in the membership`);
      return found.ID;
    },
    async addMember(addOptions = {}) {
      const learner = addOptions.learner ?? true;
      const spec: MemberSpec = {
        name: addOptions.name ?? `${namePrefix}${nextHostNumber}`,
        hostNumber: nextHostNumber++,
      };
      const peerURL = `${scheme}://${subnet.address(spec.hostNumber)}:${etcdPeerPort}`;
      const response = await retryUntil(
        `add etcd member ${spec.name} (${peerURL})${learner ? " as learner" : ""}`,
        addOptions.timeoutMs ?? 30_000,
        () => withAdminClient((c) => c.cluster.memberAdd({ peerURLs: [peerURL], isLearner: learner })),
        (error) => /unhealthy cluster|too many learner|timed out|deadline|unavailable/i.test(error.message),
      );
      // The new member must be told every current member and itself; unstarted members have no name yet.
      const initialCluster = response.members
        .map((m) => {
          const name =
            m.ID === response.member.ID
              ? spec.name
              : m.name || members.find((h) => m.peerURLs.includes(h.peerURL))?.name;
          return m.peerURLs.map((url) => `${name}=${url}`).join(",");
        })
        .join(",");
      return createMember(spec, () => initialCluster, "existing");
    },
    async promoteMember(member, promoteOptions = {}) {
      const id = await cluster.memberId(member);
      await retryUntil(
        `promote etcd learner ${member.name}`,
        promoteOptions.timeoutMs ?? 60_000,
        () => withAdminClient((c) => c.cluster.memberPromote({ ID: id })),
        // "can only promote a learner member which is in sync with leader" until it has caught up.
        (error) => /not in sync|in sync with leader|unhealthy|timed out|deadline|unavailable/i.test(error.message),
      );
    },
    async removeMember(member) {
      const id = await cluster.memberId(member);
      await retryUntil(
        `remove etcd member ${member.name}`,
        30_000,
        async () => {
          try {
            await withAdminClient((c) => c.cluster.memberRemove({ ID: id }));
          } catch (error) {
            // The member was in the list just before the first attempt, so "member not found" means this removal
            // was applied and its answer lost (a leader removing itself often answers too late): on a retry here, or
            // already on the first attempt, since etcd3 sends a call that lost its connection again to another
            // member by itself (a .ci/run failed on that on 2026-12-05). The member is gone as asked.
            if (!/member not found/i.test((error as Error).message)) throw error;
          }
        },
        (error) => /unhealthy|timed out|deadline|unavailable/i.test(error.message),
      );
      removed.add(member);
      await member.stop();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      for (const client of clients.splice(0)) client.close();
      await Promise.all(members.map((m) => m.stop()));
      subnet.release();
      removeTempDir(rootDir);
    },
  };

  const withClient = async <T>(endpoints: string[], callTimeoutMs: number, call: (client: Etcd3) => Promise<T>) => {
    const client = cluster.client({ endpoints, callTimeoutMs });
    try {
      return await call(client);
    } finally {
      client.close();
      clients.splice(clients.indexOf(client), 1);
    }
  };

  // A learner refuses membership calls ("rpc not supported for learner"; etcd 3.6+ with FAILED_PRECONDITION, which
  // etcd3 does not retry on another host, where 3.4 said UNAVAILABLE), and only etcd knows who is a learner now:
  // Quorum, the test or kubeadm may have promoted one. Learners serve status, so each running member is asked; one
  // that does not answer within 2 s stays a candidate (it may be a voter; the call's own deadline handles it).
  const voterEndpoints = async (): Promise<string[]> => {
    const running = cluster.endpoints().filter((url) => members.find((m) => m.clientURL === url)?.isRunning());
    const isLearner = await Promise.all(
      running.map((url) =>
        Promise.race([
          withClient([url], 2_000, async (client) => (await client.maintenance.status()).isLearner).catch(() => false),
          sleep(2_500).then(() => false),
        ]),
      ),
    );
    const voters = running.filter((_, i) => !isLearner[i]);
    return voters.length > 0 ? voters : running;
  };

  // Membership calls use a fresh client over the running voters each time: etcd3's per-host circuit breaker opens on
  // refusals such as "unhealthy cluster" and would fail every retry that follows.
  const withAdminClient = async <T>(call: (client: Etcd3) => Promise<T>): Promise<T> =>
    withClient(await voterEndpoints(), 10_000, call);

  try {
    const initialMembers: EtcdMember[] = [];
    for (const spec of initialSpecs) initialMembers.push(await createMember(spec, () => initialClusterFlag, "new"));
    // All members start together: none reports healthy before a quorum of them has elected a leader.
    await Promise.all(initialMembers.map((m) => m.start()));
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  return cluster;
}

async function retryUntil<T>(
  what: string,
  timeoutMs: number,
  attempt: () => Promise<T>,
  retriable: (error: Error) => boolean,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      const err = error as Error;
      if (!retriable(err) || Date.now() > deadline) {
        throw new Error(`${what} failed: ${err.message}`, { cause: error });
      }
      await sleep(500);
    }
  }
}

// An ETCD_* variable in the developer's environment would silently override the harness's flags.
function withoutEtcdVariables(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([key]) => !key.startsWith("ETCD_")));
}
