// A small reader of the CRD files and a structural check of objects against their OpenAPI schema: enough to
// catch a sample or a TypeScript type drifting from the CRD without a kube-apiserver. CEL rules are not
// evaluated here; test/integration proves them on a real apiserver.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";

export interface Schema {
  type?: "object" | "array" | "string" | "integer" | "number" | "boolean";
  description?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  required?: string[];
  enum?: unknown[];
  default?: unknown;
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  "x-kubernetes-validations"?: CelRule[];
  "x-kubernetes-list-type"?: string;
  "x-kubernetes-list-map-keys"?: string[];
}

export interface CelRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: string;
  fieldPath?: string;
}

export interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  description?: string;
  priority?: number;
}

export interface CrdVersion {
  name: string;
  served: boolean;
  storage: boolean;
  schema: { openAPIV3Schema: Schema };
  subresources?: {
    status?: object;
    scale?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string };
  };
  additionalPrinterColumns?: PrinterColumn[];
}

export interface Crd {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec: {
    group: string;
    scope: string;
    names: {
      kind: string;
      listKind: string;
      plural: string;
      singular: string;
      shortNames?: string[];
      categories?: string[];
    };
    versions: CrdVersion[];
  };
}

const crdDir = fileURLToPath(new URL("../../../config/crd/", import.meta.url));

export function readCrd(file: string): Crd {
  return parse(readFileSync(crdDir + file, "utf8")) as Crd;
}

export function readKustomization(): { resources: string[] } {
  return parse(readFileSync(crdDir + "kustomization.yaml", "utf8")) as { resources: string[] };
}

/** Calls visit for every schema node below root, with its path in `a.b[].c` form. */
export function walk(root: Schema, visit: (node: Schema, path: string) => void, path = ""): void {
  visit(root, path);
  for (const [name, child] of Object.entries(root.properties ?? {}))
    walk(child, visit, path ? `${path}.${name}` : name);
  if (root.items) walk(root.items, visit, `${path}[]`);
  if (typeof root.additionalProperties === "object") walk(root.additionalProperties, visit, `${path}{}`);
}

/** The schema node at a dotted path of property names, or undefined when the schema has no such field. */
export function at(root: Schema, path: string): Schema | undefined {
  let node: Schema | undefined = root;
  for (const name of path.split(".").filter(Boolean)) node = node?.properties?.[name];
  return node;
}

/**
 * Where the field names of a sample object and of the schema disagree, as readable lines. Maps
 * (additionalProperties) are not compared key by key; arrays are compared through their first element.
 */
export function fieldNameDifferences(schema: Schema, sample: unknown, path: string): string[] {
  if (schema.type === "array") {
    if (!Array.isArray(sample) || sample.length === 0)
      return [`${path}: the sample needs a non-empty array to compare its items`];
    return fieldNameDifferences(schema.items ?? {}, sample[0], `${path}[]`);
  }
  if (schema.type !== "object" || schema.additionalProperties !== undefined) return [];
  if (sample === null || typeof sample !== "object") return [`${path}: the sample is not an object`];
  const inSchema = Object.keys(schema.properties ?? {});
  const inSample = Object.keys(sample);
  const differences = [
    ...inSample
      .filter((name) => !inSchema.includes(name))
      .map((name) => `${path}.${name}: in src/api/types.ts but not in the CRD`),
    ...inSchema
      .filter((name) => !inSample.includes(name))
      .map((name) => `${path}.${name}: in the CRD but not in src/api/types.ts`),
  ];
  for (const name of inSchema.filter((field) => inSample.includes(field))) {
    differences.push(
      ...fieldNameDifferences(schema.properties![name], (sample as Record<string, unknown>)[name], `${path}.${name}`),
    );
  }
  return differences;
}

/**
 * What the apiserver's OpenAPI validation (not CEL) would reject in value, as readable lines. Unknown fields
 * count as errors because the apiserver would silently prune them, which is worse.
 */
export function structuralErrors(schema: Schema, value: unknown, path = ""): string[] {
  const errors: string[] = [];
  const where = path || "<root>";
  switch (schema.type) {
    case "object": {
      if (value === null || typeof value !== "object" || Array.isArray(value)) return [`${where}: expected an object`];
      const record = value as Record<string, unknown>;
      for (const name of schema.required ?? [])
        if (record[name] === undefined) errors.push(`${where}.${name}: required`);
      for (const [name, child] of Object.entries(record)) {
        const childPath = path ? `${path}.${name}` : name;
        const childSchema =
          schema.properties?.[name] ??
          (typeof schema.additionalProperties === "object" ? schema.additionalProperties : undefined);
        if (childSchema) errors.push(...structuralErrors(childSchema, child, childPath));
        else if (
          !(path === "" && name === "metadata") &&
          !(schema.properties === undefined && schema.additionalProperties === undefined)
        )
          errors.push(`${childPath}: unknown field (the apiserver would drop it)`);
      }
      break;
    }
    case "array":
      if (!Array.isArray(value)) return [`${where}: expected an array`];
      if (schema.minItems !== undefined && value.length < schema.minItems)
        errors.push(`${where}: fewer than ${schema.minItems} items`);
      if (schema.maxItems !== undefined && value.length > schema.maxItems)
        errors.push(`${where}: more than ${schema.maxItems} items`);
      value.forEach((item, index) => errors.push(...structuralErrors(schema.items ?? {}, item, `${path}[${index}]`)));
      break;
    case "string":
      if (typeof value !== "string") return [`${where}: expected a string`];
      if (schema.minLength !== undefined && value.length < schema.minLength)
        errors.push(`${where}: shorter than ${schema.minLength}`);
      if (schema.maxLength !== undefined && value.length > schema.maxLength)
        errors.push(`${where}: longer than ${schema.maxLength}`);
      if (schema.pattern !== undefined && !new RegExp(schema.pattern).test(value))
        errors.push(`${where}: does not match ${schema.pattern}`);
      if (schema.format === "date-time" && Number.isNaN(Date.parse(value)))
        errors.push(`${where}: not an RFC 3339 date-time`);
      break;
    case "integer":
    case "number":
      if (typeof value !== "number" || (schema.type === "integer" && !Number.isInteger(value)))
        return [`${where}: expected an ${schema.type}`];
      if (schema.minimum !== undefined && value < schema.minimum) errors.push(`${where}: below ${schema.minimum}`);
      if (schema.maximum !== undefined && value > schema.maximum) errors.push(`${where}: above ${schema.maximum}`);
      break;
    case "boolean":
      if (typeof value !== "boolean") return [`${where}: expected a boolean`];
      break;
  }
  if (schema.enum !== undefined && !schema.enum.includes(value))
    errors.push(`${where}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  return errors;
}

/** The regular expression inside the first `self.matches('...')` of a CEL rule, for JavaScript. */
export function celMatchesPattern(rule: string): RegExp {
  const match = /self\.matches\('([^']*)'\)/.exec(rule);
  if (!match) throw new Error(`CEL rule has no self.matches('...'): ${rule}`);
  return new RegExp(match[1]);
}
