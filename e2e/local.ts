// `make run` without KUBECONFIG: a local management plane (kube-apiserver + its etcd, the CAPI core manager, the
// process provider, Quorum), the sample 3-replica process cluster from config/samples/cluster-process.yaml, and a
// live view of its Machines, etcd members and Quorum's next action. Ctrl-C stops everything it started.
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseAllDocuments } from "yaml";
import type { QuorumControlPlane } from "../src/api/types.ts";
import { kubeRequest, repoRoot, statusMessage } from "../test/env/index.ts";
import { E2EStack } from "./lib/stack.ts";

const SAMPLE = "config/samples/cluster-process.yaml";

interface ManifestObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
}

const say = (line = "") => process.stdout.write(`${line}\n`);
const clock = () => new Date().toTimeString().slice(0, 8);

/** Creates every object of a YAML file (namespaced, in its namespace); an existing object is left as it is. */
async function apply(stack: E2EStack, file: string): Promise<ManifestObject[]> {
  const objects = parseAllDocuments(readFileSync(join(repoRoot, file), "utf8"))
    .map((document) => document.toJS() as ManifestObject | null)
    .filter((object): object is ManifestObject => object !== null);
  for (const object of objects) {
    const namespace = object.metadata.namespace ?? "default";
    const prefix = object.apiVersion.includes("/") ? `/apis/${object.apiVersion}` : `/api/${object.apiVersion}`;
    const plural = `${object.kind.toLowerCase()}s`;
    const response = await kubeRequest(stack.kubeConfig, `${prefix}/namespaces/${namespace}/${plural}`, {
      method: "POST",
      body: object,
    });
    if (response.status !== 201 && response.status !== 409) {
      throw new Error(
        `applying ${object.kind} ${namespace}/${object.metadata.name} from ${file} failed with HTTP ${response.status}: ${statusMessage(response)}`,
      );
    }
    say(`  ${object.kind.toLowerCase()}/${object.metadata.name} ${response.status === 201 ? "created" : "unchanged"}`);
  }
  return objects;
}

function view(
  qcp: QuorumControlPlane | undefined,
  machines: { name: string; phase: string; address: string; version: string; deleting: boolean }[],
): string {
  if (!qcp) return "  (waiting for the QuorumControlPlane)";
  const status = qcp.status ?? {};
  const quorum = status.etcd?.quorum;
  const lines = [
    `  spec: ${qcp.spec.replicas} replicas at ${qcp.spec.version}; Machines ${machines.length}, up to date ${status.upToDateReplicas ?? 0}, ready ${status.readyReplicas ?? 0}` +
      (quorum
        ? `; etcd ${quorum.healthyVoters}/${quorum.voters} voters healthy (quorum ${quorum.quorumSize}, tolerates ${quorum.failuresTolerated})`
        : ""),
  ];
  for (const machine of machines) {
    const member = status.etcd?.members?.find((candidate) => candidate.machine === machine.name);
    const memberText = member
      ? `member ${member.learner ? "learner" : "voter"}${member.leader ? " (leader)" : ""}${member.healthy ? "" : " UNHEALTHY"}`
      : "no member";
    lines.push(
      `    ${machine.name.padEnd(34)} ${machine.version.padEnd(8)} ${(machine.deleting ? "Deleting" : machine.phase).padEnd(18)} ${machine.address.padEnd(15)} ${memberText}`,
    );
  }
  for (const member of status.etcd?.members?.filter((candidate) => !candidate.machine) ?? []) {
    lines.push(`    ${"(no Machine)".padEnd(34)} member ${member.name || member.id}: ${member.state ?? ""}`);
  }
  lines.push(`  next: ${status.nextAction?.kind ?? "?"}: ${status.nextAction?.message ?? "(no status yet)"}`);
  return lines.join("\n");
}

