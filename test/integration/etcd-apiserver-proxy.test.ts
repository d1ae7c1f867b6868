// spec.etcd.access APIServerProxy (issue 18) on a real kube-apiserver and a real TLS etcd: Quorum reaches the member
// only through pods/portforward to kube-system/etcd-<node>, which the API server carries to the kubelet's own
// /portForward code (bin/quorum-kubelet-portforward), which dials the member. The QuorumControlPlane is a kubeadm one
// with no access set, so the flavour's default is what picks the tunnel (ClusterWorkloadAccess, as the controller
// uses it). The member's certificate names only its own address (127.a.b.N), never 127.0.0.1 where the client dials:
// a tunnel that did not verify for the member's host could not connect at all.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import type { Cluster } from "../../src/api/capi.ts";
import type { QuorumControlPlane } from "../../src/api/types.ts";
import { EndpointUnreachableError } from "../../src/adapters/errors.ts";
import { normalizeEndpoint } from "../../src/adapters/etcd/endpoints.ts";
import type { EtcdClusterClient } from "../../src/adapters/etcd/types.ts";
import { ClusterWorkloadAccess } from "../../src/adapters/workload/access.ts";
import { startApiServer, type ApiServer } from "../env/apiserver.ts";
import { startEtcdCluster, type EtcdCluster } from "../env/etcd.ts";
import { kubeRequestOk } from "../env/kube.ts";
import {
  createEtcdMirrorPod,
  kubeletClientSetup,
  pointNodeAtKubelet,
  startKubeletPortForward,
  type KubeletPortForward,
} from "../env/kubelet-portforward.ts";
import { makeTempDir, removeTempDir } from "../env/processes.ts";
import { eventually } from "../env/wait.ts";
import { MemorySecretStore } from "../unit/adapters/memory-secret-store.ts";
import { controlPlane } from "../unit/controller/fixtures.ts";

const NS = "ns";
const CLUSTER = "c1";
const NODE = "n1";
const DEADLINE_MS = 3_000;

