// Keeps config/crd in step with src/api (types, constants, duration parsing) and checks what `kubectl get`,
// `kubectl explain`, `kubectl scale` and CAPI read from the CRDs. CEL rules run on a real apiserver in
// test/integration; here they are checked for messages, cost guards and the regular expressions they use.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import { fileURLToPath } from "node:url";
import {
  DEFAULTS,
  GROUP,
  KIND,
  PLURAL,
  SHORT_NAME,
  TEMPLATE_KIND,
  TEMPLATE_PLURAL,
  VERSION,
} from "../../../src/api/constants.ts";
import { belowMinimumMessage, SPEC_DURATION_MINIMUMS } from "../../../src/api/bounds.ts";
import { durationOr, parseDuration } from "../../../src/api/duration.ts";
import type { QuorumControlPlane } from "../../../src/api/types.ts";
import {
  at,
  celMatchesPattern,
  fieldNameDifferences,
  readCrd,
  readKustomization,
  structuralErrors,
  walk,
  type Crd,
  type Schema,
} from "./schema-check.ts";
import {
  completeControlPlane,
  completeSpec,
  completeStatus,
  completeTemplate,
  completeTemplateSpec,
  minimalControlPlane,
  minimalTemplate,
} from "./samples.ts";

const QCP_FILE = "bases/controlplane.cluster.x-k8s.io_quorumcontrolplanes.yaml";
const TEMPLATE_FILE = "bases/controlplane.cluster.x-k8s.io_quorumcontrolplanetemplates.yaml";
const qcpCrd = readCrd(QCP_FILE);
const templateCrd = readCrd(TEMPLATE_FILE);
const crds: [string, Crd][] = [
  ["QuorumControlPlane", qcpCrd],
  ["QuorumControlPlaneTemplate", templateCrd],
];
const schemaOf = (crd: Crd): Schema => crd.spec.versions[0].schema.openAPIV3Schema;
const qcpSchema = schemaOf(qcpCrd);
const templateSchema = schemaOf(templateCrd);
const templateSpecSchema = at(templateSchema, "spec.template.spec")!;

function changed<T>(object: T, change: (copy: T) => void): T {
  const copy = structuredClone(object);
  change(copy);
  return copy;
}

test("the kustomization lists both CRD files and both exist", () => {
  assert.deepEqual(readKustomization().resources.sort(), [QCP_FILE, TEMPLATE_FILE].sort());
  for (const file of readKustomization().resources) {
    assert.ok(existsSync(fileURLToPath(new URL(`../../../config/crd/${file}`, import.meta.url))), `${file} is missing`);
  }
});

test("both CRDs serve and store v1beta1 of the control-plane group under the names in src/api/constants.ts", () => {
  const expected: [Crd, string, string, string][] = [
    [qcpCrd, KIND, PLURAL, SHORT_NAME],
    [templateCrd, TEMPLATE_KIND, TEMPLATE_PLURAL, "qcpt"],
  ];
  for (const [crd, kind, plural, shortName] of expected) {
    assert.equal(crd.apiVersion, "apiextensions.k8s.io/v1");
    assert.equal(crd.metadata.name, `${plural}.${GROUP}`);
    assert.equal(crd.spec.group, GROUP);
    assert.equal(crd.spec.scope, "Namespaced");
    assert.equal(crd.spec.names.kind, kind);
    assert.equal(crd.spec.names.listKind, `${kind}List`);
    assert.equal(crd.spec.names.plural, plural);
    assert.equal(crd.spec.names.singular, kind.toLowerCase());
    assert.deepEqual(crd.spec.names.shortNames, [shortName]);
    assert.deepEqual(crd.spec.names.categories, ["cluster-api"], `${kind} must show in kubectl get cluster-api`);
    assert.deepEqual(
      crd.spec.versions.map((version) => [version.name, version.served, version.storage]),
      [[VERSION, true, true]],
    );
  }
});

test("kubectl explain shows a description for every field of both CRDs", () => {
  for (const [kind, crd] of crds) {
    const undescribed: string[] = [];
    walk(schemaOf(crd), (node, path) => {
      const isMapValue = path.endsWith("{}");
      // The apiserver rejects anything but name/generateName under the root metadata; kubectl explain shows ObjectMeta's text.
      const isRootMetadata = path === "metadata";
      if (!isMapValue && !isRootMetadata && !node.description?.trim()) undescribed.push(path || "<root>");
    });
    assert.deepEqual(undescribed, [], `${kind} fields without a description`);
  }
});

