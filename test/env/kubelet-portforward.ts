// The kubelet's /portForward server (bin/quorum-kubelet-portforward, hack/tools/kubelet-portforward) on a free
// loopback port: a Node whose status.daemonEndpoints.kubeletEndpoint.Port is this port and whose InternalIP is its host
// lets a real kube-apiserver's pods/portforward reach ports on that host, as it reaches a real kubelet.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  createCA,
  issueCertificate,
  oneDay,
  validFor,
  type CertificateAuthority,
} from "../../src/adapters/certs/pki.ts";
import type { KubeConfig } from "@kubernetes/client-node";
import { kubeRequestOk } from "./kube.ts";
import { makeTempDir, removeTempDir, startProcess, waitUntilReady, type ManagedProcess } from "./processes.ts";
import { builtBinary } from "./tools.ts";
import { eventually } from "./wait.ts";

export interface KubeletPortForwardOptions {
  /** Address to serve HTTPS on (default 127.0.0.1); the port is always a free one the server picks. */
  host?: string;
  /** Where a pod's port is dialled (default 127.0.0.1): the pods it stands for are hostNetwork. */
  targetHost?: string;
  /** PEM CA: if set, only clients with a certificate it signed (kube-apiserver's --kubelet-client-certificate). */
  clientCaFile?: string;
  /** Directory for its log (default: a fresh temp dir, removed on stop). */
  logDir?: string;
}

export interface KubeletPortForward {
  readonly port: number;
  /** host:port it serves on. */
  readonly address: string;
  readonly process: ManagedProcess;
  /** Stops the server (SIGTERM) and removes its temp dir. Idempotent. */
  stop(): Promise<void>;
}

const listeningLine = /^listening on (\S+):(\d+)$/m;

export async function startKubeletPortForward(options: KubeletPortForwardOptions = {}): Promise<KubeletPortForward> {
  const host = options.host ?? "127.0.0.1";
  const ownDir = options.logDir === undefined ? makeTempDir("kubelet-portforward") : undefined;
  const logFile = join(options.logDir ?? ownDir ?? "", `kubelet-portforward-${host}.log`);
  const args = [`--listen=${host}:0`, `--target-host=${options.targetHost ?? "127.0.0.1"}`];
  if (options.clientCaFile) args.push(`--client-ca-file=${options.clientCaFile}`);
  // Port 0 and the printed address, rather than freePort(): nothing can take the port between the check and the bind.
  const proc = startProcess({
    name: `kubelet port-forward (${host})`,
    command: builtBinary("quorum-kubelet-portforward"),
    args,
    logFile,
  });
  const stop = async () => {
    await proc.stop(5_000);
    if (ownDir) removeTempDir(ownDir);
  };
  try {
    let port = 0;
    await waitUntilReady({
      process: proc,
      what: `"listening on" in ${logFile}`,
      timeoutMs: 10_000,
      intervalMs: 50,
      probe: async () => {
        const match = listeningLine.exec(readFileSync(logFile, "utf8"));
        if (!match) return "not listening yet";
        port = Number(match[2]);
        return true;
      },
    });
    return { port, address: `${host}:${port}`, process: proc, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

export interface KubeletClientSetup {
  /** The cluster CA: give it to startApiServer({ ca }). */
  ca: CertificateAuthority;
  /** Its PEM file: the kubelet's --client-ca-file. */
  caFile: string;
  /** kube-apiserver flags as kubeadm sets them for calls to kubelets: add to startApiServer's extraArgs. */
  apiServerArgs: string[];
}

/**
 * kubeadm's shape for kube-apiserver → kubelet calls (pods/portforward): a cluster CA, an apiserver-kubelet-client
 * certificate it signed, and InternalIP tried first (the default order tries a Node's Hostname address first).
 * kube-apiserver does not verify the kubelet's serving certificate (no --kubelet-certificate-authority, as kubeadm).
 */
export async function kubeletClientSetup(dir: string): Promise<KubeletClientSetup> {
  const ca = await createCA("quorum-test-cluster-ca", validFor(7 * oneDay));
  const client = await issueCertificate(ca, {
    commonName: "kube-apiserver-kubelet-client",
    organization: ["kubeadm:cluster-admins"],
    usages: "client",
    validity: validFor(oneDay),
  });
  const file = (name: string, contents: string) => {
    writeFileSync(join(dir, name), contents, { mode: 0o600 });
    return join(dir, name);
  };
  return {
    ca,
    caFile: file("ca.crt", ca.certPem),
    apiServerArgs: [
      `--kubelet-client-certificate=${file("apiserver-kubelet-client.crt", client.certPem)}`,
      `--kubelet-client-key=${file("apiserver-kubelet-client.key", client.keyPem)}`,
      "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
    ],
  };
}

/** Points Node `node` at a kubelet port-forward server: its InternalIP is `address`, its kubelet endpoint `port`. */
export async function pointNodeAtKubelet(
  kubeConfig: KubeConfig,
  node: string,
  address: string,
  port: number,
): Promise<void> {
  await kubeRequestOk(kubeConfig, `/api/v1/nodes/${node}/status`, {
    method: "PATCH",
    body: {
      status: {
        addresses: [{ type: "InternalIP", address }],
        daemonEndpoints: { kubeletEndpoint: { Port: port } },
      },
    },
  });
}

/** The mirror Pod kubeadm's etcd static pod gets on `node`: kube-system/etcd-<node>, hostNetwork. */
export async function createEtcdMirrorPod(kubeConfig: KubeConfig, node: string): Promise<void> {
  // kube-system appears a moment after /readyz (the apiserver's system-namespaces controller creates it).
  await eventually(`Pod kube-system/etcd-${node} created`, () =>
    kubeRequestOk(kubeConfig, "/api/v1/namespaces/kube-system/pods", {
      body: {
        metadata: { name: `etcd-${node}`, namespace: "kube-system" },
        spec: {
          nodeName: node,
          hostNetwork: true,
          containers: [{ name: "etcd", image: "registry.k8s.io/etcd:3.7.0-0" }],
        },
      },
    }),
  );
}
