// The key type of a new cluster's CAs and service-account key, as kubeadm's ClusterConfiguration.encryptionAlgorithm
// (kubeadm v1beta4, CAPI's KubeadmConfigSpec) names it. KCP generates every cluster Secret with it (CAPI
// util/secret NewCertificatesForInitialControlPlane); so does Quorum, read from the bootstrap config template's
// spec.template.spec.clusterConfiguration. Unset, Quorum keeps its own defaults: ECDSA P-256 CAs (cheap, accepted by
// every Kubernetes component) and an RSA-2048 service-account key (what kubeadm and CAPI generate by default).
import type { Unstructured } from "../../api/objects.ts";

export const KEY_ALGORITHMS = ["ECDSA-P256", "ECDSA-P384", "RSA-2048", "RSA-3072", "RSA-4096"] as const;
export type KeyAlgorithm = (typeof KEY_ALGORITHMS)[number];

/** RSA modulus length, or undefined for ECDSA. */
export function rsaBits(algorithm: KeyAlgorithm): number | undefined {
  const match = /^RSA-(\d+)$/.exec(algorithm);
  return match ? Number(match[1]) : undefined;
}

/** The NIST curve of an ECDSA algorithm (WebCrypto's name), or undefined for RSA. */
export function ecdsaCurve(algorithm: KeyAlgorithm): "P-256" | "P-384" | undefined {
  if (algorithm === "ECDSA-P256") return "P-256";
  if (algorithm === "ECDSA-P384") return "P-384";
  return undefined;
}

/**
 * The encryptionAlgorithm a bootstrap config template asks for, or undefined when it sets none. A value kubeadm would
 * refuse is an error naming the template and the values it accepts.
 */
export function encryptionAlgorithmOf(template: Unstructured, templateName: string): KeyAlgorithm | undefined {
  const value = field(template, ["spec", "template", "spec", "clusterConfiguration", "encryptionAlgorithm"]);
  if (value === undefined || value === "") return undefined;
  if (typeof value === "string" && (KEY_ALGORITHMS as readonly string[]).includes(value)) return value as KeyAlgorithm;
  throw new Error(
    `${templateName} spec.template.spec.clusterConfiguration.encryptionAlgorithm is ${JSON.stringify(value)}: ` +
      `set one of ${KEY_ALGORITHMS.join(", ")}, or leave it unset`,
  );
}

function field(object: unknown, path: string[]): unknown {
  let current = object;
  for (const key of path) {
    if (typeof current !== "object" || current === null) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}
