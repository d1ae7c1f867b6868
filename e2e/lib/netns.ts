// The e2e run's own network namespace. kubeadm Machines live in network namespaces of their own (kubeadm's stacked
// kube-apiserver reaches its etcd at 127.0.0.1:2379, so every node needs a loopback of its own) and reach each other,
// the load balancer, Quorum and the management cluster over a bridge. Tests may use addresses only inside namespaces
// they made themselves, so the whole run moves into a fresh network namespace first: the bridge, its addresses and
// every veth exist only there, and vanish with it when the run's last process exits, however it ends.
import { spawn, spawnSync } from "node:child_process";

/** Set in the re-executed run: it is inside its own network namespace, with the bridge up. */
const INSIDE = "QUORUM_E2E_NETNS";
/** The bridge every kubeadm Machine's veth joins; its gateway address is the first of BRIDGE_CIDR. */
export const BRIDGE = "qbr0";
export const BRIDGE_PREFIX = "10.200";
export const BRIDGE_GATEWAY = `${BRIDGE_PREFIX}.0.1`;
export const BRIDGE_PREFIX_LENGTH = 16;

/** True when this process runs in the e2e run's own network namespace (so the bridge exists). */
export function insideOwnNetworkNamespace(): boolean {
  return process.env[INSIDE] === "1";
}

/** Runs a command to completion and throws with its stderr when it fails. */
export function run(command: string, args: string[]): string {
  const result = spawnSync(command, args, { encoding: "utf8" });
  const what = `${command} ${args.join(" ")}`;
  if (result.error) throw new Error(`${what}: ${result.error.message}`);
  if (result.status !== 0) throw new Error(`${what}: ${result.stderr.trim() || `exit ${result.status}`}`);
  return result.stdout;
}

/** Runs `ip` (iproute2). */
export function ip(...args: string[]): void {
  run("ip", args);
}

/**
 * Re-runs this program (same node flags and arguments) in a new network namespace and exits with its exit code;
 * returns in the re-run. Needs root (CAP_SYS_ADMIN); without it the run stays where it is and says why, and only the
 * scenarios that need namespaces fail.
 */
export async function enterOwnNetworkNamespace(log: (line: string) => void): Promise<void> {
  if (insideOwnNetworkNamespace()) {
    setUpBridge();
    return;
  }
  const probe = spawnSync("unshare", ["--net", "true"], { encoding: "utf8" });
  if (probe.status !== 0) {
    log(
      `e2e: cannot make a network namespace (${(probe.stderr || probe.error?.message || "").trim()}); ` +
        "running on the host's loopback, and scenarios with kubeadm Machines will fail: run make e2e as root",
    );
    return;
  }
  const child = spawn("unshare", ["--net", "--", process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
    stdio: "inherit",
    env: { ...process.env, [INSIDE]: "1" },
  });
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => child.kill(signal));
  const code = await new Promise<number>((resolve) =>
    child.on("exit", (exitCode, signal) => resolve(exitCode ?? (signal ? 128 : 1))),
  );
  process.exit(code);
}

/**
 * The bridge's own link-layer address, set once: a Linux bridge whose address nobody set takes the lowest address among
 * its ports, so a Machine joining or leaving (its veth's address is random) could change it under every other Machine's
 * ARP entry for the load balancer and the gateway, whose packets then went nowhere until that entry expired (up to a
 * minute; kubeadm join's API calls give up after one). A cloud's gateway keeps its address; so does this one.
 */
export const BRIDGE_MAC = "02:00:0a:c8:00:01";

/** Creates the bridge in the run's own network namespace (exported for the test that holds it to BRIDGE_MAC). */
export function setUpBridge(): void {
  ip("link", "set", "lo", "up");
  ip("link", "add", BRIDGE, "type", "bridge");
  ip("link", "set", BRIDGE, "address", BRIDGE_MAC);
  ip("addr", "add", `${BRIDGE_GATEWAY}/${BRIDGE_PREFIX_LENGTH}`, "dev", BRIDGE);
  ip("link", "set", BRIDGE, "up");
}

/**
 * Joins the network namespace of process `pid` to the bridge, as a Machine's NIC: a veth pair whose end `eth0` inside
 * has `address` and a default route to the gateway, and whose end `vethName` (at most 15 characters) is a bridge port,
 * with link-layer address `mac` when given (the kernel picks a random one otherwise).
 */
export function joinBridge(pid: number, vethName: string, address: string, mac?: string): void {
  const port = mac ? [vethName, "address", mac] : [vethName];
  ip("link", "add", ...port, "type", "veth", "peer", "name", "eth0", "netns", String(pid));
  ip("link", "set", vethName, "master", BRIDGE, "up");
  const inside = (...args: string[]) => run("nsenter", ["-t", String(pid), "--net", "ip", ...args]);
  inside("link", "set", "lo", "up");
  inside("addr", "add", `${address}/${BRIDGE_PREFIX_LENGTH}`, "dev", "eth0");
  inside("link", "set", "eth0", "up");
  inside("route", "add", "default", "via", BRIDGE_GATEWAY);
}

/** A cluster's share of the bridge: Machines get `<prefix>.1` to `.250`, its load balancer `<prefix>.254`. */
export interface BridgeSubnet {
  /** "10.200.3" */
  readonly prefix: string;
  address(hostNumber: number): string;
  release(): void;
}

/**
 * The lowest 10.200.N.0/24 (N ≥ 1) whose load balancer address is not on the bridge yet, with that address added to
 * the bridge so the load balancer can listen on it and every Machine can reach it.
 */
export function reserveBridgeSubnet(): BridgeSubnet {
  if (!insideOwnNetworkNamespace())
    throw new Error("a Namespaces ProcessCluster needs the e2e run's own network namespace; run make e2e as root");
  const taken = run("ip", ["-o", "-4", "addr", "show", "dev", BRIDGE]);
  for (let n = 1; n < 255; n++) {
    const prefix = `${BRIDGE_PREFIX}.${n}`;
    const loadBalancer = `${prefix}.254`;
    if (taken.includes(` ${loadBalancer}/`)) continue;
    ip("addr", "add", `${loadBalancer}/32`, "dev", BRIDGE);
    return {
      prefix,
      address: (hostNumber) => `${prefix}.${hostNumber}`,
      release: () => {
        try {
          ip("addr", "del", `${loadBalancer}/32`, "dev", BRIDGE);
        } catch {
          // Already gone with the namespace.
        }
      },
    };
  }
  throw new Error(`no free /24 left on the bridge ${BRIDGE} (${BRIDGE_PREFIX}.1–254.0)`);
}