test("the QuorumControlPlane has status and scale subresources, so kubectl scale and CAPI's scaling work", () => {
  const version = qcpCrd.spec.versions[0];
  assert.deepEqual(version.subresources?.status, {});
  assert.deepEqual(version.subresources?.scale, {
    specReplicasPath: ".spec.replicas",
    statusReplicasPath: ".status.replicas",
    labelSelectorPath: ".status.selector",
  });
  assert.equal(at(qcpSchema, "spec.replicas")?.type, "integer");
  assert.equal(at(qcpSchema, "status.replicas")?.type, "integer");
  assert.equal(at(qcpSchema, "status.selector")?.type, "string");
});

test("kubectl get qcp shows whether the control plane is healthy and what it is doing next", () => {
  const columns = qcpCrd.spec.versions[0].additionalPrinterColumns ?? [];
  const defaultView = columns
    .filter((column) => (column.priority ?? 0) === 0)
    .map((column) => [column.name, column.jsonPath]);
  assert.deepEqual(defaultView, [
    ["Cluster", ".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']"],
    ["Replicas", ".status.replicas"],
    ["Ready", ".status.readyReplicas"],
    ["Updated", ".status.upToDateReplicas"],
    ["Version", ".spec.version"],
    ["Etcd", ".status.etcd.summary"],
    ["Next", ".status.nextAction.message"],
    ["Age", ".metadata.creationTimestamp"],
  ]);
  for (const column of columns) {
    assert.ok(column.description?.trim(), `column ${column.name} needs a description`);
    if (column.jsonPath.startsWith(".metadata.")) continue;
    // A column whose path names no schema field stays empty forever; resolve it through the schema.
    const path = column.jsonPath.slice(1).replace(/\[\?\(@\.type=="[A-Za-z]+"\)\]/g, "");
    let node: Schema | undefined = qcpSchema;
    for (const name of path.split("."))
      node = node?.type === "array" ? node.items?.properties?.[name] : node?.properties?.[name];
    assert.ok(node, `column ${column.name}: ${column.jsonPath} names no field of the schema`);
    const expectedType = column.type === "date" ? "string" : column.type;
    assert.equal(node.type, expectedType, `column ${column.name}: ${column.jsonPath} has type ${node.type}`);
  }
});

test("the CRD's spec and status fields are exactly the fields of src/api/types.ts", () => {
  assert.deepEqual(fieldNameDifferences(at(qcpSchema, "spec")!, completeSpec, "spec"), []);
  assert.deepEqual(fieldNameDifferences(at(qcpSchema, "status")!, completeStatus, "status"), []);
  assert.deepEqual(fieldNameDifferences(at(templateSchema, "spec")!, completeTemplateSpec, "template spec"), []);
});

test("the field comparison notices a field that exists only in the types or only in the CRD", () => {
  const withExtra = changed(completeSpec as object, (spec) => Object.assign(spec, { surgeLimit: 2 }));
  assert.deepEqual(fieldNameDifferences(at(qcpSchema, "spec")!, withExtra, "spec"), [
    "spec.surgeLimit: in src/api/types.ts but not in the CRD",
  ]);
  const withoutEtcd = changed(completeSpec as object, (spec) => delete (spec as { etcd?: unknown }).etcd);
  assert.deepEqual(fieldNameDifferences(at(qcpSchema, "spec")!, withoutEtcd, "spec"), [
    "spec.etcd: in the CRD but not in src/api/types.ts",
  ]);
});

test("valid sample objects typed with src/api/types.ts pass the CRD's OpenAPI schema", () => {
  assert.deepEqual(structuralErrors(qcpSchema, completeControlPlane), []);
  assert.deepEqual(structuralErrors(qcpSchema, minimalControlPlane), []);
  assert.deepEqual(structuralErrors(templateSchema, completeTemplate), []);
  assert.deepEqual(structuralErrors(templateSchema, minimalTemplate), []);
});

