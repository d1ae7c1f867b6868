// The install manifests as a user gets them: `kubectl kustomize config/default`, the clusterctl components file
// and the samples. RBAC is checked against the list of calls the controller makes, so a new call without a
// rule, or a rule nothing calls, fails here before it fails in a cluster.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { parse } from "yaml";
import { parseBindAddress, parseFlags } from "../../../src/flags.ts";
import { kustomize, kubectlBinary, parseManifests, repoRoot, type ManifestObject } from "./kustomize.ts";

interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
}
interface ClusterRole extends ManifestObject {
  rules?: PolicyRule[];
  aggregationRule?: { clusterRoleSelectors: { matchLabels: Record<string, string> }[] };
}

/** group / resource: verbs. What the controller calls (see the brief of config/rbac/role.yaml). */
const CONTROLLER_CALLS: Record<string, string[]> = {
  "controlplane.cluster.x-k8s.io/quorumcontrolplanes": ["list", "watch", "patch"],
  "controlplane.cluster.x-k8s.io/quorumcontrolplanes/status": ["patch"],
  "controlplane.cluster.x-k8s.io/quorumcontrolplanes/finalizers": ["update"],
  "cluster.x-k8s.io/clusters": ["list", "watch"],
  "cluster.x-k8s.io/clusterclasses": ["get"],
  "cluster.x-k8s.io/machines": ["list", "watch", "create", "patch", "delete"],
  "cluster.x-k8s.io/machines/status": ["patch"],
  "bootstrap.cluster.x-k8s.io/kubeadmconfigtemplates": ["get", "patch"],
  "bootstrap.cluster.x-k8s.io/kubeadmconfigs": ["create", "patch"],
  "/secrets": ["get", "list", "watch", "create", "update"],
  "/events": ["create"],
  "apiextensions.k8s.io/customresourcedefinitions": ["get"],
  "authentication.k8s.io/tokenreviews": ["create"],
  "authorization.k8s.io/subjectaccessreviews": ["create"],
};

/** Leader election, granted only in the controller's namespace (a Role): the Lease is created, then read and renewed by name. */
const LEADER_ELECTION_CALLS: Record<string, string[]> = {
  "coordination.k8s.io/leases": ["create"],
  "coordination.k8s.io/leases quorum-controller-leader": ["get", "update"],
};

/** What the process provider's sample ClusterRole adds for the templates Quorum clones. */
const PROCESS_PROVIDER_CALLS: Record<string, string[]> = {
  "infrastructure.cluster.x-k8s.io/processmachinetemplates": ["get", "patch"],
  "infrastructure.cluster.x-k8s.io/processmachines": ["create", "patch"],
  "bootstrap.cluster.x-k8s.io/processbootstrapconfigtemplates": ["get", "patch"],
  "bootstrap.cluster.x-k8s.io/processbootstrapconfigs": ["create", "patch"],
};

/** Every (group/resource, verb) a set of rules grants, as "group/resource verb" strings. */
function grants(rules: PolicyRule[]): Set<string> {
  const granted = new Set<string>();
  for (const rule of rules) {
    const names = rule.resourceNames?.length ? rule.resourceNames.map((name) => ` ${name}`) : [""];
    for (const group of rule.apiGroups ?? [])
      for (const resource of rule.resources ?? [])
        for (const name of names) for (const verb of rule.verbs) granted.add(`${group}/${resource}${name} ${verb}`);
  }
  return granted;
}

/** Fails naming the grants missing from `granted` and those it has beyond `wanted`. */
function assertSameGrants(granted: Set<string>, wanted: Set<string>): void {
  assert.deepEqual(
    [...wanted].filter((g) => !granted.has(g)),
    [],
    "missing grants",
  );
  assert.deepEqual(
    [...granted].filter((g) => !wanted.has(g)),
    [],
    "grants the controller does not use",
  );
}

function expected(calls: Record<string, string[]>): Set<string> {
  return new Set(Object.entries(calls).flatMap(([resource, verbs]) => verbs.map((verb) => `${resource} ${verb}`)));
}

function labelsMatch(labels: Record<string, string> | undefined, selector: Record<string, string>): boolean {
  return Object.entries(selector).every(([key, value]) => labels?.[key] === value);
}

