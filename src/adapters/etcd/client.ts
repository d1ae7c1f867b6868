// EtcdClusterClient on etcd3 1.1.2, shaped around that library's pitfalls (FACTS.md):
// - `dialTimeout` is never read, so every call carries a gRPC deadline, plus a timer of our own in case a
//   call never settles (a SIGSTOPped member accepts TCP but never finishes the TLS handshake);
// - an Etcd3 client sends each call to a random host, so there is one client per endpoint and per-member
//   calls go to that member's client;
// - default fault handling retries 3 times and opens a per-host circuit breaker: both are replaced by a
//   pass-through policy, so one dead member costs one deadline, not three, and is never skipped silently;
// - the client may be kept across reconciles (see pool.ts), so an endpoint whose call failed in transport
//   (no answer within the deadline, connection refused or reset) gets a new Etcd3 on its next call: a channel
//   left half-open by a SIGSTOPped or restarted member must never make later rounds slower than one deadline;
// - with a tunnel (spec.etcd.access APIServerProxy, apiserver-tunnel.ts) every endpoint, advertised client URLs
//   included, is dialled at the tunnel's loopback address, and the member's serving certificate is still checked for
//   the endpoint's own host: grpc-js's `grpc.ssl_target_name_override` sets the TLS servername and the name
//   checkServerIdentity compares with the certificate (an IP is matched against its IP SANs). Keys stay the
//   endpoints' own URLs, so status and errors name the member, not 127.0.0.1;
// - a connection that answered is watched (connection-watch.ts): when it closes, options.onConnectionLost names the
//   endpoint, so a killed member is looked at at once rather than at the next poll.
import { Etcd3, GRPCCancelledError, GRPCDeadlineExceededError, GRPCUnavailableError, type IOptions } from "etcd3";
import { EndpointUnreachableError, EtcdOperationError } from "../errors.ts";
import { normalizeEndpoint } from "./endpoints.ts";
import { watchReadyConnection } from "./connection-watch.ts";
import { classifyRefusal, EtcdRetryLaterError } from "../../ports/etcd.ts";
import { errorMessage } from "../kube/log.ts";
import type {
  AddMemberOptions,
  EtcdAlarm,
  EtcdClientOptions,
  EtcdClusterClient,
  EtcdDialTarget,
  EtcdMember,
  EtcdMemberStatus,
  EtcdTunnel,
  ListMembersOptions,
  PromoteResult,
} from "./types.ts";

type FaultPolicy = NonNullable<NonNullable<IOptions["faultHandling"]>["global"]>;

// cockatiel's NoopPolicy, written out so that Quorum does not import a transitive dependency of etcd3.
const passThroughPolicy = {
  onSuccess: () => ({ dispose() {} }),
  onFailure: () => ({ dispose() {} }),
  execute: async <T>(fn: (context: { signal: AbortSignal }) => PromiseLike<T> | T) =>
    fn({ signal: new AbortController().signal }),
} as unknown as FaultPolicy;

// etcd's own messages (etcdserver/api/v3rpc/rpctypes), matched by substring because gRPC prefixes a code.
const ETCD_MEMBER_NOT_FOUND = "etcdserver: member not found";
const ETCD_LEARNER_NOT_READY = "etcdserver: can only promote a learner member which is in sync with leader";
const ETCD_MEMBER_NOT_LEARNER = "etcdserver: can only promote a learner member";
const ETCD_PEER_URL_EXISTS = "etcdserver: Peer URLs already exists";
// etcd derives a new member's ID from its peer URLs and the add time in whole seconds, so a retried add
// within the same second collides on the ID instead of the peer URLs.
const ETCD_MEMBER_ID_EXISTS = "etcdserver: member ID already exist";

class DeadlineError extends Error {}
/** A transport failure of one call, told with the member's endpoint, the path and the fix. */
class MemberUnreachableError extends Error {
  constructor(
    message: string,
    /** What went wrong without the endpoint and fix, for a list that names the endpoints and the fix itself. */
    readonly detail: string,
    options: { cause: unknown },
  ) {
    super(message, options);
  }
}

/** The longest a first-answer call waits on one endpoint before asking the others (a healthy call takes a few ms). */
const MAX_HEDGE_MS = 200;

/** One member's Etcd3, counted so that a failed one is closed only once no call is using it any more. */
interface EndpointConnection {
  etcd: Etcd3;
  callsInFlight: number;
  /** No longer handed out; closed when its last call settles. */
  retired: boolean;
  open: boolean;
  /** A watch on its connection is armed (options.onConnectionLost; connection-watch.ts). */
  watching: boolean;
}

