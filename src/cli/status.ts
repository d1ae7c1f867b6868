// `quorum status`: what a QuorumControlPlane's etcd looks like and what Quorum will do next, read only from the
// object's status, so a user needs no etcd certificates and no access to the workload cluster.
//
// renderStatus is pure (the tests feed it sample statuses); fetchControlPlane is the only I/O.
import type { KubeConfig } from "@kubernetes/client-node";
import { CONDITION, GROUP, KIND, LABEL_CLUSTER_NAME, PLURAL, SHORT_NAME, VERSION } from "../api/constants.ts";
import type { Condition, EtcdMemberStatus, QuorumControlPlane } from "../api/types.ts";
import { KubeApiError, KubeRest, resourcePath } from "../adapters/kube/rest.ts";

/** Conditions shown first, in this order; any others follow in the order the status lists them. */
const CONDITION_ORDER: string[] = [
  CONDITION.Available,
  CONDITION.EtcdClusterHealthy,
  CONDITION.MachinesReady,
  CONDITION.RollingOut,
  CONDITION.ScalingUp,
  CONDITION.ScalingDown,
  CONDITION.Remediating,
  CONDITION.Paused,
];

export interface RenderOptions {
  /** The reference time for "observed 12s ago"; passed in so rendering stays deterministic. */
  now: Date;
}

export function renderStatus(controlPlane: QuorumControlPlane, options: RenderOptions): string {
  const { metadata, spec, status } = controlPlane;
  const key = `${metadata.namespace ?? "default"}/${metadata.name}`;
  const cluster = metadata.labels?.[LABEL_CLUSTER_NAME];
  const lines: string[] = [];
  lines.push(`${KIND} ${key}${cluster ? ` (Cluster ${cluster})` : ""}, Kubernetes ${spec.version}`);

  if (!status) {
    lines.push("");
    lines.push(
      "No status yet: the controller has not reconciled this object. Check that the quorum-controller-manager",
    );
    lines.push("Deployment in quorum-system is running (kubectl -n quorum-system get pods) and read its logs.");
    return lines.join("\n") + "\n";
  }

  const desired = spec.replicas ?? 1;
  const upToDate = status.upToDateReplicas ?? status.updatedReplicas ?? 0;
  lines.push(
    `Machines: ${status.replicas ?? 0} of ${desired} desired, ${status.readyReplicas ?? 0} ready, ${upToDate} up to date` +
      `${status.unavailableReplicas ? `, ${status.unavailableReplicas} unavailable` : ""}`,
  );

  const etcd = status.etcd;
  const members = etcd?.members ?? [];
  const observed = etcd?.lastObserved
    ? `member list last changed ${etcd.lastObserved} (${ago(etcd.lastObserved, options.now)})`
    : "member list never observed";
  const quorum = etcd?.quorum;
  if (quorum) {
    const tolerance =
      quorum.voters > 0 && quorum.healthyVoters < quorum.quorumSize
        ? "QUORUM LOST: etcd accepts no writes until enough voters recover"
        : quorum.failuresTolerated === 0
          ? "tolerates NO further failure"
          : `tolerates ${plural(quorum.failuresTolerated, "failure")}`;
    lines.push(
      `etcd: ${quorum.healthyVoters} of ${plural(quorum.voters, "voter")} healthy, quorum ${quorum.quorumSize}, ${tolerance}; ${observed}`,
    );
  } else {
    lines.push(`etcd: no quorum figures in status; ${observed}`);
  }

  lines.push("");
  if (members.length === 0) {
    lines.push("No etcd members in status: Quorum has not read the member list of this cluster.");
    const etcdCondition = findCondition(status.conditions, CONDITION.EtcdClusterHealthy);
    if (etcdCondition && etcdCondition.status !== "True")
      lines.push(`  ${etcdCondition.reason}${etcdCondition.message ? `: ${etcdCondition.message}` : ""}`);
  } else {
    lines.push(
      ...table(["MACHINE", "NODE", "MEMBER", "ID", "ROLE", "HEALTH", "STATE"], sortMembers(members).map(memberRow)),
    );
    const unmapped = members.filter((member) => member.machine === undefined).length;
    if (unmapped > 0)
      lines.push(
        `(${plural(unmapped, "member")} map${unmapped === 1 ? "s" : ""} to no Machine: shown as "-" under MACHINE)`,
      );
  }

  lines.push("");
  const next = status.nextAction;
  if (next) {
    lines.push(`Next (${next.kind}${next.target ? ` ${next.target}` : ""}): ${next.message}`);
    if (next.blockedBy) lines.push(`Blocked by: ${next.blockedBy}`);
  } else {
    lines.push("Next: unknown (status.nextAction is not set)");
  }

  const conditions = orderConditions(status.conditions ?? []);
  if (conditions.length > 0) {
    lines.push("");
    lines.push(
      ...table(
        ["CONDITION", "STATUS", "REASON", "MESSAGE"],
        conditions.map((c) => [c.type, c.status, c.reason, c.message ?? ""]),
      ),
    );
  }
  return lines.join("\n") + "\n";
}