/** The rules a ServiceAccount gets from ClusterRoleBindings, with aggregation resolved as the API server does. */
function effectiveRules(objects: ManifestObject[], namespace: string, serviceAccount: string): PolicyRule[] {
  const roles = objects.filter((o): o is ClusterRole => o.kind === "ClusterRole");
  const bindings = objects.filter((o) => o.kind === "ClusterRoleBinding") as (ManifestObject & {
    roleRef: { name: string };
    subjects: { kind: string; name: string; namespace?: string }[];
  })[];
  const bound = bindings.filter((b) =>
    b.subjects.some((s) => s.kind === "ServiceAccount" && s.name === serviceAccount && s.namespace === namespace),
  );
  return bound.flatMap((binding) => {
    const role = roles.find((r) => r.metadata.name === binding.roleRef.name);
    assert.ok(
      role,
      `ClusterRoleBinding ${binding.metadata.name} refers to missing ClusterRole ${binding.roleRef.name}`,
    );
    if (!role.aggregationRule) return role.rules ?? [];
    const selectors = role.aggregationRule.clusterRoleSelectors.map((s) => s.matchLabels);
    return roles
      .filter((r) => r !== role && selectors.some((selector) => labelsMatch(r.metadata.labels, selector)))
      .flatMap((r) => r.rules ?? []);
  });
}

function byKind<T extends ManifestObject = ManifestObject>(objects: ManifestObject[], kind: string): T[] {
  return objects.filter((o) => o.kind === kind) as T[];
}

interface Container {
  name: string;
  command?: string[];
  args?: string[];
  ports?: { name: string; containerPort: number }[];
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  env?: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  securityContext?: {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
    privileged?: boolean;
    capabilities?: { drop?: string[] };
  };
}
interface Deployment extends ManifestObject {
  spec: {
    template: {
      spec: {
        serviceAccountName: string;
        securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
        containers: Container[];
      };
    };
  };
}