export function createEtcdClusterClient(options: EtcdClientOptions): EtcdClusterClient {
  return new Etcd3ClusterClient(options);
}

class Etcd3ClusterClient implements EtcdClusterClient {
  private readonly connections = new Map<string, EndpointConnection>();
  private readonly seedEndpoints: string[];
  private readonly context: string;
  private closed = false;
  /** Client URL of the member that last reported itself leader; writes and first-answer reads prefer it. */
  private leaderEndpoint?: string;
  /** The endpoint that gave the last first answer; asked first when no leader is known. */
  private lastAnswered?: string;
  /** How long a first-answer call waits on the preferred endpoint before asking the others too. */
  private readonly hedgeAfterMs: number;
  private readonly tunnel: EtcdTunnel | undefined;

  constructor(private readonly options: EtcdClientOptions) {
    if (!(options.callDeadlineMs > 0)) {
      throw new Error(`etcd client: callDeadlineMs must be positive (got ${options.callDeadlineMs})`);
    }
    this.seedEndpoints = unique(options.endpoints.map(normalizeEndpoint));
    this.context = options.context ?? "etcd";
    this.hedgeAfterMs = Math.min(MAX_HEDGE_MS, options.callDeadlineMs / 10);
    this.tunnel = options.tunnel?.open();
  }

  async listMembers(options: ListMembersOptions = {}): Promise<EtcdMember[]> {
    const serializable = options.serializable === true;
    const { value } = await this.firstAnswer(
      serializable ? "member list (serializable)" : "member list",
      (client, deadline) => client.cluster.memberList({ linearizable: !serializable }, { deadline }),
    );
    return value.members.map(toMember);
  }

  async memberStatuses(members?: EtcdMember[]): Promise<EtcdMemberStatus[]> {
    const listed = members ?? (await this.listMembers());
    const statuses = await Promise.all(listed.map((member) => this.statusOf(member)));
    const leader = statuses.find((status) => status.leader && status.endpoint);
    // A full round is the freshest word on who leads; a kept client must not send writes to a leader of the past.
    this.leaderEndpoint = leader?.endpoint;
    return statuses;
  }

  async alarms(): Promise<EtcdAlarm[]> {
    // An empty AlarmRequest is action GET, member 0, alarm NONE: every active alarm of the cluster.
    const { value } = await this.firstAnswer("alarm list", (client, deadline) =>
      client.maintenance.alarm({}, { deadline }),
    );
    return value.alarms.map((alarm) => ({
      memberId: String(alarm.memberID),
      alarm: String(alarm.alarm).toUpperCase(),
    }));
  }

  async addMember(peerURLs: string[], { learner }: AddMemberOptions): Promise<EtcdMember> {
    const endpoint = await this.writeEndpoint();
    try {
      const response = await this.call(endpoint, (client, deadline) =>
        client.cluster.memberAdd({ peerURLs, isLearner: learner }, { deadline }),
      );
      return toMember(response.member);
    } catch (error) {
      const message = errorMessage(error);
      if (message.includes(ETCD_PEER_URL_EXISTS) || message.includes(ETCD_MEMBER_ID_EXISTS)) {
        const existing = (await this.listMembers()).find((member) => sameURLs(member.peerURLs, peerURLs));
        if (existing) return existing;
      }
      throw this.operationError("member add", endpoint, error, addMemberHint(message));
    }
  }

  async promoteLearner(memberId: string): Promise<PromoteResult> {
    const endpoint = await this.writeEndpoint();
    try {
      await this.call(endpoint, (client, deadline) => client.cluster.memberPromote({ ID: memberId }, { deadline }));
      return { promoted: true };
    } catch (error) {
      const message = errorMessage(error);
      // Longer message first: "not in sync" contains the "not a learner" text as a prefix.
      if (message.includes(ETCD_LEARNER_NOT_READY)) return { promoted: false, reason: "not caught up" };
      // A crash after a successful promote leaves a voter: the promotion is done.
      if (message.includes(ETCD_MEMBER_NOT_LEARNER)) return { promoted: true };
      throw this.operationError(
        `member promote ${memberId}`,
        endpoint,
        error,
        message.includes(ETCD_MEMBER_NOT_FOUND)
          ? "the member was removed; observe the member list again before promoting"
          : "retry on the next reconcile",
      );
    }
  }