describe("etcd through the workload API server (spec.etcd.access APIServerProxy)", () => {
  let dir: string;
  let api: ApiServer;
  let etcd: EtcdCluster;
  let kubelet: KubeletPortForward | undefined;
  let kubeletCaFile: string;
  let access: ClusterWorkloadAccess;
  let qcp: QuorumControlPlane;
  let cluster: Cluster;
  let endpoint: string;
  let memberAddress: string;
  /** Connections the access reported closed (control plane key, endpoint), as the controller would be told. */
  const lost: string[] = [];

  /** A kubelet port-forward server on the member's address, and Node n1 pointing at its port. */
  async function startKubelet(): Promise<KubeletPortForward> {
    const started = await startKubeletPortForward({
      host: memberAddress,
      targetHost: memberAddress,
      clientCaFile: kubeletCaFile,
    });
    kubelet = started;
    await pointNodeAtKubelet(api.kubeConfig, NODE, memberAddress, started.port);
    return started;
  }

  /** One reconcile's use of etcd: lease the pooled client, use it, hand it back. */
  async function round<T>(
    use: (client: EtcdClusterClient) => Promise<T>,
    machineNodes?: ReadonlyMap<string, string>,
  ): Promise<T> {
    const client = await access.etcd(qcp, cluster, [endpoint], machineNodes);
    try {
      return await use(client);
    } finally {
      await client.close();
    }
  }

  before(async () => {
    dir = makeTempDir("etcd-apiserver-proxy");
    // kubeadm's shape: the API server presents a client certificate the cluster CA signed to the kubelet, which
    // accepts only that CA's clients.
    const kubeletClient = await kubeletClientSetup(dir);
    kubeletCaFile = kubeletClient.caFile;
    api = await startApiServer({ ca: kubeletClient.ca, extraArgs: kubeletClient.apiServerArgs });
    etcd = await startEtcdCluster({ members: 1, tls: true });
    const member = etcd.members[0];
    memberAddress = member.address;
    endpoint = member.clientURL;
    assert.ok(memberAddress !== "127.0.0.1", "the member must not serve on the address the tunnel dials");

    await kubeRequestOk(api.kubeConfig, "/api/v1/nodes", { body: { metadata: { name: NODE } } });
    await startKubelet();
    await createEtcdMirrorPod(api.kubeConfig, NODE);

    // The management side: the cluster CA (with its key) lets Quorum reach the workload API with its own certificate,
    // the etcd CA lets it issue its etcd client certificate.
    const secrets = new MemorySecretStore();
    secrets.seed(NS, `${CLUSTER}-ca`, { "tls.crt": api.ca.certPem, "tls.key": api.ca.keyPem });
    assert.ok(etcd.ca);
    secrets.seed(NS, `${CLUSTER}-etcd`, { "tls.crt": etcd.ca.certPem, "tls.key": etcd.ca.keyPem });
    access = new ClusterWorkloadAccess({
      secrets,
      etcdCallDeadlineMs: DEADLINE_MS,
      onEtcdConnectionLost: (controlPlaneKey, lostEndpoint) => lost.push(`${controlPlaneKey} ${lostEndpoint}`),
    });
    qcp = controlPlane();
    qcp.spec.machineTemplate.spec.bootstrapConfigTemplateRef = {
      apiVersion: "bootstrap.cluster.x-k8s.io/v1beta2",
      kind: "KubeadmConfigTemplate",
      name: "cp-kubeadm",
    };
    const apiUrl = new URL(api.url);
    cluster = {
      metadata: { name: CLUSTER, namespace: NS },
      spec: { controlPlaneEndpoint: { host: apiUrl.hostname, port: Number(apiUrl.port) } },
    };
  });

  after(async () => {
    await access?.closeAll();
    await kubelet?.stop();
    await etcd?.stop();
    await api?.stop();
    if (dir) removeTempDir(dir);
  });

  it("lists the members and reads each member's status through the API server, the member's certificate verified", async () => {
    const { members, statuses } = await round(async (client) => {
      const listed = await client.listMembers();
      return { members: listed, statuses: await client.memberStatuses(listed) };
    });
    assert.deepEqual(
      members.map((member) => member.clientURLs),
      [[endpoint]],
    );
    assert.equal(statuses.length, 1);
    assert.deepEqual(statuses[0].errors, []);
    assert.equal(statuses[0].reachable, true);
    assert.equal(statuses[0].leader, true);
    assert.equal(statuses[0].endpoint, endpoint, "status names the member's own URL, not the loopback listener");
    // Through the kubelet, not by dialling the member (which this loopback setup would also allow).
    assert.match(
      readFileSync(kubelet?.process.logFile ?? "", "utf8"),
      new RegExp(`portForward kube-system/etcd-${NODE}: `),
    );
  });

  it("tells the kubelet's death as a lost connection, fails a round within the deadline while it is gone, and the next round after it is back succeeds", async () => {
    assert.equal((await round((client) => client.memberStatuses()))[0].reachable, true);
    lost.length = 0;
    await kubelet?.stop();
    kubelet = undefined;
    // The tunnel's connection ends with the kubelet's stream: the controller looks at the cluster without waiting.
    await eventually("the access reports the tunnelled connection lost", async () => lost.length > 0 || undefined, {
      timeoutMs: 10_000,
    });
    assert.deepEqual(lost, [`${qcp.metadata.namespace}/${qcp.metadata.name} ${normalizeEndpoint(endpoint)}`]);

    const started = performance.now();
    const failure = await round((client) => client.listMembers()).then(
      () => assert.fail("the member list was read with the kubelet gone"),
      (error: unknown) => error,
    );
    const elapsedMs = performance.now() - started;
    assert.ok(elapsedMs <= DEADLINE_MS + 1_000, `the round took ${Math.round(elapsedMs)} ms`);
    assert.ok(failure instanceof EndpointUnreachableError, String(failure));
    assert.match(failure.message, new RegExp(`kube-system/etcd-${NODE}`));

    await startKubelet();
    const statuses = await round((client) => client.memberStatuses());
    assert.deepEqual(statuses[0].errors, []);
    assert.equal(statuses[0].reachable, true);
  });

  it("shows what the kubelet reported when nothing listens on the member's port in the pod", async () => {
    // Same Node and pod, a port etcd does not serve: the kubelet's dial fails and it says so on the error channel.
    const closedPort = `https://${memberAddress}:2381`;
    const statuses = await round((client) =>
      client.memberStatuses([{ id: "3", name: "m3", peerURLs: [], clientURLs: [closedPort], learner: false }]),
    );
    assert.equal(statuses[0].reachable, false);
    assert.match(
      statuses[0].errors.join("; "),
      new RegExp(
        `^etcd member at ${closedPort.replace(/\./g, "\\.")} not reachable through the workload API server .*` +
          `port-forward to pod kube-system/etcd-${NODE} \\(node ${NODE}\\) port 2381: the kubelet reported: .*2381`,
      ),
    );
  });

  it("names the pod kube-system/etcd-<node> and says it is not found when the Node runs no etcd pod", async () => {
    // Node n2 has an address but no etcd-n2 pod: the API server refuses the port-forward before any kubelet is asked.
    await kubeRequestOk(api.kubeConfig, "/api/v1/nodes", { body: { metadata: { name: "n2" } } });
    await kubeRequestOk(api.kubeConfig, "/api/v1/nodes/n2/status", {
      method: "PATCH",
      body: { status: { addresses: [{ type: "InternalIP", address: "127.0.0.1" }] } },
    });
    const podless = "https://127.0.0.1:2379";
    // The tunnel's Node list is re-listed on a miss at most every 5 s: n2 is seen within that.
    const statuses = await eventually(
      "the member's error to name the pod of Node n2",
      async () => {
        const seen = await round((client) =>
          client.memberStatuses([{ id: "2", name: "m2", peerURLs: [], clientURLs: [podless], learner: false }]),
        );
        return /etcd-n2/.test(seen[0].errors.join("; ")) ? seen : { waiting: seen[0].errors.join("; ") };
      },
      { timeoutMs: 20_000 },
    );
    assert.equal(statuses[0].reachable, false);
    assert.match(
      statuses[0].errors.join("; "),
      /^etcd member at https:\/\/127\.0\.0\.1:2379 not reachable through the workload API server .*pod kube-system\/etcd-n2 not found \(HTTP 404\).*spec\.etcd\.access: Direct/,
    );
  });

  it("names the RBAC grant it needs when the workload credentials may not create pods/portforward (HTTP 403)", async () => {
    // A tenant's kubeconfig Secret (the CA Secret has no key, so Quorum cannot use its own certificate) whose user may
    // list Nodes and read Pods but not port-forward.
    await kubeRequestOk(api.kubeConfig, "/apis/rbac.authorization.k8s.io/v1/clusterroles", {
      body: {
        metadata: { name: "etcd-proxy-reader" },
        rules: [
          { apiGroups: [""], resources: ["nodes"], verbs: ["list"] },
          { apiGroups: [""], resources: ["pods"], verbs: ["get"] },
        ],
      },
    });
    await kubeRequestOk(api.kubeConfig, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
      body: {
        metadata: { name: "etcd-proxy-reader" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "etcd-proxy-reader" },
        subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "tenant" }],
      },
    });
    const tenant = await api.userKubeConfig("tenant");
    const secrets = new MemorySecretStore();
    secrets.seed(NS, `${CLUSTER}-ca`, { "tls.crt": api.ca.certPem });
    secrets.seed(NS, `${CLUSTER}-kubeconfig`, { value: readFileSync(tenant.kubeconfigPath, "utf8") });
    assert.ok(etcd.ca);
    secrets.seed(NS, `${CLUSTER}-etcd`, { "tls.crt": etcd.ca.certPem, "tls.key": etcd.ca.keyPem });
    const tenantAccess = new ClusterWorkloadAccess({ secrets, etcdCallDeadlineMs: DEADLINE_MS });
    try {
      const client = await tenantAccess.etcd(qcp, cluster, [endpoint]);
      try {
        const statuses = await client.memberStatuses([
          { id: "1", name: "m1", peerURLs: [], clientURLs: [endpoint], learner: false },
        ]);
        assert.equal(statuses[0].reachable, false);
        assert.match(
          statuses[0].errors.join("; "),
          new RegExp(
            `port-forward to pod kube-system/etcd-${NODE} \\(node ${NODE}\\) port 2379 was refused \\(HTTP 403 ` +
              'Forbidden\\): the workload cluster\'s credentials need "create" on "pods/portforward" in namespace kube-system',
          ),
        );
      } finally {
        await client.close();
      }
    } finally {
      await tenantAccess.closeAll();
    }
  });

  it("reaches a member whose Node reports another address (a second NIC) through its Machine's nodeRef", async () => {
    // kubeadm advertises etcd on the host's second NIC (localAPIEndpoint.advertiseAddress) while the kubelet reports
    // the first NIC's address as the Node's InternalIP: n1's kubelet now serves on 127.0.0.1, and no Node lists the
    // member's address. The Machine with that address names n1 in its status.nodeRef.
    const other = await startKubeletPortForward({
      host: "127.0.0.1",
      targetHost: memberAddress,
      clientCaFile: kubeletCaFile,
    });
    try {
      await pointNodeAtKubelet(api.kubeConfig, NODE, "127.0.0.1", other.port);
      await access.forget(NS, CLUSTER); // a new kept client: nothing from the Node lists before
      const member = { id: "1", name: "m1", peerURLs: [], clientURLs: [endpoint], learner: false };
      const unmapped = await round((client) => client.memberStatuses([member]));
      assert.equal(unmapped[0].reachable, false, "by the Nodes' addresses alone the member cannot be found");
      assert.match(unmapped[0].errors.join("; "), /no Node of the workload cluster has the address/);
      await access.forget(NS, CLUSTER);
      const statuses = await round((client) => client.memberStatuses(), new Map([[memberAddress, NODE]]));
      assert.deepEqual(statuses[0].errors, []);
      assert.equal(statuses[0].reachable, true);
      assert.match(readFileSync(other.process.logFile, "utf8"), new RegExp(`portForward kube-system/etcd-${NODE}: `));
    } finally {
      await other.stop();
      if (kubelet) await pointNodeAtKubelet(api.kubeConfig, NODE, memberAddress, kubelet.port);
    }
  });
});
