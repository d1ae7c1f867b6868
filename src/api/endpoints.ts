// Where to reach a workload cluster's etcd: first the control-plane Machines' addresses on the etcd client
// port (known before any member list is), then the client URLs the member list advertises (which also
// covers members whose Machine reports no address, e.g. a ghost). Pure.
import { isIPv6 } from "node:net";

/** Canonical form of a client URL, so the same endpoint from two sources is asked once. */
export function normalizeEndpoint(url: string): string {
  const trimmed = url.trim();
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed) ? trimmed : `https://${trimmed}`;
  const parsed = new URL(withScheme);
  return `${parsed.protocol}//${parsed.host}`;
}

/** `https://<address>:<port>` for each Machine address (IPv6 in brackets), in order, without repeats. */
export function endpointsFromAddresses(
  addresses: readonly string[],
  clientPort: number,
  scheme: "https" | "http" = "https",
): string[] {
  const endpoints = addresses
    .map((address) => address.trim())
    .filter((address) => address.length > 0)
    .map((address) => normalizeEndpoint(`${scheme}://${isIPv6(address) ? `[${address}]` : address}:${clientPort}`));
  return [...new Set(endpoints)];
}

/** Machine endpoints first (they exist before the first member list), then advertised client URLs. */
export function etcdEndpoints(
  machines: readonly { addresses: readonly string[] }[],
  clientPort: number,
  members: readonly { clientURLs: readonly string[] }[] = [],
  scheme: "https" | "http" = "https",
): string[] {
  const fromMachines = machines.flatMap((machine) => endpointsFromAddresses(machine.addresses, clientPort, scheme));
  const fromMembers = members.flatMap((member) => member.clientURLs.map(normalizeEndpoint));
  return [...new Set([...fromMachines, ...fromMembers])];
}