  async removeMember(memberId: string): Promise<{ removed: boolean }> {
    const endpoint = await this.writeEndpoint();
    try {
      await this.call(endpoint, (client, deadline) => client.cluster.memberRemove({ ID: memberId }, { deadline }));
      return { removed: true };
    } catch (error) {
      // Also what a retry after a crash between "remove member" and "delete Machine" sees.
      if (errorMessage(error).includes(ETCD_MEMBER_NOT_FOUND)) return { removed: false };
      throw this.operationError(
        `member remove ${memberId}`,
        endpoint,
        error,
        "etcd refuses removals that would leave too few started members; check the other members' health",
      );
    }
  }

  async moveLeader(toMemberId: string): Promise<void> {
    const statuses = await this.memberStatuses();
    const leader = statuses.find((status) => status.leader);
    if (!leader?.endpoint) {
      const seen = statuses.map((s) => `${s.memberId}: ${s.reachable ? "follower" : s.errors.join(", ")}`).join("; ");
      // An election in progress (or quorum lost, which the planner sees in the member list): not yet, not a failure.
      throw new EtcdRetryLaterError(
        `move leader to ${toMemberId}`,
        "no-leader",
        1_000,
        `no reachable member reports itself leader (${seen})`,
      );
    }
    if (leader.memberId === toMemberId) return;
    try {
      await this.call(leader.endpoint, (client, deadline) =>
        client.maintenance.moveLeader({ targetID: toMemberId }, { deadline }),
      );
      this.leaderEndpoint = undefined;
    } catch (error) {
      throw this.operationError(
        `move leader ${leader.memberId} -> ${toMemberId}`,
        leader.endpoint,
        error,
        "the target must be a started, caught-up voter; retry after it is healthy",
      );
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const connection of this.connections.values()) {
      connection.retired = true;
      closeConnection(connection);
    }
    this.connections.clear();
    await this.tunnel?.close();
  }

  private async statusOf(member: EtcdMember): Promise<EtcdMemberStatus> {
    const endpoint = member.clientURLs.length > 0 ? normalizeEndpoint(member.clientURLs[0]) : undefined;
    if (!endpoint) {
      return {
        memberId: member.id,
        reachable: false,
        leader: false,
        errors: ["member has not started yet (no client URLs)"],
      };
    }
    try {
      const status = await this.call(endpoint, (client, deadline) => client.maintenance.status({ deadline }));
      const answeredAs = String(status.header.member_id);
      const errors = [...status.errors];
      if (answeredAs !== member.id) {
        errors.push(`client URL ${endpoint} answered as member ${answeredAs}, not ${member.id}`);
      }
      return {
        memberId: member.id,
        endpoint,
        reachable: answeredAs === member.id,
        leader: answeredAs === member.id && String(status.leader) === answeredAs,
        leaderId: String(status.leader),
        raftTerm: Number(status.raftTerm),
        raftIndex: Number(status.raftIndex),
        raftAppliedIndex: Number(status.raftAppliedIndex),
        dbSize: Number(status.dbSize),
        dbSizeInUse: Number(status.dbSizeInUse),
        version: status.version,
        learner: status.isLearner,
        errors,
      };
    } catch (error) {
      return { memberId: member.id, endpoint, reachable: false, leader: false, errors: [this.describe(error)] };
    }
  }

  /** Where a write goes: the last known leader (saves etcd a forward), else the first member to answer. */
  private async writeEndpoint(): Promise<string> {
    if (this.leaderEndpoint) return this.leaderEndpoint;
    // Any member that answers will do (etcd forwards a write to its leader), so the cheap serializable read.
    const { endpoint } = await this.firstAnswer("member list", (client, deadline) =>
      client.cluster.memberList({ linearizable: false }, { deadline }),
    );
    return endpoint;
  }

