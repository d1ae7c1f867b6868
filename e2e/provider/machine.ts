// One process Machine, run like a kubeadm stacked control-plane node on its own loopback address: a real etcd
// member (the first Machine of a cluster starts a new etcd cluster; later ones add themselves as a learner and
// start with --initial-cluster-state existing, and wait for someone — Quorum — to promote them), then a real
// kube-apiserver that talks only to its local member, then a Node named after the Machine with the Machine's
// providerID. A crashed process is restarted after a delay, like kubelet restarts a static pod. Stopping the
// Machine stops its processes and never touches etcd membership: that is the control-plane provider's job.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { issueCertificate, oneDay, validFor } from "../../src/adapters/certs/pki.ts";
import { createEtcdClusterClient } from "../../src/adapters/etcd/client.ts";
import type { EtcdMember } from "../../src/adapters/etcd/types.ts";
import { startProcess, waitUntilReady, type ManagedProcess, type ReadyTimes } from "../../test/env/processes.ts";
import { httpGet } from "../../test/env/net.ts";
import { builtBinary, etcdBinary } from "../../test/env/tools.ts";
import { API_SERVER_PORT, MachineRuntimeBase, type ClusterContext, type MachineEvent } from "./machine-base.ts";

export interface MachineOptions {
  namespace: string;
  name: string;
  uid: string;
  version: string;
  address: string;
  providerID: string;
  dir: string;
  restartDelayMs: number;
  apiServerExtraArgs: string[];
  cluster: ClusterContext;
  emit: (event: MachineEvent) => void;
  onChange: () => void;
}

export class ProcessMachineRuntime extends MachineRuntimeBase {
  etcd: ManagedProcess | undefined;
  apiServer: ManagedProcess | undefined;
  private etcdArgs: string[] = [];
  private apiServerArgs: string[] = [];

  constructor(readonly options: MachineOptions) {
    super(options, "process machine");
  }

  get etcdRunning(): boolean {
    return this.etcd?.isRunning() ?? false;
  }

