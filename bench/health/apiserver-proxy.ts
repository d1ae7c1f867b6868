// The health benchmark's APIServerProxy world (spec.etcd.access: APIServerProxy, issue 18): the same 5-member etcd,
// reached only through a real kube-apiserver's pods/portforward, as test/integration/etcd-apiserver-proxy.test.ts sets
// it up. Per member: a Node whose InternalIP is the member's address (127.a.b.N), a kubelet port-forward server
// (bin/quorum-kubelet-portforward) listening on that address and dialling it, and the static pod kube-system/etcd-<node>.
// The cluster's ClusterWorkloadAccess then leases a kept client whose every connection is a port-forward.
import { readFileSync } from "node:fs";
import type { Cluster } from "../../src/api/capi.ts";
import type { QuorumControlPlane } from "../../src/api/types.ts";
import { silentLogger } from "../../src/adapters/kube/log.ts";
import type { EtcdClusterClient } from "../../src/adapters/etcd/types.ts";
import { ClusterWorkloadAccess } from "../../src/adapters/workload/access.ts";
import {
  createEtcdMirrorPod,
  kubeletClientSetup,
  kubeRequestOk,
  makeTempDir,
  pointNodeAtKubelet,
  removeTempDir,
  startApiServer,
  startKubeletPortForward,
  type ApiServer,
  type EtcdCluster,
  type KubeletPortForward,
} from "../../test/env/index.ts";
import { MemorySecretStore } from "../../test/unit/adapters/memory-secret-store.ts";

/** One reconcile's hold on the cluster's kept etcd client: etcd() then close(), as src/controller/reconcile.ts does. */
export type KeptClient = <T>(use: (client: EtcdClusterClient) => Promise<T>) => Promise<T>;

/** A lease on the kept client of one cluster, the way every reconcile takes it. */
export function keptClient(
  access: ClusterWorkloadAccess,
  controlPlane: QuorumControlPlane,
  cluster: Cluster,
  endpoints: () => string[],
): KeptClient {
  return async (use) => {
    const client = await access.etcd(controlPlane, cluster, endpoints());
    try {
      return await use(client);
    } finally {
      await client.close();
    }
  };
}

/** A QuorumControlPlane with only what ClusterWorkloadAccess.etcd() reads (namespace, owner, spec.etcd). */
export function benchControlPlane(name: string, spec: Record<string, unknown>): QuorumControlPlane {
  return {
    apiVersion: "controlplane.cluster.x-k8s.io/v1beta1",
    kind: "QuorumControlPlane",
    metadata: { name, namespace: "bench", uid: `bench-${name}` },
    spec,
  } as unknown as QuorumControlPlane;
}

export interface ApiServerProxyWorld {
  kept: KeptClient;
  api: ApiServer;
  /** The kubelet port-forward server on each member's address. */
  kubelets: ReadonlyMap<string, KubeletPortForward>;
  /** Lines of a member's kubelet log (its port-forwards and their errors), for explaining a slow round. */
  kubeletLog(memberAddress: string): string[];
  /** Port-forwards all the kubelets have opened so far (one per TCP connection the etcd client made). */
  portForwardsOpened(): number;
  stop(): Promise<void>;
}

const CLUSTER = "health-proxy";
/** The kubelet port-forward server's line for each port-forward it accepts (hack/tools/kubelet-portforward). */
const portForwardOpened = /portForward \S+: .*connection from \S+$/;

export async function startApiServerProxyWorld(etcd: EtcdCluster, deadlineMs: number): Promise<ApiServerProxyWorld> {
  const dir = makeTempDir("bench-health-proxy");
  const kubelets = new Map<string, KubeletPortForward>();
  let api: ApiServer | undefined;
  let access: ClusterWorkloadAccess | undefined;
  const stop = async () => {
    await access?.closeAll();
    await Promise.all([...kubelets.values()].map((kubelet) => kubelet.stop()));
    await api?.stop();
    removeTempDir(dir);
  };
  try {
    // kubeadm's shape: kube-apiserver calls kubelets with a client certificate the cluster CA signed.
    const kubeletClient = await kubeletClientSetup(dir);
    api = await startApiServer({ ca: kubeletClient.ca, extraArgs: kubeletClient.apiServerArgs });
    const server = api;
    for (const [index, member] of etcd.members.entries()) {
      const node = `bench-node-${index + 1}`;
      const kubelet = await startKubeletPortForward({
        host: member.address,
        targetHost: member.address,
        clientCaFile: kubeletClient.caFile,
        logDir: dir,
      });
      kubelets.set(member.address, kubelet);
      await kubeRequestOk(server.kubeConfig, "/api/v1/nodes", { body: { metadata: { name: node } } });
      await pointNodeAtKubelet(server.kubeConfig, node, member.address, kubelet.port);
      await createEtcdMirrorPod(server.kubeConfig, node);
    }
    const etcdCa = etcd.ca;
    if (!etcdCa) throw new Error("etcd bench cluster: started without TLS, so there is no CA for the proxy series");
    // The cluster CA with its key lets Quorum reach the workload API server with its own certificate.
    const secrets = new MemorySecretStore();
    secrets.seed("bench", `${CLUSTER}-ca`, { "tls.crt": server.ca.certPem, "tls.key": server.ca.keyPem });
    secrets.seed("bench", `${CLUSTER}-etcd`, { "tls.crt": etcdCa.certPem, "tls.key": etcdCa.keyPem });
    access = new ClusterWorkloadAccess({ secrets, etcdCallDeadlineMs: deadlineMs, log: silentLogger });
    const apiUrl = new URL(server.url);
    const cluster: Cluster = {
      metadata: { name: CLUSTER, namespace: "bench" },
      spec: { controlPlaneEndpoint: { host: apiUrl.hostname, port: Number(apiUrl.port) } },
    };
    // Set explicitly rather than through a kubeadm bootstrap template: the series must not change with the default.
    const controlPlane = benchControlPlane(CLUSTER, { etcd: { access: "APIServerProxy" } });
    const kubeletLog = (address: string) => {
      const file = kubelets.get(address)?.process.logFile;
      return file ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
    };
    return {
      kept: keptClient(access, controlPlane, cluster, () => etcd.endpoints()),
      api: server,
      kubelets,
      kubeletLog,
      portForwardsOpened: () =>
        [...kubelets.keys()].flatMap(kubeletLog).filter((line) => portForwardOpened.test(line)).length,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