  /**
   * A hedged call: asks the member most likely to answer (the leader, else the one that answered last) and the
   * other endpoints only if it fails or has not answered within a tenth of the deadline (at most 200 ms). A healthy
   * round thus makes one call instead of one per endpoint (each costs the controller CPU: bench etcd-cost), a
   * refusing endpoint costs nothing and a hung one the hedge delay; calls still running are cut off by their deadlines.
   */
  private async firstAnswer<T>(
    what: string,
    fn: (client: Etcd3, deadline: Date) => Promise<T>,
  ): Promise<{ endpoint: string; value: T }> {
    const endpoints = this.seedEndpoints;
    const preferred =
      [this.leaderEndpoint, this.lastAnswered].find(
        (endpoint) => endpoint !== undefined && endpoints.includes(endpoint),
      ) ?? endpoints[0];
    if (preferred === undefined)
      throw new EndpointUnreachableError(
        `${this.context} (${what})`,
        new Map(),
        this.options.callDeadlineMs,
        this.tunnel?.fix,
      );
    const failures = new Map<string, string>();
    const ask = async (endpoint: string) => {
      try {
        return { endpoint, value: await this.call(endpoint, fn) };
      } catch (error) {
        failures.set(endpoint, error instanceof MemberUnreachableError ? error.detail : this.describe(error));
        throw error;
      }
    };
    let openGate = () => {};
    const gate = new Promise<void>((resolve) => {
      openGate = resolve;
    });
    const first = ask(preferred);
    first.catch(openGate);
    const others = endpoints.filter((endpoint) => endpoint !== preferred);
    const hedge = others.length > 0 ? setTimeout(openGate, this.hedgeAfterMs) : undefined;
    try {
      const answer = await Promise.any([first, ...others.map((endpoint) => gate.then(() => ask(endpoint)))]);
      this.lastAnswered = answer.endpoint;
      return answer;
    } catch {
      throw new EndpointUnreachableError(
        `${this.context} (${what})`,
        failures,
        this.options.callDeadlineMs,
        this.tunnel?.fix,
      );
    } finally {
      clearTimeout(hedge);
    }
  }

  /** One call to one endpoint, bounded by the per-call deadline whatever the transport does. */
  private async call<T>(endpoint: string, fn: (client: Etcd3, deadline: Date) => Promise<T>): Promise<T> {
    const startedAt = Date.now();
    const via = this.tunnel && !this.connections.has(endpoint) ? await this.tunnel.dial(endpoint) : undefined;
    const connection = this.connectionTo(endpoint, via);
    const deadlineMs = this.options.callDeadlineMs;
    const deadline = new Date(startedAt + deadlineMs);
    let timer: NodeJS.Timeout | undefined;
    const backstop = new Promise<never>((_, reject) => {
      // gRPC enforces `deadline` itself; this only catches a call that never settles at all.
      timer = setTimeout(() => reject(new DeadlineError(`no answer within ${deadlineMs} ms`)), deadlineMs + 50);
    });
    connection.callsInFlight++;
    try {
      const value = await Promise.race([fn(connection.etcd, deadline), backstop]);
      this.watchConnection(endpoint, connection);
      return value;
    } catch (error) {
      if (!isTransportFailure(error)) throw error;
      this.retire(endpoint, connection);
      const cause = this.describe(error);
      // Through a tunnel the detail is the tunnel's word (pod, API server's answer); directly it is the socket's.
      const detail = this.tunnel ? this.tunnel.explain(endpoint, startedAt, cause) : cause;
      throw new MemberUnreachableError(this.unreachable(endpoint, detail), detail, { cause: error });
    } finally {
      clearTimeout(timer);
      connection.callsInFlight--;
      // Also cuts off a call the backstop gave up on, which would otherwise hold its channel open.
      if (connection.retired && connection.callsInFlight === 0) closeConnection(connection);
    }
  }

  /**
   * After an answer: tells options.onConnectionLost when this connection, ready now, closes or fails. Armed again
   * after the next answer once it fired, so each connection that answered is watched once at a time.
   */
  private watchConnection(endpoint: string, connection: EndpointConnection): void {
    const onLost = this.options.onConnectionLost;
    if (!onLost || connection.watching || !connection.open || connection.retired) return;
    connection.watching = watchReadyConnection(connection.etcd, () => {
      connection.watching = false;
      if (this.closed || !connection.open || connection.retired) return;
      onLost(endpoint);
    });
  }

  /**
   * Stops handing out an endpoint's Etcd3 after a transport failure; the next call to it opens a new one.
   * Other calls still running on the old one (a first-answer call cut off by its deadline) finish first.
   */
  private retire(endpoint: string, connection: EndpointConnection): void {
    connection.retired = true;
    if (this.connections.get(endpoint) === connection) this.connections.delete(endpoint);
    if (this.leaderEndpoint === endpoint) this.leaderEndpoint = undefined;
  }

