// spec.version as Quorum uses it. The CRD accepts "1.37.2" as well as "v1.37.2" (KCP's and CAPI's Machine webhooks
// default the missing "v"; Quorum has no webhook, so it normalises where it reads the spec): Machines, status.version
// and the Machine names derived from the version all get the canonical "v1.37.2", so writing the version either way
// never rolls a Machine.

/** 37 for "v1.37.2"; undefined for anything that is not a Kubernetes version. */
export function minorOf(version: string): number | undefined {
  const match = /^v?1\.(\d+)\./.exec(version);
  return match ? Number(match[1]) : undefined;
}

/** `version` with a leading "v" (the CRD's pattern guarantees the rest is MAJOR.MINOR.PATCH). */
export function canonicalVersion(version: string): string {
  return version.startsWith("v") ? version : `v${version}`;
}
