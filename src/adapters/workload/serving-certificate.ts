// When a Machine's API server serving certificate expires, read the way KCP reads it (GetAPIServerCertificateExpiry):
// a TLS handshake with the API server, then the peer certificate's notAfter. kubeadm issues that certificate for one
// year, so a control plane nobody rolls for a year stops serving; spec.rollout.before.certificatesExpiryDays rolls
// Machines out ahead of it. KCP dials through a port-forward to the kube-apiserver pod; Quorum dials the Machine's
// InternalIP, as it does for etcd.
import { connect, type PeerCertificate } from "node:tls";
import type { CertificatesExpiries, ServingMachine } from "../../ports/index.ts";

/** kubeadm's default kube-apiserver bind port. */
export const DEFAULT_API_SERVER_PORT = 6443;
/** A handshake with a live API server takes milliseconds; a Machine that does not answer costs one reconcile this. */
export const SERVING_CERTIFICATE_DEADLINE_MS = 3_000;
/** A read expiry is trusted this long (it is also recorded on the Machine, which outlives a restart). */
export const EXPIRY_CACHE_MS = 6 * 60 * 60_000;
/** A Machine that could not be read is not dialled again for this long (an API server still starting). */
export const FAILURE_CACHE_MS = 60_000;

/**
 * The notAfter of the certificate `host:port` serves. No trust decision is made: the certificate is not verified
 * (rejectUnauthorized false) because only its date is read and nothing is sent over the connection; a forged
 * certificate could at worst move a rollout, which the spec allows anyway.
 */
export function readServingCertificateExpiry(
  host: string,
  port: number,
  deadlineMs: number = SERVING_CERTIFICATE_DEADLINE_MS,
): Promise<Date> {
  const where = `the API server serving certificate at ${host}:${port}`;
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"] });
    const fail = (cause: string) => {
      socket.destroy();
      reject(new Error(`could not read ${where}: ${cause}`));
    };
    const timer = setTimeout(
      () => fail(`no TLS handshake within ${deadlineMs} ms (is the API server up and port ${port} reachable?)`),
      deadlineMs,
    );
    socket.once("error", (error) => {
      clearTimeout(timer);
      fail(error.message);
    });
    socket.once("secureConnect", () => {
      clearTimeout(timer);
      const certificate: PeerCertificate = socket.getPeerCertificate();
      socket.end();
      const notAfter = Date.parse(certificate.valid_to ?? "");
      if (Number.isNaN(notAfter)) fail(`the server sent no certificate with a readable notAfter`);
      else resolve(new Date(notAfter));
    });
  });
}

/** The API server port from a KubeadmConfigTemplate: its init or join localAPIEndpoint.bindPort, else 6443 (as KCP). */
export function apiServerPortOf(template: unknown): number {
  const spec = (template as { spec?: { template?: { spec?: Record<string, unknown> } } } | undefined)?.spec?.template
    ?.spec;
  const bindPort = (section: unknown): number | undefined => {
    const port = (section as { localAPIEndpoint?: { bindPort?: unknown } } | undefined)?.localAPIEndpoint?.bindPort;
    return typeof port === "number" && Number.isInteger(port) && port > 0 && port < 65536 ? port : undefined;
  };
  const join = (spec?.joinConfiguration as { controlPlane?: unknown } | undefined)?.controlPlane;
  return bindPort(spec?.initConfiguration) ?? bindPort(join) ?? DEFAULT_API_SERVER_PORT;
}

type Reader = (host: string, port: number) => Promise<Date>;

/** Expiries read per Machine (name + UID), so a reconcile dials only Machines not read recently. */
export class ServingCertificateExpiries {
  private readonly cache = new Map<string, { expiry?: number; error?: string; at: number }>();

  constructor(
    private readonly clock: () => number,
    private readonly read: Reader = readServingCertificateExpiry,
  ) {}

  /**
   * Reads every Machine not cached, in parallel (each under its own deadline). Never throws. `scope` is the cluster
   * (namespace/name), which forget() drops. `machines` are all the cluster's Machines still to be read: an entry of
   * any other (replaced by a rollout, or its expiry recorded on it) is dropped, or a long-lived cluster would keep
   * one for every Machine it ever had.
   */
  async expiries(scope: string, machines: ServingMachine[], port: number): Promise<CertificatesExpiries> {
    const now = this.clock();
    const result: CertificatesExpiries = { expiries: {}, errors: [] };
    const keyed = machines.map((machine) => ({
      machine,
      key: `${scope}/${machine.name}/${machine.uid}/${machine.address}:${port}`,
    }));
    const keys = new Set(keyed.map(({ key }) => key));
    for (const key of [...this.cache.keys()]) if (key.startsWith(`${scope}/`) && !keys.has(key)) this.cache.delete(key);
    await Promise.all(
      keyed.map(async ({ machine, key }) => {
        let entry = this.cache.get(key);
        const fresh = entry && now - entry.at < (entry.expiry !== undefined ? EXPIRY_CACHE_MS : FAILURE_CACHE_MS);
        if (!fresh) {
          try {
            entry = { expiry: (await this.read(machine.address, port)).getTime(), at: now };
          } catch (error) {
            entry = { error: error instanceof Error ? error.message : String(error), at: now };
          }
          this.cache.set(key, entry);
        }
        if (entry?.expiry !== undefined) result.expiries[machine.name] = entry.expiry;
        // A failure is reported when it happens, not again on every reconcile while it is cached (no log flood).
        else if (!fresh && entry?.error !== undefined) result.errors.push(`Machine ${machine.name}: ${entry.error}`);
      }),
    );
    result.errors.sort();
    return result;
  }

  forget(scope: string): void {
    for (const key of [...this.cache.keys()]) if (key.startsWith(`${scope}/`)) this.cache.delete(key);
  }

  clear(): void {
    this.cache.clear();
  }

  /** How many Machines' expiries are kept (for tests that they stay bounded). */
  get size(): number {
    return this.cache.size;
  }
}