  protected async bootstrap(): Promise<void> {
    const { cluster, name, address, dir } = this.options;
    mkdirSync(dir, { recursive: true });
    const file = (fileName: string, contents: string) => {
      const path = join(dir, fileName);
      writeFileSync(path, contents, { mode: 0o600 });
      return path;
    };
    const memberCert = await issueCertificate(cluster.etcdCA, {
      commonName: name,
      dnsNames: ["localhost", name],
      ipAddresses: [address],
      usages: "both",
      validity: validFor(oneDay),
    });
    const etcdClientCert = await issueCertificate(cluster.etcdCA, {
      commonName: "kube-apiserver-etcd-client",
      usages: "client",
      validity: validFor(oneDay),
    });
    const servingCert = await issueCertificate(cluster.clusterCA, {
      commonName: "kube-apiserver",
      dnsNames: [
        "localhost",
        name,
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
      ],
      ipAddresses: [address, cluster.loadBalancerHost, "127.0.0.1", "10.96.0.1"],
      usages: "server",
      validity: validFor(oneDay),
    });
    const etcdCA = file("etcd-ca.crt", cluster.etcdCA.certPem);
    const memberCrt = file("etcd-member.crt", memberCert.certPem);
    const memberKey = file("etcd-member.key", memberCert.keyPem);

    // kubeadm init vs join: the first Machine of the cluster starts a new etcd cluster, every other one joins.
    this.setPhase("JoiningEtcd");
    let initialCluster: string;
    let state: "new" | "existing";
    let learner = false;
    if (!cluster.etcdBootstrapped() && cluster.claimBootstrap(name)) {
      initialCluster = `${name}=${this.peerURL}`;
      state = "new";
    } else {
      const members = await this.addSelfAsLearner();
      initialCluster = members
        .flatMap((member) => {
          // An added member that has not started has no name yet; etcd only matches peer URLs for those.
          const memberName = member.peerURLs.includes(this.peerURL) ? name : member.name || `unstarted-${member.id}`;
          return member.peerURLs.map((url) => `${memberName}=${url}`);
        })
        .join(",");
      state = "existing";
      learner = true;
    }
    this.etcdArgs = [
      `--name=${name}`,
      `--data-dir=${join(dir, "etcd-data")}`,
      `--listen-client-urls=${this.clientURL}`,
      `--advertise-client-urls=${this.clientURL}`,
      `--listen-peer-urls=${this.peerURL}`,
      `--initial-advertise-peer-urls=${this.peerURL}`,
      `--initial-cluster=${initialCluster}`,
      `--initial-cluster-state=${state}`,
      `--initial-cluster-token=${cluster.token}`,
      // A loaded CI machine with a dozen processes on two cores misses 100 ms heartbeats; these keep elections rare.
      "--heartbeat-interval=200",
      "--election-timeout=2000",
      `--cert-file=${memberCrt}`,
      `--key-file=${memberKey}`,
      `--trusted-ca-file=${etcdCA}`,
      "--client-cert-auth",
      `--peer-cert-file=${memberCrt}`,
      `--peer-key-file=${memberKey}`,
      `--peer-trusted-ca-file=${etcdCA}`,
      "--peer-client-cert-auth",
      "--logger=zap",
      "--log-outputs=stderr",
    ];
    this.checkStopping();
    await this.startEtcd(learner);
    this.options.emit({ kind: "etcd-started", detail: { learner, address } });

    if (learner) {
      this.setPhase("Learner");
      await this.waitUntilVoter();
      this.options.emit({ kind: "etcd-voter" });
    }

    this.setPhase("StartingAPIServer");
    this.apiServerArgs = [
      `--etcd-servers=${this.clientURL}`,
      `--etcd-cafile=${etcdCA}`,
      `--etcd-certfile=${file("apiserver-etcd-client.crt", etcdClientCert.certPem)}`,
      `--etcd-keyfile=${file("apiserver-etcd-client.key", etcdClientCert.keyPem)}`,
      `--bind-address=${address}`,
      `--advertise-address=${address}`,
      // The endpoint reconciler refuses a loopback advertise address; nothing here needs the kubernetes Service.
      "--endpoint-reconciler-type=none",
      `--secure-port=${API_SERVER_PORT}`,
      `--cert-dir=${join(dir, "apiserver-certs")}`,
      `--tls-cert-file=${file("apiserver.crt", servingCert.certPem)}`,
      `--tls-private-key-file=${file("apiserver.key", servingCert.keyPem)}`,
      `--client-ca-file=${file("ca.crt", cluster.clusterCA.certPem)}`,
      "--authorization-mode=RBAC",
      "--service-cluster-ip-range=10.96.0.0/12",
      "--allow-privileged=true",
      "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
      `--service-account-key-file=${file("sa.pub", cluster.serviceAccount.publicKeyPem)}`,
      `--service-account-signing-key-file=${file("sa.key", cluster.serviceAccount.privateKeyPem)}`,
      // No controller-manager creates service-account tokens here.
      "--disable-admission-plugins=ServiceAccount",
      "--profiling=false",
      ...this.options.apiServerExtraArgs,
    ];
    this.checkStopping();
    await this.startApiServer();
    this.options.emit({ kind: "apiserver-ready" });
    cluster.addBackend(name, address);

    this.setPhase("RegisteringNode");
    await this.registerNode();
    this.options.emit({ kind: "node-registered" });
    this.setPhase("Running");
  }

  /** Adds this Machine's member as a learner through the members that run now (idempotent by peer URL). */
  private async addSelfAsLearner(): Promise<EtcdMember[]> {
    const deadline = Date.now() + 10 * 60_000;
    let lastError = "no member of the cluster runs yet";
    while (!this.stopping && Date.now() < deadline) {
      const endpoints = this.options.cluster.peerClientURLs(this.options.name);
      if (endpoints.length > 0) {
        const client = createEtcdClusterClient({
          endpoints,
          credentials: this.options.cluster.etcdClient,
          callDeadlineMs: 5_000,
          context: `process machine ${this.options.name}`,
        });
        try {
          await client.addMember([this.peerURL], { learner: true });
          // etcd serves the member list from the member asked, and a follower may not have applied the add yet: a
          // list without this member makes etcd refuse to start ("couldn't find local name ... in the initial
          // cluster configuration"), which failed the lifecycle scenario once. Ask until the add shows.
          for (let attempt = 0; attempt < 50; attempt++) {
            const members = await client.listMembers();
            if (members.some((member) => member.peerURLs.includes(this.peerURL))) return members;
            await sleep(200);
          }
          lastError = "the member list never showed the member just added";
        } catch (error) {
          // etcd refuses a second learner ("too many learner members") and adds right after a start ("unhealthy
          // cluster"); kubeadm retries the same way.
          lastError = error instanceof Error ? error.message : String(error);
        } finally {
          await client.close();
        }
      }
      await sleep(1_000);
    }
    throw new Error(`process machine ${this.options.name}: could not add its etcd member as a learner: ${lastError}`);
  }

