// A process Machine bootstrapped by kubeadm, as a VM would be: its own namespaces (namespaces.ts), a process kubelet
// (kubelet-main.ts) that runs the static pods kubeadm writes, and CABPK's cloud-init user data applied by the
// cloud-init runner (cloud-init.ts), whose runcmd runs real `kubeadm init` or `kubeadm join --control-plane` for the
// Machine's Kubernetes minor. Only kubeadm's preflight phase is skipped (it looks for a container runtime and pulls
// images). The Machine is Running once cloud-init wrote CABPK's bootstrap-success sentinel; its API server then joins
// the load balancer. Stopping it stops the kubelet (which stops its static pods) and ends the namespaces; like a VM
// going away, it never touches etcd membership. Powering it off (a reboot's first half) stops only the kubelet and its
// static pods; powering it on starts the kubelet again, which starts them from the manifests and data on its disk.
import { appendFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startProcess, type ManagedProcess } from "../../../test/env/processes.ts";
import { builtBinary, repoRoot } from "../../../test/env/tools.ts";
import { MachineRuntimeBase, type ClusterContext, type MachineEvent } from "../machine-base.ts";
import { renderCloudConfig, writeFiles } from "./cloud-init.ts";
import { MachineNamespaces, hostNameFor, hostPathOf } from "./namespaces.ts";

/** CABPK's sentinel: cloud-init's runcmd writes it once kubeadm succeeded (bootstrap/kubeadm/pkg/cloudinit). */
export const BOOTSTRAP_SENTINEL = "/run/cluster-api/bootstrap-success.complete";
/** The kubeadm phases a process Machine cannot run, with why (also in e2e/README.md). */
export const SKIPPED_PHASES = { preflight: "checks for a container runtime (CRI socket) and pulls images through it" };

export interface KubeadmMachineOptions {
  namespace: string;
  name: string;
  /** The Machine's Kubernetes version: picks bin/kubeadm-<minor>. */
  version: string;
  address: string;
  providerID: string;
  dir: string;
  /** The host end of the Machine's veth pair (≤ 15 characters). */
  vethName: string;
  /** CABPK's bootstrap data (the `value` of the Machine's bootstrap Secret). */
  userData: string;
  cluster: ClusterContext;
  emit: (event: MachineEvent) => void;
  onChange: () => void;
}

export class KubeadmMachineRuntime extends MachineRuntimeBase {
  readonly etcd: ManagedProcess | undefined = undefined;
  readonly apiServer: ManagedProcess | undefined = undefined;
  kubelet: ManagedProcess | undefined;
  private command: ManagedProcess | undefined;
  /** Set while the kubelet is stopped on purpose (powered off), so its exit is not reported as a crash. */
  private poweringOff = false;
  private readonly namespaces: MachineNamespaces;
  readonly hostName: string;

  constructor(readonly options: KubeadmMachineOptions) {
    super(options, "kubeadm machine");
    this.hostName = hostNameFor(options.address);
    this.namespaces = new MachineNamespaces({
      name: `kubeadm machine ${options.namespace}/${options.name}`,
      dir: options.dir,
      address: options.address,
      hostName: this.hostName,
      vethName: options.vethName,
    });
  }

  /** kubeadm's etcd runs under the kubelet; once kubeadm succeeded it is a member serving clients. */
  get etcdRunning(): boolean {
    return this.phase === "Running";
  }

  protected async bootstrap(): Promise<void> {
    const { dir, address, providerID } = this.options;
    mkdirSync(dir, { recursive: true });
    const cloudConfig = renderCloudConfig(this.options.userData, {
      local_hostname: this.hostName,
      hostname: this.hostName,
      local_ipv4: address,
      instance_id: this.options.name,
      provider_id: providerID,
    });
    const kubeadm = this.kubeadmShim();
    this.setPhase("Booting");
    await this.namespaces.create();
    this.options.emit({ kind: "namespaces-created", detail: { address, hostName: this.hostName } });
    this.checkStopping();
    this.startKubelet();

    const log = join(dir, "cloud-init-output.log");
    this.setPhase("RunningCloudInit");
    for (const command of cloudConfig.bootCommands) await this.run(command, kubeadm, log);
    writeFiles(cloudConfig.files, dir, log);
    for (const command of cloudConfig.commands) await this.run(command, kubeadm, log);
    if (!existsSync(hostPathOf(dir, BOOTSTRAP_SENTINEL)))
      throw new Error(`cloud-init finished without ${BOOTSTRAP_SENTINEL}: kubeadm did not succeed (see ${log})`);
    this.options.emit({ kind: "kubeadm-succeeded" });
    this.options.cluster.addBackend(this.options.name, address);
    this.setPhase("Running");
  }

