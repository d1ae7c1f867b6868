// What the workload dial tests share: servers on 127.0.0.1 and free ports, and a kube-apiserver-like serving
// certificate from an untrusted CA (the dials read a status or a date, never trust the certificate).
import type { Server as NetServer, AddressInfo } from "node:net";
import {
  createCA,
  issueCertificate,
  oneDay,
  validFor,
  type IssuedCertificate,
} from "../../../../src/adapters/certs/pki.ts";

/** Listens on 127.0.0.1 and a free port; returns the port. */
export function listen(server: NetServer): Promise<number> {
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port)));
}

export function close(server: NetServer): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** A serving certificate for 127.0.0.1 valid for `validityMs` from now, from a fresh ten-year CA. */
export async function apiServerCertificate(validityMs: number): Promise<IssuedCertificate> {
  const ca = await createCA("kubernetes", validFor(3650 * oneDay));
  return issueCertificate(ca, {
    commonName: "kube-apiserver",
    ipAddresses: ["127.0.0.1"],
    usages: "server",
    validity: validFor(validityMs),
  });
}