test("the QuorumControlPlanes and templates shipped in config/samples pass the CRD's OpenAPI schema", () => {
  const samplesDir = fileURLToPath(new URL("../../../config/samples/", import.meta.url));
  const schemaByKind: Record<string, Schema> = { [KIND]: qcpSchema, [TEMPLATE_KIND]: templateSchema };
  let checked = 0;
  for (const file of readdirSync(samplesDir).filter((name) => name.endsWith(".yaml"))) {
    for (const document of parseAllDocuments(readFileSync(samplesDir + file, "utf8"))) {
      const object = document.toJS() as { kind?: string; metadata?: { name?: string } } | null;
      const schema = object?.kind ? schemaByKind[object.kind] : undefined;
      if (!schema) continue;
      assert.deepEqual(
        structuralErrors(schema, object),
        [],
        `config/samples/${file}: ${object!.kind} ${object!.metadata?.name}`,
      );
      checked++;
    }
  }
  assert.ok(checked > 0, "config/samples holds no QuorumControlPlane to check");
});

test("the OpenAPI schema rejects objects with a missing, misspelt or mistyped field", () => {
  const cases: [string, QuorumControlPlane, string][] = [
    [
      "no infrastructureRef",
      changed(
        minimalControlPlane,
        (qcp) =>
          delete (qcp.spec.machineTemplate.spec as Partial<typeof qcp.spec.machineTemplate.spec>).infrastructureRef,
      ),
      "spec.machineTemplate.spec.infrastructureRef: required",
    ],
    [
      "no version",
      changed(minimalControlPlane, (qcp) => delete (qcp.spec as Partial<typeof qcp.spec>).version),
      "spec.version: required",
    ],
    [
      "a ref without a name",
      changed(
        minimalControlPlane,
        (qcp) =>
          delete (
            qcp.spec.machineTemplate.spec.bootstrapConfigTemplateRef as Partial<
              typeof qcp.spec.machineTemplate.spec.bootstrapConfigTemplateRef
            >
          ).name,
      ),
      "spec.machineTemplate.spec.bootstrapConfigTemplateRef.name: required",
    ],
    [
      "a misspelt field",
      changed(minimalControlPlane, (qcp) => Object.assign(qcp.spec, { replica: 3 })),
      "spec.replica: unknown field (the apiserver would drop it)",
    ],
    [
      "replicas as a string",
      changed(minimalControlPlane, (qcp) => Object.assign(qcp.spec, { replicas: "3" })),
      "spec.replicas: expected an integer",
    ],
    [
      "an unknown memberRemoval",
      changed(minimalControlPlane, (qcp) =>
        Object.assign(qcp.spec, { rollout: { strategy: { rollingUpdate: { memberRemoval: "Later" } } } }),
      ),
      'spec.rollout.strategy.rollingUpdate.memberRemoval: "Later" is not one of ["BeforeDelete","AfterDrain"]',
    ],
    [
      "a deletion timeout as a duration string",
      changed(minimalControlPlane, (qcp) =>
        Object.assign(qcp.spec.machineTemplate.spec, { deletion: { nodeDrainTimeoutSeconds: "10m" } }),
      ),
      "spec.machineTemplate.spec.deletion.nodeDrainTimeoutSeconds: expected an integer",
    ],
    [
      "a taint with an unknown effect",
      changed(minimalControlPlane, (qcp) =>
        Object.assign(qcp.spec.machineTemplate.spec, {
          taints: [{ key: "example.com/x", effect: "NoRun", propagation: "Always" }],
        }),
      ),
      'spec.machineTemplate.spec.taints[0].effect: "NoRun" is not one of ["NoSchedule","PreferNoSchedule","NoExecute"]',
    ],
    [
      "a client port above 65535",
      changed(minimalControlPlane, (qcp) => Object.assign(qcp.spec, { etcd: { clientPort: 70000 } })),
      "spec.etcd.clientPort: above 65535",
    ],
    [
      "a kind that is not a kind",
      changed(minimalControlPlane, (qcp) =>
        Object.assign(qcp.spec.machineTemplate.spec.infrastructureRef, { kind: "Docker Machine" }),
      ),
      "spec.machineTemplate.spec.infrastructureRef.kind: does not match ^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$",
    ],
  ];
  for (const [name, object, expected] of cases) assert.deepEqual(structuralErrors(qcpSchema, object), [expected], name);
});

