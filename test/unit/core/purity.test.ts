// src/core is the functional core: no I/O, no clock, no randomness, no adapters. This test reads its sources and
// fails on anything that would let the outside world in, so a replayed snapshot always gives the same decision.
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const CORE = join(ROOT, "src", "core");
const ALLOWED_DIRS = [join(ROOT, "src", "core"), join(ROOT, "src", "api")];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(ts|mts|cts|js|mjs)$/.test(entry) ? [path] : [];
  });
}

/** Drops comments so that a comment mentioning Date.now does not count; strings stay (an import is a string). */
function withoutComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
}

const FORBIDDEN: { pattern: RegExp; why: string }[] = [
  { pattern: /\bDate\s*\.\s*now\b/, why: "reads the clock (use snapshot.now)" },
  { pattern: /\bnew\s+Date\b/, why: "reads the clock or builds a Date (use epoch ms from the snapshot)" },
  { pattern: /\bMath\s*\.\s*random\b/, why: "is random (decisions must be replayable)" },
  { pattern: /\bprocess\b/, why: "reads the process (environment, time, arguments)" },
  { pattern: /\bperformance\s*\.\s*now\b/, why: "reads the clock" },
  {
    pattern: /\b(?:setTimeout|setInterval|setImmediate|queueMicrotask)\b/,
    why: "schedules work (the core only returns data)",
  },
  { pattern: /\b(?:fetch|require)\s*\(/, why: "does I/O or loads modules dynamically" },
  { pattern: /\bimport\s*\(/, why: "loads modules dynamically" },
  { pattern: /\bcrypto\b/, why: "is random or platform-specific" },
];

/** Every problem in one source file, as "src/core/file.ts: what". */
function violations(path: string, source: string): string[] {
  const file = relative(ROOT, path);
  const code = withoutComments(source);
  const found: string[] = [];
  const specifiers = [
    ...code.matchAll(/\b(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']/g),
    ...code.matchAll(/\bimport\s*["']([^"']+)["']/g),
  ].map((match) => match[1]);
  for (const specifier of specifiers) {
    if (specifier.startsWith("node:")) {
      found.push(`${file}: imports ${specifier}, a node module`);
      continue;
    }
    if (!specifier.startsWith(".")) {
      found.push(`${file}: imports package ${specifier}; the core may only import from src/core and src/api`);
      continue;
    }
    const target = resolve(dirname(path), specifier);
    if (!ALLOWED_DIRS.some((dir) => target === dir || target.startsWith(dir + sep))) {
      found.push(`${file}: imports ${specifier}, outside src/core and src/api`);
    }
  }
  for (const { pattern, why } of FORBIDDEN) {
    const match = pattern.exec(code);
    if (match) found.push(`${file}: uses ${match[0].trim()}, which ${why}`);
  }
  return found;
}

describe("the functional core stays pure", () => {
  it("no file in src/core imports an adapter, a package or a node module, or reads the clock, randomness or the process", () => {
    const files = sourceFiles(CORE);
    assert.ok(files.length >= 5, `expected the core's sources under ${CORE}`);
    const found = files.flatMap((file) => violations(file, readFileSync(file, "utf8")));
    assert.deepEqual(found, []);
  });

  it("the check itself catches each kind of impurity", () => {
    const file = join(CORE, "example.ts");
    const cases: [string, RegExp][] = [
      ['import { readFileSync } from "node:fs";', /node module/],
      ['import { etcd } from "../adapters/etcd/client.ts";', /outside src\/core/],
      ['import { Etcd3 } from "etcd3";', /package etcd3/],
      ['export { x } from "../controller/observe.ts";', /outside src\/core/],
      ["const t = Date.now();", /clock/],
      ["const t = new Date();", /clock/],
      ["const r = Math.random();", /random/],
      ["const e = process.env.X;", /process/],
    ];
    for (const [source, expected] of cases) {
      const found = violations(file, source);
      assert.ok(
        found.some((problem) => expected.test(problem)),
        `${source} should be flagged, got ${JSON.stringify(found)}`,
      );
    }
    assert.deepEqual(
      violations(
        file,
        'import type { Snapshot } from "./snapshot.ts";\nimport { KIND } from "../api/constants.ts";\n// Date.now() is forbidden\nconst url = "https://x";',
      ),
      [],
    );
  });
});
