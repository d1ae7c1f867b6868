// ESLint flat config: typescript-eslint's syntactic `recommended` rules plus the import boundaries between the layers
// of src/, which test/unit/lint-boundaries.test.ts checks this config enforces. Not the type-checked presets: they
// build the TypeScript program, and on this tree took 2 min 48 s against 30 s for these rules on the shared 2 cores
// (52 s against 10 s of CPU); `tsc --noEmit` already checks the types.
// `@typescript-eslint/no-explicit-any` (an error in `recommended`) holds for the whole tree, src/core included.
// Formatting is Prettier's job (.prettierrc.json); none of the presets used here has formatting rules.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

/** `no-restricted-imports` with one message: every specifier matching `regex` is refused with `reason`. */
function onlyImports(regex, reason) {
  return ["error", { patterns: [{ regex, message: reason }] }];
}

export default tseslint.config(
  {
    // Generated or fetched output; hack/tools holds Go modules only.
    ignores: ["dist/", "out/", "bin/", "bench/results/", "e2e/results/", "hack/tools/", ".cache/"],
  },
  {
    files: ["src/**/*.ts", "test/**/*.ts", "e2e/**/*.ts", "bench/**/*.ts", "hack/*.ts", "*.js"],
    extends: [js.configs.recommended, tseslint.configs.recommended],
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      // `_`-prefixed names are the project's way of saying "unused on purpose" (a callback's leading parameters,
      // a destructured field left out of a rest object).
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none", ignoreRestSiblings: true },
      ],
    },
  },
  {
    files: ["test/**/*.ts"],
    rules: {
      // The fakes hand out object literals whose methods read and change the fake's state (`const store = this`);
      // `this` inside those methods is the literal, so the alias is the plain way to say "the fake".
      "@typescript-eslint/no-this-alias": "off",
    },
  },
  {
    files: ["src/core/**/*.ts"],
    rules: {
      "no-restricted-imports": onlyImports(
        "^(?!\\./|\\.\\./api/)|^\\./.*\\.\\./",
        "the core is pure: src/core may import only src/core (./) and src/api (../api/) — no node: modules, " +
          "packages, ports, adapters or controller, so a replayed snapshot always gives the same decision.",
      ),
    },
  },
  {
    files: ["src/ports/**/*.ts"],
    rules: {
      "no-restricted-imports": onlyImports(
        "^(?!\\./|\\.\\./api/)|^\\./.*\\.\\./",
        "ports are the shell's interfaces: src/ports may import only src/ports (./) and src/api (../api/), so " +
          "core, controller, simulator and adapters can all import them without pulling in an implementation.",
      ),
    },
  },
  {
    files: ["src/adapters/**/*.ts"],
    rules: {
      "no-restricted-imports": onlyImports(
        "(^|/)controller(/|$)",
        "adapters implement the ports and never import src/controller: the controller depends on adapters only " +
          "through src/ports, so the simulator can run the real reconcile() without them.",
      ),
    },
  },
  {
    files: ["src/api/**/*.ts"],
    rules: {
      "no-restricted-imports": onlyImports(
        "^\\.\\./|^\\./.*\\.\\./",
        "src/api is the bottom layer (the CRD's types, CAPI types, names): it imports nothing from the rest of src/.",
      ),
    },
  },
);