  /** A directory holding `kubeadm` for this Machine's minor, which skips only the phases listed in SKIPPED_PHASES. */
  private kubeadmShim(): string {
    const minor = /^v?(\d+\.\d+)\./.exec(this.options.version)?.[1];
    if (!minor) throw new Error(`kubeadm machine ${this.options.name}: version ${this.options.version} has no minor`);
    const binary = builtBinary(`kubeadm-${minor}`);
    if (!existsSync(binary))
      throw new Error(
        `no kubeadm for Kubernetes ${minor} (${binary}); make deps builds the minors in hack/versions.env`,
      );
    const shimDir = join(this.options.dir, "bin");
    mkdirSync(shimDir, { recursive: true });
    const skip = Object.keys(SKIPPED_PHASES).join(",");
    writeFileSync(
      join(shimDir, "kubeadm"),
      [
        "#!/bin/sh",
        `# kubeadm ${minor} for this process Machine: init and join skip ${skip} (no container runtime here).`,
        'case "$1" in',
        `  init|join) sub="$1"; shift; exec '${binary}' "$sub" --skip-phases=${skip} "$@" ;;`,
        `  *) exec '${binary}' "$@" ;;`,
        "esac",
        "",
      ].join("\n"),
      { mode: 0o755 },
    );
    return shimDir;
  }

  private startKubelet(): void {
    const { dir, providerID, address } = this.options;
    const proc = startProcess({
      name: `process kubelet of ${this.options.name} (${this.hostName})`,
      command: "nsenter",
      args: [
        ...this.namespaces.nsenterArgs(repoRoot),
        process.execPath,
        "--import",
        "tsx",
        join(repoRoot, "e2e/provider/kubeadm/kubelet-main.ts"),
        "--node-name",
        this.hostName,
        "--provider-id",
        providerID,
        "--node-ip",
        address,
        "--bin-dir",
        join(repoRoot, "bin"),
        "--log-dir",
        join(dir, "pods"),
      ],
      cwd: repoRoot,
      logFile: join(dir, "kubelet.log"),
    });
    this.kubelet = proc;
    this.options.emit({ kind: "process-started", detail: { role: "kubelet", pid: proc.pid } });
    void proc.exited.then((exit) => {
      if (this.stopping || this.poweringOff) return;
      this.options.emit({ kind: "kubelet-exited", detail: { code: exit.code, signal: exit.signal } });
      this.options.cluster.markBackendDown(this.options.name);
    });
  }

  /**
   * Powers a Running Machine off, as a reboot (kured, a kernel update) begins: the load balancer stops sending to it,
   * the kubelet stops every static pod (SIGTERM, as on shutdown), and nothing else changes: namespaces, address, files.
   */
  async powerOff(): Promise<void> {
    if (this.phase !== "Running" || this.stopping) return;
    this.poweringOff = true;
    this.setPhase("PoweredOff");
    this.options.cluster.markBackendDown(this.options.name);
    this.options.emit({ kind: "powering-off", detail: { kubeletPid: this.kubelet?.pid } });
    const exit = await this.kubelet?.stop(15_000);
    this.options.emit({ kind: "powered-off", detail: { code: exit?.code, signal: exit?.signal } });
  }

  /** Boots a powered-off Machine: its kubelet starts again and brings up the static pods kubeadm wrote. */
  powerOn(): void {
    if (this.phase !== "PoweredOff" || this.stopping || this.kubelet?.isRunning()) return;
    this.poweringOff = false;
    this.startKubelet();
    this.setPhase("Running");
    this.options.emit({ kind: "powered-on", detail: { kubeletPid: this.kubelet?.pid } });
  }

  /** One cloud-init command, in the Machine's namespaces, with the kubeadm shim first on PATH. */
  private async run(command: string, shimDir: string, log: string): Promise<void> {
    this.checkStopping();
    appendFileSync(log, `runcmd: ${command}\n`);
    this.options.emit({ kind: "cloud-init-command", detail: { command } });
    const proc = startProcess({
      name: `cloud-init command of ${this.options.name}`,
      command: "nsenter",
      args: [...this.namespaces.nsenterArgs(), "sh", "-c", command],
      env: { ...process.env, PATH: `${shimDir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin` },
      cwd: "/",
      logFile: log,
    });
    this.command = proc;
    const exit = await proc.exited;
    this.command = undefined;
    this.checkStopping();
    if (exit.code !== 0)
      throw new Error(
        `cloud-init command failed (exit ${exit.code ?? exit.signal}): ${command}\n${proc.lastLogLines(15)}`,
      );
  }

  /** Stops everything the Machine runs; reports whether its member (by peer URL) was still in the membership. */
  async stop(): Promise<{ memberPresent: boolean | undefined }> {
    if (this.stopping) return { memberPresent: undefined };
    this.stopping = true;
    this.options.cluster.removeBackend(this.options.name);
    const memberPresent = await this.memberPresent();
    this.setPhase("Stopping");
    this.options.emit({ kind: "stopping", detail: { memberPresent, kubeletPid: this.kubelet?.pid } });
    await this.command?.stop(5_000);
    // The bootstrap starts the kubelet right after a stopping check, never after an await, so one stop covers it.
    await this.kubelet?.stop(15_000);
    await this.bootstrapping;
    await this.namespaces.remove();
    this.setPhase("Stopped");
    this.options.emit({ kind: "stopped" });
    rmSync(this.options.dir, { recursive: true, force: true });
    return { memberPresent };
  }
}