describe("install manifests", () => {
  let installed: ManifestObject[];
  let samples: ManifestObject[];
  before(() => {
    installed = kustomize("config/default");
    samples = kustomize("config/samples");
  });

  const manager = () => {
    const deployments = byKind<Deployment>(installed, "Deployment");
    assert.equal(deployments.length, 1, "config/default installs exactly one Deployment");
    const container = deployments[0].spec.template.spec.containers.find((c) => c.name === "manager");
    assert.ok(container, "the Deployment has a container named manager");
    return { deployment: deployments[0], container };
  };

  test("no ClusterRole in config/default or config/samples uses a wildcard API group, resource or verb", () => {
    const roles = [...byKind<ClusterRole>(installed, "ClusterRole"), ...byKind<ClusterRole>(samples, "ClusterRole")];
    assert.ok(roles.length >= 4);
    for (const role of roles) {
      for (const rule of role.rules ?? []) {
        for (const field of ["apiGroups", "resources", "verbs", "resourceNames"] as const) {
          assert.ok(
            !(rule[field] ?? []).some((value) => value.includes("*")),
            `ClusterRole ${role.metadata.name} has "*" in ${field}: ${JSON.stringify(rule)}`,
          );
        }
      }
    }
  });

  test("the controller's ServiceAccount is granted exactly the calls the controller makes, nothing more", () => {
    const { deployment } = manager();
    const account = deployment.spec.template.spec.serviceAccountName;
    assert.ok(
      byKind(installed, "ServiceAccount").some(
        (sa) => sa.metadata.name === account && sa.metadata.namespace === "quorum-system",
      ),
      `ServiceAccount ${account} is installed`,
    );
    const granted = grants(effectiveRules(installed, "quorum-system", account));
    const wanted = expected(CONTROLLER_CALLS);
    assertSameGrants(granted, wanted);
  });

  test("the controller may create and renew its Lease only in its own namespace, through a Role", () => {
    const { deployment } = manager();
    const account = deployment.spec.template.spec.serviceAccountName;
    const roles = byKind<ClusterRole>(installed, "Role");
    const bindings = byKind<
      ManifestObject & {
        roleRef: { kind: string; name: string };
        subjects: { kind: string; name: string; namespace?: string }[];
      }
    >(installed, "RoleBinding");
    const bound = bindings.filter(
      (b) =>
        b.metadata.namespace === "quorum-system" &&
        b.subjects.some((s) => s.kind === "ServiceAccount" && s.name === account && s.namespace === "quorum-system"),
    );
    const rules = bound.flatMap(
      (binding) =>
        roles.find(
          (role) =>
            role.kind === binding.roleRef.kind &&
            role.metadata.name === binding.roleRef.name &&
            role.metadata.namespace === "quorum-system",
        )?.rules ?? [],
    );
    assert.deepEqual([...grants(rules)].sort(), [...expected(LEADER_ELECTION_CALLS)].sort());
    assert.equal(
      parseFlags(manager().container.args ?? [], {}).leaderElectionId,
      "quorum-controller-leader",
      "the Role names the Lease the Deployment uses",
    );
  });

  test("the process provider's sample ClusterRole extends the controller's role through the aggregation label", () => {
    const { deployment } = manager();
    const granted = grants(
      effectiveRules([...installed, ...samples], "quorum-system", deployment.spec.template.spec.serviceAccountName),
    );
    const wanted = new Set([...expected(CONTROLLER_CALLS), ...expected(PROCESS_PROVIDER_CALLS)]);
    assertSameGrants(granted, wanted);
  });

  test("CAPI's core manager gets QuorumControlPlanes through the cluster.x-k8s.io/aggregate-to-manager label", () => {
    const forCapi = byKind<ClusterRole>(installed, "ClusterRole").filter(
      (r) => r.metadata.labels?.["cluster.x-k8s.io/aggregate-to-manager"] === "true",
    );
    assert.equal(forCapi.length, 1);
    const granted = grants(forCapi[0].rules ?? []);
    for (const verb of ["get", "list", "watch", "patch", "update"]) {
      assert.ok(
        granted.has(`controlplane.cluster.x-k8s.io/quorumcontrolplanes ${verb}`),
        `CAPI may ${verb} quorumcontrolplanes`,
      );
    }
    assert.ok(granted.has("controlplane.cluster.x-k8s.io/quorumcontrolplanetemplates get"));
  });

  test("every installed object carries the clusterctl provider label, a quorum- name and the quorum-system namespace when namespaced", () => {
    const clusterScoped = new Set(["Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"]);
    for (const object of installed) {
      const id = `${object.kind} ${object.metadata.name}`;
      assert.equal(
        object.metadata.labels?.["cluster.x-k8s.io/provider"],
        "control-plane-quorum",
        `${id} has the provider label`,
      );
      if (clusterScoped.has(object.kind)) assert.equal(object.metadata.namespace, undefined, `${id} is cluster-scoped`);
      else assert.equal(object.metadata.namespace, "quorum-system", `${id} is in quorum-system`);
      if (object.kind !== "CustomResourceDefinition")
        assert.match(object.metadata.name, /^quorum-/, `${id} has the quorum- prefix`);
    }
    assert.deepEqual(
      byKind(installed, "Namespace").map((n) => n.metadata.name),
      ["quorum-system"],
    );
    assert.deepEqual(
      byKind(installed, "CustomResourceDefinition")
        .map((c) => c.metadata.name)
        .sort(),
      [
        "quorumcontrolplanes.controlplane.cluster.x-k8s.io",
        "quorumcontrolplanetemplates.controlplane.cluster.x-k8s.io",
      ],
    );
  });

  test("the manager runs as a non-root user with a read-only root filesystem, no privilege escalation and no capabilities", () => {
    const { deployment, container } = manager();
    const pod = deployment.spec.template.spec.securityContext ?? {};
    const security = container.securityContext ?? {};
    assert.equal(pod.runAsNonRoot, true);
    assert.ok((security.runAsUser ?? pod.runAsUser ?? 0) > 0, "a non-zero uid");
    assert.equal(security.readOnlyRootFilesystem, true);
    assert.equal(security.allowPrivilegeEscalation, false);
    assert.notEqual(security.privileged, true);
    assert.deepEqual(security.capabilities?.drop, ["ALL"]);
  });

  test("the manager's probes ask /healthz and /readyz on the port its flags bind, and the metrics port is the metrics flag's", () => {
    const { container } = manager();
    assert.deepEqual(container.command, ["node", "dist/main.js"]);
    const flags = parseFlags(container.args ?? [], {});
    const portNamed = (name: string | number) =>
      typeof name === "number" ? name : container.ports?.find((p) => p.name === name)?.containerPort;
    const health = parseBindAddress("--health-probe-bind-address", flags.healthProbeBindAddress);
    const metrics = parseBindAddress("--metrics-bind-address", flags.metricsBindAddress);
    assert.ok(health && metrics);
    assert.equal(health.host, "0.0.0.0", "a kubelet reaches the probes on the pod IP, not loopback");
    assert.equal(container.livenessProbe?.httpGet?.path, "/healthz");
    assert.equal(container.readinessProbe?.httpGet?.path, "/readyz");
    assert.equal(portNamed(container.livenessProbe!.httpGet!.port), health.port);
    assert.equal(portNamed(container.readinessProbe!.httpGet!.port), health.port);
    assert.equal(portNamed("metrics"), metrics.port);
    assert.equal(flags.metricsSecure, true, "/metrics is served over HTTPS to authorised tokens only");
  });

  test("the manager elects a leader and requests CPU and memory", () => {
    const { container } = manager();
    const flags = parseFlags(container.args ?? [], {});
    assert.equal(flags.leaderElect, true);
    assert.ok(container.resources?.requests?.cpu, "a CPU request");
    assert.ok(container.resources?.requests?.memory, "a memory request");
  });

  test("the manager's heap limit leaves room under its memory limit, which its request and the fixed cost fit under", () => {
    const { container } = manager();
    const mebibytes = (quantity: string | undefined) => {
      const match = /^(\d+)Mi$/.exec(quantity ?? "");
      assert.ok(match, `a memory quantity in Mi (got ${quantity})`);
      return Number(match[1]);
    };
    const limit = mebibytes(container.resources?.limits?.memory);
    const request = mebibytes(container.resources?.requests?.memory);
    const nodeOptions = container.env?.find((variable) => variable.name === "NODE_OPTIONS")?.value ?? "";
    const heap = Number(/--max-old-space-size=(\d+)/.exec(nodeOptions)?.[1]);
    assert.ok(heap > 0, `NODE_OPTIONS sets --max-old-space-size (got ${JSON.stringify(nodeOptions)})`);
    // README, "Memory": ~96 MB of the process is not old-space heap; V8 must collect before the kernel kills the pod.
    assert.ok(heap <= 0.75 * limit - 96, `heap limit ${heap} MB leaves room under the ${limit}Mi limit`);
    // The idle controller with no cluster already takes ~145 MB: a request below it is overcommitted from the start.
    assert.ok(request >= 145 && request <= limit, `request ${request}Mi between the fixed cost and the limit`);
  });

  test("the manager's young generation and malloc arenas are capped, as the scale benchmark measured them", () => {
    const { container } = manager();
    const env = (name: string) => container.env?.find((variable) => variable.name === name)?.value;
    // README, "Memory": V8's default 16 MB semi-spaces make a 48 MB young generation, and glibc keeps up to 8 malloc
    // arenas per core; bench/scale/run.ts starts its controller with these values, so its RSS figures are theirs.
    const semiSpace = Number(/--max-semi-space-size=(\d+)/.exec(env("NODE_OPTIONS") ?? "")?.[1]);
    assert.ok(semiSpace > 0 && semiSpace < 16, `NODE_OPTIONS sets --max-semi-space-size below 16 (got ${semiSpace})`);
    const arenas = Number(env("MALLOC_ARENA_MAX"));
    assert.ok(Number.isInteger(arenas) && arenas >= 1 && arenas <= 4, `MALLOC_ARENA_MAX is 1-4 (got ${arenas})`);
  });

  test("the samples reference objects that exist in the samples, in CAPI v1beta2 and kubeadm's v1beta2", () => {
    const clusters = byKind<
      ManifestObject & {
        spec: {
          controlPlaneRef: { apiGroup: string; kind: string; name: string };
          infrastructureRef: { apiGroup: string; kind: string; name: string };
        };
      }
    >(samples, "Cluster");
    assert.equal(clusters.length, 2);
    const find = (namespace: string | undefined, apiGroup: string, kind: string, name: string) =>
      samples.find(
        (o) =>
          o.kind === kind &&
          o.metadata.name === name &&
          o.metadata.namespace === namespace &&
          o.apiVersion.startsWith(`${apiGroup}/`),
      );
    for (const cluster of clusters) {
      assert.equal(cluster.apiVersion, "cluster.x-k8s.io/v1beta2");
      const { controlPlaneRef, infrastructureRef } = cluster.spec;
      const controlPlane = find(
        cluster.metadata.namespace,
        controlPlaneRef.apiGroup,
        controlPlaneRef.kind,
        controlPlaneRef.name,
      ) as ManifestObject & {
        spec: { machineTemplate: { spec: Record<string, { apiGroup: string; kind: string; name: string }> } };
      };
      assert.ok(controlPlane, `Cluster ${cluster.metadata.name}'s controlPlaneRef resolves`);
      assert.equal(controlPlane.kind, "QuorumControlPlane");
      assert.ok(
        find(cluster.metadata.namespace, infrastructureRef.apiGroup, infrastructureRef.kind, infrastructureRef.name),
        `Cluster ${cluster.metadata.name}'s infrastructureRef resolves`,
      );
      for (const field of ["infrastructureRef", "bootstrapConfigTemplateRef"]) {
        const ref = controlPlane.spec.machineTemplate.spec[field];
        assert.ok(
          find(cluster.metadata.namespace, ref.apiGroup, ref.kind, ref.name),
          `${controlPlane.metadata.name} ${field} resolves`,
        );
      }
    }
    const kinds = samples.map((o) => `${o.apiVersion} ${o.kind}`);
    assert.ok(kinds.includes("bootstrap.cluster.x-k8s.io/v1beta2 KubeadmConfigTemplate"));
    for (const kind of [
      "infrastructure.cluster.x-k8s.io/v1alpha1 ProcessCluster",
      "infrastructure.cluster.x-k8s.io/v1alpha1 ProcessMachineTemplate",
      "bootstrap.cluster.x-k8s.io/v1alpha1 ProcessBootstrapConfigTemplate",
    ]) {
      assert.ok(kinds.includes(kind), kind);
    }
  });
});

