// The layers of src/ and which may import which: api ← core ← ports ← controller; adapters implement the ports
// and never reach into the controller; the reconcile path (everything reconcile.ts loads) reaches the world only
// through src/ports, which is what lets the simulator run the real reconcile() against its own world.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const SRC = join(ROOT, "src");
const dir = (name: string) => join(SRC, name);

function sourceFiles(path: string): string[] {
  return readdirSync(path).flatMap((entry) => {
    const full = join(path, entry);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return /\.ts$/.test(entry) ? [full] : [];
  });
}

/** The relative imports (and re-exports) of a source, resolved to absolute paths; comments are dropped first. */
function importsOf(path: string, source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
  const specifiers = [
    ...code.matchAll(/\b(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']/g),
    ...code.matchAll(/\bimport\s*(?:\(\s*)?["']([^"']+)["']/g),
  ].map((match) => match[1]);
  return specifiers
    .filter((specifier) => specifier.startsWith("."))
    .map((specifier) => resolve(dirname(path), specifier));
}

const inside = (path: string, folder: string) => path === folder || path.startsWith(folder + sep);

/** Every file under `from` that imports something under src/ outside `allowed`, as "file -> import". */
function outsideImports(from: string, allowed: string[]): string[] {
  return sourceFiles(from).flatMap((file) =>
    importsOf(file, readFileSync(file, "utf8"))
      .filter((target) => inside(target, SRC) && !allowed.some((folder) => inside(target, folder)))
      .map((target) => `${relative(ROOT, file)} -> ${relative(ROOT, target)}`),
  );
}

/** The files `entry` loads, directly or through others, within src/. */
function closure(entry: string): Set<string> {
  const seen = new Set<string>();
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file) || !existsSync(file)) continue;
    seen.add(file);
    for (const target of importsOf(file, readFileSync(file, "utf8"))) if (inside(target, SRC)) queue.push(target);
  }
  return seen;
}

describe("the layers of src/", () => {
  it("src/api imports only src/api", () => {
    assert.deepEqual(outsideImports(dir("api"), [dir("api")]), []);
  });

  it("src/core imports only src/core and src/api", () => {
    assert.deepEqual(outsideImports(dir("core"), [dir("core"), dir("api")]), []);
  });

  it("src/ports imports only src/ports and src/api", () => {
    assert.deepEqual(outsideImports(dir("ports"), [dir("ports"), dir("api")]), []);
  });

  it("src/adapters never imports src/controller", () => {
    assert.deepEqual(outsideImports(dir("adapters"), [dir("adapters"), dir("api"), dir("core"), dir("ports")]), []);
  });

  it("nothing reconcile() loads comes from src/adapters: it reaches the world only through src/ports", () => {
    const loaded = [...closure(join(dir("controller"), "reconcile.ts"))];
    assert.ok(loaded.length >= 5, "expected reconcile.ts and its modules");
    assert.deepEqual(
      loaded.filter((file) => inside(file, dir("adapters"))).map((file) => relative(ROOT, file)),
      [],
    );
  });

  it("the import reader sees static imports, re-exports and dynamic imports, and not commented ones", () => {
    const file = join(dir("controller"), "example.ts");
    const found = importsOf(
      file,
      'import { a } from "../adapters/x.ts";\nexport type { B } from "./b.ts";\nconst c = await import("../adapters/c.ts");\n// import { d } from "../adapters/d.ts";\nimport "node:fs";',
    );
    assert.deepEqual(
      found.map((target) => relative(SRC, target)),
      [join("adapters", "x.ts"), join("controller", "b.ts"), join("adapters", "c.ts")],
    );
  });
});