test("every CEL rule carries a message telling the user what to do, with a static fallback for its messageExpression", () => {
  // The only reasons apiextensions-apiserver v1.37 accepts; any other makes the whole CRD invalid.
  const acceptedReasons = ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"];
  for (const [kind, crd] of crds) {
    walk(schemaOf(crd), (node, path) => {
      for (const rule of node["x-kubernetes-validations"] ?? []) {
        if (rule.reason !== undefined)
          assert.ok(
            acceptedReasons.includes(rule.reason),
            `${kind} ${path}: reason ${rule.reason} is not accepted by the apiserver`,
          );
        assert.ok(rule.message?.trim(), `${kind} ${path}: rule "${rule.rule}" has no message`);
        assert.ok(
          rule.message!.length >= 30,
          `${kind} ${path}: message "${rule.message}" is too short to say what to do`,
        );
        if (rule.messageExpression)
          assert.ok(
            rule.messageExpression.includes("self"),
            `${kind} ${path}: messageExpression should show the value`,
          );
      }
    });
  }
});

test("every string a CEL rule reads has a maxLength, so the apiserver's cost estimate accepts the rules", () => {
  for (const [kind, crd] of crds) {
    walk(schemaOf(crd), (node, path) => {
      const rules = node["x-kubernetes-validations"] ?? [];
      if (rules.length === 0) return;
      if (node.type === "string") assert.ok(node.maxLength, `${kind} ${path}: string with CEL rules needs maxLength`);
      for (const rule of rules) {
        // string(int) has no size bound in the cost estimator, so a message built with it is rejected as too
        // costly (seen on v1.37); '...%d...'.format([n]) is costed by the format string alone.
        assert.ok(
          !/\bstring\(/.test(rule.rule + (rule.messageExpression ?? "")),
          `${kind} ${path}: use .format() instead of string() in "${rule.messageExpression}"`,
        );
      }
      for (const [name, child] of Object.entries(node.properties ?? {})) {
        const read = rules.some((rule) => new RegExp(`self\\.${name}\\b`).test(rule.rule));
        if (read && child.type === "string")
          assert.ok(child.maxLength, `${kind} ${path}.${name}: read by a CEL rule, needs maxLength`);
      }
    });
  }
});

test("the CRD enforces each rule of the design with CEL: odd replicas from 1 to 7, maxSurge 0 or 1, maxSurge 0 needs 3, semver, minor steps, RollingUpdate", () => {
  const rulesAt = (path: string) => (at(qcpSchema, path)?.["x-kubernetes-validations"] ?? []).map((rule) => rule.rule);
  assert.ok(rulesAt("spec.replicas").includes("self >= 1"));
  // Out-of-range counts get only the range message, not also "use 7 or 9".
  assert.ok(rulesAt("spec.replicas").includes("self < 1 || self > 7 || self % 2 == 1"));
  assert.ok(rulesAt("spec.replicas").includes("self <= 7"), "etcd advises at most 7 members");
  assert.ok(rulesAt("spec.rollout.strategy.rollingUpdate.maxSurge").includes("self == 0 || self == 1"));
  assert.ok(rulesAt("spec").some((rule) => rule.includes("maxSurge != 0") && rule.includes("self.replicas >= 3")));
  assert.ok(rulesAt("spec.rollout.strategy.type").includes("self == 'RollingUpdate'"));
  const versionRules = rulesAt("spec.version");
  assert.equal(
    versionRules.filter((rule) => rule.includes("oldSelf")).length,
    3,
    "major change, minor skip and minor downgrade are transition rules",
  );
  assert.ok(
    versionRules.some((rule) => rule.includes("int(self.split('.')[1]) <= int(oldSelf.split('.')[1]) + 1")),
    "minor skip",
  );
  assert.ok(
    versionRules.some((rule) => rule.includes("int(self.split('.')[1]) >= int(oldSelf.split('.')[1])")),
    "minor downgrade",
  );
  assert.equal(
    at(qcpSchema, "spec.rollout.strategy.rollingUpdate.memberRemoval")?.enum?.join(","),
    "BeforeDelete,AfterDrain",
  );
  assert.deepEqual(at(qcpSchema, "spec.machineTemplate")?.required, ["spec"]);
  assert.deepEqual(at(qcpSchema, "spec.machineTemplate.spec")?.required, [
    "infrastructureRef",
    "bootstrapConfigTemplateRef",
  ]);
  for (const ref of ["infrastructureRef", "bootstrapConfigTemplateRef"]) {
    assert.deepEqual(at(qcpSchema, `spec.machineTemplate.spec.${ref}`)?.required, ["kind", "name"]);
    assert.ok(
      rulesAt(`spec.machineTemplate.spec.${ref}`).includes("has(self.apiGroup) || has(self.apiVersion)"),
      `${ref} needs apiGroup or apiVersion`,
    );
  }
});

test("the version rule accepts exactly vMAJOR.MINOR.PATCH, the v optional", () => {
  const versionRules = at(qcpSchema, "spec.version")!["x-kubernetes-validations"]!;
  const patterns = versionRules.map((rule) => celMatchesPattern(rule.rule).source);
  assert.equal(
    new Set(patterns).size,
    1,
    "every version rule must use the same pattern, or the guards let malformed values reach int()",
  );
  const semver = celMatchesPattern(versionRules[0].rule);
  for (const good of ["v1.33.2", "v1.0.0", "v2.10.100", "1.33.2"]) assert.ok(semver.test(good), good);
  for (const bad of ["vv1.33.2", "V1.33.2", "v1.33", "v1.33.2-rc.1", "v01.33.2", "v1.33.2 ", "latest", "v1.33.x"])
    assert.ok(!semver.test(bad), bad);
});

test("duration fields accept exactly what the controller's parseDuration accepts", () => {
  const durationFields: string[] = [];
  walk(qcpSchema, (node, path) => {
    if ((node["x-kubernetes-validations"] ?? []).some((rule) => rule.rule.includes("(ns|us|µs|ms|s|m|h)")))
      durationFields.push(path);
  });
  assert.deepEqual(durationFields.sort(), [
    "spec.deletion.etcdMemberRemovalTimeout",
    "spec.etcd.ghostMemberGracePeriod",
    "spec.etcd.learnerPromotionTimeout",
    "spec.etcd.learnerStallTimeout",
    "spec.etcd.memberJoinGracePeriod",
    "spec.remediation.machineLostAfter",
    "spec.remediation.minHealthyPeriod",
    "spec.remediation.retryPeriod",
  ]);
  const samples = [
    "5m",
    "300s",
    "1h30m",
    "1.5h",
    "0",
    "10ms",
    "250us",
    "2µs",
    "1h0m0s",
    "5 minutes",
    "-5m",
    "1d",
    "",
    "m5",
    "5",
    "1.h",
    "0s",
  ];
  for (const path of durationFields) {
    const pattern = celMatchesPattern(at(qcpSchema, path)!["x-kubernetes-validations"]![0].rule);
    for (const sample of samples) {
      assert.equal(
        pattern.test(sample),
        parseDuration(sample) !== undefined,
        `${path}: CRD and parseDuration disagree on "${sample}"`,
      );
    }
  }
});

test("each duration minimum of src/api/bounds.ts is a CEL rule on its field, with the controller's minimum and message", () => {
  const durationPattern = celMatchesPattern(
    at(qcpSchema, "spec.etcd.ghostMemberGracePeriod")!["x-kubernetes-validations"]![0].rule,
  ).source;
  for (const [path, minimum] of Object.entries(SPEC_DURATION_MINIMUMS)) {
    assert.equal(parseDuration(minimum.min), minimum.minMs, `${path}: min ${minimum.min} is not ${minimum.minMs} ms`);
    // The reason sits inside a single-quoted CEL string: a quote ends it and the apiserver rejects the whole CRD.
    assert.doesNotMatch(minimum.why, /['"\\]/, `${path}: the reason may not contain quotes or backslashes`);
    const node = at(qcpSchema, path);
    const rules = node?.["x-kubernetes-validations"] ?? [];
    const bound = rules.find((rule) => rule.rule.includes("duration(self)"));
    assert.ok(bound, `${path} has no duration(self) rule`);
    // The guard keeps duration() from erroring on a value the format rule already rejects with its own message.
    assert.equal(
      celMatchesPattern(bound.rule).source,
      durationPattern,
      `${path}: the minimum rule must be guarded by the format rule's pattern`,
    );
    assert.ok(bound.rule.startsWith("!self.matches("), `${path}: the minimum rule must skip malformed values`);
    assert.ok(bound.rule.endsWith(`|| duration(self) >= duration('${minimum.min}')`), `${path}: rule "${bound.rule}"`);
    assert.equal(
      bound.message,
      belowMinimumMessage(path.slice("spec.".length), minimum),
      `${path}: CRD message differs from the controller's`,
    );
    const withValue = `'${belowMinimumMessage(path.slice("spec.".length), minimum, "VALUE")}'`.replace(
      '"VALUE"',
      `"' + self + '"`,
    );
    assert.equal(
      bound.messageExpression,
      withValue,
      `${path}: messageExpression differs from the controller's message`,
    );
    assert.equal(bound.reason, "FieldValueInvalid");
    assert.match(
      node!.description ?? "",
      new RegExp(`At least ${minimum.min}: `),
      `${path}: kubectl explain should say the minimum and why`,
    );
  }
});

test("the controller refuses a duration below its minimum with the CRD's message, for objects stored before the rule", () => {
  const key = "QuorumControlPlane team-a/prod";
  assert.throws(
    () => durationOr(`${key} spec.etcd.ghostMemberGracePeriod`, "0s", 300_000),
    (error: Error) =>
      error.message ===
      `${key} spec.etcd.ghostMemberGracePeriod must be at least 20s (got "0s"): ${SPEC_DURATION_MINIMUMS["spec.etcd.ghostMemberGracePeriod"].why}`,
  );
  assert.throws(
    () => durationOr(`${key} spec.etcd.memberJoinGracePeriod`, "59s", 600_000),
    /spec\.etcd\.memberJoinGracePeriod must be at least 1m \(got "59s"\)/,
  );
  assert.throws(
    () => durationOr(`${key} spec.remediation.minHealthyPeriod`, "0", 3_600_000),
    /spec\.remediation\.minHealthyPeriod must be at least 1m \(got "0"\)/,
  );
  assert.equal(
    durationOr(`${key} spec.etcd.ghostMemberGracePeriod`, "20s", 300_000),
    20_000,
    "the minimum itself is accepted",
  );
  assert.equal(
    durationOr(`${key} spec.etcd.ghostMemberGracePeriod`, undefined, 300_000),
    300_000,
    "unset means the default",
  );
});

test("every default, sample and test object keeps its durations at or above their minimums", () => {
  const seconds = (text: unknown) => parseDuration(String(text))!;
  for (const [path, minimum] of Object.entries(SPEC_DURATION_MINIMUMS)) {
    assert.ok(seconds(at(qcpSchema, path)?.default) >= minimum.minMs, `${path}: the CRD default is below the minimum`);
  }
  const samplesDir = fileURLToPath(new URL("../../../config/samples/", import.meta.url));
  const objects: { spec?: unknown; metadata?: { name?: string } }[] = [
    completeControlPlane,
    { spec: completeTemplate.spec.template.spec },
  ];
  for (const file of readdirSync(samplesDir).filter((name) => name.endsWith(".yaml"))) {
    for (const document of parseAllDocuments(readFileSync(samplesDir + file, "utf8"))) {
      const object = document.toJS() as { kind?: string; spec?: { template?: { spec?: unknown } } } | null;
      if (object?.kind === KIND) objects.push(object);
      if (object?.kind === TEMPLATE_KIND) objects.push({ spec: object.spec?.template?.spec });
    }
  }
  for (const object of objects) {
    for (const path of Object.keys(SPEC_DURATION_MINIMUMS)) {
      const value = path
        .split(".")
        .reduce<unknown>((node, name) => (node as Record<string, unknown> | undefined)?.[name], object);
      assert.doesNotThrow(
        () => durationOr(path, value as string | undefined, 0),
        `${object.metadata?.name ?? "template"}: ${path}`,
      );
    }
  }
});

test("the schema defaults equal DEFAULTS in src/api/constants.ts", () => {
  const seconds = (text: unknown) => parseDuration(String(text))! / 1000;
  const fromSchema: Record<keyof typeof DEFAULTS, [string, (value: unknown) => unknown]> = {
    etcdClientPort: ["spec.etcd.clientPort", (value) => value],
    ghostMemberGracePeriodSeconds: ["spec.etcd.ghostMemberGracePeriod", seconds],
    learnerPromotionTimeoutSeconds: ["spec.etcd.learnerPromotionTimeout", seconds],
    learnerStallSeconds: ["spec.etcd.learnerStallTimeout", seconds],
    memberJoinGracePeriodSeconds: ["spec.etcd.memberJoinGracePeriod", seconds],
    remediationMaxRetry: ["spec.remediation.maxRetry", (value) => value],
    remediationRetryPeriodSeconds: ["spec.remediation.retryPeriod", seconds],
    remediationMinHealthyPeriodSeconds: ["spec.remediation.minHealthyPeriod", seconds],
    remediationMachineLostAfterSeconds: ["spec.remediation.machineLostAfter", seconds],
    deletionEtcdMemberRemovalTimeoutSeconds: ["spec.deletion.etcdMemberRemovalTimeout", seconds],
    maxSurge: ["spec.rollout.strategy.rollingUpdate.maxSurge", (value) => value],
  };
  // memberRemoval has no schema default: unset, it depends on the bootstrap flavour (src/api/flavour.ts), and a
  // default written by the API server would hide that it was unset.
  assert.equal(at(qcpSchema, "spec.rollout.strategy.rollingUpdate.memberRemoval")?.default, undefined);
  for (const [name, [path, convert]] of Object.entries(fromSchema)) {
    const schemaDefault = at(qcpSchema, path)?.default;
    assert.notEqual(schemaDefault, undefined, `${path} has no default`);
    assert.equal(
      convert(schemaDefault),
      DEFAULTS[name as keyof typeof DEFAULTS],
      `${path} default ${JSON.stringify(schemaDefault)} vs DEFAULTS.${name}`,
    );
  }
  // Defaults that are not in DEFAULTS, with the reason the controller agrees with them.
  const otherDefaults: Record<string, unknown> = {
    "spec.replicas": 1, // src/controller/snapshot-builder.ts reads an unset replicas as 1
    "spec.rollout.strategy.type": "RollingUpdate", // the only strategy
  };
  const covered = new Set([...Object.values(fromSchema).map(([path]) => path), ...Object.keys(otherDefaults)]);
  walk(qcpSchema, (node, path) => {
    if (node.default === undefined || node.type === "object") return;
    assert.ok(
      covered.has(path),
      `${path} has a default (${JSON.stringify(node.default)}) that neither DEFAULTS nor this test knows`,
    );
    if (path in otherDefaults) assert.equal(node.default, otherDefaults[path], path);
  });
  // A nested default only applies when its parent object exists, so the parents default to {}.
  for (const parent of [
    "spec.rollout",
    "spec.rollout.strategy",
    "spec.rollout.strategy.rollingUpdate",
    "spec.remediation",
    "spec.etcd",
  ]) {
    assert.deepEqual(
      at(qcpSchema, parent)?.default,
      {},
      `${parent} must default to {} for its fields' defaults to apply`,
    );
  }
});

test("the template's spec validates and defaults exactly like the QuorumControlPlane's spec", () => {
  for (const field of ["rollout", "remediation", "etcd"]) {
    assert.deepEqual(
      templateSpecSchema.properties?.[field],
      at(qcpSchema, `spec.${field}`),
      `template spec.template.spec.${field} differs`,
    );
  }
  // Only difference allowed: nothing in a template's machineTemplate is required (a ClusterClass's topology writes
  // spec.machineTemplate.spec.infrastructureRef into the QuorumControlPlane it creates from the template).
  const withoutRequired = (schema: Schema) => {
    const { description: _description, required, ...rest } = structuredClone(schema);
    const { required: specRequired, ...spec } = rest.properties!.spec;
    return { required, specRequired, machineTemplate: { ...rest, properties: { ...rest.properties, spec } } };
  };
  const qcpMachineTemplate = withoutRequired(at(qcpSchema, "spec.machineTemplate")!);
  const templateMachineTemplate = withoutRequired(templateSpecSchema.properties!.machineTemplate);
  assert.deepEqual(qcpMachineTemplate.required, ["spec"]);
  assert.deepEqual(qcpMachineTemplate.specRequired, ["infrastructureRef", "bootstrapConfigTemplateRef"]);
  assert.equal(templateMachineTemplate.required, undefined);
  assert.equal(templateMachineTemplate.specRequired, undefined);
  assert.deepEqual(templateMachineTemplate.machineTemplate, qcpMachineTemplate.machineTemplate);
  assert.equal(templateSpecSchema.properties?.replicas, undefined, "replicas comes from the Cluster topology");
  assert.equal(templateSpecSchema.properties?.version, undefined, "version comes from the Cluster topology");
});
