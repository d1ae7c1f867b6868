// The import boundaries between the layers of src/ are enforced by eslint.config.js (`make lint` runs it over the
// tree). This test lints planted imports with that config, so a rule that is deleted, scoped to the wrong folder or
// given a pattern that lets a forbidden import through fails here, not silently in review.
import assert from "node:assert/strict";
import { dirname, join, resolve } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { ESLint } from "eslint";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const eslint = new ESLint({ cwd: ROOT });

/** The boundary messages ESLint gives for `source` as if it were the file at `path` (relative to the root). */
async function boundaryProblems(path: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(source, { filePath: join(ROOT, path) });
  return result.messages.filter((message) => message.ruleId === "no-restricted-imports").map((m) => m.message);
}

interface Layer {
  /** A file of the layer that does not exist: ESLint picks the rules by path only. */
  file: string;
  reason: RegExp;
  refused: string[];
  allowed: string[];
}

const LAYERS: Layer[] = [
  {
    file: "src/core/example.ts",
    reason: /the core is pure/,
    refused: [
      'import { readFileSync } from "node:fs";',
      'import { Etcd3 } from "etcd3";',
      'import type { EtcdClient } from "../adapters/etcd/client.ts";',
      'import type { Clock } from "../ports/clock.ts";',
      'export { observe } from "../controller/observe.ts";',
      'import { x } from "./../controller/observe.ts";',
    ],
    allowed: ['import type { Snapshot } from "./snapshot.ts";', 'import { LABELS } from "../api/constants.ts";'],
  },
  {
    file: "src/ports/example.ts",
    reason: /ports are the shell's interfaces/,
    refused: [
      'import type { Plan } from "../core/plan.ts";',
      'import type { EtcdClient } from "../adapters/etcd/client.ts";',
      'import type { KubeConfig } from "@kubernetes/client-node";',
      'import { EventEmitter } from "node:events";',
    ],
    allowed: ['import type { Clock } from "./clock.ts";', 'import type { Machine } from "../api/capi.ts";'],
  },
  {
    file: "src/adapters/workload/example.ts",
    reason: /adapters implement the ports and never import src\/controller/,
    refused: [
      'import type { WorkloadAccess } from "../../controller/ports.ts";',
      'export * from "../../controller/machine-factory.ts";',
    ],
    allowed: [
      'import type { WorkloadAccess } from "../../ports/workload.ts";',
      'import { quorumSize } from "../../core/assess.ts";',
      'import { request } from "node:https";',
      'import { Etcd3 } from "etcd3";',
    ],
  },
  {
    file: "src/api/example.ts",
    reason: /src\/api is the bottom layer/,
    refused: ['import type { Snapshot } from "../core/snapshot.ts";', 'import { log } from "../adapters/kube/log.ts";'],
    allowed: ['import { LABELS } from "./constants.ts";'],
  },
];

const layerOf = (file: string) => file.split("/").slice(0, 2).join("/");

describe("the linter enforces the import boundaries between the layers of src/", () => {
  for (const layer of LAYERS) {
    it(`${layerOf(layer.file)} refuses each forbidden import and says why`, async () => {
      for (const source of layer.refused) {
        const problems = await boundaryProblems(layer.file, source);
        assert.equal(problems.length, 1, `${layer.file}: ${source} should be refused, got ${JSON.stringify(problems)}`);
        assert.match(problems[0], layer.reason);
      }
    });

    it(`${layerOf(layer.file)} accepts the imports its layer may make`, async () => {
      for (const source of layer.allowed) {
        assert.deepEqual(await boundaryProblems(layer.file, source), [], `${layer.file}: ${source} should be allowed`);
      }
    });
  }

  it("the controller, the CLI and the tests may import any layer", async () => {
    const source = 'import { plan } from "../core/plan.ts";\nimport { EtcdClient } from "../adapters/etcd/client.ts";';
    assert.deepEqual(await boundaryProblems("src/controller/example.ts", source), []);
    assert.deepEqual(await boundaryProblems("src/cli/example.ts", source), []);
    assert.deepEqual(await boundaryProblems("test/unit/example.test.ts", source.replaceAll("../", "../../src/")), []);
  });
});