describe("clusterctl release artefacts", () => {
  let outDir: string;
  let components: string;
  before(() => {
    outDir = mkdtempSync(join(tmpdir(), "quorum-release-"));
    execFileSync("bash", [join(repoRoot, "hack/release-manifests.sh")], {
      env: { ...process.env, OUT_DIR: outDir, KUBECTL: kubectlBinary() },
      stdio: "pipe",
    });
    components = readFileSync(join(outDir, "control-plane-components.yaml"), "utf8");
  });
  after(() => rmSync(outDir, { recursive: true, force: true }));

  test("every object in the components file carries cluster.x-k8s.io/provider: control-plane-quorum", () => {
    const objects = parseManifests(components, "control-plane-components.yaml");
    assert.ok(objects.length >= 9);
    for (const object of objects)
      assert.equal(
        object.metadata.labels?.["cluster.x-k8s.io/provider"],
        "control-plane-quorum",
        `${object.kind} ${object.metadata.name}`,
      );
  });

  test("the components file has a clusterctl variable with a default for the image and each tunable flag", () => {
    const variables = [...components.matchAll(/\$\{([A-Z0-9_]+):=([^}]*)\}/g)].map((match) => match[1]).sort();
    assert.deepEqual(variables, [
      "QUORUM_CONCURRENCY",
      "QUORUM_ETCD_POLL_INTERVAL",
      "QUORUM_IMAGE",
      "QUORUM_LOG_FORMAT",
      "QUORUM_LOG_LEVEL",
    ]);
    assert.doesNotMatch(
      components.replace(/\$\{[A-Z0-9_]+:=[^}]*\}/g, ""),
      /\$\{/,
      "no variable without a default (clusterctl would demand it)",
    );
  });

  test("with every variable at its default the components file is exactly config/default", () => {
    const defaults = components.replace(/\$\{[A-Z0-9_]+:=([^}]*)\}/g, "$1");
    assert.deepEqual(parseManifests(defaults, "components with defaults"), kustomize("config/default"));
  });

  test("metadata.yaml maps this release's major.minor to the v1beta2 contract", () => {
    const metadata = parse(readFileSync(join(outDir, "metadata.yaml"), "utf8")) as {
      apiVersion: string;
      kind: string;
      releaseSeries: { major: number; minor: number; contract: string }[];
    };
    const [major, minor] = (
      JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string }
    ).version
      .split(".")
      .map(Number);
    assert.equal(metadata.apiVersion, "clusterctl.cluster.x-k8s.io/v1alpha3");
    assert.equal(metadata.kind, "Metadata");
    assert.deepEqual(
      metadata.releaseSeries.find((series) => series.major === major && series.minor === minor),
      { major, minor, contract: "v1beta2" },
    );
  });
});

