// Least privilege, proven on the real API server: config/default's RBAC is installed and the API server is asked,
// through SubjectAccessReview for the controller's ServiceAccount, what it may and may not do. A pod that holds every
// workload cluster's CA keys must not be able to take over kube-system's leader Leases, rewrite arbitrary Secrets,
// delete CRDs or start pods.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { kubeRequestOk } from "../env/kube.ts";
import { CONTROLLER_SERVICE_ACCOUNT, startStack, type ControllerStack } from "./controller/stack.ts";

interface Access {
  verb: string;
  group?: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

const describeAccess = (access: Access) =>
  `${access.verb} ${access.group ? `${access.group}/` : ""}${access.resource}${access.subresource ? `/${access.subresource}` : ""}${access.name ? ` ${access.name}` : ""} in ${access.namespace ?? "all namespaces / cluster scope"}`;

/** Not in the Role or ClusterRoles config/default installs, or the bounds around them (names, namespaces) hold. */
const FORBIDDEN: Access[] = [
  {
    verb: "update",
    group: "coordination.k8s.io",
    resource: "leases",
    namespace: "kube-system",
    name: "kube-controller-manager",
  },
  { verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: "kube-system" },
  { verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: "kube-system", name: "kube-scheduler" },
  {
    verb: "update",
    group: "coordination.k8s.io",
    resource: "leases",
    namespace: "quorum-system",
    name: "another-controller-leader",
  },
  { verb: "list", group: "coordination.k8s.io", resource: "leases", namespace: "quorum-system" },
  { verb: "patch", resource: "secrets", namespace: "tenant-a", name: "tenant-a-kubeconfig" },
  { verb: "delete", resource: "secrets", namespace: "tenant-a", name: "tenant-a-ca" },
  {
    verb: "delete",
    group: "apiextensions.k8s.io",
    resource: "customresourcedefinitions",
    name: "machines.cluster.x-k8s.io",
  },
  {
    verb: "update",
    group: "apiextensions.k8s.io",
    resource: "customresourcedefinitions",
    name: "quorumcontrolplanes.controlplane.cluster.x-k8s.io",
  },
  { verb: "list", group: "apiextensions.k8s.io", resource: "customresourcedefinitions" },
  { verb: "create", resource: "pods", namespace: "quorum-system" },
  { verb: "create", resource: "pods", subresource: "exec", namespace: "tenant-a", name: "x" },
  { verb: "create", resource: "serviceaccounts", subresource: "token", namespace: "kube-system", name: "default" },
  { verb: "impersonate", resource: "users", name: "admin" },
  { verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings" },
  {
    verb: "update",
    group: "controlplane.cluster.x-k8s.io",
    resource: "quorumcontrolplanes",
    namespace: "tenant-a",
    name: "c1",
  },
  {
    verb: "delete",
    group: "controlplane.cluster.x-k8s.io",
    resource: "quorumcontrolplanes",
    namespace: "tenant-a",
    name: "c1",
  },
  { verb: "update", group: "cluster.x-k8s.io", resource: "clusters", namespace: "tenant-a", name: "c1" },
  {
    verb: "delete",
    group: "bootstrap.cluster.x-k8s.io",
    resource: "kubeadmconfigs",
    namespace: "tenant-a",
    name: "c1-abcde",
  },
  { verb: "patch", resource: "events", namespace: "tenant-a" },
  { verb: "create", group: "events.k8s.io", resource: "events", namespace: "tenant-a" },
  { verb: "list", resource: "nodes" },
];

/** What the controller needs (a few of each kind of grant): the lifecycle test proves the whole set sufficient. */
const ALLOWED: Access[] = [
  // The Cluster owner reference clusterctl move follows (src/controller/template-owners.ts).
  {
    verb: "patch",
    group: "bootstrap.cluster.x-k8s.io",
    resource: "kubeadmconfigtemplates",
    namespace: "tenant-a",
    name: "c1-control-plane",
  },
  { verb: "list", group: "cluster.x-k8s.io", resource: "machines" },
  { verb: "watch", group: "cluster.x-k8s.io", resource: "machines", namespace: "tenant-a" },
  { verb: "delete", group: "cluster.x-k8s.io", resource: "machines", namespace: "tenant-a", name: "c1-abcde" },
  { verb: "create", resource: "secrets", namespace: "tenant-a" },
  { verb: "update", resource: "secrets", namespace: "tenant-a", name: "c1-kubeconfig" },
  {
    verb: "patch",
    group: "controlplane.cluster.x-k8s.io",
    resource: "quorumcontrolplanes",
    subresource: "status",
    namespace: "tenant-a",
    name: "c1",
  },
  { verb: "create", resource: "events", namespace: "tenant-a" },
  {
    verb: "get",
    group: "apiextensions.k8s.io",
    resource: "customresourcedefinitions",
    name: "kubeadmconfigtemplates.bootstrap.cluster.x-k8s.io",
  },
  { verb: "create", group: "authentication.k8s.io", resource: "tokenreviews" },
  { verb: "create", group: "authorization.k8s.io", resource: "subjectaccessreviews" },
  { verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: "quorum-system" },
  {
    verb: "get",
    group: "coordination.k8s.io",
    resource: "leases",
    namespace: "quorum-system",
    name: "quorum-controller-leader",
  },
  {
    verb: "update",
    group: "coordination.k8s.io",
    resource: "leases",
    namespace: "quorum-system",
    name: "quorum-controller-leader",
  },
];

/** Whether the API server lets the controller's ServiceAccount do `access` (a SubjectAccessReview). */
async function isAllowed(stack: ControllerStack, access: Access): Promise<boolean> {
  const review = await kubeRequestOk<{ status: { allowed?: boolean } }>(
    stack.kubeConfig,
    "/apis/authorization.k8s.io/v1/subjectaccessreviews",
    {
      body: {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SubjectAccessReview",
        spec: {
          user: CONTROLLER_SERVICE_ACCOUNT,
          groups: ["system:serviceaccounts", "system:serviceaccounts:quorum-system", "system:authenticated"],
          resourceAttributes: {
            verb: access.verb,
            group: access.group ?? "",
            resource: access.resource,
            subresource: access.subresource ?? "",
            namespace: access.namespace ?? "",
            name: access.name ?? "",
          },
        },
      },
    },
  );
  return review.status.allowed === true;
}

describe(
  "the controller's ServiceAccount, with config/default's RBAC, asked through SubjectAccessReview",
  { timeout: 300_000 },
  () => {
    let stack: ControllerStack;

    before(async () => {
      stack = await startStack();
      await stack.installControllerRbac();
    });

    after(async () => {
      await stack?.stop();
    });

    const allowed = (access: Access) => isAllowed(stack, access);

    it("may not do anything it does not need, Leases outside its own included", async () => {
      const granted: string[] = [];
      for (const access of FORBIDDEN) if (await allowed(access)) granted.push(describeAccess(access));
      assert.deepEqual(granted, [], "the ServiceAccount may do these, and must not");
    });

    it("may list Machines, write Secrets in a tenant namespace and renew its own Lease", async () => {
      const denied: string[] = [];
      for (const access of ALLOWED) if (!(await allowed(access))) denied.push(describeAccess(access));
      assert.deepEqual(denied, [], "the ServiceAccount may not do these, and needs to");
    });
  },
);

/** The namespaced install manages quorum-system only: another namespace, and cluster-wide lists, are out of reach. */
const OWN = "quorum-system";
const FORBIDDEN_NAMESPACED: Access[] = [
  ...FORBIDDEN,
  { verb: "get", resource: "secrets", namespace: "tenant-a", name: "c1-ca" },
  { verb: "list", resource: "secrets", namespace: "tenant-a" },
  { verb: "list", resource: "secrets" },
  { verb: "watch", resource: "secrets" },
  { verb: "create", resource: "secrets", namespace: "tenant-a" },
  { verb: "update", resource: "secrets", namespace: "tenant-a", name: "c1-kubeconfig" },
  { verb: "list", group: "cluster.x-k8s.io", resource: "machines" },
  { verb: "list", group: "cluster.x-k8s.io", resource: "machines", namespace: "tenant-a" },
  { verb: "delete", group: "cluster.x-k8s.io", resource: "machines", namespace: "tenant-a", name: "c1-abcde" },
  { verb: "list", group: "cluster.x-k8s.io", resource: "clusters" },
  { verb: "list", group: "controlplane.cluster.x-k8s.io", resource: "quorumcontrolplanes" },
  {
    verb: "patch",
    group: "controlplane.cluster.x-k8s.io",
    resource: "quorumcontrolplanes",
    subresource: "status",
    namespace: "tenant-a",
    name: "c1",
  },
  { verb: "create", resource: "events", namespace: "tenant-a" },
  { verb: "get", group: "infrastructure.cluster.x-k8s.io", resource: "testmachinetemplates", namespace: "tenant-a" },
];
const ALLOWED_NAMESPACED: Access[] = [
  { verb: "list", group: "cluster.x-k8s.io", resource: "machines", namespace: OWN },
  { verb: "delete", group: "cluster.x-k8s.io", resource: "machines", namespace: OWN, name: "c1-abcde" },
  { verb: "list", resource: "secrets", namespace: OWN },
  { verb: "update", resource: "secrets", namespace: OWN, name: "c1-kubeconfig" },
  {
    verb: "patch",
    group: "controlplane.cluster.x-k8s.io",
    resource: "quorumcontrolplanes",
    subresource: "status",
    namespace: OWN,
    name: "c1",
  },
  { verb: "create", resource: "events", namespace: OWN },
  { verb: "get", group: "infrastructure.cluster.x-k8s.io", resource: "testmachinetemplates", namespace: OWN },
  { verb: "patch", group: "infrastructure.cluster.x-k8s.io", resource: "testmachinetemplates", namespace: OWN },
  {
    verb: "get",
    group: "apiextensions.k8s.io",
    resource: "customresourcedefinitions",
    name: "kubeadmconfigtemplates.bootstrap.cluster.x-k8s.io",
  },
  { verb: "create", group: "authentication.k8s.io", resource: "tokenreviews" },
  { verb: "create", group: "authorization.k8s.io", resource: "subjectaccessreviews" },
  {
    verb: "update",
    group: "coordination.k8s.io",
    resource: "leases",
    namespace: OWN,
    name: "quorum-controller-leader",
  },
];

describe(
  "the controller's ServiceAccount with config/namespaced's RBAC only (--namespace install)",
  { timeout: 400_000 },
  () => {
    let stack: ControllerStack;

    before(async () => {
      stack = await startStack();
      await stack.installControllerRbac("config/namespaced");
    });

    after(async () => {
      await stack?.stop();
    });

    it("may not read Secrets, Machines or anything else in another namespace, nor list them cluster-wide", async () => {
      const granted: string[] = [];
      for (const access of FORBIDDEN_NAMESPACED)
        if (await isAllowed(stack, access)) granted.push(describeAccess(access));
      assert.deepEqual(granted, [], "the ServiceAccount may do these, and must not");
    });

    it("may do what the controller needs in its own namespace, and the three cluster-scoped reads and reviews", async () => {
      const denied: string[] = [];
      for (const access of ALLOWED_NAMESPACED)
        if (!(await isAllowed(stack, access))) denied.push(describeAccess(access));
      assert.deepEqual(denied, [], "the ServiceAccount may not do these, and needs to");
    });

    it("runs a control plane in its namespace with --namespace and that RBAC alone, and leaves another namespace's alone", async () => {
      await stack.createCluster(OWN, "ns-c1", { replicas: 1, version: "v1.31.0" });
      await stack.createCluster("tenant-a", "elsewhere", { replicas: 1, version: "v1.31.0" });
      const controller = await stack.startController({ asServiceAccount: true, args: ["--namespace", OWN] });
      const converged = await stack.waitConverged(OWN, "ns-c1", 1);
      assert.equal(converged.status?.etcd?.quorum?.voters, 1);
      assert.deepEqual(await stack.machines("tenant-a", "elsewhere"), [], "it acted outside --namespace");
      const other = await stack.getControlPlane("tenant-a", "elsewhere");
      assert.equal(other.status, undefined, "it wrote the status of a QuorumControlPlane outside --namespace");
      const logs = readFileSync(controller.process.logFile, "utf8");
      assert.doesNotMatch(logs, /forbidden|HTTP 403/i, "a request of the controller was refused");
    });
  },
);