async function main(): Promise<void> {
  say("Starting a local management plane: kube-apiserver, CAPI core manager, process provider, Quorum ...");
  const stack = await E2EStack.start("run", { restartDelay: "10s", etcdPollInterval: "2s" });
  const runDir = join(repoRoot, ".cache/run");
  mkdirSync(runDir, { recursive: true });
  const kubeconfig = join(runDir, "kubeconfig");
  copyFileSync(stack.apiServer.kubeconfigPath, kubeconfig);
  // Runs before the harness's own handler, which kills every process group this process started and re-raises the
  // signal; `once`, so that the re-raised signal ends this process.
  let stopping = false;
  process.prependOnceListener("SIGINT", () => {
    stopping = true;
    say(
      "\nCtrl-C: stopping Quorum, the provider (and every Machine's etcd and kube-apiserver), CAPI and the management plane",
    );
  });
  await stack.startQuorum({ logFormat: "text" });
  say(`Management cluster: ${stack.apiServer.url} (kubeconfig ${kubeconfig})`);
  say(`Logs: ${stack.dir} (quorum-1.log, provider.log); CAPI: ${stack.capi.logFile}`);
  say(`Applying ${SAMPLE}:`);
  const objects = await apply(stack, SAMPLE);
  const qcpObject = objects.find((object) => object.kind === "QuorumControlPlane");
  if (!qcpObject) throw new Error(`${SAMPLE} has no QuorumControlPlane`);
  const namespace = qcpObject.metadata.namespace ?? "default";
  const clusterName = objects.find((object) => object.kind === "Cluster")?.metadata.name ?? qcpObject.metadata.name;
  const qcpPath = `/apis/${qcpObject.apiVersion}/namespaces/${namespace}/quorumcontrolplanes/${qcpObject.metadata.name}`;

  let last = "";
  let ready = false;
  let everReady = false;
  for (;;) {
    const qcpResponse = await kubeRequest<QuorumControlPlane>(stack.kubeConfig, qcpPath).catch(() => undefined);
    const qcp = qcpResponse?.status === 200 ? qcpResponse.body : undefined;
    const machines = await stack.machines(namespace, clusterName).catch(() => []);
    const processMachines = await stack.processMachines(namespace).catch(() => []);
    const rows = machines
      .map((machine) => {
        const processMachine = processMachines.find((candidate) => candidate.metadata.name === machine.metadata.name);
        return {
          name: machine.metadata.name,
          version: machine.spec.version ?? "",
          phase: processMachine?.status?.phase ?? machine.status?.phase ?? "Pending",
          address: processMachine?.status?.addresses?.[0]?.address ?? "",
          deleting: Boolean(machine.metadata.deletionTimestamp),
        };
      })
      .sort((a, b) => a.name.localeCompare(b.name));
    const text = view(qcp, rows);
    // Countdowns ("within 9m56s") change every second; only a change of state is worth a new block.
    const key = text.replace(/\d+m\d+s|\d+(\.\d+)?s\b/g, "…");
    if (key !== last) {
      say(`\n${clock()}\n${text}`);
      last = key;
    }
    const members = qcp?.status?.etcd?.members ?? [];
    const converged =
      qcp !== undefined &&
      rows.length === qcp.spec.replicas &&
      rows.every((row) => row.phase === "Running" && !row.deleting && row.version === qcp.spec.version) &&
      members.length === qcp.spec.replicas &&
      members.every((member) => member.healthy && !member.learner && member.machine) &&
      qcp.status?.upToDateReplicas === qcp.spec.replicas;
    if (converged && !ready && everReady) {
      ready = true;
      say(
        `${clock()} converged again: ${qcp.spec.replicas} Machines at ${qcp.spec.version}, etcd ${members.length}/${members.length} voters healthy`,
      );
    } else if (converged && !ready) {
      ready = true;
      everReady = true;
      const name = qcpObject.metadata.name;
      say(`
${clock()} READY: ${namespace}/${name} runs ${qcp.spec.replicas} Machines at ${qcp.spec.version}, each a real etcd member and kube-apiserver.

  Watch it:             KUBECONFIG=${kubeconfig} kubectl get qcp -w
  Machines:             KUBECONFIG=${kubeconfig} kubectl get machines,processmachines
  Roll out an upgrade:  KUBECONFIG=${kubeconfig} kubectl patch qcp ${name} --type merge -p '{"spec":{"version":"${nextPatch(qcp.spec.version)}"}}'
  Scale:                KUBECONFIG=${kubeconfig} kubectl scale qcp ${name} --replicas 5
  Workload cluster:     KUBECONFIG=${kubeconfig} kubectl get secret ${clusterName}-kubeconfig -o jsonpath='{.data.value}' | base64 -d > /tmp/workload.kubeconfig

This view keeps showing every step. Ctrl-C stops everything this command started.`);
    } else if (!converged && ready) {
      ready = false;
    }
    for (const quorum of stack.quorums) {
      const exit = stopping ? undefined : quorum.process.exitStatus();
      if (exit)
        throw new Error(
          `Quorum exited with ${exit.code ?? exit.signal}; last log lines:\n${quorum.process.lastLogLines(20)}`,
        );
    }
    await sleep(1_000);
  }
}

function nextPatch(version: string): string {
  const match = /^v?(\d+)\.(\d+)\.(\d+)$/.exec(version);
  return match ? `v${match[1]}.${match[2]}.${Number(match[3]) + 1}` : version;
}

main().catch((error: unknown) => {
  process.stderr.write(`make run: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