  private async waitUntilVoter(): Promise<void> {
    while (!this.stopping) {
      const members = await this.memberList();
      const own = members?.find((member) => member.peerURLs.includes(this.peerURL));
      if (own && !own.learner) return;
      if (members && !own)
        throw new Error(`process machine ${this.options.name}: its etcd member was removed while it was a learner`);
      await sleep(250);
    }
  }

  /** Starts etcd and waits until it serves; resolves with when it was last seen not serving and then serving. */
  private async startEtcd(learner: boolean): Promise<ReadyTimes> {
    const proc = startProcess({
      name: `etcd of process machine ${this.options.name} (${this.options.address})`,
      command: etcdBinary(),
      args: this.etcdArgs,
      env: Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("ETCD_"))),
      logFile: join(this.options.dir, "etcd.log"),
    });
    this.etcd = proc;
    this.options.emit({ kind: "process-started", detail: { role: "etcd", pid: proc.pid } });
    this.options.onChange();
    void proc.exited.then((exit) => this.onExit("etcd", proc, exit));
    const { etcdClient } = this.options.cluster;
    // A learner answers /health (etcd 3.4 to 3.7; test/env/README.md) once its linearizable read, which waits for it
    // to apply the leader's commit index, succeeds; /version answers as soon as it serves, which is all a join needs.
    const path = learner ? "/version" : "/health";
    return waitUntilReady({
      process: proc,
      what: `GET ${this.clientURL}${path}`,
      timeoutMs: 120_000,
      probe: async () => {
        const { status, body } = await httpGet(`${this.clientURL}${path}`, {
          ca: etcdClient.caPem,
          cert: etcdClient.certPem,
          key: etcdClient.keyPem,
        });
        if (status !== 200) return `HTTP ${status}: ${body.trim()}`;
        return learner || /"health"\s*:\s*"true"/.test(body) ? true : body.trim();
      },
    });
  }

  private async startApiServer(): Promise<void> {
    const proc = startProcess({
      name: `kube-apiserver of process machine ${this.options.name} (${this.options.address})`,
      command: builtBinary("kube-apiserver"),
      args: this.apiServerArgs,
      logFile: join(this.options.dir, "kube-apiserver.log"),
    });
    this.apiServer = proc;
    this.options.emit({ kind: "process-started", detail: { role: "apiserver", pid: proc.pid } });
    this.options.onChange();
    void proc.exited.then((exit) => this.onExit("apiserver", proc, exit));
    const url = `https://${this.options.address}:${API_SERVER_PORT}`;
    await waitUntilReady({
      process: proc,
      what: `GET ${url}/readyz`,
      timeoutMs: 300_000,
      intervalMs: 500,
      probe: async () => {
        const { status, body } = await httpGet(`${url}/readyz`, {
          ca: this.options.cluster.clusterCA.certPem,
          timeoutMs: 5_000,
        });
        return status === 200
          ? true
          : `HTTP ${status}: ${body
              .trim()
              .split("\n")
              .filter((line) => line.includes("failed"))
              .join("; ")}`;
      },
    });
  }

  /** A crashed process comes back after the restart delay, unless the Machine is going away. */
  private async onExit(
    role: "etcd" | "apiserver",
    proc: ManagedProcess,
    exit: { code: number | null; signal: NodeJS.Signals | null },
  ): Promise<void> {
    if (this.stopping) return;
    this.options.emit({ kind: `${role}-exited`, detail: { pid: proc.pid, code: exit.code, signal: exit.signal } });
    if (role === "etcd") this.options.cluster.markBackendDown(this.options.name);
    this.options.onChange();
    await sleep(this.options.restartDelayMs);
    if (this.stopping) return;
    if (role === "etcd") {
      // A member that was removed from the cluster exits and must not come back under the same identity.
      const members = await this.memberList();
      if (members && !members.some((member) => member.peerURLs.includes(this.peerURL))) {
        this.options.emit({
          kind: "etcd-not-restarted",
          detail: { reason: "its member is no longer in the membership" },
        });
        return;
      }
      try {
        const { readyAt, notReadyAt } = await this.startEtcd(false);
        this.options.emit({ kind: "etcd-restarted", detail: { pid: this.etcd?.pid, readyAt, notReadyAt } });
      } catch (error) {
        this.options.emit({
          kind: "etcd-restart-failed",
          detail: { error: error instanceof Error ? error.message : String(error) },
        });
      }
    } else if (this.apiServerArgs.length > 0) {
      try {
        await this.startApiServer();
        this.options.emit({ kind: "apiserver-restarted", detail: { pid: this.apiServer?.pid } });
      } catch (error) {
        this.options.emit({
          kind: "apiserver-restart-failed",
          detail: { error: error instanceof Error ? error.message : String(error) },
        });
      }
    }
  }

  private async registerNode(): Promise<void> {
    const { name, providerID, address, version } = this.options;
    const deadline = Date.now() + 120_000;
    let lastError = "";
    while (!this.stopping && Date.now() < deadline) {
      try {
        const created = await this.nodeRequest("POST", "/api/v1/nodes", {
          apiVersion: "v1",
          kind: "Node",
          metadata: { name, labels: { "node-role.kubernetes.io/control-plane": "", "kubernetes.io/hostname": name } },
          spec: { providerID },
        });
        if (created.status !== 201 && created.status !== 409)
          throw new Error(`create Node ${name}: HTTP ${created.status} ${created.body.slice(0, 300)}`);
        const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
        const patched = await this.nodeRequest("PATCH", `/api/v1/nodes/${name}/status`, {
          status: {
            // What a kubelet would report; CAPI's NodeHealthy condition reads all four.
            conditions: [
              {
                type: "Ready",
                status: "True",
                reason: "ProcessMachineRunning",
                message: "etcd and kube-apiserver run",
                lastHeartbeatTime: now,
                lastTransitionTime: now,
              },
              ...["MemoryPressure", "DiskPressure", "PIDPressure"].map((type) => ({
                type,
                status: "False",
                reason: `No${type}`,
                message: "",
                lastHeartbeatTime: now,
                lastTransitionTime: now,
              })),
            ],
            addresses: [
              { type: "InternalIP", address },
              { type: "Hostname", address: name },
            ],
            nodeInfo: {
              kubeletVersion: version,
              operatingSystem: "linux",
              architecture: process.arch === "x64" ? "amd64" : process.arch,
            },
          },
        });
        if (patched.status !== 200)
          throw new Error(`patch Node ${name} status: HTTP ${patched.status} ${patched.body.slice(0, 300)}`);
        return;
      } catch (error) {
        lastError = error instanceof Error ? error.message : String(error);
        await sleep(1_000);
      }
    }
    if (!this.stopping) throw new Error(`process machine ${name}: could not register its Node: ${lastError}`);
  }

  private nodeRequest(
    method: "POST" | "PATCH",
    path: string,
    body: unknown,
  ): Promise<{ status: number; body: string }> {
    const { cluster, address } = this.options;
    const payload = JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: address,
          port: API_SERVER_PORT,
          path,
          method,
          ca: cluster.clusterCA.certPem,
          cert: cluster.admin.certPem,
          key: cluster.admin.keyPem,
          agent: false,
          timeout: 10_000,
          headers: {
            "Content-Type": method === "PATCH" ? "application/merge-patch+json" : "application/json",
            Accept: "application/json",
          },
        },
        (response) => {
          let text = "";
          response.setEncoding("utf8");
          response.on("data", (chunk: string) => (text += chunk));
          response.on("end", () => resolve({ status: response.statusCode ?? 0, body: text }));
          response.on("error", reject);
        },
      );
      req.on("timeout", () => req.destroy(new Error(`${method} ${path}: no answer within 10 s`)));
      req.on("error", reject);
      req.end(payload);
    });
  }

  /**
   * Stops the apiserver and etcd (SIGTERM, then SIGKILL), after taking the Machine out of the load balancer.
   * Reports whether its member was still in the membership at that moment: a control-plane provider must have
   * removed it first.
   */
  async stop(): Promise<{ memberPresent: boolean | undefined }> {
    if (this.stopping) return { memberPresent: undefined };
    this.stopping = true;
    this.options.cluster.removeBackend(this.options.name);
    const memberPresent = await this.memberPresent();
    this.setPhase("Stopping");
    this.options.emit({
      kind: "stopping",
      detail: { memberPresent, etcdPid: this.etcd?.pid, apiServerPid: this.apiServer?.pid },
    });
    await Promise.all([this.apiServer?.stop(5_000), this.etcd?.stop(5_000)]);
    await this.bootstrapping;
    // A restart that was already past its stopping check may have started a process meanwhile.
    await Promise.all([this.apiServer?.stop(5_000), this.etcd?.stop(5_000)]);
    this.setPhase("Stopped");
    this.options.emit({ kind: "stopped" });
    rmSync(this.options.dir, { recursive: true, force: true });
    return { memberPresent };
  }
}
