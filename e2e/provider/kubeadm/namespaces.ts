// One kubeadm Machine's "host": its own network, mount and UTS namespaces, so several kubeadm nodes share this
// machine as they would share a cloud. A holder process (`sleep`) keeps the namespaces alive; every process of the
// Machine enters them with nsenter. Inside:
//  - network: its own loopback (kubeadm's kube-apiserver dials etcd at 127.0.0.1:2379) and eth0, one end of a veth
//    pair whose other end joins the run's bridge (e2e/lib/netns.ts), with the Machine's address and a default route
//    to the bridge. kubeadm picks the default route's address as the node's advertise address, as on a VM.
//  - mount: /etc/kubernetes, /var/lib/kubelet, /var/lib/etcd, /run/kubeadm and /run/cluster-api bound to directories
//    of this Machine, so kubeadm writes the node's files there only (the host's stay empty mount points).
//  - UTS: a host name that is not the Machine's name (`ip-10-200-1-3`), as on clouds; kubeadm names the Node and
//    the etcd member after it.
//  - firewall (nftables, firewall.ts): etcd's client port admits only the cluster's own Machines (kubeadm join's
//    etcd phase dials the members directly), as a cloud's security group would; Quorum must come through the
//    workload API server. The scenario's own observer uses a side port (ETCD_OBSERVER_PORT).
// Killing the holder and the Machine's processes ends the namespaces, and with them the veth pair.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { startProcess, type ManagedProcess } from "../../../test/env/processes.ts";
import { insideOwnNetworkNamespace, joinBridge, run } from "../../lib/netns.ts";
import { etcdFirewall } from "./firewall.ts";

/** The node paths bound to the Machine's own directories (as a VM's disk holds them). */
export const NODE_PATHS = ["/etc/kubernetes", "/var/lib/kubelet", "/var/lib/etcd", "/run/kubeadm", "/run/cluster-api"];

/** Where node path `path` lives on this machine, for a Machine whose directory is `dir`. */
export function hostPathOf(dir: string, path: string): string {
  const root = NODE_PATHS.find((prefix) => path === prefix || path.startsWith(`${prefix}/`));
  if (!root) {
    throw new Error(
      `${path} is outside the node paths a kubeadm process Machine keeps (${NODE_PATHS.join(", ")}); ` +
        "add it to NODE_PATHS in e2e/provider/kubeadm/namespaces.ts",
    );
  }
  return join(dir, "root", path);
}

/** "ip-10-200-1-3": the host name a cloud would give a VM with that address. */
export function hostNameFor(address: string): string {
  return `ip-${address.replaceAll(".", "-")}`;
}

export class MachineNamespaces {
  private holder: ManagedProcess | undefined;

  constructor(
    readonly options: {
      /** Names the holder in logs, e.g. "kubeadm machine default/k-cp-abc12". */
      name: string;
      dir: string;
      address: string;
      hostName: string;
      /** The host end of the veth pair: at most 15 characters, unique in the run. */
      vethName: string;
    },
  ) {}

  get pid(): number {
    if (!this.holder) throw new Error(`${this.options.name}: its namespaces were not created`);
    return this.holder.pid;
  }

  /**
   * nsenter's arguments, up to `--`, that run a program inside the Machine's namespaces, in `workingDir` (nsenter
   * --mount otherwise starts it in /).
   */
  nsenterArgs(workingDir = "/"): string[] {
    return ["-t", String(this.pid), "--net", "--mount", "--uts", `--wd=${workingDir}`, "--"];
  }

  async create(): Promise<void> {
    if (!insideOwnNetworkNamespace()) {
      throw new Error(
        `${this.options.name}: kubeadm Machines need the e2e run's own network namespace and bridge; run make e2e as root`,
      );
    }
    const { dir, hostName, name } = this.options;
    const ready = join(dir, "namespaces.ready");
    const binds = NODE_PATHS.map((path) => {
      mkdirSync(hostPathOf(dir, path), { recursive: true });
      // The mount point must exist on the host; it stays empty there.
      mkdirSync(path, { recursive: true });
      return `mount --bind '${hostPathOf(dir, path)}' '${path}'`;
    });
    this.holder = startProcess({
      name: `namespaces of ${name}`,
      command: "unshare",
      args: [
        "--net",
        "--mount",
        "--uts",
        "--propagation",
        "private",
        "--",
        "sh",
        "-ec",
        [...binds, `hostname '${hostName}'`, `touch '${ready}'`, "exec sleep infinity"].join("\n"),
      ],
      logFile: join(dir, "namespaces.log"),
    });
    const deadline = Date.now() + 10_000;
    while (!existsSync(ready)) {
      if (!this.holder.isRunning())
        throw new Error(`${name}: could not create its namespaces: ${this.holder.lastLogLines(5)}`);
      if (Date.now() > deadline) throw new Error(`${name}: its namespaces were not ready within 10 s`);
      await sleep(20);
    }
    this.connect();
  }

  /** A veth pair: eth0 with the Machine's address inside, the other end on the bridge. */
  private connect(): void {
    const { vethName, address } = this.options;
    joinBridge(this.pid, vethName, address);
    const rules = join(this.options.dir, "firewall.nft");
    writeFileSync(rules, etcdFirewall({ interfaceName: "eth0", address }));
    run("nsenter", ["-t", String(this.pid), "--net", "nft", "-f", rules]);
  }

  /** Kills the holder; the namespaces end once the Machine's processes are gone too. */
  async remove(): Promise<void> {
    await this.holder?.kill();
  }
}
