// Typed failures of the adapters that reach the workload cluster (etcd, its certificates, its kubeconfig).
// Each message names the object (Secret namespace/name or endpoint), the cause and the fix, because it ends
// up verbatim in a condition or an Event a user reads. The controller decides what to do with them: none of
// these is retried inside the adapters, and none is thrown past the reconcile.
import { REASON_WORKLOAD_KUBECONFIG_REJECTED } from "../api/constants.ts";

/** Where a Secret lives; messages print it as `namespace/name`. */
export interface SecretRef {
  namespace: string;
  name: string;
}

export function secretKey(ref: SecretRef): string {
  return `${ref.namespace}/${ref.name}`;
}

export abstract class AdapterError extends Error {
  /**
   * CamelCase reason (e.g. "SecretMissing"); the controller reads its presence to know the message already names
   * the object, the cause and the fix (src/controller/etcd-view.ts).
   */
  abstract readonly reason: string;
  /**
   * True when only a user can fix it (bad Secret content); false when waiting may fix it (an endpoint that
   * is still booting). The planner then rechecks an unreadable etcd every 15 s instead of every second
   * (EtcdView.needsUser, src/controller/observe.ts).
   */
  abstract readonly needsUser: boolean;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A Secret Quorum needs does not exist (and is not one Quorum creates at this point). */
export class SecretMissingError extends AdapterError {
  readonly reason = "SecretMissing";
  readonly needsUser = false;
  constructor(
    readonly secret: SecretRef,
    purpose: string,
    fix: string,
  ) {
    super(`Secret ${secretKey(secret)} not found: Quorum needs it ${purpose}: ${fix}`);
  }
}

/**
 * Certificate Secrets missing on a cluster whose control plane already runs. Regenerating them would give the
 * cluster a CA its members do not trust: Quorum's etcd client certificate would be rejected and every safety
 * check would wait forever. Only a restore from backup fixes it.
 */
export class RunningClusterSecretMissingError extends AdapterError {
  readonly reason = "SecretMissingOnRunningCluster";
  readonly needsUser = true;
  constructor(
    readonly secrets: SecretRef[],
    /** Why the cluster counts as running, e.g. "Cluster ns/c reports its control plane initialized". */
    evidence: string,
  ) {
    const names = secrets.map(secretKey).join(", ");
    super(
      `${secrets.length === 1 ? "Secret" : "Secrets"} ${names} not found, but the cluster is running (${evidence}): ` +
        `restore ${names} from backup; Quorum does not regenerate the CAs or the service-account key of a running ` +
        "cluster, since its members would reject certificates from a new CA and its API servers tokens from a new key",
    );
  }
}

/** A Secret exists but a data key is empty or does not hold what it must (PEM certificate, key, kubeconfig). */
export class SecretGarbageError extends AdapterError {
  readonly reason = "SecretInvalid";
  readonly needsUser = true;
  constructor(
    readonly secret: SecretRef,
    readonly dataKey: string,
    problem: string,
    fix: string,
    options?: { cause?: unknown },
  ) {
    super(`Secret ${secretKey(secret)}: data key "${dataKey}" ${problem}: ${fix}`, options);
  }
}

/**
 * A kubeconfig Secret with a field Quorum refuses to honour (exec, auth-provider, a file reference, a proxy,
 * insecure-skip-tls-verify): honouring it would let whoever writes the Secret run code or read files in the controller.
 */
export class KubeconfigRefusedError extends AdapterError {
  readonly reason = REASON_WORKLOAD_KUBECONFIG_REJECTED;
  readonly needsUser = true;
  constructor(
    readonly secret: SecretRef,
    readonly dataKey: string,
    /** The refused field's path in the kubeconfig, e.g. `users[0] "c-admin".user.exec`. */
    readonly field: string,
    why: string,
    options?: { cause?: unknown },
  ) {
    super(
      `Secret ${secretKey(secret)}: data key "${dataKey}": field ${field} is refused (${why}): remove it; Quorum reads only ` +
        "the current context's server and certificate-authority-data and its user's client-certificate-data and " +
        "client-key-data (or token); or delete the Secret to let Quorum write its own",
      options,
    );
  }
}

/** A CA Secret whose tls.key is not the private key of its tls.crt. */
export class CAKeyMismatchError extends AdapterError {
  readonly reason = "CAKeyMismatch";
  readonly needsUser = true;
  constructor(
    readonly secret: SecretRef,
    subject: string,
  ) {
    super(
      `Secret ${secretKey(secret)}: tls.key is not the private key of the certificate in tls.crt (${subject}): ` +
        "put the key that was generated with this CA into tls.key, or replace tls.crt and tls.key with a matching pair",
    );
  }
}

/** A certificate in a Secret is past its notAfter (or before its notBefore). */
export class CertificateExpiredError extends AdapterError {
  readonly reason = "CertificateExpired";
  readonly needsUser = true;
  constructor(
    readonly secret: SecretRef,
    subject: string,
    readonly notBefore: Date,
    readonly notAfter: Date,
    readonly now: Date,
  ) {
    const problem =
      now < notBefore
        ? `is not valid until ${notBefore.toISOString()} (now ${now.toISOString()}): check the clock of this host, or reissue it`
        : `expired at ${notAfter.toISOString()} (now ${now.toISOString()}): rotate it, i.e. replace tls.crt and tls.key ` +
          "with a valid CA pair and re-sign the certificates that chain to it";
    super(`Secret ${secretKey(secret)}: certificate ${subject} ${problem}`);
  }
}

const DIRECT_ACCESS_FIX =
  "check that the control-plane Machines are running and that Quorum can reach their etcd client port with the " +
  "cluster's etcd client certificate; if only the API server endpoint is reachable from the management cluster, set " +
  "spec.etcd.access: APIServerProxy";

/** No etcd endpoint (or one required endpoint) answered within its deadline. */
export class EndpointUnreachableError extends AdapterError {
  readonly reason = "EndpointUnreachable";
  readonly needsUser = false;
  constructor(
    /** Who was asking, e.g. "etcd of cluster default/c1". */
    context: string,
    /** Endpoint -> why it did not answer. */
    readonly failures: ReadonlyMap<string, string>,
    deadlineMs: number,
    /** What to check; by default what dialling the members directly (spec.etcd.access Direct) needs. */
    fix: string = DIRECT_ACCESS_FIX,
  ) {
    const details = [...failures].map(([endpoint, cause]) => `${endpoint}: ${cause}`).join("; ");
    super(
      failures.size === 0
        ? `${context}: no endpoint to ask: the control-plane Machines have no addresses yet and no member list is known; ` +
            "wait for the infrastructure provider to report Machine addresses"
        : `${context}: not reachable: no endpoint answered within ${deadlineMs} ms (${details}): ${fix}`,
    );
  }
}

/** etcd answered but refused an operation for a reason Quorum cannot treat as done (e.g. "unhealthy cluster"). */
export class EtcdOperationError extends AdapterError {
  readonly reason = "EtcdOperationFailed";
  readonly needsUser = false;
  constructor(
    readonly operation: string,
    readonly endpoint: string,
    readonly etcdMessage: string,
    hint: string,
    options?: { cause?: unknown },
  ) {
    super(`etcd ${operation} via ${endpoint} failed: ${etcdMessage}: ${hint}`, options);
  }
}

/** The workload cluster's API server did not answer (listing Nodes). */
export class WorkloadApiError extends AdapterError {
  readonly reason = "WorkloadAPIUnavailable";
  readonly needsUser = false;
  constructor(
    readonly server: string,
    /** Where the credentials came from: `from Secret ns/c-kubeconfig`, or Quorum's own certificate and its CA Secret. */
    readonly credentialsFrom: string,
    cause: string,
    options?: { cause?: unknown },
  ) {
    super(
      `workload API server ${server} (${credentialsFrom}) ${cause}: check that the control-plane endpoint is up and ` +
        "that its API server trusts the cluster CA that signed the client certificate",
      options,
    );
  }
}

export function isAdapterError(error: unknown): error is AdapterError {
  return error instanceof AdapterError;
}

/** The fields of a metav1.Status the adapters read. */
interface ApiStatus {
  message?: unknown;
  reason?: unknown;
  details?: { causes?: { type?: unknown }[] };
}

/**
 * An API error body as text, and as a metav1.Status when it parses as JSON (client-node 1.x keeps the body as a JSON
 * string).
 */
function parsedStatus(body: unknown): { text: string; status: ApiStatus | undefined } {
  const text = typeof body === "string" ? body : JSON.stringify(body ?? "");
  try {
    return { text, status: (JSON.parse(text) as ApiStatus | null) ?? undefined };
  } catch {
    return { text, status: undefined };
  }
}

/**
 * Whether an API error body is the Forbidden a namespace being deleted gives every create (Status cause
 * NamespaceTerminating): not an RBAC problem, and nothing a user should grant.
 */
export function isNamespaceTerminating(body: unknown): boolean {
  const causes = parsedStatus(body).status?.details?.causes ?? [];
  return causes.some((cause) => cause?.type === "NamespaceTerminating");
}

/** The message of a metav1.Status in an API error body; the raw body when it has none (not JSON: the best there is). */
export function statusMessageOf(body: unknown): string {
  const { text, status } = parsedStatus(body);
  return typeof status?.message === "string" ? status.message : text;
}

/** The reason of a metav1.Status in an API error body ("Conflict", "Invalid"), if it has one. */
export function statusReasonOf(body: unknown): string | undefined {
  const reason = parsedStatus(body).status?.reason;
  return typeof reason === "string" ? reason : undefined;
}
