// Object shapes the controller handles without knowing their kind: templates and their clones.
import type { OwnerReference } from "./types.ts";

/** An unstructured Kubernetes object (a template or its clone); only metadata and spec are touched. */
export interface Unstructured {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: OwnerReference[];
    uid?: string;
    resourceVersion?: string;
  };
  spec?: Record<string, unknown> & {
    template?: {
      metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
      spec?: Record<string, unknown>;
    };
  };
}

/** The API group of an apiVersion ("" for the core group's "v1"). */
export function groupOf(apiVersion: string): string {
  return apiVersion.includes("/") ? apiVersion.split("/")[0] : "";
}