  /** The endpoint's kept connection, or a new one to its URL or, with a tunnel, to `via`. */
  private connectionTo(endpoint: string, via: EtcdDialTarget | undefined): EndpointConnection {
    if (this.closed) throw new Error(`${this.context}: client is closed`);
    let connection = this.connections.get(endpoint);
    if (!connection) {
      if (this.tunnel && !via) throw new Error(`${this.context}: ${endpoint} was not dialled through the tunnel`);
      const credentials = this.options.credentials;
      const etcd = new Etcd3({
        hosts: [via?.url ?? endpoint],
        ...(via ? { grpcOptions: { "grpc.ssl_target_name_override": via.servername } } : {}),
        credentials: credentials && {
          rootCertificate: Buffer.from(credentials.caPem),
          certChain: Buffer.from(credentials.certPem),
          privateKey: Buffer.from(credentials.keyPem),
        },
        defaultCallOptions: () => ({ deadline: Date.now() + this.options.callDeadlineMs }),
        faultHandling: { host: () => passThroughPolicy, global: passThroughPolicy },
      });
      connection = { etcd, callsInFlight: 0, retired: false, open: true, watching: false };
      this.connections.set(endpoint, connection);
    }
    return connection;
  }

  /**
   * A member that did not answer, told with its endpoint, the path and the fix: Direct names the setting that avoids
   * dialling port 2379; a tunnel names the pod and what the API server or kubelet answered.
   */
  private unreachable(endpoint: string, detail: string): string {
    if (this.tunnel) return detail;
    return (
      `etcd member at ${endpoint} not reachable from the management cluster (${detail}); if only the API server ` +
      "endpoint is reachable, set spec.etcd.access: APIServerProxy"
    );
  }

  private describe(error: unknown): string {
    if (error instanceof DeadlineError || error instanceof MemberUnreachableError) return error.message;
    const message = errorMessage(error);
    // gRPC's deadline text ("4 DEADLINE_EXCEEDED: Deadline exceeded after 1.002s,LB pick: ...") is noise to a user.
    if (/DEADLINE_EXCEEDED|deadline exceeded/i.test(message))
      return `no answer within ${this.options.callDeadlineMs} ms`;
    return message.replace(/^\w*Error: /, "");
  }

  /**
   * A refusal etcd lifts by itself (removal window, not leader, no leader) becomes the port's typed "not yet"; the
   * controller never reads etcd's words. Anything else is a failure with a hint.
   */
  private operationError(operation: string, endpoint: string, error: unknown, hint: string): Error {
    if (error instanceof EndpointUnreachableError) return error;
    const etcdMessage = this.describe(error);
    const notYet = classifyRefusal(etcdMessage);
    if (notYet)
      return new EtcdRetryLaterError(`${operation} via ${endpoint}`, notYet.refusal, notYet.retryAfterMs, etcdMessage, {
        cause: error,
      });
    return new EtcdOperationError(operation, endpoint, etcdMessage, hint, { cause: error });
  }
}

function closeConnection(connection: EndpointConnection): void {
  if (!connection.open) return;
  connection.open = false;
  connection.etcd.close();
}

/**
 * The member did not answer (deadline, refused or reset connection, failed handshake), as opposed to an answer
 * from etcd itself: etcd's refusals ("etcdserver: unhealthy cluster") also travel as UNAVAILABLE, but they
 * prove the connection works.
 */
function isTransportFailure(error: unknown): boolean {
  if (error instanceof DeadlineError || error instanceof MemberUnreachableError) return true;
  const transport =
    error instanceof GRPCDeadlineExceededError ||
    error instanceof GRPCUnavailableError ||
    error instanceof GRPCCancelledError;
  return transport && !errorMessage(error).includes("etcdserver:");
}

function addMemberHint(message: string): string {
  if (message.includes("unhealthy cluster")) {
    return "etcd refuses new members while a voter is unhealthy or right after the cluster started; retry once all voters are healthy";
  }
  if (message.includes("too many learner"))
    return "etcd allows one learner at a time; promote or remove the existing learner first";
  return "retry on the next reconcile";
}

function toMember(member: {
  ID: string;
  name: string;
  peerURLs: string[];
  clientURLs: string[];
  isLearner: boolean;
}): EtcdMember {
  return {
    id: String(member.ID),
    name: member.name,
    peerURLs: [...member.peerURLs],
    clientURLs: [...member.clientURLs],
    learner: Boolean(member.isLearner),
  };
}

function sameURLs(a: string[], b: string[]): boolean {
  const left = unique(a.map(normalizeEndpoint)).sort();
  const right = unique(b.map(normalizeEndpoint)).sort();
  return left.length === right.length && left.every((url, i) => url === right[i]);
}

function unique<T>(values: T[]): T[] {
  return [...new Set(values)];
}