/** Resources Kubernetes has only at cluster scope, which a Role cannot grant. */
const CLUSTER_SCOPED = new Set([
  "apiextensions.k8s.io/customresourcedefinitions",
  "authentication.k8s.io/tokenreviews",
  "authorization.k8s.io/subjectaccessreviews",
]);

/** The rules a ServiceAccount gets from RoleBindings in `namespace` (to Roles, or to aggregated ClusterRoles). */
function namespacedRules(objects: ManifestObject[], namespace: string, serviceAccount: string): PolicyRule[] {
  const roles = objects.filter((o): o is ClusterRole => o.kind === "Role" || o.kind === "ClusterRole");
  const bindings = byKind<
    ManifestObject & {
      roleRef: { kind: string; name: string };
      subjects: { kind: string; name: string; namespace?: string }[];
    }
  >(objects, "RoleBinding").filter(
    (b) =>
      b.metadata.namespace === namespace &&
      b.subjects.some((s) => s.kind === "ServiceAccount" && s.name === serviceAccount && s.namespace === namespace),
  );
  return bindings.flatMap((binding) => {
    const role = roles.find(
      (r) =>
        r.kind === binding.roleRef.kind &&
        r.metadata.name === binding.roleRef.name &&
        (r.kind === "ClusterRole" || r.metadata.namespace === namespace),
    );
    assert.ok(
      role,
      `RoleBinding ${binding.metadata.name} refers to missing ${binding.roleRef.kind} ${binding.roleRef.name}`,
    );
    if (!role.aggregationRule) return role.rules ?? [];
    const selectors = role.aggregationRule.clusterRoleSelectors.map((s) => s.matchLabels);
    return roles
      .filter((r) => r.kind === "ClusterRole" && r !== role && selectors.some((s) => labelsMatch(r.metadata.labels, s)))
      .flatMap((r) => r.rules ?? []);
  });
}

