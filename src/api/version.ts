// spec.version as Quorum uses it. The CRD accepts "1.37.2" as well as "v1.37.2" (KCP's and CAPI's Machine webhooks
// default the missing "v"; Quorum has no webhook, so it normalises where it reads the spec): Machines, status.version
// and the Machine names derived from the version all get the canonical "v1.37.2", so writing the version either way
// never rolls a Machine.

/** `version` with a leading "v" (the CRD's pattern guarantees the rest is MAJOR.MINOR.PATCH). */
export function canonicalVersion(version: string): string {
  return version.startsWith("v") ? version : `v${version}`;
}