function memberRow(member: EtcdMemberStatus): string[] {
  const role = member.learner ? "learner" : member.leader ? "leader" : "voter";
  const state = [member.state, member.error ? `error: ${member.error}` : undefined].filter((part) => part).join("; ");
  return [
    member.machine ?? "-",
    member.node ?? "-",
    member.name || "(unnamed)",
    member.id,
    role,
    member.healthy ? "healthy" : "UNHEALTHY",
    state || "-",
  ];
}

/** Members with a Machine first, by Machine name; then ghosts and unnamed joiners, by member name. */
function sortMembers(members: EtcdMemberStatus[]): EtcdMemberStatus[] {
  return [...members].sort((a, b) => {
    if ((a.machine === undefined) !== (b.machine === undefined)) return a.machine === undefined ? 1 : -1;
    return (a.machine ?? a.name).localeCompare(b.machine ?? b.name) || a.id.localeCompare(b.id);
  });
}

function orderConditions(conditions: Condition[]): Condition[] {
  const rank = (type: string) => {
    const index = CONDITION_ORDER.indexOf(type);
    return index === -1 ? CONDITION_ORDER.length : index;
  };
  return [...conditions].sort((a, b) => rank(a.type) - rank(b.type));
}

function findCondition(conditions: Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((condition) => condition.type === type);
}

function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  const format = (cells: string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column])))
      .join("  ")
      .trimEnd();
  return [format(header), ...rows.map(format)];
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

function ago(timestamp: string, now: Date): string {
  const then = Date.parse(timestamp);
  if (Number.isNaN(then)) return "unknown time";
  const seconds = Math.round((now.getTime() - then) / 1000);
  if (seconds < 0) return "in the future: check the clocks";
  if (seconds < 120) return `${seconds}s ago`;
  if (seconds < 7200) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 172800) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86400)}d ago`;
}

/** A failure the CLI reports as one actionable line (no stack trace). */
export class StatusCommandError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StatusCommandError";
  }
}

/** Reads one QuorumControlPlane; every failure becomes a StatusCommandError naming the object, cause and fix. */
export async function fetchControlPlane(
  kubeConfig: KubeConfig,
  namespace: string,
  name: string,
): Promise<QuorumControlPlane> {
  const rest = new KubeRest(kubeConfig);
  const server = rest.server;
  const path = resourcePath({ group: GROUP, version: VERSION, plural: PLURAL, namespaced: true }, namespace, name);
  try {
    return await rest.get<QuorumControlPlane>(path, { timeoutMs: 15_000 });
  } catch (error) {
    if (error instanceof KubeApiError) {
      if (error.code === 404 && error.status?.details !== undefined) {
        throw new StatusCommandError(
          `${KIND} ${namespace}/${name} was not found on ${server}: list the existing ones with \`kubectl get ${SHORT_NAME} -A\``,
        );
      }
      if (error.code === 404) {
        throw new StatusCommandError(
          `${server} does not serve ${PLURAL}.${GROUP}/${VERSION} (looking up ${namespace}/${name}): Quorum's CRDs are not installed there; ` +
            "install them with `clusterctl init --control-plane quorum` or `kubectl apply -k config/default`, or point --kubeconfig at the management cluster",
        );
      }
      if (error.code === 401 || error.code === 403) {
        throw new StatusCommandError(
          `reading ${KIND} ${namespace}/${name} on ${server} was refused (HTTP ${error.code}): ${error.status?.message ?? error.message}; use credentials that may get ${PLURAL}.${GROUP}`,
        );
      }
      throw new StatusCommandError(`reading ${KIND} ${namespace}/${name} on ${server} failed: ${error.message}`);
    }
    throw new StatusCommandError(
      `cannot reach the API server ${server} to read ${KIND} ${namespace}/${name}: ${(error as Error).message}; check --kubeconfig and the current context`,
    );
  } finally {
    rest.close();
  }
}