describe("the namespaced install (config/namespaced, for --namespace)", () => {
  let installed: ManifestObject[];
  let samples: ManifestObject[];
  let account: string;
  before(() => {
    installed = kustomize("config/namespaced");
    samples = kustomize("config/samples");
    const [deployment] = byKind<Deployment>(installed, "Deployment");
    account = deployment.spec.template.spec.serviceAccountName;
  });

  test("grants cluster-wide only the three cluster-scoped calls: one CRD read, TokenReview and SubjectAccessReview", () => {
    const granted = [...grants(effectiveRules(installed, "quorum-system", account))].sort();
    const wanted = [...expected(CONTROLLER_CALLS)].filter((g) => CLUSTER_SCOPED.has(g.split(" ")[0])).sort();
    assert.equal(wanted.length, 3);
    assert.deepEqual(granted, wanted);
  });

  test("grants every namespaced call the controller makes, its Lease and the provider kinds through RoleBindings in its namespace only", () => {
    const granted = grants(namespacedRules([...installed, ...samples], "quorum-system", account));
    const wanted = new Set(
      [...expected(CONTROLLER_CALLS), ...expected(LEADER_ELECTION_CALLS), ...expected(PROCESS_PROVIDER_CALLS)].filter(
        (g) => !CLUSTER_SCOPED.has(g.split(" ")[0]),
      ),
    );
    assertSameGrants(granted, wanted);
  });

  test("runs the same Deployment as config/default, watching only its own namespace", () => {
    const [deployment] = byKind<Deployment>(installed, "Deployment");
    const [clusterWide] = byKind<Deployment>(kustomize("config/default"), "Deployment");
    const container = deployment.spec.template.spec.containers[0];
    assert.deepEqual(container.args, [
      ...(clusterWide.spec.template.spec.containers[0].args ?? []),
      "--namespace=$(POD_NAMESPACE)",
    ]);
    const env = container.env;
    assert.equal(
      env?.find((variable) => variable.name === "POD_NAMESPACE")?.valueFrom?.fieldRef?.fieldPath,
      "metadata.namespace",
      "$(POD_NAMESPACE) is the pod's namespace",
    );
    assert.equal(parseFlags(container.args ?? [], {}).namespace, "$(POD_NAMESPACE)");
    assert.deepEqual(
      { ...deployment.spec.template.spec, containers: [] },
      { ...clusterWide.spec.template.spec, containers: [] },
    );
    assert.deepEqual(
      { ...container, args: [] },
      { ...clusterWide.spec.template.spec.containers[0], args: [] },
      "the same image, probes and hardened securityContext",
    );
  });
});
