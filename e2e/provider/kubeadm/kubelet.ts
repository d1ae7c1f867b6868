// The process kubelet of a kubeadm e2e Machine: the stand-in for kubelet + container runtime on a node where the
// "containers" are local processes. It runs inside the Machine's network, mount and UTS namespaces (started there
// by the provider), so everything it starts inherits them; every path is an option, so it runs without them too.
// Three loops: the static pods (pod-supervisor.ts, independent of the API, as kubeadm needs its local API server
// and etcd running before any credentials work), the credentials (credentials.ts: kubeadm init's embedded
// kubelet.conf, or TLS bootstrap for kubeadm join), and, once it has credentials, the Node and mirror Pods
// (node-agent.ts). /healthz answers from the first moment: kubeadm's kubelet-check polls it. The kubelet port itself
// is served by the kubelet's port-forward code in a child process (portforward-server.ts), for pods/portforward.
import { createServer, type Server } from "node:http";
import { mkdirSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { KubeConfig } from "@kubernetes/client-node";
import {
  currentPairIsValid,
  CURRENT_PAIR,
  embeddedClientPair,
  forgetTemporaryKey,
  kubeconfigFromBootstrap,
  loadOrGenerateKey,
  loadValidKubeconfig,
  requestNodeCertificate,
  storeClientPair,
  writeFileAtomically,
} from "./credentials.ts";
import { NodeAgent } from "./node-agent.ts";
import { PodSupervisor, type SupervisorOptions } from "./pod-supervisor.ts";
import { PortForwardServer } from "./portforward-server.ts";
import { join } from "node:path";

export interface KubeletOptions {
  nodeName: string;
  providerID: string;
  nodeIP: string;
  binDir: string;
  logDir: string;
  manifestsDir: string;
  kubeconfig: string;
  bootstrapKubeconfig: string;
  certDir: string;
  /** host:port of /healthz, e.g. 127.0.0.1:10248 (port 0: any free port, see healthzURL). */
  healthzAddress: string;
  /**
   * The kubelet port on the node IP (default 10250; 0: a free one): the port-forward server serves it and the Node
   * reports it in status.daemonEndpoints, where kube-apiserver's pods/portforward looks.
   */
  kubeletPort: number;
  /** The CA the port-forward server requires of its clients (kubeadm's cluster CA); empty: any client. */
  clientCaFile: string;
  /**
   * nodeInfo.kubeletVersion; default: the tag of the kube-apiserver static pod's image, followed when it changes (the
   * e2e upgrades a node's kubelet with its control plane, as `kubeadm upgrade` plus a package upgrade would).
   */
  kubeletVersion?: string;
  /** How often the manifests dir is read (default 500 ms) and mirror pods are synced (default 1 s). */
  podSyncMs?: number;
  apiSyncMs?: number;
  /** Node status and Lease renewal interval (default 10 s, the kubelet's). */
  heartbeatMs?: number;
  /** How long a rotation CSR may stay pending before the kubelet asks again with a new key (default 5 min). */
  rotationWaitMs?: number;
  backoff?: Pick<SupervisorOptions, "initialBackoffMs" | "maxBackoffMs" | "backoffResetMs" | "stopGraceMs">;
  log?: (line: string) => void;
}

export const DEFAULTS = {
  manifestsDir: "/etc/kubernetes/manifests",
  kubeconfig: "/etc/kubernetes/kubelet.conf",
  bootstrapKubeconfig: "/etc/kubernetes/bootstrap-kubelet.conf",
  certDir: "/var/lib/kubelet/pki",
  healthzAddress: "127.0.0.1:10248",
  kubeletPort: 10250,
  clientCaFile: "/etc/kubernetes/pki/ca.crt",
};

export class ProcessKubelet {
  readonly supervisor: PodSupervisor;
  readonly portForward: PortForwardServer;
  private server: Server | undefined;
  private readonly abort = new AbortController();
  private readonly loops: Promise<void>[] = [];
  private readonly log: (line: string) => void;
  private client: KubeConfig | undefined;
  private lastWait = "";
  healthzURL = "";

  constructor(private readonly options: KubeletOptions) {
    this.log =
      options.log ?? ((line) => console.log(`${new Date().toISOString()} kubelet ${options.nodeName}: ${line}`));
    this.supervisor = new PodSupervisor({
      manifestsDir: options.manifestsDir,
      binDir: options.binDir,
      logDir: options.logDir,
      nodeName: options.nodeName,
      log: this.log,
      ...options.backoff,
    });
    this.portForward = new PortForwardServer({
      binDir: options.binDir,
      logDir: options.logDir,
      nodeIP: options.nodeIP,
      port: options.kubeletPort,
      clientCaFile: options.clientCaFile,
      log: this.log,
    });
  }

  async start(): Promise<void> {
    mkdirSync(this.options.logDir, { recursive: true });
    await this.serveHealthz();
    this.portForward.start();
    this.loops.push(this.every(this.options.podSyncMs ?? 500, () => this.supervisor.sync()));
    this.loops.push(this.runApiSide());
  }

  /** Stops the loops and every static pod; mirror pods stay in the API, as with a real kubelet that stops. */
  async stop(): Promise<void> {
    if (this.abort.signal.aborted) return;
    this.abort.abort();
    // In parallel: an API call in flight may take its 10 s timeout, and the pods should not wait for it. The
    // supervisor starts nothing once stopping, so a sync still running cannot add a process behind stopAll's back.
    await Promise.all([Promise.allSettled(this.loops), this.supervisor.stopAll(), this.portForward.stop()]);
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.log("stopped");
  }

  private async serveHealthz(): Promise<void> {
    const separator = this.options.healthzAddress.lastIndexOf(":");
    const host = this.options.healthzAddress.slice(0, separator);
    const port = Number(this.options.healthzAddress.slice(separator + 1));
    const server = createServer((request, response) => {
      if (request.url === "/healthz") {
        response.writeHead(200, { "Content-Type": "text/plain" }).end("ok");
      } else if (request.url === "/pods") {
        // For people and tests: what runs, what waits and why.
        const pods = [...this.supervisor.pods.values()].map((running) => ({
          name: running.pod.name,
          file: running.pod.file,
          hash: running.pod.hash,
          pid: running.process?.pid,
          ...running.state,
        }));
        response.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(pods, null, 2));
      } else {
        response.writeHead(404).end("not found");
      }
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ host, port }, () => resolve());
    });
    const address = server.address();
    const bound = typeof address === "object" && address ? address.port : port;
    this.server = server;
    this.healthzURL = `http://${host}:${bound}/healthz`;
    this.log(`serving ${this.healthzURL}`);
  }

  /** Runs `action` every `intervalMs` until stopped; a failure is logged and the loop goes on, as the kubelet's do. */
  private async every(intervalMs: number, action: () => Promise<unknown>): Promise<void> {
    const { signal } = this.abort;
    // A failure repeated every interval (the API server restarting) is logged once, and its end once.
    let lastError = "";
    while (!signal.aborted) {
      try {
        await action();
        if (lastError) this.log(`recovered from: ${lastError}`);
        lastError = "";
      } catch (error) {
        const message = (error as Error).message;
        if (message !== lastError) this.log(`ERROR ${message}`);
        lastError = message;
      }
      await sleep(intervalMs, undefined, { signal }).catch(() => undefined);
    }
  }

  private waiting(what: string): void {
    if (what !== this.lastWait) this.log(`waiting: ${what}`);
    this.lastWait = what;
  }

  private async runApiSide(): Promise<void> {
    const { signal } = this.abort;
    try {
      while (!this.client) {
        // A refused CSR or an unreadable file: the real kubelet exits and systemd starts it again; retry instead.
        this.client = await this.obtainCredentials().catch((error: Error) => {
          if (!signal.aborted) this.log(`ERROR credentials: ${error.message}; retrying`);
          return undefined;
        });
        if (!this.client) await sleep(1_000, undefined, { signal });
      }
      let version = this.options.kubeletVersion;
      while (!version) {
        version = this.apiServerImageVersion();
        if (!version) {
          this.waiting(`a kube-apiserver static pod to take nodeInfo.kubeletVersion from (or --kubelet-version)`);
          await sleep(1_000, undefined, { signal });
        }
      }
      // A fixed port is reported at once; a free one (tests) once the server has picked it.
      let kubeletPort = this.options.kubeletPort || this.portForward.port;
      while (!kubeletPort) {
        this.waiting("the port-forward server's port, to report as the Node's kubeletEndpoint");
        await sleep(200, undefined, { signal });
        kubeletPort = this.portForward.port;
      }
      const client = () => this.client!;
      const { nodeName, providerID, nodeIP } = this.options;
      const agent = new NodeAgent(client, {
        nodeName,
        providerID,
        nodeIP,
        kubeletVersion: version,
        kubeletPort,
        log: this.log,
      });
      const currentVersion = () => this.options.kubeletVersion ?? this.apiServerImageVersion();
      while (!(await agent.register().catch((error: Error) => this.waiting(`API server for Node: ${error.message}`)))) {
        await sleep(1_000, undefined, { signal });
      }
      let lastHeartbeat = Date.now();
      await this.every(this.options.apiSyncMs ?? 1_000, async () => {
        const version = currentVersion();
        const versionChanged = version !== undefined && agent.setKubeletVersion(version);
        if (versionChanged || Date.now() - lastHeartbeat >= (this.options.heartbeatMs ?? 10_000)) {
          lastHeartbeat = Date.now();
          await agent.heartbeat();
        }
        await agent.syncMirrorPods([...this.supervisor.pods.values()]);
      });
    } catch (error) {
      if (!signal.aborted) this.log(`ERROR API side stopped: ${(error as Error).message}`);
    }
  }

  /** The tag of the kube-apiserver image, e.g. "v1.37.2": the version the node "runs". */
  private apiServerImageVersion(): string | undefined {
    for (const running of this.supervisor.pods.values()) {
      const image = running.pod.manifest.spec.containers[0]?.image ?? "";
      const match = /(?:^|\/)kube-apiserver:(v\d+\.\d+\.\d+[^@]*)/.exec(image);
      if (match) return match[1];
    }
    return undefined;
  }

  /**
   * One attempt at credentials: a valid --kubeconfig (init: kubeadm wrote it with the node's embedded pair), else TLS
   * bootstrap with --bootstrap-kubeconfig (join), else nothing yet (kubeadm has not written either file).
   */
  private async obtainCredentials(): Promise<KubeConfig | undefined> {
    const { kubeconfig, bootstrapKubeconfig, certDir, nodeName } = this.options;
    const loaded = loadValidKubeconfig(kubeconfig);
    if ("kubeConfig" in loaded) {
      const embedded = embeddedClientPair(loaded.kubeConfig);
      if (embedded && !currentPairIsValid(certDir)) {
        // The kubelet's certificate manager stores its bootstrap pair first (kubeadm init's kubelet-finalize
        // phase rewrites kubelet.conf to this file only if it exists), then rotates it at once with a CSR.
        const pem = storeClientPair(certDir, embedded.certPem, embedded.keyPem);
        this.log(`stored the client certificate embedded in ${kubeconfig} as ${pem}`);
        this.loops.push(this.rotateClientCertificate(loaded.kubeConfig));
      }
      this.log(`using credentials from ${kubeconfig}`);
      return this.clientFor(loaded.kubeConfig);
    }
    const bootstrap = loadValidKubeconfig(bootstrapKubeconfig);
    if (!("kubeConfig" in bootstrap)) {
      this.waiting(`credentials: ${loaded.problem}; ${bootstrap.problem}`);
      return undefined;
    }
    this.log(`TLS bootstrap with ${bootstrapKubeconfig} (${loaded.problem})`);
    const keyPem = loadOrGenerateKey(certDir);
    const certPem = await requestNodeCertificate({
      client: bootstrap.kubeConfig,
      nodeName,
      keyPem,
      log: this.log,
      signal: this.abort.signal,
    });
    const pemPath = storeClientPair(certDir, certPem, keyPem);
    forgetTemporaryKey(certDir);
    writeFileAtomically(kubeconfig, kubeconfigFromBootstrap(bootstrap.kubeConfig, pemPath));
    this.log(`TLS bootstrap done: wrote ${pemPath} and ${kubeconfig}`);
    const written = loadValidKubeconfig(kubeconfig);
    if (!("kubeConfig" in written))
      throw new Error(`TLS bootstrap wrote a kubeconfig that does not load: ${written.problem}`);
    return written.kubeConfig;
  }

  /**
   * A client that authenticates with the cert dir's current pair when there is one: kubeadm rewrites kubelet.conf
   * to that file after init, and a rotation replaces it; reading the file at each request follows both.
   */
  private clientFor(kubeConfig: KubeConfig): KubeConfig {
    if (!currentPairIsValid(this.options.certDir)) return kubeConfig;
    const pem = join(this.options.certDir, CURRENT_PAIR);
    const client = new KubeConfig();
    const cluster = kubeConfig.getCurrentCluster()!;
    client.loadFromOptions({
      clusters: [cluster],
      users: [{ name: "kubelet", certFile: pem, keyFile: pem }],
      contexts: [{ name: "kubelet", cluster: cluster.name, user: "kubelet" }],
      currentContext: "kubelet",
    });
    return client;
  }

  /**
   * Replaces the init node's kubeadm-issued pair with one signed through a CSR, as the kubelet's certificate manager
   * does at start. csrapproving approves it (selfnodeclient) only once kubeadm's bootstrap-token phase has created
   * the RBAC for it, and retries a CSR it may not approve yet with a back-off growing to 1000 s: like the certificate
   * manager (15 min), stop waiting after a while and ask again with a new key, i.e. a new CSR.
   */
  private async rotateClientCertificate(kubeConfig: KubeConfig): Promise<void> {
    const { certDir, nodeName } = this.options;
    const stop = this.abort.signal;
    while (!stop.aborted) {
      forgetTemporaryKey(certDir);
      const keyPem = loadOrGenerateKey(certDir);
      try {
        const certPem = await requestNodeCertificate({
          client: this.clientFor(kubeConfig),
          nodeName,
          keyPem,
          log: this.log,
          signal: AbortSignal.any([stop, AbortSignal.timeout(this.options.rotationWaitMs ?? 5 * 60_000)]),
          purpose: "client certificate rotation",
        });
        const pem = storeClientPair(certDir, certPem, keyPem);
        forgetTemporaryKey(certDir);
        this.log(`rotated the client certificate: ${pem}`);
        return;
      } catch (error) {
        if (stop.aborted) return;
        this.log(`ERROR client certificate rotation: ${(error as Error).message}; asking again with a new key`);
        await sleep(10_000, undefined, { signal: stop }).catch(() => undefined);
      }
    }
  }
}
